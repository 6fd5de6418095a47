// Sampling: programs whose CPU and wall time are known, for sample mode's accuracy.
//
// `idle`: the main thread computes for about 1.5 s in Idle.Spin(long) while 50 threads named
//   idle0 .. idle49 block in Idle.Block(), on one ManualResetEvent, from before the work starts
//   until after it ends. The blocked threads use no CPU while the work runs (each used well under
//   a millisecond to start, before blocking). Output:
//       idle: done
//
// `spinsleep [MS]`: a thread named "worker" alternates about 1 ms of computation in
//   SpinSleep.Compute() with Thread.Sleep(1), for about MS ms (default 1500); a thread named
//   "sleeper" calls Thread.Sleep for the whole run (MS + 300 ms) as the first thing it does (its
//   method is compiled before the thread starts, so the thread uses next to no CPU); the main
//   thread joins both. Output:
//       spinsleep: done
//   and on stderr the worker's CPU time from its own CPU clock, `spinsleep: worker cpu_ns N`.
//
// `tasks`: the main thread starts 8 tasks on the thread pool, each computing for about 150 ms in
//   Tasks.Work(int) after a 20 ms wait, and waits for them with Task.WaitAll from Tasks.WaitAll8();
//   then runs 4 rounds of one task it waits on with Task.Wait() from Tasks.WaitOne(), and finally
//   blocks in Task.Delay(300).Wait() from Tasks.Idle(). Output:
//       tasks: done
//
// Every method named here is [MethodImpl(NoInlining)].
// @include ThreadCpu.cs
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

static class Idle
{
    static readonly ManualResetEvent Release = new ManualResetEvent(false);
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Block(object ready)
    {
        ((CountdownEvent)ready).Signal();
        Release.WaitOne();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Spin(long n)
    {
        long x = 1;
        for (long i = 0; i < n; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    public static void Run()
    {
        var ready = new CountdownEvent(50);
        var threads = new Thread[50];
        for (int i = 0; i < threads.Length; i++)
        {
            threads[i] = new Thread(Block);
            threads[i].Name = "idle" + i;
            threads[i].Start(ready);
        }
        ready.Wait();
        var clock = Stopwatch.StartNew();
        while (clock.ElapsedMilliseconds < 1500)
            sink += Spin(200000);
        Release.Set();
        foreach (var t in threads)
            t.Join();
        Console.WriteLine("idle: done");
    }
}

static class SpinSleep
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Mix(long n)
    {
        long x = 7;
        for (long i = 0; i < n; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Compute()
    {
        var clock = Stopwatch.StartNew();
        while (clock.ElapsedTicks < Stopwatch.Frequency / 1000)
            sink += Mix(2000);
    }

    static int duration = 1500;
    static long workerCpuNs;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work()
    {
        var clock = Stopwatch.StartNew();
        while (clock.ElapsedMilliseconds < duration)
        {
            Compute();
            Thread.Sleep(1);
        }
        workerCpuNs = ThreadCpu.Ns();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Sleep()
    {
        Thread.Sleep(duration + 300);
    }

    public static void Run(int ms)
    {
        duration = ms;
        RuntimeHelpers.PrepareMethod(typeof(SpinSleep).GetMethod("Sleep",
            System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static).MethodHandle);
        var sleeper = new Thread(Sleep);
        sleeper.Name = "sleeper";
        sleeper.Start();
        var worker = new Thread(Work);
        worker.Name = "worker";
        worker.Start();
        worker.Join();
        sleeper.Join();
        Console.WriteLine("spinsleep: done");
        Console.Error.WriteLine("spinsleep: worker cpu_ns " + workerCpuNs);
    }
}

static class Tasks
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Work(int ms)
    {
        Thread.Sleep(20);
        long x = 3;
        var clock = Stopwatch.StartNew();
        while (clock.ElapsedMilliseconds < ms)
            for (int i = 0; i < 10000; i++)
                x = x * 31 + i;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void WaitAll8()
    {
        var tasks = new Task<long>[8];
        for (int i = 0; i < tasks.Length; i++)
            tasks[i] = Task.Run(() => Work(150));
        Task.WaitAll(tasks);
        foreach (var t in tasks)
            sink += t.Result;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void WaitOne()
    {
        for (int round = 0; round < 4; round++)
        {
            var t = Task.Run(() => Work(100));
            t.Wait();
            sink += t.Result;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Idle()
    {
        Task.Delay(300).Wait();
    }

    public static void Run()
    {
        WaitAll8();
        WaitOne();
        Idle();
        Console.WriteLine("tasks: done");
    }
}

static class Program
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Main(string[] args)
    {
        switch (args.Length > 0 ? args[0] : "")
        {
            case "idle":
                Idle.Run();
                return 0;
            case "spinsleep":
                SpinSleep.Run(args.Length > 1 ? int.Parse(args[1]) : 1500);
                return 0;
            case "tasks":
                Tasks.Run();
                return 0;
            default:
                Console.Error.WriteLine("usage: Sampling idle|spinsleep [MS]|tasks");
                return 2;
        }
    }
}
