// A long-running program to attach to (`clrprof attach`), driven by commands on stdin so
// that what happens while the agent is attached is exact:
//
//   round N   N rounds, each: throw and catch one AttachProbeException, then one induced
//             GC (GC.Collect()). Prints `rounds N: total R, caught C` (running totals).
//   spin      starts throwing and collecting on its own, one round every 5 ms, silently
//             (for attaching for a fixed duration), on a new thread named `spinner`;
//             prints `spinning`.
//   burn      starts a thread named `burner` that computes without pause (no allocation, no
//             exception: it only uses the CPU) until `stop`; prints `burning`.
//   stop      stops spinning and burning; prints `stopped`.
//   alloc N   allocates N objects of type AttachAllocProbe (80 bytes each on 64-bit: header,
//             method table pointer and eight longs) in Attachee.Allocate(int), keeping none;
//             prints `allocated N`.
//   collect   one induced GC (GC.Collect()); prints `collected`.
//   contend N two threads, `holder` and `waiter`, fight for one AttachLedger in exactly N
//             rounds (as tests/programs/Contention.cs does): in each, `holder` takes the lock
//             and sleeps 20 ms in it, `waiter` enters `lock (ledger)` in Attachee.Take() and
//             waits until `holder` leaves, which it does only once `waiter` is blocked entering:
//             N contended acquisitions, all by `waiter`, at one site. Prints `contended N`,
//             and on stderr `waited_us T`, the time `waiter` measured around its `lock`
//             statements.
//   exit      stops spinning, prints `bye: total R, caught C` and exits 0.
//
// It prints `ready` once it reads commands. Its output depends only on the commands it gets,
// never on timing: a profiler attaching and detaching must not change it.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

class AttachProbeException : Exception
{
    public AttachProbeException(int n) : base("probe " + n) { }
}

class AttachAllocProbe
{
    public long A, B, C, D, E, F, G, H;
}

class AttachLedger
{
    public long Entries;
}

static class Attachee
{
    static int rounds;
    static int caught;
    static volatile bool spinning;
    static Thread spinner;
    static volatile bool burning;
    static Thread burner;
    static long burnt;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Compute(long x)
    {
        for (int i = 0; i < 100000; i++)
            x = x * 31 + i;
        return x;
    }

    static void Burn()
    {
        long x = 1;
        while (burning)
            x = Compute(x);
        burnt = x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Throw(int n)
    {
        throw new AttachProbeException(n);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Round(int n)
    {
        int got = 0;
        try
        {
            Throw(n);
        }
        catch (AttachProbeException)
        {
            got = 1;
        }
        GC.Collect();
        return got;
    }

    static void Spin()
    {
        int n = 0;
        while (spinning)
        {
            Round(n++);
            Thread.Sleep(5);
        }
    }

    static void StopSpinning()
    {
        spinning = false;
        if (spinner != null)
        {
            spinner.Join();
            spinner = null;
        }
        burning = false;
        if (burner != null)
        {
            burner.Join();
            burner = null;
        }
    }

    static long allocated;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Allocate(int n)
    {
        for (int i = 0; i < n; i++)
        {
            AttachAllocProbe p = new AttachAllocProbe();
            p.A = i;
            allocated += p.A;
        }
    }

    static readonly AttachLedger ledger = new AttachLedger();
    static readonly AutoResetEvent ready = new AutoResetEvent(false);
    static readonly AutoResetEvent done = new AutoResetEvent(false);
    static volatile bool entering;
    static Thread waiter;
    static long waitedTicks;

    static void Hold(object times)
    {
        for (int i = 0; i < (int)times; i++)
        {
            lock (ledger)
            {
                ready.Set();
                Thread.Sleep(20);
                while (!entering || (waiter.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0)
                {
                    Thread.Sleep(1);
                }
                entering = false;
                ledger.Entries++;
            }
            done.WaitOne();
        }
    }

    static void Wait(object times)
    {
        for (int i = 0; i < (int)times; i++)
        {
            ready.WaitOne();
            Take();
            done.Set();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Take()
    {
        Stopwatch watch = Stopwatch.StartNew();
        entering = true;
        lock (ledger)
        {
            waitedTicks += watch.ElapsedTicks;
            ledger.Entries++;
        }
    }

    static void Contend(int times)
    {
        waitedTicks = 0;
        Thread holder = new Thread(Hold) { Name = "holder" };
        waiter = new Thread(Wait) { Name = "waiter" };
        holder.Start(times);
        waiter.Start(times);
        holder.Join();
        waiter.Join();
        Console.Error.WriteLine("waited_us " + waitedTicks * 1000000 / Stopwatch.Frequency);
    }

    static int Main()
    {
        Console.WriteLine("ready");
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] words = line.Split(' ');
            switch (words[0])
            {
                case "round":
                    int n = int.Parse(words[1]);
                    for (int i = 0; i < n; i++)
                    {
                        caught += Round(rounds);
                        rounds++;
                    }
                    Console.WriteLine($"rounds {n}: total {rounds}, caught {caught}");
                    break;
                case "spin":
                    spinning = true;
                    spinner = new Thread(Spin) { Name = "spinner" };
                    spinner.Start();
                    Console.WriteLine("spinning");
                    break;
                case "burn":
                    burning = true;
                    burner = new Thread(Burn) { Name = "burner" };
                    burner.Start();
                    Console.WriteLine("burning");
                    break;
                case "alloc":
                    int count = int.Parse(words[1]);
                    Allocate(count);
                    Console.WriteLine($"allocated {count}");
                    break;
                case "collect":
                    GC.Collect();
                    Console.WriteLine("collected");
                    break;
                case "contend":
                    int contended = int.Parse(words[1]);
                    Contend(contended);
                    Console.WriteLine($"contended {contended}");
                    break;
                case "stop":
                    StopSpinning();
                    Console.WriteLine("stopped");
                    break;
                case "exit":
                    StopSpinning();
                    Console.WriteLine($"bye: total {rounds}, caught {caught}");
                    return 0;
                default:
                    Console.WriteLine("unknown command " + words[0]);
                    return 2;
            }
        }
        return 3;
    }
}
