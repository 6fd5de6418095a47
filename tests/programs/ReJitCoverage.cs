// ReJitCoverage: block counters turned on and off in a running program by ReJIT.
//
// - `Work(i)` (not inlined) counts even and odd arguments.
// - `Instrumented()` returns false; a profiler that re-JITs `Work` with block counters
//   re-JITs it in the same request to return true, and reverts both together, so the program
//   can tell when its calls of `Work` are counted.
// - `AskInstrument()` and `AskRevert()` do nothing; their first (and only) calls tell a
//   watching profiler (through JITCompilationStarted) to request the ReJIT and the revert.
//
// Main calls Work 5 times before, 7 times (i = 0..6: 4 even, 3 odd) while instrumented, and
// 9 times after the revert. A profiler counting Work's blocks therefore sees exactly: the
// entry block 7, the even branch 4, the odd branch 3, the join 7. Each wait is bounded by the
// first argument in milliseconds (default 20000).
//
// Output without a profiler:
//   before: evens=3 odds=2
//   instrumented=False
//   during: evens=7 odds=5
//   reverted=True
//   after: evens=12 odds=9
// With the probe's `rejit-coverage` scenario: `instrumented=True`, the rest unchanged.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

class ReJitCoverage
{
    static int evens;
    static int odds;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work(int i)
    {
        if (i % 2 == 0)
            evens++;
        else
            odds++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static bool Instrumented()
    {
        return false;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AskInstrument()
    {
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AskRevert()
    {
    }

    static bool WaitFor(bool value, int milliseconds)
    {
        for (int i = 0; i < milliseconds; i++)
        {
            if (Instrumented() == value)
                return true;
            Thread.Sleep(1);
        }
        return false;
    }

    static int Main(string[] args)
    {
        int limit = args.Length > 0 ? int.Parse(args[0]) : 20000;
        for (int i = 0; i < 5; i++)
            Work(i);
        Console.WriteLine("before: evens=" + evens + " odds=" + odds);
        AskInstrument();
        Console.WriteLine("instrumented=" + WaitFor(true, limit));
        for (int i = 0; i < 7; i++)
            Work(i);
        Console.WriteLine("during: evens=" + evens + " odds=" + odds);
        AskRevert();
        Console.WriteLine("reverted=" + WaitFor(false, limit));
        for (int i = 0; i < 9; i++)
            Work(i);
        Console.WriteLine("after: evens=" + evens + " odds=" + odds);
        return 0;
    }
}
