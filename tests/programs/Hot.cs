// Hot: spends about 85% of its CPU time in one method, while a named thread sleeps throughout.
//
// The main thread runs for about 1.5 s: rounds of Hot.Spin (about 85% of the CPU time) and
// Hot.Other (about 15%), both [MethodImpl(NoInlining)] loops of integer arithmetic. A thread
// named "sleeper", started first, waits in Sleeper.Nap() (on a ManualResetEvent) until the
// main thread is done: it uses no CPU while the work runs.
//
// Output:
//   hot: done
// and on stderr the share of the measured time spent in Spin, `hot: spin share 0.8500`.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class Sleeper
{
    public static readonly ManualResetEvent Done = new ManualResetEvent(false);
    public static readonly ManualResetEvent Asleep = new ManualResetEvent(false);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Run()
    {
        Nap();
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
        sleeper.Start();
        Sleeper.Asleep.WaitOne();

        // Calibrate the split on time, not on iterations: 85% Spin, 15% Other.
        var clock = Stopwatch.StartNew();
        long spinTicks = 0, otherTicks = 0;
        while (clock.ElapsedMilliseconds < 1500)
        {
            var t0 = clock.ElapsedTicks;
            if (otherTicks * 85 < spinTicks * 15)
            {
                sink += Other(200000);
                otherTicks += clock.ElapsedTicks - t0;
            }
            else
            {
                sink += Spin(200000);
                spinTicks += clock.ElapsedTicks - t0;
            }
        }
        Sleeper.Done.Set();
        sleeper.Join();
        Console.WriteLine("hot: done");
        Console.Error.WriteLine("hot: spin share " + ((double)spinTicks / (spinTicks + otherTicks))
            .ToString("F4", System.Globalization.CultureInfo.InvariantCulture));
    }
}
