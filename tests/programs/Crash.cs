// Crash: throws and catches 3 exceptions, waits long enough for the profiler to flush them,
// then kills itself with Environment.FailFast (no profiler Shutdown, SIGABRT).
// With argument `exit N`: prints and returns N from Main instead.
//
// Output (both ways): "crash: caught 3"
using System;
using System.Threading;

class CrashException : Exception { }

static class Program
{
    static int Main(string[] args)
    {
        int caught = 0;
        for (int i = 0; i < 3; i++)
        {
            try { throw new CrashException(); }
            catch (CrashException) { caught++; }
        }
        Console.WriteLine("crash: caught " + caught);
        Console.Out.Flush();
        if (args.Length == 2 && args[0] == "exit")
        {
            return int.Parse(args[1]);
        }
        Thread.Sleep(300);
        Environment.FailFast("clrprof test: deliberate crash");
        return 0;
    }
}
