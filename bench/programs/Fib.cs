// Benchmark workload: call-heavy. Naive recursive Fibonacci, so nearly all the time is spent in
// calls and returns of one small method (recursive, so the JIT does not inline it).
//
// Protocol shared by every benchmark program: print "ready", wait for a line on stdin, do the
// timed work, print "work_ms=<ms>" (its wall time), "cpu_ms=<ms>" (the CPU time the whole
// process used meanwhile, user and system, every thread: the program's, the runtime's and a
// profiler's) and "checksum=<value>", then read one more line (or end of input) before exiting,
// so that a tracing session can be stopped before the runtime shuts down.
// @include ProcessCpu.cs
using System;
using System.Diagnostics;
using System.Globalization;

static class Fib
{
    const int Rounds = 72;

    static int F(int n)
    {
        if (n < 2)
            return n;
        return F(n - 1) + F(n - 2);
    }

    static int Main()
    {
        Console.WriteLine("ready");
        Console.ReadLine();
        double cpu0 = ProcessCpu.Ms();
        Stopwatch watch = Stopwatch.StartNew();

        long sum = 0;
        for (int round = 0; round < Rounds; round++)
        {
            for (int n = 30; n <= 32; n++)
                sum += F(n);
        }

        watch.Stop();
        Console.WriteLine("work_ms=" + watch.Elapsed.TotalMilliseconds.ToString("F1", CultureInfo.InvariantCulture));
        Console.WriteLine("cpu_ms=" + (ProcessCpu.Ms() - cpu0).ToString("F1", CultureInfo.InvariantCulture));
        Console.WriteLine("checksum=" + sum.ToString(CultureInfo.InvariantCulture));
        Console.ReadLine();
        return 0;
    }
}
