// Heap: objects with known layouts, kept in static fields, for a profiler to inspect.
//
// Objects (all reachable from statics of class `Heap` until the end):
//   P     : Point3 { long X = 1, Y = 2, Z = 3 }    40 bytes on 64-bit (8 header + 8 MT + 24)
//   Arr   : int[7] { 0, 1, 4, 9, 16, 25, 36 }
//   S     : "clrprof-heap" (12 chars, built at run time, not a literal)
//   N     : Node { A = P, Name = S, Numbers = Arr, Next = N2 }   N2 = Node with all fields null
//   Boxed : a boxed Pair { int A = 5, B = 6 }
//   Count : int static, 7;  Tls : [ThreadStatic] int, 9 on the main thread;  K: const 5
//
// Sequence: allocate and link everything, GC.Collect() twice (the objects are then in
// generation 2), set `Phase = 1`, GC.Collect() once more: a profiler inspects the objects in
// that GC's GarbageCollectionFinished. Then `Phase = 2`. With the argument `wait-forced-gc`
// the program then waits (at most 20 s) for one more generation-2 GC it did not induce
// itself (a profiler's ForceGC).
//
// Output without the argument:
//   point=1,2,3 arr=91 s=clrprof-heap boxed=11 tls=9 count=7
// With it, the line "forced gc: True" (False if no such GC came) comes first.
using System;
using System.Threading;

class Point3
{
    public long X, Y, Z;
}

class Node
{
    public object A;
    public string Name;
    public int[] Numbers;
    public Node Next;
}

struct Pair
{
    public int A;
    public int B;
}

class Heap
{
    const int K = 5;
    static int Phase;
    static int Count;
    [ThreadStatic] static int Tls;
    static Point3 P;
    static int[] Arr;
    static string S;
    static Node N;
    static object Boxed;

    static int Main(string[] args)
    {
        P = new Point3();
        P.X = 1;
        P.Y = 2;
        P.Z = 3;
        Arr = new int[7];
        for (int i = 0; i < Arr.Length; i++)
            Arr[i] = i * i;
        S = string.Concat("clrprof-", "heap".ToLowerInvariant());
        N = new Node();
        N.A = P;
        N.Name = S;
        N.Numbers = Arr;
        N.Next = new Node();
        Pair pair;
        pair.A = 5;
        pair.B = 6;
        Boxed = pair;
        Count = 7;
        Tls = 9;

        GC.Collect();
        GC.Collect();
        Phase = 1;
        GC.Collect();
        Phase = 2;

        if (args.Length > 0 && args[0] == "wait-forced-gc")
        {
            int before = GC.CollectionCount(2);
            bool seen = false;
            for (int i = 0; i < 20000 && !seen; i++)
            {
                Thread.Sleep(1);
                seen = GC.CollectionCount(2) > before;
            }
            Console.WriteLine("forced gc: " + seen);
        }

        int sum = 0;
        foreach (int v in N.Numbers)
            sum += v;
        Pair back = (Pair)Boxed;
        Console.WriteLine("point=" + P.X + "," + P.Y + "," + P.Z + " arr=" + sum + " s=" + N.Name
            + " boxed=" + (back.A + back.B) + " tls=" + Tls + " count=" + Count);
        return 0;
    }
}
