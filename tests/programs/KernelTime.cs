// KernelTime: one thread alternates between a phase that spends most of its CPU in the kernel
// and one that spends none there, and measures both with its own clocks.
//
// KernelTime.Touch maps 8 MiB of fresh memory (mmap), writes one byte to each of its pages
// (each write a page fault: the kernel finds and zeroes a page) and unmaps it (munmap):
// system time. KernelTime.Arith is integer arithmetic: user time only. Both are
// [MethodImpl(NoInlining)]. The main thread runs them for 1.5 s of its CPU time (or the
// milliseconds given as the first argument) in a fixed order, one Touch then 28 Arith calls:
// Touch takes about 40% of it here (measured on the thread's CPU clock, user + system, and
// reported). The order does not follow the CPU time each used so far: that time includes a
// profiler's signal handlers, so a program steering by it runs another mix of the two under
// each profiler, and the profiles of two profilers would differ by more than their sampling.
//
// Output:
//   kernel: done
// and on stderr the share of the thread's CPU time spent in Touch, `kernel: touch share
// 0.4000`, and the system time the kernel's accounting gave each phase (getrusage of the
// thread around each call), `kernel: touch sys_ns 123`, `kernel: arith sys_ns 45`.
// @include ThreadCpu.cs
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

static class KernelTime
{
    const int Bytes = 8 << 20;
    const int Page = 4096;
    static long sink;

    [DllImport("libc")]
    static extern IntPtr mmap(IntPtr addr, UIntPtr length, int prot, int flags, int fd, IntPtr offset);

    [DllImport("libc")]
    static extern int munmap(IntPtr addr, UIntPtr length);

    struct Timeval
    {
        public long Seconds;
        public long Microseconds;
    }

    struct Rusage
    {
        public Timeval User;
        public Timeval System;
        // The rest of struct rusage: 14 longs.
        public long R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10, R11, R12, R13;
    }

    [DllImport("libc")]
    static extern int getrusage(int who, out Rusage usage);

    const int RusageThread = 1;

    static long SystemNs()
    {
        Rusage u;
        getrusage(RusageThread, out u);
        return u.System.Seconds * 1000000000L + u.System.Microseconds * 1000L;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Touch()
    {
        // PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS.
        IntPtr p = mmap(IntPtr.Zero, (UIntPtr)Bytes, 3, 0x22, -1, IntPtr.Zero);
        if (p == new IntPtr(-1))
        {
            throw new InvalidOperationException("mmap failed");
        }
        for (int offset = 0; offset < Bytes; offset += Page)
        {
            Marshal.WriteByte(p, offset, 1);
        }
        munmap(p, (UIntPtr)Bytes);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Arith(long n)
    {
        long x = 3;
        for (long i = 0; i < n; i++)
        {
            x = x * 2862933555777941757L + 3037000493L;
        }
        return x;
    }

    static void Main(string[] args)
    {
        long cpuNs = (args.Length > 0 ? long.Parse(args[0]) : 1500) * 1000000L;
        long start = ThreadCpu.Ns();
        long touchNs = 0, arithNs = 0, touchSys = 0, arithSys = 0;
        long round = 0;
        while (ThreadCpu.Ns() - start < cpuNs)
        {
            long t0 = ThreadCpu.Ns();
            long s0 = SystemNs();
            if (++round % 29 == 0)
            {
                Touch();
                touchNs += ThreadCpu.Ns() - t0;
                touchSys += SystemNs() - s0;
            }
            else
            {
                sink += Arith(300000);
                arithNs += ThreadCpu.Ns() - t0;
                arithSys += SystemNs() - s0;
            }
        }
        Console.WriteLine("kernel: done");
        var inv = System.Globalization.CultureInfo.InvariantCulture;
        Console.Error.WriteLine("kernel: touch share " + ((double)touchNs / (touchNs + arithNs)).ToString("F4", inv));
        Console.Error.WriteLine("kernel: touch sys_ns " + touchSys.ToString(inv));
        Console.Error.WriteLine("kernel: arith sys_ns " + arithSys.ToString(inv));
        GC.KeepAlive(sink);
    }
}
