// Counted: the cases where count mode (`clrprof record --mode count`) could miss a call,
// each with an exact count. Inlining stays on; nothing here is NoInlining unless it says so.
//
// Exact counts (all on the main thread):
//   Counted.Main(string[])               1
//   Inl.Add(int, int)              2000001   small enough to be inlined: Main calls it once
//                                            first, so that its counted IL is installed
//                                            before Tier.Loop is compiled, and the JIT then
//                                            inlines it into Loop (from the IL it reads)
//   Tier.Loop(int)                      20   [NoInlining], a loop of 100000 calls of Add
//   Tier.Step(int)                  200000   [NoInlining], called in 20 rounds of 10000 with
//                                            20 ms pauses: tiered compilation recompiles it
//                                            (tier 0, then tier 1) while it is being counted
//   Gen.Pick<T>(T)                      15   [NoInlining] generic method: 5 calls with int,
//                                            7 with string, 3 with object (string and object
//                                            share one compiled body); one set of counters
//   Thrower.Middle(int)                 10   [NoInlining]: calls A, divides by (i % 5), calls
//                                            B; i % 5 == 0 for i = 0 and 5, so the division
//                                            throws in the middle of a basic block twice
//   Thrower.A()                         10   [NoInlining]
//   Thrower.B()                          8   [NoInlining]: not reached when the division threw
// Call sites: Main -> Inl.Add 1, Main -> Tier.Loop 20, Tier.Loop -> Inl.Add 2000000, Main -> Tier.Step 200000,
// Main -> Gen.Pick<T> 15 (3 sites: 5, 7, 3), Main -> Thrower.Middle 10, Middle -> A 10,
// Middle -> B 8.
// Output:
//   loop: 100001000000
//   step: 999900000
//   pick: 15
//   middle: 8 caught 2
using System;
using System.Runtime.CompilerServices;
using System.Threading;

static class Inl
{
    public static int Add(int a, int b)
    {
        return a + b;
    }
}

static class Tier
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Loop(int n)
    {
        long s = 0;
        for (int i = 0; i < n; i++)
            s += Inl.Add(i, 1);
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Step(int i)
    {
        return i ^ 1;
    }
}

static class Gen
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Pick<T>(T x)
    {
        return x == null ? 0 : 1;
    }
}

static class Thrower
{
    public static int Reached;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void A()
    {
        Reached += 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void B()
    {
        Reached++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Middle(int i)
    {
        A();
        int q = 10 / (i % 5);
        B();
        return q;
    }
}

static class Counted
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Main(string[] args)
    {
        long loop = Inl.Add(-1, 1);
        for (int r = 0; r < 20; r++)
            loop += Tier.Loop(100000);
        Console.WriteLine("loop: " + loop);

        long step = 0;
        for (int r = 0; r < 20; r++)
        {
            for (int i = 0; i < 10000; i++)
                step += Tier.Step(i);
            Thread.Sleep(20);
        }
        Console.WriteLine("step: " + step);

        int pick = 0;
        for (int i = 0; i < 5; i++)
            pick += Gen.Pick<int>(i);
        for (int i = 0; i < 7; i++)
            pick += Gen.Pick<string>("s");
        for (int i = 0; i < 3; i++)
            pick += Gen.Pick<object>(args);
        Console.WriteLine("pick: " + pick);

        int caught = 0;
        for (int i = 0; i < 10; i++)
        {
            try
            {
                Thrower.Middle(i);
            }
            catch (DivideByZeroException)
            {
                caught++;
            }
        }
        Console.WriteLine("middle: " + Thrower.Reached + " caught " + caught);
        return 0;
    }
}
