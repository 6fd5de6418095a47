// Benchmark workload: a CPU-bound main thread beside 50 threads blocked on an event, as a server
// keeps dozens of idle thread-pool threads. The blocked threads wait from before the work starts
// until after it ends: a profiler should cost them nothing.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Threading;

static class Idle
{
    const int Blocked = 50;
    const int Rounds = 200;

    static readonly ManualResetEvent Release = new ManualResetEvent(false);

    static void Block(object ready)
    {
        ((CountdownEvent)ready).Signal();
        Release.WaitOne();
    }

    static long Mix(long seed, int n)
    {
        long x = seed;
        for (int i = 0; i < n; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x;
    }

    static int Main()
    {
        var ready = new CountdownEvent(Blocked);
        var threads = new Thread[Blocked];
        for (int i = 0; i < Blocked; i++)
        {
            threads[i] = new Thread(Block);
            threads[i].Start(ready);
        }
        ready.Wait();
        Protocol.Go();

        long sum = 0;
        for (int round = 0; round < Rounds; round++)
            sum += Mix(round + 1, 4000000);

        Protocol.Stop();
        Release.Set();
        foreach (var t in threads)
            t.Join();
        return Protocol.Finish(sum);
    }
}
