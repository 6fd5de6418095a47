// Benchmark workload: four threads doing CPU work in parallel (recursive calls, loops over
// arrays, a little arithmetic), joined at the end.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Globalization;
using System.Threading;

sealed class Worker
{
    readonly int id;
    public long Result;

    public Worker(int id)
    {
        this.id = id;
    }

    static int Fib(int n)
    {
        return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
    }

    static long Sieve(int limit)
    {
        bool[] composite = new bool[limit + 1];
        long sum = 0;
        for (int i = 2; i <= limit; i++)
        {
            if (composite[i])
                continue;
            sum += i;
            for (long j = (long)i * i; j <= limit; j += i)
                composite[j] = true;
        }
        return sum;
    }

    static double Matrix(int n, int seed)
    {
        double[,] a = new double[n, n];
        double[,] b = new double[n, n];
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
            {
                a[i, j] = (i * 7 + j * 3 + seed) % 11;
                b[i, j] = (i * 5 + j * 2 + seed) % 13;
            }
        double trace = 0;
        for (int i = 0; i < n; i++)
        {
            for (int j = 0; j < n; j++)
            {
                double s = 0;
                for (int k = 0; k < n; k++)
                    s += a[i, k] * b[k, j];
                if (i == j)
                    trace += s;
            }
        }
        return trace;
    }

    public void Run()
    {
        long r = 0;
        for (int round = 0; round < 90; round++)
        {
            r += Fib(27 + (id + round) % 3);
            r += Sieve(1500000 + id * 1000);
            r += (long)Matrix(90, id + round);
        }
        Result = r;
    }
}

static class Threads
{
    static int Main()
    {
        Protocol.Go();

        Worker[] workers = new Worker[4];
        Thread[] threads = new Thread[4];
        for (int i = 0; i < 4; i++)
        {
            workers[i] = new Worker(i);
            threads[i] = new Thread(workers[i].Run);
            threads[i].Name = "worker-" + i.ToString(CultureInfo.InvariantCulture);
            threads[i].Start();
        }
        long checksum = 0;
        for (int i = 0; i < 4; i++)
        {
            threads[i].Join();
            checksum = checksum * 31 + workers[i].Result;
        }

        Protocol.Stop();
        return Protocol.Finish(checksum);
    }
}
