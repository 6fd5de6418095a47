// Continuous: the program continuous profiling's tests profile by environment variables alone
// (tests/e2e_export.rs). It does four things, one after another, each in a method of its own
// ([MethodImpl(NoInlining)], so that stacks name them), and prints one line for each:
//
// 1. `Continuous.Hot.Spin(long)` computes 800,000,000 steps of a recurrence on the main thread
//    (one to two seconds of CPU): the program's hot method. Output: "spin: done".
// 2. `Continuous.Allocator.Allocate(int)` allocates 2,000,000 `Continuous.Blob` (48 bytes each
//    on a 64-bit runtime: object header, method table and four longs: 96,000,000 bytes), none
//    kept alive. Nothing else allocates a `Blob`. Output: "allocated: 1999999000000".
// 3. `Continuous.Thrower.Run(int)` calls `Continuous.Thrower.Throw(int)` 7 times, which throws
//    an `InvalidOperationException` each time, caught in `Run`: exactly 7 exceptions thrown,
//    all at one site. Output: "caught: 7".
// 4. Sleeps 1.5 s (so that a period of 1 s ends after the work), then prints "done" and
//    returns 0.
//
// With the argument `short` it does only the last step (the program of the fault tests). With
// `busy SECONDS` it calls `Hot.Spin(long)` with 10,000,000 steps again and again for that many
// seconds of wall time, then prints "done" (a program that has CPU samples in every period).
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Continuous
{
    class Blob
    {
        public long A, B, C, D;
    }

    static class Hot
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Spin(long steps)
        {
            long x = 1;
            for (long i = 0; i < steps; i++)
                x = x * 6364136223846793005L + 1442695040888963407L + i;
            return x;
        }
    }

    static class Allocator
    {
        public static Blob Last;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Allocate(int count)
        {
            long sum = 0;
            for (int i = 0; i < count; i++)
            {
                var b = new Blob();
                b.A = i;
                sum += b.A;
                if ((i & 0xFFFF) == 0)
                    Last = b;
            }
            return sum;
        }
    }

    static class Thrower
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Throw(int i)
        {
            throw new InvalidOperationException("failure " + i);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Run(int times)
        {
            int caught = 0;
            for (int i = 0; i < times; i++)
            {
                try
                {
                    Throw(i);
                }
                catch (InvalidOperationException)
                {
                    caught++;
                }
            }
            return caught;
        }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main(string[] args)
        {
            if (args.Length == 2 && args[0] == "busy")
            {
                var until = DateTime.UtcNow.AddSeconds(int.Parse(args[1]));
                long x = 0;
                while (DateTime.UtcNow < until)
                    x += Hot.Spin(10000000);
                Console.WriteLine(x != 0 ? "done" : "done");
                return 0;
            }
            if (args.Length == 0 || args[0] != "short")
            {
                Console.WriteLine("spin: " + (Hot.Spin(800000000) != 0 ? "done" : "done"));
                Console.WriteLine("allocated: " + Allocator.Allocate(2000000));
                Console.WriteLine("caught: " + Thrower.Run(7));
            }
            Thread.Sleep(1500);
            Console.WriteLine("done");
            return 0;
        }
    }
}
