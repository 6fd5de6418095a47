// Memory: allocations, garbage collections and (for heap snapshots) a retained object graph.
//
// Modes (first argument; tests assert these exact facts):
//
// exact (default): `Memory.Program.MakeNodes(int)` allocates exactly 12,345 `Memory.Node`
//     objects (each 40 bytes: object header, method table, two longs and a reference), and
//     `Memory.Program.MakeBuffers(int)` allocates exactly 5,000 `byte[100]` (each 128 bytes
//     on the heap: a 24-byte array header and 100 bytes, rounded up to 8). Nothing else allocates a `Memory.Node`.
//     Output: "nodes: 12345 checksum=304773360" and "buffers: 5000 bytes=500000".
// big: `Memory.Program.Churn(int)` allocates, interleaved, 5,000,000 `Memory.Small` (32 bytes
//     each: 160,000,000 bytes), 200,000 `int[200]` (824 bytes each: 164,800,000 bytes) and
//     50,000 `byte[4000]` (4,024 bytes each: 201,200,000 bytes): 526,000,000 bytes in total,
//     none kept alive. Output: "churn: small=5000000 ints=200000 bytes=50000 checksum=..."
//     (deterministic).
// gc: exactly 3 `GC.Collect()` (blocking, generation 2, reason induced) after a little
//     allocation. Output: "gc: induced 3 gen2 collections, gen2 count grew by >= 3: True".
// heap: a static `List<Memory.HeapNode>` (`Memory.Program.Kept`) gets 1,000 `Memory.HeapNode`,
//     each owning a `byte[1000]` (1,024 bytes) in its `Data` field; then `GC.Collect()`
//     (induced); then 500 more nodes (1,500 in all, each with its byte[1000]); then
//     `GC.Collect()` again. No other `Memory.HeapNode` exists. A HeapNode is 32 bytes
//     (header, method table, the reference and an int, padded).
//     Output: "heap: 1000 nodes", "heap: 1500 nodes".
// names: `Memory.Program.Named(int, nint, Memory.Pair, System.Collections.Generic.List<string>)`
//     allocates, one type after the other, each object stored in a static field (so that no
//     JIT may leave an allocation out: .NET 8's optimized code dropped the `char[][,]` whose
//     only use was its constant length, and then no tick named the type),
//     1,200,000 `Memory.Box<int, string>` (32 bytes each), 1,200,000
//     `Memory.Outer<int>.Inner<string>` (a generic type nested in a generic type, 32 bytes
//     each), 400,000 `System.Collections.Generic.Dictionary<nint, string>` (empty: no buckets),
//     400,000 `char[][,]` (arrays of 8 two-dimensional arrays, 88 bytes each) and 40,000
//     `nint[100]` (`IntPtr[]`, 824 bytes each): over 30 MB of each type, none kept alive.
//     Output: "names: checksum=..." (deterministic).
// signal DIR: builds the same list of 1,000 nodes, writes its process id to DIR/pid, then waits
//     (at most 60 s) until a full collection has happened or the file DIR/go exists.
//     Output: "heap: 1000 nodes".
//
// Every method named here is [MethodImpl(NoInlining)], so allocation stacks name them.
using System;
using System.Runtime.CompilerServices;

namespace Memory
{
    class Node
    {
        public long A;
        public long B;
        public object C;
    }

    class Small
    {
        public long X;
        public long Y;
    }

    class HeapNode
    {
        public byte[] Data;
        public int Id;
    }

    struct Pair
    {
        public int A;
        public int B;
    }

    class Box<K, V>
    {
        public K Key;
        public V Value;
    }

    class Outer<T>
    {
        public class Inner<U>
        {
            public T First;
            public U Second;
        }
    }

    class Program
    {
        static System.Collections.Generic.List<HeapNode> Kept;
        static Node[] nodes;
        static byte[][] buffers;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void MakeNodes(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var node = new Node();
                node.A = i;
                node.B = i * 3;
                nodes[i] = node;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void MakeBuffers(int n)
        {
            for (int i = 0; i < n; i++)
            {
                buffers[i] = new byte[100];
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Churn(int rounds)
        {
            long sum = 0;
            for (int i = 0; i < rounds; i++)
            {
                var s = new Small();
                s.X = i;
                sum += s.X & 7;
                if (i % 25 == 0)
                {
                    var ints = new int[200];
                    ints[i % 200] = 1;
                    sum += ints[0];
                }
                if (i % 100 == 0)
                {
                    var bytes = new byte[4000];
                    bytes[i % 4000] = 1;
                    sum += bytes[0];
                }
            }
            return sum;
        }

        static object escaped;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Named(int rounds, IntPtr seed, Pair pair, System.Collections.Generic.List<string> sink)
        {
            long sum = 0;
            for (int i = 0; i < rounds; i++)
            {
                var box = new Box<int, string>();
                escaped = box;
                box.Key = i;
                box.Value = sink[i % sink.Count];
                sum += box.Key & 7;
            }
            for (int i = 0; i < rounds; i++)
            {
                var inner = new Outer<int>.Inner<string>();
                escaped = inner;
                inner.First = i;
                inner.Second = sink[i % sink.Count];
                sum += inner.First & 7;
            }
            for (int i = 0; i < rounds; i += 3)
            {
                var map = new System.Collections.Generic.Dictionary<IntPtr, string>();
                escaped = map;
                sum += map.Count + pair.A;
            }
            for (int i = 0; i < rounds; i += 3)
            {
                var grids = new char[8][,];
                escaped = grids;
                sum += grids.Length + pair.B;
            }
            for (int i = 0; i < rounds; i += 30)
            {
                var pointers = new IntPtr[100];
                escaped = pointers;
                pointers[i % 100] = seed;
                sum += (long)pointers[0];
            }
            return sum;
        }

        static void Names()
        {
            var pair = new Pair();
            pair.A = 1;
            pair.B = 2;
            var sink = new System.Collections.Generic.List<string>();
            sink.Add("a");
            sink.Add("b");
            long sum = Named(1200000, new IntPtr(3), pair, sink);
            Console.WriteLine("names: checksum=" + sum);
        }

        static void Exact()
        {
            nodes = new Node[12345];
            buffers = new byte[5000][];
            MakeNodes(nodes.Length);
            MakeBuffers(buffers.Length);
            long checksum = 0;
            foreach (var n in nodes) checksum += n.A + n.B;
            long total = 0;
            foreach (var b in buffers) total += b.Length;
            Console.WriteLine("nodes: " + nodes.Length + " checksum=" + checksum);
            Console.WriteLine("buffers: " + buffers.Length + " bytes=" + total);
        }

        static void Big()
        {
            long sum = Churn(5000000);
            Console.WriteLine("churn: small=5000000 ints=200000 bytes=50000 checksum=" + sum);
        }

        static void Gc()
        {
            int before = GC.CollectionCount(2);
            for (int i = 0; i < 3; i++)
            {
                nodes = new Node[1000];
                MakeNodes(nodes.Length);
                GC.Collect();
            }
            bool grew = GC.CollectionCount(2) - before >= 3;
            Console.WriteLine("gc: induced 3 gen2 collections, gen2 count grew by >= 3: " + grew);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void AddHeapNodes(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var node = new HeapNode();
                node.Id = Kept.Count;
                node.Data = new byte[1000];
                Kept.Add(node);
            }
        }

        static void Heap()
        {
            Kept = new System.Collections.Generic.List<HeapNode>();
            AddHeapNodes(1000);
            GC.Collect();
            Console.WriteLine("heap: " + Kept.Count + " nodes");
            AddHeapNodes(500);
            GC.Collect();
            Console.WriteLine("heap: " + Kept.Count + " nodes");
        }

        static void WaitForSignal(string dir)
        {
            Kept = new System.Collections.Generic.List<HeapNode>();
            AddHeapNodes(1000);
            int before = GC.CollectionCount(2);
            // The first field of /proc/self/stat is the process id.
            string pid = System.IO.File.ReadAllText("/proc/self/stat").Split(' ')[0];
            string tmp = System.IO.Path.Combine(dir, "pid.tmp");
            System.IO.File.WriteAllText(tmp, pid);
            System.IO.File.Move(tmp, System.IO.Path.Combine(dir, "pid"));
            string go = System.IO.Path.Combine(dir, "go");
            var watch = System.Diagnostics.Stopwatch.StartNew();
            while (GC.CollectionCount(2) == before && !System.IO.File.Exists(go)
                   && watch.ElapsedMilliseconds < 60000)
            {
                System.Threading.Thread.Sleep(10);
            }
            Console.WriteLine("heap: " + Kept.Count + " nodes");
        }

        static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "exact";
            if (mode == "exact") Exact();
            else if (mode == "big") Big();
            else if (mode == "gc") Gc();
            else if (mode == "heap") Heap();
            else if (mode == "names") Names();
            else if (mode == "signal") WaitForSignal(args[1]);
            else
            {
                Console.WriteLine("unknown mode " + mode);
                return 2;
            }
            Console.WriteLine("done");
            return 0;
        }
    }
}
