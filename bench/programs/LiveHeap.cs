// Benchmark workload: a large live heap, then much short-lived garbage (what heap snapshots
// cost until one is taken). Before `ready` it builds 600,000 `LiveHeap.Item`s, each with a
// `long[2]` (1,200,000 live objects, kept to the end); the timed work then allocates, in 12,000
// rounds, 120,000,000 `LiveHeap.Garbage` (32 bytes) and 1,200,000 `byte[1000]` (1,024 bytes):
// 5 GB of garbage that dies at once, hundreds of collections with the live heap in place.
// `LIVEHEAP_ITEMS` and `LIVEHEAP_ROUNDS` in the environment change the two numbers (the bench
// takes snapshots of 1 and 10 million objects with them).
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System;
using System.Globalization;

static class LiveHeap
{
    static int Setting(string name, int otherwise)
    {
        string text = Environment.GetEnvironmentVariable(name);
        return string.IsNullOrEmpty(text) ? otherwise : int.Parse(text, CultureInfo.InvariantCulture);
    }

    sealed class Item
    {
        public long[] Data;
        public int Index;
    }

    sealed class Garbage
    {
        public long A;
        public long B;
    }

    static Item[] items;
    static long sink;

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
            b[i] = (byte)round;
            sink += b[i];
        }
    }

    static int Main()
    {
        int live = Setting("LIVEHEAP_ITEMS", 600000);
        int rounds = Setting("LIVEHEAP_ROUNDS", 12000);
        items = new Item[live];
        for (int i = 0; i < live; i++)
            items[i] = new Item { Data = new long[2], Index = i };
        Protocol.Go();
        for (int r = 0; r < rounds; r++)
            Round(r);
        Protocol.Stop();
        long check = sink;
        foreach (var item in items)
            check += item.Index;
        return Protocol.Finish(check);
    }
}
