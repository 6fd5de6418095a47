// Timeline: runtime events with exactly known counts, for the exceptions, JIT, loads,
// threads, native-call and suspension views.
//
// Without arguments. Exact facts (every method named here is [MethodImpl(NoInlining)]):
// (a) Exceptions: `Thrower.Throw(int)` throws 7 `TimelineException`s with the messages
//     "failure #1" .. "failure #7". Each passes through `Middle.Call(int)` (one finally
//     block, run once per exception) and is caught two frames up, in
//     `Catcher.CatchIt(int)`, by a handler with a filter (`Catcher.Wanted`, run once per
//     exception) that has its own finally block. The 7th exception is rethrown (`throw;`)
//     from that handler and caught again in the same method by an outer handler, whose
//     finally block also runs. So: 7 exceptions thrown, 1 of them rethrown once, all 7
//     finally caught in `Catcher.CatchIt(int)`; finally blocks run: 7 in `Middle.Call(int)`
//     and 7 + 7 in `Catcher.CatchIt(int)`.
// (b) P/Invoke: `Native.Abs(int)` ([DllImport("libc", EntryPoint = "abs")]) is called
//     exactly 1,000 times.
// (c) Threads: two threads named "timeline-a" and "timeline-b" are started, each runs
//     `Work.Run()` once, and both are joined before Main returns.
// (d) JIT: `Program.KnownMethod(int, string)` is compiled; its IL is
//     ldarg.0, ldarg.1, callvirt String::get_Length, add, ret: 9 bytes.
// (e) GC: two induced full collections (GC.Collect()).
// Output:
//     caught 7, rethrown 1, finally 21
//     abs sum 500500
//     threads done 2
//     known 12
//     gcs induced
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class TimelineException : Exception
{
    public TimelineException(string message) : base(message) { }
}

static class Counters
{
    public static int Caught;
    public static int Rethrown;
    public static int Finally;
}

static class Thrower
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Throw(int i)
    {
        throw new TimelineException("failure #" + i);
    }
}

static class Middle
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Call(int i)
    {
        try
        {
            Thrower.Throw(i);
        }
        finally
        {
            Counters.Finally++;
        }
    }
}

static class Catcher
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool Wanted(TimelineException e)
    {
        return e.Message.StartsWith("failure", StringComparison.Ordinal);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void CatchIt(int i)
    {
        try
        {
            try
            {
                Middle.Call(i);
            }
            catch (TimelineException e) when (Wanted(e))
            {
                if (i == 7)
                {
                    Counters.Rethrown++;
                    throw;
                }
                Counters.Caught++;
            }
            finally
            {
                Counters.Finally++;
            }
        }
        catch (TimelineException)
        {
            Counters.Caught++;
        }
        finally
        {
            Counters.Finally++;
        }
    }
}

static class Native
{
    [DllImport("libc", EntryPoint = "abs")]
    public static extern int Abs(int value);
}

static class Work
{
    public static int Done;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Run()
    {
        Thread.Sleep(20);
        Interlocked.Increment(ref Done);
    }
}

static class Program
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int KnownMethod(int a, string b)
    {
        return a + b.Length;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Main(string[] args)
    {
        for (int i = 1; i <= 7; i++)
            Catcher.CatchIt(i);
        Console.WriteLine("caught " + Counters.Caught + ", rethrown " + Counters.Rethrown
            + ", finally " + Counters.Finally);

        long sum = 0;
        for (int i = 1; i <= 1000; i++)
            sum += Native.Abs(-i);
        Console.WriteLine("abs sum " + sum);

        var a = new Thread(Work.Run) { Name = "timeline-a" };
        var b = new Thread(Work.Run) { Name = "timeline-b" };
        a.Start();
        b.Start();
        a.Join();
        b.Join();
        Console.WriteLine("threads done " + Work.Done);

        Console.WriteLine("known " + KnownMethod(5, "seven!!"));

        GC.Collect();
        GC.Collect();
        Console.WriteLine("gcs induced");
        return 0;
    }
}
