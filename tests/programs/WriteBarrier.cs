// WriteBarrier: stores references into the fields of objects on the heap, each store through
// the runtime's write barrier (the helper that tells the GC where references were written):
// .NET 7 and later run it from a copy in memory of their own, which only its content names.
//
// WriteBarrier.Store(Node[], object[], int) sets a reference field of each of 256 objects,
// 400,000 times over; the objects and the values stored are in the oldest generation (two
// collections before), so each store is the field write and the barrier's checks.
//
// Output: "stores: 102400000" (deterministic).
using System;
using System.Runtime.CompilerServices;

sealed class Node
{
    public object Value;
}

static class WriteBarrier
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Store(Node[] nodes, object[] values, int rounds)
    {
        long stores = 0;
        for (int r = 0; r < rounds; r++)
        {
            for (int i = 0; i < nodes.Length; i++)
            {
                nodes[i].Value = values[(i + r) & 63];
                stores++;
            }
        }
        return stores;
    }

    static void Main()
    {
        var nodes = new Node[256];
        for (int i = 0; i < nodes.Length; i++)
        {
            nodes[i] = new Node();
        }
        var values = new object[64];
        for (int i = 0; i < values.Length; i++)
        {
            values[i] = new object();
        }
        GC.Collect();
        GC.Collect();
        Console.WriteLine("stores: " + Store(nodes, values, 400000));
    }
}
