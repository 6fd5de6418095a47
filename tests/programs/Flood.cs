// Flood: more runtime events than a small agent buffer holds, with exact counts to check that
// every event and sample is accounted for (seen, or counted as lost).
//
// The main thread throws and catches exactly `Throws` `FloodException`s, induces
// `Collections` garbage collections (`GC.Collect(0)`), and spins between them. No other
// exception is thrown. Each exception is thrown `Depth` frames below its catcher, each frame
// with a `finally`: unwinding it makes a burst of about 6 events a frame (search, unwind and
// finally, each entered and left), so that events come faster than a small buffer is drained
// however slow the machine (throwing is the costly part, not passing frames). It prints how many
// collections the runtime made in all (`GC.CollectionCount(0)`: every collection collects
// generation 0), so that a test can compare the GCs a report shows with the truth.
//
// Output:
//     flood: thrown=5000 caught=5000
//     flood: collections=N
using System;
using System.Runtime.CompilerServices;

class FloodException : Exception
{
    public FloodException(int i) : base("flood") { }
}

static class Flood
{
    const int Throws = 5000;
    const int Collections = 200;
    const int Depth = 24;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Throw(int i, int depth)
    {
        try
        {
            if (depth == 0)
            {
                throw new FloodException(i);
            }
            return Throw(i, depth - 1);
        }
        finally
        {
            Sink += i;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static bool Catch(int i)
    {
        try
        {
            Throw(i, Depth);
            return false;
        }
        catch (FloodException)
        {
            return true;
        }
    }

    static long Sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Spin(int n)
    {
        long x = 1;
        for (int i = 0; i < n; i++)
        {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        Sink += x & 1;
    }

    static int Main()
    {
        int caught = 0;
        for (int i = 0; i < Throws; i++)
        {
            if (Catch(i))
            {
                caught++;
            }
            if (i % (Throws / Collections) == 0)
            {
                GC.Collect(0);
                Spin(200000);
            }
        }
        Console.WriteLine("flood: thrown=" + Throws + " caught=" + caught);
        Console.WriteLine("flood: collections=" + GC.CollectionCount(0));
        return 0;
    }
}
