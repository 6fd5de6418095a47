// Coverage: a program whose every line's execution count follows from its source, for
// `clrprof coverage` (tests/e2e_coverage.rs). Compiled with symbols (`.mdb`):
// @mcs -debug
//
// Lines that tests check end with a marker `// @name`; the test finds them by marker, so their
// expected counts (derived below) do not depend on line numbers.
//
// - Classify(x) for x in -3..6 (10 calls): @classify-test 10, @negative 3 (x < 0),
//   @zero-test 7, @zero 1, @positive 6.
// - SumTo(n) for n in {0, 3, 5, 10}: @sum-init 4, @sum-body 0 + 3 + 5 + 10 = 18.
// - Name(day) for day in 0..9 (a switch with a jump table): @switch 10, @case0 1, @case3 1,
//   @default 3 (7, 8, 9). Its blocks: the switch (10), the switch's fall-through for days
//   past 6 (3), one per case 0..6 (1 each) and the default (3).
// - Guarded(x) for x in {5, 0, 2, 0, 20, 4}, with a filter that wants DivideByZeroException
//   only: @throw-test 6, @big 1 (20: escapes to Main's catch after the finally), @divide 5,
//   @caught 2 (the two zeros), @finally 6, @want 3 (the filter runs for the 2 zeros and the 20).
// - Pick<T>(first, a, b): 3 calls with int (2 with first = true) and 2 with string (1 true),
//   sharing one body: @pick-test 5, @pick-a 3, @pick-b 2.
// - MakePair(a) (a struct return) 4 calls: @pair 4.
// - Big(k) for k in 0..49, a 40-case switch: @big-switch 50, @big-case0 1, @big-default 10.
// - @never 0: never called.
//
// Output (the same with and without instrumentation):
//   classify: -1 -1 -1 0 1 1 1 1 1 1
//   sums: 0 6 15 55
//   names: sun mon tue wed thu fri sat ? ? ?
//   guarded: 20 -1 50 -1 big 25 finallies=6 filters=3
//   picks: 1 2 3 x y
//   big: 1170
//   pairs: 2 4 6 8
using System;
using System.Runtime.CompilerServices;

struct Pair
{
    public int A;
    public long B;
}

class Coverage
{
    static int finallies;
    static int filters;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Classify(int x)
    {
        if (x < 0) // @classify-test
            return -1; // @negative
        if (x == 0) // @zero-test
            return 0; // @zero
        return 1; // @positive
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int SumTo(int n)
    {
        int sum = 0; // @sum-init
        for (int i = 1; i <= n; i++)
            sum += i; // @sum-body
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static string Name(int day)
    {
        // (mcs puts the switch's sequence point on its opening brace: keep them on one line.)
        switch (day) { // @switch
            case 0:
                return "sun"; // @case0
            case 1:
                return "mon";
            case 2:
                return "tue";
            case 3:
                return "wed"; // @case3
            case 4:
                return "thu";
            case 5:
                return "fri";
            case 6:
                return "sat";
            default:
                return "?"; // @default
        } // end of switch
    }

    static bool Want(Exception e)
    {
        filters++; // @want
        return e is DivideByZeroException;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Guarded(int x)
    {
        int r = 0;
        try
        {
            if (x > 10) // @throw-test
                throw new InvalidOperationException("big"); // @big
            r = 100 / x; // @divide
        }
        catch (Exception e) when (Want(e))
        {
            r = -1; // @caught
        }
        finally
        {
            finallies++; // @finally
        }
        return r;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static T Pick<T>(bool first, T a, T b)
    {
        if (first) // @pick-test
            return a; // @pick-a
        return b; // @pick-b
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static Pair MakePair(int a)
    {
        Pair p;
        p.A = a; // @pair
        p.B = 2L * a;
        return p;
    }

    // 40 cases that each `break` to the common end: with a counter in every block, the short
    // branches to the end no longer reach and must become long ones.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Big(int k)
    {
        int r;
        switch (k) { // @big-switch
            case 0: r = 10; break; // @big-case0
            case 1: r = 11; break;
            case 2: r = 12; break;
            case 3: r = 13; break;
            case 4: r = 14; break;
            case 5: r = 15; break;
            case 6: r = 16; break;
            case 7: r = 17; break;
            case 8: r = 18; break;
            case 9: r = 19; break;
            case 10: r = 20; break;
            case 11: r = 21; break;
            case 12: r = 22; break;
            case 13: r = 23; break;
            case 14: r = 24; break;
            case 15: r = 25; break;
            case 16: r = 26; break;
            case 17: r = 27; break;
            case 18: r = 28; break;
            case 19: r = 29; break;
            case 20: r = 30; break;
            case 21: r = 31; break;
            case 22: r = 32; break;
            case 23: r = 33; break;
            case 24: r = 34; break;
            case 25: r = 35; break;
            case 26: r = 36; break;
            case 27: r = 37; break;
            case 28: r = 38; break;
            case 29: r = 39; break;
            case 30: r = 40; break;
            case 31: r = 41; break;
            case 32: r = 42; break;
            case 33: r = 43; break;
            case 34: r = 44; break;
            case 35: r = 45; break;
            case 36: r = 46; break;
            case 37: r = 47; break;
            case 38: r = 48; break;
            case 39: r = 49; break;
            default: r = -1; break; // @big-default
        }
        return r;
    }

    static void Never()
    {
        Console.WriteLine("never"); // @never
    }

    static int Main(string[] args)
    {
        var classes = new string[10];
        for (int x = -3; x <= 6; x++)
            classes[x + 3] = Classify(x).ToString();
        Console.WriteLine("classify: " + string.Join(" ", classes));

        int[] ns = { 0, 3, 5, 10 };
        var sums = new string[ns.Length];
        for (int i = 0; i < ns.Length; i++)
            sums[i] = SumTo(ns[i]).ToString();
        Console.WriteLine("sums: " + string.Join(" ", sums));

        var names = new string[10];
        for (int d = 0; d < 10; d++)
            names[d] = Name(d);
        Console.WriteLine("names: " + string.Join(" ", names));

        int[] xs = { 5, 0, 2, 0, 20, 4 };
        var guarded = new string[xs.Length];
        for (int i = 0; i < xs.Length; i++)
        {
            try
            {
                guarded[i] = Guarded(xs[i]).ToString();
            }
            catch (InvalidOperationException e)
            {
                guarded[i] = e.Message;
            }
        }
        Console.WriteLine("guarded: " + string.Join(" ", guarded) + " finallies=" + finallies + " filters=" + filters);

        Console.WriteLine("picks: " + Pick(true, 1, 9) + " " + Pick(true, 2, 9) + " " + Pick(false, 0, 3)
            + " " + Pick(true, "x", "-") + " " + Pick(false, "-", "y"));

        int big = 0;
        for (int k = 0; k < 50; k++)
            big += Big(k);
        Console.WriteLine("big: " + big);

        var pairs = new string[4];
        for (int a = 1; a <= 4; a++)
            pairs[a - 1] = MakePair(a).B.ToString();
        Console.WriteLine("pairs: " + string.Join(" ", pairs));
        if (args.Length > 99)
            Never();
        return 0;
    }
}
