// Benchmark workload: a server's shape. Requests arrive in bursts of 16, every 4 ms; each is a
// short work item on the thread pool (about 0.2 ms of parsing and hashing), so the pool's
// threads keep waking, working briefly and waiting again, while the main thread waits between
// bursts.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Globalization;
using System.Text;
using System.Threading;

static class Server
{
    const int Bursts = 300;
    const int PerBurst = 16;

    static long total;

    static void Handle(object state)
    {
        int id = (int)state;
        var text = new StringBuilder();
        for (int i = 0; i < 40; i++)
            text.Append("key").Append(i).Append('=').Append(id * 31 + i).Append(';');
        string request = text.ToString();
        long h = 17;
        foreach (string part in request.Split(';'))
        {
            int eq = part.IndexOf('=');
            if (eq < 0)
                continue;
            h = h * 31 + part.Length;
            h ^= long.Parse(part.Substring(eq + 1), CultureInfo.InvariantCulture);
        }
        for (int i = 0; i < 20000; i++)
            h = h * 6364136223846793005L + 1442695040888963407L;
        Interlocked.Add(ref total, h & 0xffff);
    }

    static int Main()
    {
        // Start the pool's threads before the work, as a server that has been running would.
        ThreadPool.SetMinThreads(8, 8);
        using (var warm = new CountdownEvent(PerBurst))
        {
            for (int i = 0; i < PerBurst; i++)
                ThreadPool.QueueUserWorkItem(s => { Handle(s); warm.Signal(); }, i);
            warm.Wait();
        }
        total = 0;
        Protocol.Go();

        for (int burst = 0; burst < Bursts; burst++)
        {
            using (var done = new CountdownEvent(PerBurst))
            {
                for (int i = 0; i < PerBurst; i++)
                {
                    int id = burst * PerBurst + i;
                    ThreadPool.QueueUserWorkItem(s => { Handle(s); done.Signal(); }, id);
                }
                done.Wait();
            }
            Thread.Sleep(4);
        }

        Protocol.Stop();
        return Protocol.Finish(Interlocked.Read(ref total));
    }
}
