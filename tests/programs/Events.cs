// Events: exercises every category of runtime event clrprof records, with exact counts.
//
// Expected counts (tests assert these; full names as the runtime reports them):
//
// (a) Exceptions: exactly 7 `ClrprofTestException` (global namespace, derives from
//     System.Exception) are thrown, all by `Thrower.Throw()`, and each is caught in
//     `Catcher.CatchIt()`. No other exception is thrown by the program. Stack at each throw,
//     innermost first (ThrowDeep(2): Level1 -> Level2 -> Level3 recurses twice):
//         Thrower.Throw, Thrower.Level3, Thrower.Level2, Thrower.Level1,
//         Thrower.Level3, Thrower.Level2, Thrower.Level1,
//         Thrower.ThrowDeep, Catcher.CatchIt, Events.Program.Main
//     On the way up, each exception passes:
//       - 2 `when` filters in `Thrower.Level1` (`catch (ClrprofTestException e) when
//         (Thrower.Filter(e))`); `Thrower.Filter` returns false, so they never catch:
//         14 filter runs in total;
//       - 2 `finally` blocks in `Thrower.Level2`: 14 finally runs in total.
//     Messages are "clrprof test exception #1" .. "#7".
// (b) Threads: exactly 3 `System.Threading.Thread`s are created, named "worker-1",
//     "worker-2", "worker-3"; all are started, then all joined. Each runs
//     `Events.Worker.Run(int id)` once.
// (c) GC: `GC.Collect(0)` twice, then `GC.Collect(1)` once, then
//     `GC.Collect(2, GCCollectionMode.Forced, true)` once: 4 induced GCs, generations 0, 0, 1, 2
//     in that order. The program allocates little, so normally no other GC happens; count by
//     reason (induced) to be safe.
// (d) `Events.KnownClass.KnownMethod(int, string)` (static, returns string) is called exactly
//     once, with (42, "answer").
// (e) P/Invoke: `getpid` from "libc" (`Events.Native.getpid`) is called exactly 5 times.
// (f) Allocations: exactly 1000 `Events.Payload` objects and 1 `Events.Payload[]` (length 1000).
//
// Output (deterministic; no pids, times or addresses):
//     known: answer=42
//     allocations: 1000 Events.Payload, checksum=499500
//     exceptions: thrown=7 caught=7 filters=14 finally=14 last="clrprof test exception #7"
//     threads: started=3 joined=3 results=[worker-1:299995, worker-2:599990, worker-3:899985]
//     gc: induced gen0 x2, gen1 x1, gen2 x1
//     pinvoke: getpid calls=5 consistent=True
//     done
//
// Every method named above is [MethodImpl(NoInlining)] and no call of interest is in tail
// position, so the stacks above hold whatever the JIT and the profiler settings are.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class ClrprofTestException : Exception
{
    public readonly int Sequence;

    public ClrprofTestException(int sequence)
        : base("clrprof test exception #" + sequence)
    {
        Sequence = sequence;
    }
}

static class Thrower
{
    public static int Thrown;
    public static int FilterRuns;
    public static int FinallyRuns;
    public static int Returned; // never incremented: every call chain ends in a throw

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void ThrowDeep(int depth)
    {
        Level1(depth);
        Returned++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Level1(int depth)
    {
        try
        {
            Level2(depth);
        }
        catch (ClrprofTestException e) when (Filter(e))
        {
            Console.WriteLine("unreachable: caught in Level1");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Level2(int depth)
    {
        try
        {
            Level3(depth);
        }
        finally
        {
            FinallyRuns++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Level3(int depth)
    {
        if (depth > 1)
            Level1(depth - 1);
        else
            Throw();
        Returned++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Throw()
    {
        Thrown++;
        throw new ClrprofTestException(Thrown);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static bool Filter(ClrprofTestException e)
    {
        FilterRuns++;
        return false;
    }
}

static class Catcher
{
    public static int Caught;
    public static string LastMessage = "";

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool CatchIt()
    {
        try
        {
            Thrower.ThrowDeep(2);
            return false;
        }
        catch (ClrprofTestException e)
        {
            Caught++;
            LastMessage = e.Message;
            return true;
        }
    }
}

namespace Events
{
    class KnownClass
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string KnownMethod(int number, string text)
        {
            return text + "=" + number;
        }
    }

    class Payload
    {
        public int Id;
        public double Value;
        public Payload Next;
    }

    static class Worker
    {
        public static readonly long[] Results = new long[3];

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Run(int id)
        {
            long sum = 0;
            for (int i = 0; i < 100000; i++)
                sum += (i % 7) * id;
            Results[id - 1] = sum;
        }
    }

    static class Native
    {
        [DllImport("libc")]
        public static extern int getpid();
    }

    static class Program
    {
        static int Main()
        {
            // (d) the known method, once
            string known = KnownClass.KnownMethod(42, "answer");
            Console.WriteLine("known: " + known);

            // (f) allocations
            var payloads = new Payload[1000];
            for (int i = 0; i < payloads.Length; i++)
            {
                payloads[i] = new Payload { Id = i, Value = i * 0.5 };
                if (i > 0)
                    payloads[i].Next = payloads[i - 1];
            }
            long checksum = 0;
            for (var p = payloads[payloads.Length - 1]; p != null; p = p.Next)
                checksum += p.Id;
            Console.WriteLine("allocations: " + payloads.Length + " Events.Payload, checksum=" + checksum);

            // (a) exceptions
            int caught = 0;
            for (int i = 0; i < 7; i++)
            {
                if (Catcher.CatchIt())
                    caught++;
            }
            Console.WriteLine(
                "exceptions: thrown=" + Thrower.Thrown + " caught=" + caught
                + " filters=" + Thrower.FilterRuns + " finally=" + Thrower.FinallyRuns
                + " last=\"" + Catcher.LastMessage + "\"");

            // (b) threads
            var threads = new Thread[3];
            for (int i = 0; i < threads.Length; i++)
            {
                int id = i + 1;
                threads[i] = new Thread(() => Worker.Run(id));
                threads[i].Name = "worker-" + id;
            }
            int started = 0, joined = 0;
            foreach (var t in threads)
            {
                t.Start();
                started++;
            }
            foreach (var t in threads)
            {
                t.Join();
                joined++;
            }
            Console.WriteLine(
                "threads: started=" + started + " joined=" + joined + " results=[worker-1:"
                + Worker.Results[0] + ", worker-2:" + Worker.Results[1] + ", worker-3:"
                + Worker.Results[2] + "]");

            // (c) induced GCs; the payloads stay alive across them
            GC.Collect(0);
            GC.Collect(0);
            GC.Collect(1);
            GC.Collect(2, GCCollectionMode.Forced, true);
            GC.KeepAlive(payloads);
            Console.WriteLine("gc: induced gen0 x2, gen1 x1, gen2 x1");

            // (e) P/Invoke
            int first = Native.getpid();
            bool consistent = first > 0;
            for (int i = 1; i < 5; i++)
            {
                if (Native.getpid() != first)
                    consistent = false;
            }
            Console.WriteLine("pinvoke: getpid calls=5 consistent=" + consistent);

            Console.WriteLine("done");
            return 0;
        }
    }
}
