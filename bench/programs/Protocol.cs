// The protocol every benchmark program follows with the bench: print "ready", wait for a line
// on stdin (the go line), do the timed work, print "work_ms=<ms>" (its wall time),
// "cpu_ms=<ms>" (the CPU time the whole process used meanwhile, user and system, every thread:
// the program's, the runtime's and a profiler's), "process_cpu_ms=<ms>" (the same since the
// process started: the window a profiler's own counters cover, from its start to now) and
// "checksum=<value>", then read one more
// line (or the end of input) before exiting, so that a tracing session can be stopped before
// the runtime shuts down. Included by the benchmark programs, with ProcessCpu.cs whose clock it
// reads (`// @include Protocol.cs`), so it names every type in full.
static class Protocol
{
    static System.Diagnostics.Stopwatch watch;
    static double cpuStart;
    static double cpuMs;

    /// Prints "ready", waits for the go line, then starts timing the work.
    public static void Go()
    {
        System.Console.WriteLine("ready");
        System.Console.ReadLine();
        // Stop runs once now, so that it is compiled before the work rather than while it is timed.
        watch = new System.Diagnostics.Stopwatch();
        Stop();
        cpuStart = ProcessCpu.Ms();
        watch.Start();
    }

    /// Stops timing the work.
    public static void Stop()
    {
        watch.Stop();
        cpuMs = ProcessCpu.Ms() - cpuStart;
    }

    /// Prints the times of the work (once stopped), "work_ms=" and "cpu_ms=", and the process's
    /// CPU time since it started, "process_cpu_ms=".
    public static void PrintTimes()
    {
        var invariant = System.Globalization.CultureInfo.InvariantCulture;
        System.Console.WriteLine("work_ms=" + watch.Elapsed.TotalMilliseconds.ToString("F1", invariant));
        System.Console.WriteLine("cpu_ms=" + cpuMs.ToString("F1", invariant));
        System.Console.WriteLine("process_cpu_ms=" + ProcessCpu.Ms().ToString("F1", invariant));
    }

    /// Prints the times of the work (once stopped) and "checksum=<checksum>", then waits for the
    /// last line; returns 0, the program's exit code.
    public static int Finish(string checksum)
    {
        PrintTimes();
        System.Console.WriteLine("checksum=" + checksum);
        return End();
    }

    /// The same for a checksum that is a number.
    public static int Finish(long checksum)
    {
        return Finish(checksum.ToString(System.Globalization.CultureInfo.InvariantCulture));
    }

    /// Waits for the last line (or the end of input); returns 0, the program's exit code.
    public static int End()
    {
        System.Console.ReadLine();
        return 0;
    }
}
