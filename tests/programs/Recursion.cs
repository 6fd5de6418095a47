// Recursion: direct recursion in sample mode. Main calls Recursion.Down(20), which calls
// itself down to depth 0 (20 nested calls of Down below the first, 21 frames of Down in all),
// where it spins in Recursion.Spin() for about 1 s of CPU time. Each call adds 1 to the
// result of the one below it, so no call is in tail position.
//
// Run with COMPlus_TieredCompilation=0: the methods are then compiled once, fully optimized
// and with their frames, so that no on-stack replacement (.NET 7 and later) moves a frame.
//
// Output:
//   recursion: 20
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

static class Recursion
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Spin()
    {
        var watch = Stopwatch.StartNew();
        long x = 1;
        while (watch.ElapsedMilliseconds < 1000)
        {
            for (int i = 0; i < 100000; i++)
            {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Down(int n)
    {
        if (n == 0)
        {
            Spin();
            return 0;
        }
        return Down(n - 1) + 1;
    }

    static void Main()
    {
        Console.WriteLine("recursion: " + Down(20));
    }
}
