// NativeWork: spends most of its CPU time in the runtime's native code (libcoreclr), in the
// garbage collector, for the tests of naming native functions (e2e_native_names.rs).
//
// The main thread allocates 2,000,000 small objects (a Node and its byte array of 32 to 95
// bytes), keeping the last 50,000 of them reachable from an array and linked to each other,
// so that every collection marks, plans and compacts a heap of live objects: the collector's
// functions (mark, plan, relocate, compact) and the allocation helpers take most of the CPU.
// `rounds N` changes the count to N times 100,000.
//
// Output:
//   native: done 127000000
// (the sum of the arrays' lengths, for the default count: 2,000,000 times 63.5 on average).
using System;
using System.Runtime.CompilerServices;

class Node
{
    public Node Next;
    public byte[] Data;
}

static class NativeWork
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Churn(int rounds)
    {
        var keep = new Node[50000];
        long sum = 0;
        int i = 0;
        for (int r = 0; r < rounds; r++)
        {
            for (int k = 0; k < 100000; k++, i++)
            {
                var n = new Node { Data = new byte[32 + (i % 64)] };
                n.Next = keep[(i * 7) % keep.Length];
                keep[i % keep.Length] = n;
                sum += n.Data.Length;
            }
        }
        return sum;
    }

    static int Main(string[] args)
    {
        int rounds = 20;
        if (args.Length == 2 && args[0] == "rounds")
            rounds = int.Parse(args[1]);
        long sum = Churn(rounds);
        Console.WriteLine("native: done " + sum);
        return 0;
    }
}
