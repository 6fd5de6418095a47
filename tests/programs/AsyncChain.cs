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
// - With the argument `class`, `Middle` awaits `InnerByHand` instead: the same work after the
//   same delay, in a state machine written by hand as a class (`AsyncChain.InnerMachine`, as
//   C# compilers generate them in debug builds) rather than a struct.
// - With the argument `twice`, the rounds run once here and once more in a second copy of this
//   assembly, loaded from the same file into a second load context (`second`): two modules
//   of one file, each with its own state machines.
// - stdout is the same on every run: `total N` (and with `twice`, `second total N`).
// @reference System.Runtime.Loader
using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;
using System.Threading.Tasks;

namespace AsyncChain
{
    sealed class InnerMachine : IAsyncStateMachine
    {
        public AsyncTaskMethodBuilder<long> Builder;
        public int State;
        public int Seed;
        TaskAwaiter awaiter;

        public void MoveNext()
        {
            try
            {
                if (State == 0)
                {
                    awaiter = Task.Delay(5).GetAwaiter();
                    if (!awaiter.IsCompleted)
                    {
                        State = 1;
                        InnerMachine self = this;
                        Builder.AwaitUnsafeOnCompleted(ref awaiter, ref self);
                        return;
                    }
                }
                awaiter.GetResult();
            }
            catch (Exception e)
            {
                State = -2;
                Builder.SetException(e);
                return;
            }
            State = -2;
            Builder.SetResult(Program.Work(Seed));
        }

        public void SetStateMachine(IAsyncStateMachine machine)
        {
        }
    }

    static class Program
    {
        static bool sync;
        static bool byHand;

        static int Main(string[] args)
        {
            sync = args.Length > 0 && args[0] == "sync";
            byHand = args.Length > 0 && args[0] == "class";
            Console.WriteLine("total " + Rounds());
            if (args.Length > 0 && args[0] == "twice")
            {
                AssemblyLoadContext second = new AssemblyLoadContext("second");
                Assembly copy = second.LoadFromAssemblyPath(typeof(Program).Assembly.Location);
                MethodInfo rounds = copy.GetType("AsyncChain.Program")
                    .GetMethod("Rounds", BindingFlags.NonPublic | BindingFlags.Static);
                Console.WriteLine("second total " + (long)rounds.Invoke(null, null));
            }
            return 0;
        }

        static long Rounds()
        {
            long total = 0;
            for (int i = 0; i < 20; i++)
            {
                total += Outer(i).Result;
            }
            return total;
        }

        static async Task<long> Outer(int i)
        {
            long r = await Middle("m", i);
            return r + 1;
        }

        static async Task<long> Middle<T>(T tag, int i)
        {
            long r = byHand ? await InnerByHand(i) : await Inner(i);
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

        static Task<long> InnerByHand(int i)
        {
            InnerMachine machine = new InnerMachine();
            machine.Builder = AsyncTaskMethodBuilder<long>.Create();
            machine.Seed = i;
            machine.Builder.Start(ref machine);
            return machine.Builder.Task;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static long Work(int seed)
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
