// Dispatch: interface calls on three classes in turn, which the runtime makes through its
// virtual stub dispatch: a call site that sees more than one class goes through a resolve stub
// (code the runtime generates, in no file), which looks the target up in a cache.
//
// Dispatch.Run(IShape[], int) calls IShape.Area(long) on an array of 300 shapes (A, B and C in
// turn), 400,000 times over: most of its time is in the resolve stub and the three Area methods.
// Both methods are [MethodImpl(NoInlining)] where it matters.
//
// Output: "dispatch: 29943200000" (deterministic).
using System;
using System.Runtime.CompilerServices;

interface IShape
{
    long Area(long x);
}

sealed class A : IShape
{
    public long Area(long x) { return x + 1; }
}

sealed class B : IShape
{
    public long Area(long x) { return x * 3; }
}

sealed class C : IShape
{
    public long Area(long x) { return x ^ 5; }
}

static class Dispatch
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Run(IShape[] shapes, int rounds)
    {
        long sum = 0;
        for (int r = 0; r < rounds; r++)
        {
            for (int i = 0; i < shapes.Length; i++)
            {
                sum += shapes[i].Area(i);
            }
        }
        return sum;
    }

    static void Main()
    {
        var shapes = new IShape[300];
        for (int i = 0; i < shapes.Length; i++)
        {
            int k = i % 3;
            if (k == 0) shapes[i] = new A();
            else if (k == 1) shapes[i] = new B();
            else shapes[i] = new C();
        }
        Console.WriteLine("dispatch: " + Run(shapes, 400000));
    }
}
