// ReJit: methods a profiler re-JITs with new IL while the program runs, then reverts.
//
// - `ReJit.Value()` (not inlined) returns 1.
// - `ReJit.Inlinee()` returns 10 and is small enough to be inlined into `ReJit.Caller()`
//   (not inlined itself), which returns Inlinee() + 1. Run with tiered compilation off so that
//   Caller is optimized (and Inlinee inlined) from its first compilation.
// - `ReJit.AskRejit()` and `ReJit.AskRevert()` do nothing; their first (and only) calls tell
//   a watching profiler (through JITCompilationStarted) to request the ReJIT and the revert.
// After AskRejit the program calls Value() once per millisecond until it returns something
// other than 1, after AskRevert until it returns 1 again, each time for at most the number of
// milliseconds given as the first argument (default 20000).
//
// Output without a profiler:
//   before: value=1 caller=11
//   after rejit: value=1 caller=11 changed=False
//   after revert: value=1 caller=11 original=True
// With the probe's `rejit` scenario (Value -> 2, Inlinee -> 20 and its inliner Caller
// re-JIT'd too):
//   before: value=1 caller=11
//   after rejit: value=2 caller=21 changed=True
//   after revert: value=1 caller=11 original=True
// If the runtime does not track inliners (COMPlus_ProfApi_RejitOnAttach=0), Caller keeps the
// copy of Inlinee it inlined before the ReJIT: `after rejit: value=2 caller=11 changed=True`.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

class ReJit
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Value()
    {
        return 1;
    }

    static int Inlinee()
    {
        return 10;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Caller()
    {
        return Inlinee() + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AskRejit()
    {
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AskRevert()
    {
    }

    // Calls Value() until it is (`equal`) or is not (`!equal`) `value`; true if that
    // happened within the time limit.
    static bool WaitFor(bool equal, int value, int milliseconds)
    {
        for (int i = 0; i < milliseconds; i++)
        {
            if ((Value() == value) == equal)
                return true;
            Thread.Sleep(1);
        }
        return false;
    }

    static int Main(string[] args)
    {
        int limit = args.Length > 0 ? int.Parse(args[0]) : 20000;
        Console.WriteLine("before: value=" + Value() + " caller=" + Caller());
        AskRejit();
        bool changed = WaitFor(false, 1, limit);
        Console.WriteLine("after rejit: value=" + Value() + " caller=" + Caller() + " changed=" + changed);
        AskRevert();
        bool original = WaitFor(true, 1, limit);
        Console.WriteLine("after revert: value=" + Value() + " caller=" + Caller() + " original=" + original);
        return 0;
    }
}
