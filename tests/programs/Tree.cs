// Tree: a process tree of itself, the way `dotnet run` and `dotnet test` start the app or the
// test host: a .NET parent starts .NET children (the same program, with the same runtime as
// its own host) and waits for each, their output passed through.
//
// Roles (the first argument):
//   parent       starts `child 5` and waits, then `child 7` and waits (one after the other);
//                calls Work.Step 3 times itself; prints "parent: children exited 5 7" (their
//                exit codes) and exits with 0
//   parallel     starts `child 5` and `child 7` at the same instant and waits for both;
//                prints "parallel: children exited 5 7" and exits with 0
//   orphan       starts `late` and exits at once with 0, without waiting: `late` outlives it
//   late         sleeps 1500 ms, calls Work.Step 4 times, prints "late: done" and exits with 9
//   crash        calls Work.Step 2 times, then throws an unhandled exception (the runtime
//                aborts the process)
//   crashparent  starts `crash` and `child 5`, waits for both, prints "crashparent: crash
//                exited nonzero True, child exited 5" and exits with 0
//   child N      calls Work.Step N times (with N = 5: 5 calls; 7: 7), prints "child N: sum S"
//                (S = 0 + 1 + ... + (N-1)) and exits with N
//
// Exact counts in trace mode: Work.Step is called 3 times in the parent, N times in child N,
// 4 times in late, 2 times in crash; Tree.Main once per process.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class Work
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Step(int i)
    {
        Thread.Sleep(5);
        return i;
    }
}

static class Tree
{
    static Process Start(string args)
    {
        // The same host and assembly as this process: `dotnet Tree.dll ARGS`.
        var self = Process.GetCurrentProcess().MainModule.FileName;
        var dll = typeof(Tree).Assembly.Location;
        var psi = new ProcessStartInfo(self, "\"" + dll + "\" " + args);
        psi.UseShellExecute = false;
        return Process.Start(psi);
    }

    static int Wait(Process p)
    {
        p.WaitForExit();
        return p.ExitCode;
    }

    static long Steps(int n)
    {
        long sum = 0;
        for (int i = 0; i < n; i++)
        {
            sum += Work.Step(i);
        }
        return sum;
    }

    static int Main(string[] args)
    {
        switch (args[0])
        {
            case "parent":
            {
                Steps(3);
                int a = Wait(Start("child 5"));
                int b = Wait(Start("child 7"));
                Console.WriteLine("parent: children exited " + a + " " + b);
                return 0;
            }
            case "parallel":
            {
                var p1 = Start("child 5");
                var p2 = Start("child 7");
                int a = Wait(p1);
                int b = Wait(p2);
                Console.WriteLine("parallel: children exited " + a + " " + b);
                return 0;
            }
            case "orphan":
                Start("late");
                return 0;
            case "late":
                Thread.Sleep(1500);
                Steps(4);
                Console.WriteLine("late: done");
                return 9;
            case "crash":
                Steps(2);
                throw new InvalidOperationException("crash on purpose");
            case "crashparent":
            {
                var c = Start("crash");
                var k = Start("child 5");
                int a = Wait(c);
                int b = Wait(k);
                Console.WriteLine("crashparent: crash exited nonzero " + (a != 0) + ", child exited " + b);
                return 0;
            }
            default:
            {
                int n = int.Parse(args[1]);
                long sum = Steps(n);
                Console.WriteLine("child " + n + ": sum " + sum);
                return n;
            }
        }
    }
}
