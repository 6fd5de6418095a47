// Loops: methods that spend their first call in a long loop, which .NET 7+ moves to an
// on-stack-replacement (OSR) version of the method in the middle of that call.
//
// Main runs 60 rounds of Loops.Multiply(2,000,000) and Loops.Shift(1,500,000) (integer loops,
// [MethodImpl(NoInlining)]), then Loops.Outer(2,000,000), a loop that calls Loops.Inner() (also
// NoInlining) on every iteration. At the runtime's default tiering each loop method's first
// call starts in Tier0 code and continues in its OSR version (on .NET 7+; 3.1 compiles methods
// with loops optimized at once), until call counting promotes it to Tier1. However its code was
// made, every sample in these methods has Main as the caller (and Inner has Outer, then Main).
//
// Output:
//   loops: done
using System;
using System.Runtime.CompilerServices;

static class Loops
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Multiply(long n)
    {
        long x = 1;
        for (long i = 0; i < n; i++)
        {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Shift(long n)
    {
        long x = 7;
        for (long i = 0; i < n; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Inner(long x)
    {
        for (int i = 0; i < 20; i++)
        {
            x = x * 31 + i;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Outer(long n)
    {
        long x = 3;
        for (long i = 0; i < n; i++)
        {
            x = Inner(x);
        }
        return x;
    }

    static void Main()
    {
        for (int round = 0; round < 60; round++)
        {
            sink += Multiply(2000000);
            sink += Shift(1500000);
        }
        sink += Outer(2000000);
        Console.WriteLine(sink == 42 ? "loops: unlikely" : "loops: done");
    }
}
