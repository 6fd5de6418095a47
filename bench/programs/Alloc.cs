// Benchmark workload: allocation-heavy. Many short-lived small objects, arrays, strings and
// lists, with a small rotating set of survivors, so the GC runs many gen0 collections.
//
// Protocol: see Protocol.cs; stderr says how many gen0 collections the work made.
// @include Protocol.cs
// @include ProcessCpu.cs
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

sealed class Node
{
    public int Value;
    public Node Next;
    public int[] Payload;

    public Node(int value, Node next)
    {
        Value = value;
        Next = next;
        Payload = new int[4 + (value & 7)];
        Payload[0] = value;
    }
}

static class Alloc
{
    const int Iterations = 1100;

    static int Main()
    {
        Protocol.Go();

        long checksum = 0;
        object[] survivors = new object[4096];
        int gen0Before = GC.CollectionCount(0);
        for (int it = 0; it < Iterations; it++)
        {
            // Linked lists of small objects with small arrays.
            Node head = null;
            for (int i = 0; i < 20000; i++)
                head = new Node(i ^ it, head);
            for (Node n = head; n != null; n = n.Next)
                checksum += n.Payload[0] + n.Payload.Length;

            // Strings and lists.
            List<string> words = new List<string>();
            for (int i = 0; i < 5000; i++)
                words.Add("w" + (i * 31 + it).ToString(CultureInfo.InvariantCulture));
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < words.Count; i += 50)
                sb.Append(words[i]).Append('|');
            string joined = sb.ToString();
            checksum += joined.Length + words[words.Count - 1].Length;

            // Boxed values and dictionaries.
            Dictionary<int, List<int>> buckets = new Dictionary<int, List<int>>();
            for (int i = 0; i < 8000; i++)
            {
                List<int> bucket;
                if (!buckets.TryGetValue(i % 97, out bucket))
                {
                    bucket = new List<int>();
                    buckets[i % 97] = bucket;
                }
                bucket.Add(i);
                object boxed = i;
                checksum += (int)boxed & 1;
            }
            checksum += buckets.Count;

            // Keep a few objects alive for a while so some survive into older generations.
            for (int i = 0; i < 64; i++)
            {
                int slot = (it * 64 + i) % survivors.Length;
                survivors[slot] = new byte[64 + i];
            }
        }
        for (int i = 0; i < survivors.Length; i++)
        {
            byte[] b = survivors[i] as byte[];
            if (b != null)
                checksum += b.Length;
        }

        Protocol.Stop();
        int gen0 = GC.CollectionCount(0) - gen0Before;
        Console.Error.WriteLine("gen0 collections: " + gen0.ToString(CultureInfo.InvariantCulture));
        return Protocol.Finish(checksum);
    }
}
