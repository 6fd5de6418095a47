// Benchmark workload: lock contention. Four threads take one `lock` (Monitor) 2,000,000 times
// each, with a short update of shared state inside (a few dozen arithmetic steps) and a little
// more work outside, so that the lock is contended all the time; most acquisitions succeed
// while spinning. Once in 2048 acquisitions the holder stays inside longer (50,000 steps, some
// tens of microseconds), longer than a waiter spins, so that the threads wanting the lock
// meanwhile block: some hundreds to a few thousand contended waits per second (the waits the
// runtime's contention events report, `record --contention`), their number varying from run
// to run with the scheduling of the threads. The shared state is only ever added to, so the
// checksum does not depend on the order in which the threads got the lock.
//
// Protocol: see Protocol.cs. stderr says how many times the lock was contended during the work
// (`contentions=N`, from `Monitor.LockContentionCount`; it varies from run to run).
// @include Protocol.cs
// @include ProcessCpu.cs
using System;
using System.Globalization;
using System.Threading;

sealed class Ledger
{
    public long Total;
    public readonly long[] Buckets = new long[64];
}

static class Contention
{
    const int Threads = 4;
    // Acquisitions per thread.
    const int Takes = 2000000;
    // Arithmetic steps inside the lock and outside it, per acquisition.
    const int Inside = 24;
    const int Outside = 80;
    // Once in LongMask + 1 acquisitions the holder does LongHold steps inside the lock.
    const int LongMask = 2047;
    const int LongHold = 50000;

    static readonly Ledger ledger = new Ledger();

    static long Mix(long h, int steps)
    {
        for (int i = 0; i < steps; i++)
            h = h * 6364136223846793005L + 1442695040888963407L;
        return h;
    }

    // Acquisitions per thread of the current run.
    static int takes;

    static void Work(object state)
    {
        int id = (int)state;
        long local = id + 1;
        for (int i = 0; i < takes; i++)
        {
            local = Mix(local, Outside);
            long value = (local >> 33) & 0xffff;
            lock (ledger)
            {
                long h = Mix(value, Inside);
                ledger.Total += value;
                ledger.Buckets[(int)((h >> 40) & 63)] += value;
                if ((i & LongMask) == LongMask)
                    ledger.Total += Mix(h, LongHold) & 1;
            }
        }
    }

    static void Run(int count)
    {
        takes = count;
        var threads = new Thread[Threads];
        for (int t = 0; t < Threads; t++)
        {
            threads[t] = new Thread(Work);
            threads[t].Name = "contender-" + t.ToString(CultureInfo.InvariantCulture);
            threads[t].Start(t);
        }
        for (int t = 0; t < Threads; t++)
            threads[t].Join();
    }

    static int Main()
    {
        // Compile the loop and the lock's paths, contended too, before the work.
        Run(20000);
        ledger.Total = 0;
        Array.Clear(ledger.Buckets, 0, ledger.Buckets.Length);
        Protocol.Go();
        long contended0 = Monitor.LockContentionCount;

        Run(Takes);

        Protocol.Stop();
        long contended = Monitor.LockContentionCount - contended0;
        long checksum = ledger.Total;
        for (int i = 0; i < ledger.Buckets.Length; i++)
            checksum = checksum * 31 + ledger.Buckets[i];
        Console.Error.WriteLine("contentions=" + contended.ToString(CultureInfo.InvariantCulture));
        return Protocol.Finish(checksum);
    }
}
