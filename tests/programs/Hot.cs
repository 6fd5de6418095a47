// Hot: spends about 85% of its CPU time in one method, while a named thread sleeps throughout.
//
// The main thread runs for 1.5 s of its CPU time: rounds of Hot.Spin (about 85% of the CPU
// time) and Hot.Other (about 15%), both [MethodImpl(NoInlining)] loops of integer arithmetic. A thread
// named "sleeper", started first, waits in Sleeper.Nap() (on a ManualResetEvent) until the
// main thread is done: it uses no CPU while the work runs. Then it parks (a background thread,
// waiting until the process exits) and the main thread reads the CPU it used in all from the
// kernel (/proc/self/task/TID/schedstat, the sum its thread CPU clock reads) once it is parked:
// a thread that read its own clock and then exited would use CPU after the reading (its
// exit), which a profiler rightly charges to it.
//
// Output:
//   hot: done
// and on stderr the share of the main thread's measured CPU time spent in Spin,
// `hot: spin share 0.8571` (the thread's CPU clock read around each call), and the CPU time
// the sleeper used in all, `hot: sleeper cpu_ns 1234567`, and how long it waited in Nap (wall
// time, `Stopwatch`), `hot: sleeper nap_ns 1234567`.
// @include ThreadCpu.cs
using System;
using System.Runtime.CompilerServices;
using System.Threading;

static class Sleeper
{
    public static readonly ManualResetEvent Done = new ManualResetEvent(false);
    public static readonly ManualResetEvent Asleep = new ManualResetEvent(false);
    public static readonly ManualResetEvent Woke = new ManualResetEvent(false);
    static readonly ManualResetEvent Never = new ManualResetEvent(false);
    /// The thread's kernel id.
    static int Tid;
    /// How long it waited in Nap, wall time.
    public static long NapNs;

    [System.Runtime.InteropServices.DllImport("libc")]
    static extern int gettid();

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Run()
    {
        Tid = gettid();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        Nap();
        NapNs = (long)(watch.Elapsed.TotalMilliseconds * 1000000.0);
        Woke.Set();
        Never.WaitOne();
    }

    /// The CPU time the thread used in all, once it is parked: read until the kernel says it
    /// sleeps and its time stays the same.
    public static long ParkedCpuNs()
    {
        Woke.WaitOne();
        string task = "/proc/self/task/" + Tid;
        long last = -1;
        for (int i = 0; i < 2000; i++)
        {
            string stat = System.IO.File.ReadAllText(task + "/stat");
            char state = stat.Substring(stat.LastIndexOf(')') + 1).Trim()[0];
            long ns = long.Parse(System.IO.File.ReadAllText(task + "/schedstat").Split(' ')[0],
                System.Globalization.CultureInfo.InvariantCulture);
            if (state == 'S' && ns == last)
                return ns;
            last = ns;
            Thread.Sleep(5);
        }
        return last;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Nap()
    {
        Asleep.Set();
        Done.WaitOne();
    }
}

static class Hot
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Spin(long n)
    {
        long x = 1;
        for (long i = 0; i < n; i++)
        {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Other(long n)
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
    static void Main(string[] args)
    {
        var sleeper = new Thread(Sleeper.Run);
        sleeper.Name = "sleeper";
        sleeper.IsBackground = true;
        sleeper.Start();
        Sleeper.Asleep.WaitOne();

        // Nine calls of Spin, then one of Other, over and over: about 85% Spin (an Other call
        // takes about 1.5 times as long as a Spin call). The order is fixed, not chosen by the
        // CPU time each method used so far: that time includes the profiler's signal handlers
        // (they run on this thread), so a choice made by it follows where the samples fell, and
        // a sampler whose period stays fixed for a few samples then got a share about 0.01 too
        // high (measured over 25 runs each at 1 kHz on .NET 8.0.4: +0.009 with the choice
        // made by CPU time, -0.002 with this fixed order). The share is measured all the same,
        // with the thread's CPU clock around each call. It runs for 1.5 s of its own CPU time,
        // however busy the machine: about 1,500 CPU samples at 1000/s.
        long start = ThreadCpu.Ns();
        long spinTicks = 0, otherTicks = 0;
        long round = 0;
        while (ThreadCpu.Ns() - start < 1500000000L)
        {
            var t0 = ThreadCpu.Ns();
            if (++round % 10 == 0)
            {
                sink += Other(200000);
                otherTicks += ThreadCpu.Ns() - t0;
            }
            else
            {
                sink += Spin(200000);
                spinTicks += ThreadCpu.Ns() - t0;
            }
        }
        Sleeper.Done.Set();
        long sleeperCpuNs = Sleeper.ParkedCpuNs();
        Console.WriteLine("hot: done");
        Console.Error.WriteLine("hot: sleeper cpu_ns " + sleeperCpuNs);
        Console.Error.WriteLine("hot: sleeper nap_ns " + Sleeper.NapNs);
        Console.Error.WriteLine("hot: spin share " + ((double)spinTicks / (spinTicks + otherTicks))
            .ToString("F4", System.Globalization.CultureInfo.InvariantCulture));
    }
}
