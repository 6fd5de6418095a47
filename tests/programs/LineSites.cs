// LineSites: allocations, lock waits and throws on known lines, each marked `// @name`, for the
// line views of allocations, lock contention and exceptions (tests/e2e_lines.rs).
// Compiled with symbols (`.mdb`):
// @mcs -debug
//
// - `Warm()` first allocates one array of 1 MiB on no marked line: its tick stands for
//   whatever the large object heap took before it too (the runtime's start-up, which depends
//   on the environment: a locale's data, the variables), so that the ticks of `Allocate()`
//   stand for their own arrays.
// - `Allocate()` allocates 20 arrays of 1 MiB on the line `@alloc` (each a large object, so
//   each one is an allocation tick of its own) and nothing else.
// - `Catch(7)` calls `Throw(i)` 7 times from the line `@call-throw`; `Throw` throws on the line
//   `@throw`, and `Catch` catches each one.
// - `Contend(5)`: in each of 5 rounds the main thread takes `Gate`, starts a thread that runs
//   `Enter()`, waits until that thread is blocked entering `lock (Gate)` on the line `@lock`,
//   holds the lock 20 ms more and leaves it: 5 contended acquisitions, all on that line.
//
// Output: `allocated 20971520`, `caught 7`, `contended 5`.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

static class LineSites
{
    static readonly object Gate = new object();
    static readonly byte[][] Kept = new byte[20][];
    static byte[] warm;
    static volatile bool entering;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Warm()
    {
        warm = new byte[1 << 20];
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Allocate()
    {
        long sum = 0;
        for (int i = 0; i < Kept.Length; i++)
        {
            Kept[i] = new byte[1 << 20]; // @alloc
            sum += Kept[i].Length;
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Throw(int i)
    {
        throw new InvalidOperationException("site"); // @throw
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Catch(int n)
    {
        int caught = 0;
        for (int i = 0; i < n; i++)
        {
            try
            {
                Throw(i); // @call-throw
            }
            catch (InvalidOperationException)
            {
                caught++;
            }
        }
        return caught;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Enter()
    {
        entering = true;
        lock (Gate) // @lock
        {
            entering = false;
        }
    }

    static int Contend(int rounds)
    {
        for (int r = 0; r < rounds; r++)
        {
            Thread waiter = new Thread(Enter);
            lock (Gate)
            {
                waiter.Start();
                while (!entering || (waiter.ThreadState & ThreadState.WaitSleepJoin) == 0)
                {
                    Thread.Sleep(1);
                }
                Thread.Sleep(20);
            }
            waiter.Join();
        }
        return rounds;
    }

    static int Main()
    {
        Warm();
        Console.WriteLine("allocated " + Allocate());
        Console.WriteLine("caught " + Catch(7));
        Console.WriteLine("contended " + Contend(5));
        return 0;
    }
}
