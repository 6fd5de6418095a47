// Generics: generic code over value and reference types, conversion operators that differ
// only by their return type, and methods of the same full name in two assemblies.
//
// The runtime compiles generic code once per instantiation over value types, and once for all
// instantiations that differ only in reference-type arguments: that shared body is compiled
// over the placeholder `System.__Canon`. So `Two<int, string>` and `Two<int, object>` share
// one body (`Two<int, __Canon>`), while `Two<int, string>` and `Two<string, int>` do not.
//
// Every method named here is [MethodImpl(NoInlining)] and no call of interest is in tail
// position. Types are in the global namespace.
//
// With argument "calls": exact calls per compiled body (for trace mode). The constructors
// are called once per object: Two<int, __Canon>, Two<__Canon, int> and Two<int, long> once,
// Two<__Canon, __Canon> twice.
//     Two<int, __Canon>.M(int, __Canon, int)            3 calls  (Two<int, string>)
//     Two<__Canon, int>.M(__Canon, int, int)            4 calls  (Two<string, int>)
//     Two<__Canon, __Canon>.M(__Canon, __Canon, int)    7 calls  (5 Two<string, string>,
//                                                                  2 Two<object, string>)
//     Two<int, long>.M(int, long, int)                  6 calls
//     Two<int, __Canon>.Both(int, __Canon)              11 calls (static; Two<int, string>)
//     Two<__Canon, int>.Both(__Canon, int)              12 calls (static; Two<string, int>)
//     Two<int, __Canon>.Pick<__Canon>(__Canon)          13 calls (Pick<string>)
//     Two<int, __Canon>.Pick<int>(int)                  14 calls
//     Money.op_Implicit(Money) -> int                   9 calls
//     Money.op_Implicit(Money) -> long                  10 calls
//     Lookups.IntKeys(Dictionary<int, string>, int)     1 call; it calls TryGetValue on a
//         Dictionary<int, string> 15 times (body Dictionary<int, __Canon>)
//     Lookups.StringKeys(Dictionary<string, string>, int) 1 call; it calls TryGetValue on a
//         Dictionary<string, string> 16 times (body Dictionary<__Canon, __Canon>)
// Arguments after "calls" are paths of assemblies compiled from Plugin.cs; the i-th one
// (from 0) is loaded and its Lib.Util.Run(int) called 17 + i times through a delegate.
// Output:
//     two: 3 4 7 6 | 11 12 | 13 14
//     money: 9 10
//     lookups: 15 16
// then one line per plugin: `plugin <i>: <17 + i> calls`.
//
// With argument "spin": each of these bodies in turn runs the same loop of 300,000,000
// iterations (a few hundred milliseconds of CPU; a fixed count, so the output does not depend
// on timing): Two<int, __Canon>.M, Two<__Canon, int>.M, Two<__Canon, __Canon>.M,
// Two<int, long>.M, Money.op_Implicit(Money) -> int, Money.op_Implicit(Money) -> long; then
// 10,000,000 lookups through Lookups.IntKeys and through Lookups.StringKeys. Output:
//     spin: done
// and on stderr the CPU time each of the four Two<,>.M bodies took, as the thread's CPU clock
// measured it around the call, in that order: `spin: cpu_ns 312000000 305000000 ...` (the same
// loop takes more or less CPU on a loaded machine: this is the truth to compare shares with).
// Without arguments it prints its usage and exits with code 2.
// @include ThreadCpu.cs
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;

class Two<A, B>
{
    // Counts loop iterations; `a` and `b` take part so that the body depends on A and B.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public int M(A a, B b, int n)
    {
        int h = 0;
        for (int i = 0; i < n; i++)
            h = h * 31 + i;
        int present = (a == null ? 0 : 1) + (b == null ? 0 : 1);
        return n == 1 ? 1 : (h & 1) + present;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Both(A a, B b)
    {
        return a == null || b == null ? 0 : 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Pick<C>(C c)
    {
        return c == null ? 0 : 1;
    }
}

struct Money
{
    public readonly int Cents;
    // Loop iterations each conversion spends (1 for counting, many for sampling).
    public readonly int Work;

    public Money(int cents, int work)
    {
        Cents = cents;
        Work = work;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static implicit operator int(Money m)
    {
        int h = m.Cents;
        for (int i = 1; i < m.Work; i++)
            h = h * 31 + i;
        return m.Work == 1 ? m.Cents : h & 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static implicit operator long(Money m)
    {
        long h = m.Cents;
        for (int i = 1; i < m.Work; i++)
            h = h * 37 + i;
        return m.Work == 1 ? (long)m.Cents : h & 1;
    }
}

static class Lookups
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int IntKeys(Dictionary<int, string> d, int n)
    {
        int found = 0;
        string v;
        for (int i = 0; i < n; i++)
            if (d.TryGetValue(i % 4, out v))
                found++;
        return found;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int StringKeys(Dictionary<string, string> d, int n)
    {
        string[] keys = { "a", "b", "c", "d" };
        int found = 0;
        string v;
        for (int i = 0; i < n; i++)
            if (d.TryGetValue(keys[i % 4], out v))
                found++;
        return found;
    }
}

static class Program
{
    static Dictionary<int, string> IntDictionary()
    {
        var d = new Dictionary<int, string>();
        d[0] = "zero";
        d[1] = "one";
        d[2] = "two";
        d[3] = "three";
        return d;
    }

    static Dictionary<string, string> StringDictionary()
    {
        var d = new Dictionary<string, string>();
        d["a"] = "A";
        d["b"] = "B";
        d["c"] = "C";
        d["d"] = "D";
        return d;
    }

    static void Calls(string[] plugins)
    {
        var intString = new Two<int, string>();
        var stringInt = new Two<string, int>();
        var stringString = new Two<string, string>();
        var objectString = new Two<object, string>();
        var intLong = new Two<int, long>();

        int m1 = 0, m2 = 0, m3 = 0, m4 = 0, b1 = 0, b2 = 0, p1 = 0, p2 = 0;
        for (int i = 0; i < 3; i++)
            m1 += intString.M(1, "x", 1);
        for (int i = 0; i < 4; i++)
            m2 += stringInt.M("x", 1, 1);
        for (int i = 0; i < 5; i++)
            m3 += stringString.M("x", "y", 1);
        for (int i = 0; i < 2; i++)
            m3 += objectString.M(null, "y", 1);
        for (int i = 0; i < 6; i++)
            m4 += intLong.M(1, 2L, 1);
        for (int i = 0; i < 11; i++)
            b1 += Two<int, string>.Both(1, "x");
        for (int i = 0; i < 12; i++)
            b2 += Two<string, int>.Both("x", 1);
        for (int i = 0; i < 13; i++)
            p1 += intString.Pick<string>("x");
        for (int i = 0; i < 14; i++)
            p2 += intString.Pick<int>(1);
        Console.WriteLine("two: {0} {1} {2} {3} | {4} {5} | {6} {7}", m1, m2, m3, m4, b1, b2, p1, p2);

        var money = new Money(1, 1);
        int asInt = 0;
        long asLong = 0;
        for (int i = 0; i < 9; i++)
        {
            int v = money;
            asInt += v;
        }
        for (int i = 0; i < 10; i++)
        {
            long v = money;
            asLong += v;
        }
        Console.WriteLine("money: {0} {1}", asInt, asLong);

        int found = Lookups.IntKeys(IntDictionary(), 15);
        int foundToo = Lookups.StringKeys(StringDictionary(), 16);
        Console.WriteLine("lookups: {0} {1}", found, foundToo);

        for (int i = 0; i < plugins.Length; i++)
        {
            Assembly assembly = Assembly.LoadFrom(plugins[i]);
            MethodInfo run = assembly.GetType("Lib.Util").GetMethod("Run");
            var f = (Func<int, int>)Delegate.CreateDelegate(typeof(Func<int, int>), run);
            int calls = 0;
            for (int k = 0; k < 17 + i; k++)
                calls += f(1);
            Console.WriteLine("plugin {0}: {1} calls", i, calls);
        }
    }

    static void Spin()
    {
        const int Loop = 300000000;
        int sink = 0;
        var cpu = new long[5];
        cpu[0] = ThreadCpu.Ns();
        sink += new Two<int, string>().M(1, "x", Loop);
        cpu[1] = ThreadCpu.Ns();
        sink += new Two<string, int>().M("x", 1, Loop);
        cpu[2] = ThreadCpu.Ns();
        sink += new Two<string, string>().M("x", "y", Loop);
        cpu[3] = ThreadCpu.Ns();
        sink += new Two<int, long>().M(1, 2L, Loop);
        cpu[4] = ThreadCpu.Ns();
        Console.Error.WriteLine("spin: cpu_ns " + (cpu[1] - cpu[0]) + " " + (cpu[2] - cpu[1]) + " "
            + (cpu[3] - cpu[2]) + " " + (cpu[4] - cpu[3]));
        int asInt = new Money(1, Loop);
        long asLong = new Money(1, Loop);
        sink += asInt + (int)asLong;
        sink += Lookups.IntKeys(IntDictionary(), 10000000);
        sink += Lookups.StringKeys(StringDictionary(), 10000000);
        Console.WriteLine(sink == int.MinValue ? "spin: done!" : "spin: done");
    }

    static int Main(string[] args)
    {
        if (args.Length > 0 && args[0] == "spin")
        {
            Spin();
            return 0;
        }
        if (args.Length > 0 && args[0] == "calls")
        {
            string[] plugins = new string[args.Length - 1];
            Array.Copy(args, 1, plugins, 0, plugins.Length);
            Calls(plugins);
            return 0;
        }
        Console.WriteLine("usage: Generics calls [PLUGIN.dll ...] | Generics spin");
        return 2;
    }
}
