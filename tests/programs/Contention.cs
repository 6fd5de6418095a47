// Lock contention with known facts (tests/e2e_contention.rs):
//
// - Two threads, named `holder` and `waiter`, fight for one `Contention.Ledger` object in
//   exactly 50 rounds. In each round `holder` takes the lock, lets `waiter` go and sleeps
//   20 ms inside the lock; `waiter` then enters `lock (ledger)` in `Program.Take()` and waits
//   until `holder` leaves it. `holder` leaves only once `waiter` is blocked entering (on a
//   loaded machine `waiter` may be scheduled late: `holder` then sleeps on in 1 ms steps), and
//   starts the next round only after `waiter` released the lock, so `waiter` is the only
//   thread that ever waits for it, once per round: 50 contended acquisitions of a
//   `Contention.Ledger`, site `Contention.Program.Take()`, held by `holder`.
// - `holder` spends 50 x 20 ms = 1 s in `Thread.Sleep`; the main thread waits for both in
//   `Thread.Join`.
// - With the argument `long`, one round only, in which `holder` sleeps 1000 ms in one
//   `Thread.Sleep` inside the lock: one long sleep, one long wait for the lock, one long join,
//   each a single wait that wall-clock samples see whole. Meanwhile a thread named `poller`
//   waits 1000 ms in `Socket.Poll` on a listening socket nobody connects to (`polled_us N`).
// - stdout is the same on every run; stderr says how long `waiter` waited in all, measured
//   around the `lock` statement (`waited_us N`), how long `holder` slept (`slept_us N`) and
//   how long the main thread spent in `Thread.Join` (`joined_us N`).
// @reference System.Net.Primitives
// @reference System.Net.Sockets
using System;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Threading;

namespace Contention
{
    class Ledger
    {
        public long Entries;
    }

    static class Program
    {
        static int Rounds = 50;
        static int HoldMs = 20;
        static readonly Ledger ledger = new Ledger();
        static readonly AutoResetEvent ready = new AutoResetEvent(false);
        static readonly AutoResetEvent done = new AutoResetEvent(false);
        static long waitedTicks;
        static long sleptTicks;
        static volatile bool entering;
        static Thread waiter;

        static void Hold()
        {
            for (int i = 0; i < Rounds; i++)
            {
                lock (ledger)
                {
                    ready.Set();
                    Stopwatch watch = Stopwatch.StartNew();
                    Thread.Sleep(HoldMs);
                    while (!entering || (waiter.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0)
                    {
                        Thread.Sleep(1);
                    }
                    sleptTicks += watch.ElapsedTicks;
                    entering = false;
                    ledger.Entries++;
                }
                done.WaitOne();
            }
        }

        static void Wait()
        {
            for (int i = 0; i < Rounds; i++)
            {
                ready.WaitOne();
                Take();
                done.Set();
            }
        }

        static void Take()
        {
            Stopwatch watch = Stopwatch.StartNew();
            entering = true;
            lock (ledger)
            {
                waitedTicks += watch.ElapsedTicks;
                ledger.Entries++;
            }
        }

        static long polledTicks;

        static void PollIdle()
        {
            Socket listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            listener.Listen(1);
            Stopwatch watch = Stopwatch.StartNew();
            listener.Poll(1000000, SelectMode.SelectRead);
            polledTicks = watch.ElapsedTicks;
            listener.Close();
        }

        static int Main(string[] args)
        {
            Thread poller = null;
            if (args.Length > 0 && args[0] == "long")
            {
                Rounds = 1;
                HoldMs = 1000;
                poller = new Thread(PollIdle);
                poller.Name = "poller";
                poller.Start();
            }
            Thread holder = new Thread(Hold);
            holder.Name = "holder";
            waiter = new Thread(Wait);
            waiter.Name = "waiter";
            holder.Start();
            waiter.Start();
            Stopwatch joining = Stopwatch.StartNew();
            holder.Join();
            waiter.Join();
            long joinedTicks = joining.ElapsedTicks;
            if (poller != null)
            {
                poller.Join();
                Console.Error.WriteLine("polled_us " + polledTicks * 1000000 / Stopwatch.Frequency);
            }
            Console.WriteLine("entries " + ledger.Entries);
            long micros = waitedTicks * 1000000 / Stopwatch.Frequency;
            Console.Error.WriteLine("waited_us " + micros);
            Console.Error.WriteLine("slept_us " + sleptTicks * 1000000 / Stopwatch.Frequency);
            Console.Error.WriteLine("joined_us " + joinedTicks * 1000000 / Stopwatch.Frequency);
            return 0;
        }
    }
}
