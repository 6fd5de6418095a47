// Traced: exact call counts and call paths for trace mode (`clrprof record --mode trace`).
// Run with tiered compilation disabled (COMPlus_TieredCompilation=0) so that the one tail
// call below is a real (implicit, fast) tail call.
//
// Every method is [MethodImpl(NoInlining)] except Tail.Caller: the runtime never tail-calls
// implicitly from a NoInlining method, so Tail.Caller's call to Tail.Callee (in tail position)
// is the only tail call; Tail.Caller is called through a delegate so it is not inlined either.
//
// Exact counts (all threads) and call paths:
//   Program.Main(string[])            1
//   Work.Run(int)                     3     one per thread "t1", "t2", "t3": Main is not its caller
//   Work.Step(int)                 6000     1000 * i on thread "t<i>", always called by Work.Run
//   Work.Leaf(int)                 3000     from Work.Step when j is even (500 * i on "t<i>")
//   Work.Short()                     20     once on each of 20 short-lived threads
//   Tail.Caller(long)               100     from Main (through a delegate); tail-calls Callee
//   Tail.Callee(long, long)         100     takes Caller's frame: its caller is Main
//   Thrower.Catch()                  10     from Main
//   Thrower.L1() .. Thrower.L5()     10 each: Catch -> L1 -> L2 -> L3 -> L4 -> L5, L5 throws;
//                                           the exception unwinds L5..L1 (5 frames) to Catch
//   Thrower.After()                  10     from Catch, after the catch: its caller is Catch
//   Deep.Start()                      1     on thread "deep" (64 MiB stack)
//   Deep.Recurse(int)             60000     a chain 60,000 calls deep under Deep.Start
//
// Output:
//   work: 3 threads, steps=6000 leaves=3000
//   short: 20
//   tail: 1485100
//   caught: 10 after=10
//   deep: 60000
using System;
using System.Runtime.CompilerServices;
using System.Threading;

class TracedException : Exception
{
    public TracedException() : base("traced") { }
}

static class Work
{
    public static int Steps;
    public static int Leaves;
    public static int Shorts;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Run(int i)
    {
        int n = 1000 * i;
        for (int j = 0; j < n; j++)
        {
            Step(j);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Step(int j)
    {
        Interlocked.Increment(ref Steps);
        if (j % 2 == 0)
        {
            Leaf(j);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Leaf(int j)
    {
        Interlocked.Increment(ref Leaves);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Short()
    {
        Interlocked.Increment(ref Shorts);
    }
}

static class Tail
{
    public static long Caller(long x)
    {
        return Callee(x, x + 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Callee(long x, long y)
    {
        return x * 2 + y;
    }
}

static class Thrower
{
    public static int Caught;
    public static int Afters;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Catch()
    {
        try
        {
            L1();
        }
        catch (TracedException)
        {
            Caught++;
        }
        After();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void L1() { L2(); Afters += 0; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void L2() { L3(); Afters += 0; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void L3() { L4(); Afters += 0; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void L4() { L5(); Afters += 0; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void L5() { throw new TracedException(); }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void After() { Afters++; }
}

static class Deep
{
    public static int Depth;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Start()
    {
        Recurse(60000);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Recurse(int n)
    {
        Depth++;
        if (n > 1)
        {
            Recurse(n - 1);
        }
        Depth += 0;
    }
}

static class Program
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Main(string[] args)
    {
        var workers = new Thread[3];
        for (int i = 0; i < 3; i++)
        {
            int id = i + 1;
            workers[i] = new Thread(() => Work.Run(id));
            workers[i].Name = "t" + id;
            workers[i].Start();
        }
        foreach (var t in workers)
        {
            t.Join();
        }
        Console.WriteLine("work: 3 threads, steps=" + Work.Steps + " leaves=" + Work.Leaves);

        for (int i = 0; i < 20; i++)
        {
            var t = new Thread(Work.Short);
            t.Start();
            t.Join();
        }
        Console.WriteLine("short: " + Work.Shorts);

        Func<long, long> caller = Tail.Caller;
        long sum = 0;
        for (long i = 0; i < 100; i++)
        {
            sum += caller(i * 100);
        }
        Console.WriteLine("tail: " + sum);

        for (int i = 0; i < 10; i++)
        {
            Thrower.Catch();
        }
        Console.WriteLine("caught: " + Thrower.Caught + " after=" + Thrower.Afters);

        var deep = new Thread(Deep.Start, 64 * 1024 * 1024);
        deep.Name = "deep";
        deep.Start();
        deep.Join();
        Console.WriteLine("deep: " + Deep.Depth);
    }
}
