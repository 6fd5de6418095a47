// Doubles: floating-point arguments and return values, to prove a profiler does not corrupt
// them (e.g. enter/leave hooks that clobber xmm registers). Output must be byte-identical with
// and without profiling; numbers are printed with ToString("R") (round-trip).
//
// Methods (all static, [MethodImpl(NoInlining)], class `FloatMath`, global namespace):
//   double Mix(double a, double b, double c, double d, double e, double f, double g, double h,
//              float i, double j)
//       8 doubles fill xmm0-xmm7; `i` and `j` go on the stack. Weighted sum, so swapped or
//       clobbered arguments change the result.
//   float  Scale(float x, float y)                       float in, float out
//   Pair   MakePair(double x, double y)                  struct of 2 doubles, returned in xmm0:xmm1
//   double SumPair(Pair p)                               struct of 2 doubles passed in xmm0, xmm1
//   Quad   MakeQuad(double a, double b, double c, double d)  struct of 4 doubles, returned in memory
//   double Mixed(int n, double x, long m, float y, double z) integer and FP arguments interleaved
// Call counts: Main calls each method once, then `Loop` calls each 1000 times: 1001 each.
//
// Expected output:
//   Mix = 406.75
//   Scale = 4.25
//   MakePair = (4.5, -1.5)
//   SumPair = 13.5
//   MakeQuad = (2, 6, 12, 20)
//   Mixed = 20.25
//   Loop = 145148.76872537588
using System;
using System.Runtime.CompilerServices;

struct Pair
{
    public double X;
    public double Y;
}

struct Quad
{
    public double A;
    public double B;
    public double C;
    public double D;
}

static class FloatMath
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Mix(double a, double b, double c, double d, double e, double f,
                             double g, double h, float i, double j)
    {
        return a * 1 + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9 + j * 10;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static float Scale(float x, float y)
    {
        return x * y + 0.5f;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Pair MakePair(double x, double y)
    {
        return new Pair { X = x + y, Y = x - y };
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double SumPair(Pair p)
    {
        return p.X * 3 + p.Y;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Quad MakeQuad(double a, double b, double c, double d)
    {
        return new Quad { A = a * 2, B = b * 3, C = c * 4, D = d * 5 };
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Mixed(int n, double x, long m, float y, double z)
    {
        return n * x + m * y - z;
    }
}

static class Program
{
    static string R(double d) => d.ToString("R");
    static string R(float f) => f.ToString("R");

    // Keeps FP values live in registers across the calls, so clobbered callee-saved state or
    // arguments show up in the result.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static double Loop()
    {
        double acc = 0.0;
        float facc = 1.0f;
        for (int k = 0; k < 1000; k++)
        {
            double x = k * 0.25;
            double y = 1.0 / (k + 1);
            double mix = FloatMath.Mix(x, y, x + 1, y + 1, x * 2, y * 2, x - 1, y - 1, (float)k, x * y);
            float s = FloatMath.Scale((float)y, 0.5f);
            Pair p = FloatMath.MakePair(x, y);
            double sp = FloatMath.SumPair(p);
            Quad q = FloatMath.MakeQuad(x, y, mix, sp);
            double m = FloatMath.Mixed(k, y, k * 3L, s, q.D);
            acc = acc * 0.5 + mix + p.X - p.Y + sp + q.A + q.B + q.C + m * 1e-3 + x * y;
            facc = facc * 0.5f + s;
        }
        return acc + facc;
    }

    static int Main()
    {
        Console.WriteLine("Mix = " + R(FloatMath.Mix(1.5, 2.25, 3.125, 4.0625, 5.5, 6.75, 7.875, 8.0, 9.5f, 10.25)));
        Console.WriteLine("Scale = " + R(FloatMath.Scale(2.5f, 1.5f)));
        Pair p = FloatMath.MakePair(1.5, 3.0);
        Console.WriteLine("MakePair = (" + R(p.X) + ", " + R(p.Y) + ")");
        Console.WriteLine("SumPair = " + R(FloatMath.SumPair(new Pair { X = 4.5, Y = 0.0 })));
        Quad q = FloatMath.MakeQuad(1.0, 2.0, 3.0, 4.0);
        Console.WriteLine("MakeQuad = (" + R(q.A) + ", " + R(q.B) + ", " + R(q.C) + ", " + R(q.D) + ")");
        Console.WriteLine("Mixed = " + R(FloatMath.Mixed(3, 2.5, 4L, 3.5f, 1.25)));
        Console.WriteLine("Loop = " + R(Loop()));
        return 0;
    }
}
