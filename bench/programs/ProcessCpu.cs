// The CPU time of the whole process (every thread, user and system), to the nanosecond:
// clock_gettime(CLOCK_PROCESS_CPUTIME_ID). Process.TotalProcessorTime reads /proc, in 10 ms
// ticks: too coarse to tell 1% apart in a 1-2 s run. Included by the benchmark programs
// (`// @include ProcessCpu.cs`), so it names every type in full.
static class ProcessCpu
{
    struct Timespec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    [System.Runtime.InteropServices.DllImport("libc")]
    static extern int clock_gettime(int clock, out Timespec time);

    const int ClockProcessCputimeId = 2;

    /// The process's CPU time so far, in milliseconds.
    public static double Ms()
    {
        Timespec t;
        clock_gettime(ClockProcessCputimeId, out t);
        return t.Seconds * 1e3 + t.Nanoseconds / 1e6;
    }
}
