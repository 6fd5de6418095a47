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
//   exit      stops spinning, prints `bye: total R, caught C` and exits 0.
//
// It prints `ready` once it reads commands. Its output depends only on the commands it gets,
// never on timing: a profiler attaching and detaching must not change it.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

class AttachProbeException : Exception
{
    public AttachProbeException(int n) : base("probe " + n) { }
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
