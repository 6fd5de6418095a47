// The CPU time of the calling thread, to the nanosecond: clock_gettime(CLOCK_THREAD_CPUTIME_ID),
// the clock the kernel charges the thread's running time to (time it waits or is preempted does
// not count). Included by test programs that measure their own CPU split
// (`// @include ThreadCpu.cs`), so it names every type in full.
static class ThreadCpu
{
    struct Timespec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    [System.Runtime.InteropServices.DllImport("libc")]
    static extern int clock_gettime(int clock, out Timespec time);

    const int ClockThreadCputimeId = 3;

    /// The calling thread's CPU time so far, in nanoseconds.
    public static long Ns()
    {
        Timespec t;
        clock_gettime(ClockThreadCputimeId, out t);
        return t.Seconds * 1000000000L + t.Nanoseconds;
    }
}
