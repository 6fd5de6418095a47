// Calls: methods with exact call counts (for enter/leave/tail-call hooks), a thread that
// sleeps in a known method (for stack sampling), and a timing loop.
//
// Without arguments. Methods are static members of class `Calls` (global namespace); exact
// counts per method:
//     Calls.Fib(int)                 242785 calls (Fib(25) = 75025; calls(n) = 2*F(n+1) - 1).
//                                    No call of Fib is in tail position.
//     Calls.Leaf(int)                1000 calls.
//     Calls.TailCaller(long)         1000 calls, through a delegate. Its call to TailCallee is in
//                                    tail position, so optimized code (TieredCompilation
//                                    disabled) leaves through an implicit fast tail call: 1000
//                                    tail calls, 0 returns. Unoptimized code (tier 0) returns
//                                    normally instead. It is the one method not marked
//                                    NoInlining (the runtime never tail-calls implicitly from a
//                                    NoInlining method); the delegate keeps it from being
//                                    inlined.
//     Calls.TailCallee(long, long)   1000 calls, all return normally.
//     Calls.Main(string[])           1 call, returns normally.
// Every other method named here is [MethodImpl(NoInlining)].
// Output:
//     fib(25) = 75025
//     leaf = 1499716
//     tail = 1508500
//
// With argument `sleep`: starts one thread, named "sleeper", that runs `Sleeper.Run()`, which
// calls `Sleeper.Nap()`, which calls `Thread.Sleep(2000)`; the main thread joins it. Output:
//     sleeper started
//     sleeper done
//
// With arguments `bench N`: runs Fib(N) three times and prints to stdout
//     bench fib(N) x3 = <sum> in <ms> ms
// (the only nondeterministic output; for manual timing).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class Calls
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Fib(int n)
    {
        if (n < 2)
            return n;
        int a = Fib(n - 1);
        int b = Fib(n - 2);
        return a + b;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Leaf(int i)
    {
        return i * 3 ^ 0x55;
    }

    // Not NoInlining: see the comment at the top.
    static long TailCaller(long x)
    {
        return TailCallee(x + 1, 7);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long TailCallee(long x, long y)
    {
        return x * 3 + y;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Main(string[] args)
    {
        if (args.Length > 0 && args[0] == "sleep")
            return Sleeper.Start();
        if (args.Length > 1 && args[0] == "bench")
        {
            int n = int.Parse(args[1]);
            var watch = Stopwatch.StartNew();
            long sum = 0;
            for (int i = 0; i < 3; i++)
                sum += Fib(n);
            watch.Stop();
            Console.WriteLine("bench fib(" + n + ") x3 = " + sum + " in " + watch.ElapsedMilliseconds + " ms");
            return 0;
        }

        Console.WriteLine("fib(25) = " + Fib(25));
        long leaf = 0;
        for (int i = 0; i < 1000; i++)
            leaf += Leaf(i);
        Console.WriteLine("leaf = " + leaf);
        long tail = 0;
        Func<long, long> tailCaller = TailCaller;
        for (int i = 0; i < 1000; i++)
            tail += tailCaller(i);
        Console.WriteLine("tail = " + tail);
        return 0;
    }
}

static class Sleeper
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Start()
    {
        var thread = new Thread(Run);
        thread.Name = "sleeper";
        thread.Start();
        Console.WriteLine("sleeper started");
        thread.Join();
        Console.WriteLine("sleeper done");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Run()
    {
        Nap();
        Console.Out.Flush();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Nap()
    {
        Thread.Sleep(2000);
        GC.KeepAlive(null);
    }
}
