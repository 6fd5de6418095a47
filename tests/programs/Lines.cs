// Lines: one method whose three loops, each on a line of its own, take about 60%, 30% and
// 10% of the program's CPU, for `report --lines` and `report --source` (tests/e2e_lines.rs).
// Compiled with symbols (`.mdb`):
// @mcs -debug
//
// `Loops(a, b, c)` runs the three loops (a, b and c iterations of the same arithmetic); Main
// calls it `rounds` times (the argument, default 40) with 6:3:1 iterations, so that its code
// goes from the first tier to the optimized one (and, on .NET 8, through on-stack replacement
// while a loop runs) and every version is sampled. The program times each loop with the
// thread's own CPU clock and prints each one's share of the three, which the test compares
// with the report's shares of the loops' lines; the lines are found by their markers.
//
// Output: `lines: A% B% C% checksum=N` (the shares to 0.1%, the checksum fixed).
// @include ThreadCpu.cs
using System;
using System.Globalization;

static class Lines
{
    static readonly long[] Spent = new long[3];

    static long Loops(long a, long b, long c)
    {
        long h = 17;
        long t0 = ThreadCpu.Ns();
        for (long i = 0; i < a; i++) h = h * 6364136223846793005L + (i ^ (h >> 29)); // @loop-a
        long t1 = ThreadCpu.Ns();
        for (long i = 0; i < b; i++) h = h * 6364136223846793005L + (i ^ (h >> 29)); // @loop-b
        long t2 = ThreadCpu.Ns();
        for (long i = 0; i < c; i++) h = h * 6364136223846793005L + (i ^ (h >> 29)); // @loop-c
        long t3 = ThreadCpu.Ns();
        Spent[0] += t1 - t0;
        Spent[1] += t2 - t1;
        Spent[2] += t3 - t2;
        return h;
    }

    static int Main(string[] args)
    {
        int rounds = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 40;
        const long Unit = 1000000;
        long checksum = 0;
        for (int r = 0; r < rounds; r++)
            checksum ^= Loops(6 * Unit, 3 * Unit, Unit);
        double all = Spent[0] + Spent[1] + Spent[2];
        Func<int, string> share = k => (100.0 * Spent[k] / all).ToString("F1", CultureInfo.InvariantCulture);
        Console.WriteLine("lines: " + share(0) + "% " + share(1) + "% " + share(2) + "% checksum=" + checksum.ToString(CultureInfo.InvariantCulture));
        return 0;
    }
}
