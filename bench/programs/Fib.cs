// Benchmark workload: call-heavy. Naive recursive Fibonacci, so nearly all the time is spent in
// calls and returns of one small method (recursive, so the JIT does not inline it).
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs

static class Fib
{
    const int Rounds = 72;

    static int F(int n)
    {
        if (n < 2)
            return n;
        return F(n - 1) + F(n - 2);
    }

    static int Main()
    {
        Protocol.Go();

        long sum = 0;
        for (int round = 0; round < Rounds; round++)
        {
            for (int n = 30; n <= 32; n++)
                sum += F(n);
        }

        Protocol.Stop();
        return Protocol.Finish(sum);
    }
}
