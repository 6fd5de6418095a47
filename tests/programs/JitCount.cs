// JitCount: a program whose own module JIT-compiles a known number of methods, for the
// jit-counter example profiler. Expected stdout: `result: 8364` (no arguments).
//
// Every method below runs exactly once, so each is JIT-compiled exactly once:
//   - no static fields, so no static constructor; a static class, so no instance constructor;
//   - no lambdas, iterators, async or string interpolation, so no compiler-generated methods;
//   - NoInlining on every step, so the JIT cannot fold a step into Main;
//   - nothing runs 30 times, so tiered compilation never recompiles a method at tier 1.
// Methods JIT-compiled in JitCount.dll: Main + Step01..Step12 = 13.
using System;
using System.Runtime.CompilerServices;

static class JitCount
{
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step01(int x) { return x + 1; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step02(int x) { return x * 2; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step03(int x) { return x + 3; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step04(int x) { return x * 4; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step05(int x) { return x - 5; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step06(int x) { return x * 6; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step07(int x) { return x + 7; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step08(int x) { return x * 8; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step09(int x) { return x - 9; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step10(int x) { return x * 10; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step11(int x) { return x / 11; }
    [MethodImpl(MethodImplOptions.NoInlining)] static int Step12(int x) { return x * 12; }

    static int Main()
    {
        int v = 0;
        v = Step01(v);
        v = Step02(v);
        v = Step03(v);
        v = Step04(v);
        v = Step05(v);
        v = Step06(v);
        v = Step07(v);
        v = Step08(v);
        v = Step09(v);
        v = Step10(v);
        v = Step11(v);
        v = Step12(v);
        Console.WriteLine("result: " + v);
        return 0;
    }
}
