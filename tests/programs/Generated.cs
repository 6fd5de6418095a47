// Generated: code generated at run time, which has no metadata.
//
//   dynamic   60 DynamicMethods named dyn_0 .. dyn_59, built and run one after the other by
//             Generated.RunDynamic(int), each for 15 ms of the thread's CPU time (an integer
//             loop); every 6 methods the ones built so far are dropped and collected
//             (GC.Collect, finalizers), so the runtime reuses their FunctionIDs and code memory
//             for the next ones. Then 20 compiled expressions (Expression.Compile) of the same
//             loop, run the same way for 15 ms each by Generated.RunLambda(int).
//   regex     a Regex with RegexOptions.Compiled matched 20 times against a 1 MB string by
//             Generated.MatchRegex().
//
// Output:
//   generated: dynamic done        (or: generated: regex done)
// @include ThreadCpu.cs
// @reference System.Linq.Expressions
using System;
using System.Collections.Generic;
using System.Linq.Expressions;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Text.RegularExpressions;

static class Generated
{
    static long sink;

    // long dyn_i(long n) { long x = i; for (long j = 0; j < n; j++) x = x * A + B; return x; }
    static Func<long, long> Build(int i)
    {
        var dm = new DynamicMethod("dyn_" + i, typeof(long), new[] { typeof(long) }, typeof(Generated).Module);
        var il = dm.GetILGenerator();
        var x = il.DeclareLocal(typeof(long));
        var j = il.DeclareLocal(typeof(long));
        var top = il.DefineLabel();
        var test = il.DefineLabel();
        il.Emit(OpCodes.Ldc_I8, (long)i);
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Ldc_I8, 0L);
        il.Emit(OpCodes.Stloc, j);
        il.Emit(OpCodes.Br, test);
        il.MarkLabel(top);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ldc_I8, 6364136223846793005L);
        il.Emit(OpCodes.Mul);
        il.Emit(OpCodes.Ldc_I8, 1442695040888963407L);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Ldloc, j);
        il.Emit(OpCodes.Ldc_I8, 1L);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, j);
        il.MarkLabel(test);
        il.Emit(OpCodes.Ldloc, j);
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Blt, top);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ret);
        return (Func<long, long>)dm.CreateDelegate(typeof(Func<long, long>));
    }

    // Calls f(20000) until the thread used `ms` milliseconds of CPU, once f is compiled (its
    // first call compiles it).
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunFor(Func<long, long> f, long ms)
    {
        sink += f(1);
        long start = ThreadCpu.Ns();
        while (ThreadCpu.Ns() - start < ms * 1000000L)
        {
            sink += f(20000);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunDynamic(int i)
    {
        RunFor(Build(i), 15);
    }

    // n => { long x = i; for (long j = 0; j < n; j++) x = x * A + B; return x; }, compiled.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunLambda(int i)
    {
        var n = Expression.Parameter(typeof(long), "n");
        var x = Expression.Variable(typeof(long), "x");
        var j = Expression.Variable(typeof(long), "j");
        var done = Expression.Label(typeof(long));
        var body = Expression.Block(
            new[] { x, j },
            Expression.Assign(x, Expression.Constant((long)i)),
            Expression.Assign(j, Expression.Constant(0L)),
            Expression.Loop(
                Expression.IfThenElse(
                    Expression.LessThan(j, n),
                    Expression.Block(
                        Expression.Assign(x, Expression.Add(
                            Expression.Multiply(x, Expression.Constant(6364136223846793005L)),
                            Expression.Constant(1442695040888963407L))),
                        Expression.PostIncrementAssign(j)),
                    Expression.Break(done, x)),
                done));
        RunFor(Expression.Lambda<Func<long, long>>(body, n).Compile(), 15);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MatchRegex()
    {
        var regex = new Regex("(a|b)*c[0-9]+x", RegexOptions.Compiled);
        var text = new string('a', 1000000) + "c12x";
        for (int k = 0; k < 20; k++)
        {
            sink += regex.Match(text).Length;
        }
    }

    static void Collect()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        GC.WaitForPendingFinalizers();
    }

    static void Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "dynamic";
        if (mode == "regex")
        {
            MatchRegex();
        }
        else
        {
            for (int i = 0; i < 60; i++)
            {
                RunDynamic(i);
                if (i % 6 == 5)
                {
                    Collect();
                }
            }
            for (int i = 0; i < 20; i++)
            {
                RunLambda(i);
            }
        }
        Console.WriteLine("generated: " + mode + " done" + (sink == 42 ? "!" : ""));
    }
}
