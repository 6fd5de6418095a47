// HeapCost: a large live heap and much short-lived garbage, for what heap snapshots cost until
// one is taken (tests/e2e_heap_cost.rs).
//
// Usage: HeapCost LIVE ROUNDS [DIR]
//
// 1. Builds the live heap: `HeapCost.Program.Items`, an `HeapCost.Item[LIVE]` holding exactly
//    LIVE `HeapCost.Item` objects (no other Item exists), each owning a `long[2]`; then
//    `HeapCost.Program.Strings`, a `string[64]` holding 64 strings of 0 to 63 characters,
//    allocated one right after the other (their sizes, 22 + 2 * length bytes, are multiples of
//    8 only for every fourth length). No other `HeapCost.Marker` exists than the one in
//    `HeapCost.Program.Last`, allocated right after the strings.
// 2. With DIR: writes its process id to DIR/pid.
// 3. Churns ROUNDS rounds of garbage: per round 10,000 `HeapCost.Garbage` (32 bytes each) and
//    100 `byte[1000]`, none kept beyond the round. With DIR, it then goes on churning until the
//    file DIR/go exists and a generation-2 collection has happened since step 2 (the one a
//    snapshot forces; the churn itself promotes almost nothing), at most 120 s.
// 4. Prints "live: LIVE items, 64 strings", "churn: ROUNDS rounds" (the rounds of step 3's first
//    part: deterministic) and, on standard error, "collections: N" (GC.CollectionCount(0) at
//    the end: every collection since the process started).
//
// Every method is [MethodImpl(NoInlining)].
using System;
using System.IO;
using System.Runtime.CompilerServices;

namespace HeapCost
{
    class Item
    {
        public long[] Data;
        public int Index;
    }

    class Garbage
    {
        public long A;
        public long B;
    }

    class Marker
    {
        public int Value;
    }

    static class Program
    {
        public static Item[] Items;
        public static string[] Strings;
        public static Marker Last;
        static long sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void BuildLive(int live)
        {
            Items = new Item[live];
            for (int i = 0; i < live; i++)
            {
                Items[i] = new Item { Data = new long[2], Index = i };
            }
            Strings = new string[64];
            for (int i = 0; i < 64; i++)
            {
                Strings[i] = new string((char)('a' + i % 26), i);
            }
            Last = new Marker { Value = 64 };
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Round(int round)
        {
            for (int i = 0; i < 10000; i++)
            {
                var g = new Garbage { A = i, B = round };
                sink += g.A ^ g.B;
            }
            for (int i = 0; i < 100; i++)
            {
                var b = new byte[1000];
                b[i] = 1;
                sink += b[0];
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main(string[] args)
        {
            int live = int.Parse(args[0]);
            int rounds = int.Parse(args[1]);
            string dir = args.Length > 2 ? args[2] : null;
            BuildLive(live);
            int gen2 = GC.CollectionCount(2);
            if (dir != null)
            {
                string pid = File.ReadAllText("/proc/self/stat").Split(' ')[0];
                File.WriteAllText(Path.Combine(dir, "pid.tmp"), pid);
                File.Move(Path.Combine(dir, "pid.tmp"), Path.Combine(dir, "pid"));
            }
            for (int r = 0; r < rounds; r++)
            {
                Round(r);
            }
            if (dir != null)
            {
                var watch = System.Diagnostics.Stopwatch.StartNew();
                int extra = 0;
                while ((!File.Exists(Path.Combine(dir, "go")) || GC.CollectionCount(2) == gen2)
                    && watch.ElapsedMilliseconds < 120000)
                {
                    Round(extra++);
                }
            }
            Console.WriteLine("live: " + Items.Length + " items, " + Strings.Length + " strings");
            Console.WriteLine("churn: " + rounds + " rounds");
            Console.Error.WriteLine("collections: " + GC.CollectionCount(0));
            GC.KeepAlive(Last);
            return sink == 42 ? 1 : 0;
        }
    }
}
