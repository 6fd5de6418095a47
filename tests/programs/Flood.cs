// Flood: more runtime events than a small agent buffer holds, with exact counts to check that
// every event and sample is accounted for (seen, or counted as lost).
//
// The main thread throws and catches exactly `Throws` `FloodException`s (each passes a
// `finally` and is caught one frame up), induces `Collections` garbage collections
// (`GC.Collect(0)`), and spins between them. No other exception is thrown. It prints how many
// collections the runtime made in all (`GC.CollectionCount(0)`: every collection collects
// generation 0), so that a test can compare the GCs a report shows with the truth.
//
// Output:
//     flood: thrown=20000 caught=20000
//     flood: collections=N
using System;
using System.Runtime.CompilerServices;

class FloodException : Exception
{
    public FloodException(int i) : base("flood") { }
}

static class Flood
{
    const int Throws = 20000;
    const int Collections = 200;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Throw(int i)
    {
        try
        {
            throw new FloodException(i);
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
            Throw(i);
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
