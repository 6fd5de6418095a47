// IlRewrite: methods whose IL a profiler replaces before they are first compiled.
//
// - `IlRewrite.Answer()` returns 41 (IL: ldc.i4.s 41; ret, a tiny header). It is small and
//   may be inlined into Main; a profiler that rewrites it at ModuleLoadFinished (before Main is
//   compiled) changes the inlined copy too.
// - `IlRewrite.Guarded(int)` (not inlined) has a try/finally: fat header with an exception
//   section. It doubles its argument, throws ArgumentException for negative ones, and counts
//   its finally runs in `Finallies`. `Prologues` is never written by the program: only IL a
//   profiler prepends to `Guarded` increments it.
//
// Output without a profiler:
//   answer=41
//   guarded: sum=106 finallies=4 prologues=0
// With the probe's `il-rewrite` scenario: `answer=42` and `prologues=4`, the rest unchanged.
using System;
using System.Runtime.CompilerServices;

class IlRewrite
{
    static int Prologues;
    static int Finallies;

    static int Answer()
    {
        return 41;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Guarded(int x)
    {
        try
        {
            if (x < 0)
                throw new ArgumentException("negative");
            return x * 2;
        }
        finally
        {
            Finallies++;
        }
    }

    static int Main()
    {
        Console.WriteLine("answer=" + Answer());
        int sum = 0;
        for (int i = 0; i < 3; i++)
            sum += Guarded(i);
        try
        {
            sum += Guarded(-1);
        }
        catch (ArgumentException)
        {
            sum += 100;
        }
        Console.WriteLine("guarded: sum=" + sum + " finallies=" + Finallies + " prologues=" + Prologues);
        return 0;
    }
}
