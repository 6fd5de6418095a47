// InfoProbe: the program profiled by the info probe (tests/sdk_info.rs).
//
// It exercises what the probe looks at (two named threads, a generic class and method, an
// exception with catch and finally, a DynamicMethod, a P/Invoke that needs an IL stub) and prints, as `key=value` lines, the
// facts the test compares with what the profiler saw: metadata tokens, OS thread ids and the
// process id. `Checkpoint` is called exactly once, after everything else has been compiled and
// while both workers are alive, so the probe does its whole-process enumerations when the JIT
// compiles it.
using System;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class ProbeTarget
{
    public int Seed;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Work(int rounds)
    {
        int acc = Seed;
        for (int i = 0; i < rounds; i++)
            acc = acc * 31 + i;
        return acc;
    }
}

class Box<T>
{
    public T Item;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public T Get()
    {
        return Item;
    }
}

static class InfoProbe
{
    // Blittable: the JIT inlines the transition into the caller, no IL stub.
    [DllImport("libc", EntryPoint = "syscall")]
    static extern long Syscall(long number);

    // Needs marshalling (a string argument): the runtime generates an IL stub for it, a
    // dynamic method of this module.
    [DllImport("libc", EntryPoint = "strlen")]
    static extern IntPtr Strlen(string s);

    const long SYS_getpid = 39;
    const long SYS_gettid = 186;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static T Echo<T>(T value)
    {
        return value;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Thrower()
    {
        int result = 0;
        try
        {
            try
            {
                throw new InvalidOperationException("info probe");
            }
            finally
            {
                result += 10;
            }
        }
        catch (InvalidOperationException)
        {
            result += 1;
        }
        return result;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Checkpoint(int n)
    {
        return n + 1;
    }

    static int RunDynamic()
    {
        var method = new DynamicMethod("probe_dynamic", typeof(int), new[] { typeof(int) }, typeof(InfoProbe).Module);
        var il = method.GetILGenerator();
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Ldc_I4_2);
        il.Emit(OpCodes.Mul);
        il.Emit(OpCodes.Ret);
        var f = (Func<int, int>)method.CreateDelegate(typeof(Func<int, int>));
        return f(21);
    }

    static int Main()
    {
        var ready = new CountdownEvent(2);
        var release = new ManualResetEventSlim(false);
        var tids = new long[2];
        var workers = new Thread[2];
        for (int i = 0; i < 2; i++)
        {
            int index = i;
            workers[i] = new Thread(() =>
            {
                Thread.CurrentThread.Name = "probe-worker-" + (index + 1);
                tids[index] = Syscall(SYS_gettid);
                ready.Signal();
                release.Wait();
            });
            workers[i].Start();
        }
        ready.Wait();

        int work = new ProbeTarget { Seed = 7 }.Work(10);
        int boxed = new Box<int> { Item = 5 }.Get();
        int echoed = Echo(42);
        string echoedString = Echo("echo");
        int thrown = Thrower();
        int dynamicResult = RunDynamic();
        int checkpoint = Checkpoint(1);

        release.Set();
        foreach (var w in workers)
            w.Join();

        Console.WriteLine("strlen=" + Strlen("clrprof-info-probe"));
        Console.WriteLine("pid=" + Syscall(SYS_getpid));
        Console.WriteLine("main_tid=" + Syscall(SYS_gettid));
        Console.WriteLine("worker1_tid=" + tids[0]);
        Console.WriteLine("worker2_tid=" + tids[1]);
        Console.WriteLine("results=" + work + "," + boxed + "," + echoed + "," + echoedString + "," + thrown + "," + dynamicResult + "," + checkpoint);
        Console.WriteLine("env_set_by_profiler=" + (Environment.GetEnvironmentVariable("CLRPROF_PROBE_SET") ?? "<unset>"));
        Console.WriteLine("token_ProbeTarget=" + Hex(typeof(ProbeTarget).MetadataToken));
        Console.WriteLine("token_Box=" + Hex(typeof(Box<>).MetadataToken));
        Console.WriteLine("token_InfoProbe=" + Hex(typeof(InfoProbe).MetadataToken));
        Console.WriteLine("token_Int32=" + Hex(typeof(int).MetadataToken));
        Console.WriteLine("token_Object=" + Hex(typeof(object).MetadataToken));
        Console.WriteLine("token_Work=" + Hex(typeof(ProbeTarget).GetMethod("Work").MetadataToken));
        Console.WriteLine("token_BoxGet=" + Hex(typeof(Box<>).GetMethod("Get").MetadataToken));
        var flags = BindingFlags.NonPublic | BindingFlags.Static;
        Console.WriteLine("token_Echo=" + Hex(typeof(InfoProbe).GetMethod("Echo", flags).MetadataToken));
        Console.WriteLine("token_Thrower=" + Hex(typeof(InfoProbe).GetMethod("Thrower", flags).MetadataToken));
        Console.WriteLine("token_Checkpoint=" + Hex(typeof(InfoProbe).GetMethod("Checkpoint", flags).MetadataToken));
        Console.WriteLine("token_Main=" + Hex(typeof(InfoProbe).GetMethod("Main", flags).MetadataToken));
        return 0;
    }

    static string Hex(int token)
    {
        return "0x" + token.ToString("x8");
    }
}
