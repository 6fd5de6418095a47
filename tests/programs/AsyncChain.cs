// Async call chains with known facts (tests/e2e_async.rs):
//
// - `Main` calls `Outer(i)` 20 times and waits for each. `Outer` awaits `Middle<string>` (a
//   generic method: its state machine is a generic type), which awaits `Inner`, which awaits
//   `Task.Delay(5)` and then does CPU work in `Work` (about 20 ms each round, a fixed number of
//   iterations).
// - After the delay, `Inner`'s continuation runs on a thread-pool thread: its physical stack
//   is the pool's (`... → MoveNext → Work`), its logical one
//   `Outer → [await] → Middle → [await] → Inner → Work`. All of `Work`'s CPU is spent there.
// - With the argument `sync`, `Inner` does its work before awaiting anything: `Work` then runs
//   on the main thread, within the three methods' first runs, where the physical stack is
//   already `Main → Outer → Middle → Inner → Work` (no `[await]`).
// - stdout is the same on every run: `total N`.
using System;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;

namespace AsyncChain
{
    static class Program
    {
        static bool sync;

        static int Main(string[] args)
        {
            sync = args.Length > 0 && args[0] == "sync";
            long total = 0;
            for (int i = 0; i < 20; i++)
            {
                total += Outer(i).Result;
            }
            Console.WriteLine("total " + total);
            return 0;
        }

        static async Task<long> Outer(int i)
        {
            long r = await Middle("m", i);
            return r + 1;
        }

        static async Task<long> Middle<T>(T tag, int i)
        {
            long r = await Inner(i);
            return r * 2 + tag.ToString().Length;
        }

        static async Task<long> Inner(int i)
        {
            if (sync)
            {
                long early = Work(i);
                await Task.Delay(5);
                return early;
            }
            await Task.Delay(5);
            return Work(i);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Work(int seed)
        {
            ulong h = (ulong)seed + 1469598103934665603UL;
            for (int k = 0; k < 6000000; k++)
            {
                h ^= (ulong)k;
                h *= 1099511628211UL;
            }
            return (long)(h % 1000003UL);
        }
    }
}
