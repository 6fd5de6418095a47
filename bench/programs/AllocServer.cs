// Benchmark workload: a server under load that allocates as web requests do. 16 connections
// each send their next request as soon as the previous one is answered (a closed loop, so the
// thread pool is always busy), 96,000 requests in all; each request parses a header block into
// a Dictionary, builds a list of records, formats a response with a StringBuilder and hashes
// it: about 40 objects and 8 KB allocated per request, all garbage once it is answered.
// The request rate is 96,000 / work_ms, and cpu_ms / 96,000 the CPU per request.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Collections.Generic;
using System.Globalization;
using System.Text;
using System.Threading;

static class AllocServer
{
    const int Requests = 96000;
    const int Connections = 16;

    static long total;
    static int issued;
    static CountdownEvent done;

    sealed class Record
    {
        public string Name;
        public int Quantity;
        public double Price;
    }

    static long Handle(int id)
    {
        var header = new StringBuilder();
        for (int i = 0; i < 12; i++)
            header.Append("X-Header-").Append(i).Append(": value").Append(id % 97 + i).Append('\n');
        var headers = new Dictionary<string, string>();
        foreach (string line in header.ToString().Split('\n'))
        {
            int colon = line.IndexOf(':');
            if (colon > 0)
                headers[line.Substring(0, colon)] = line.Substring(colon + 2);
        }
        var records = new List<Record>();
        for (int i = 0; i < 8; i++)
            records.Add(new Record { Name = "item" + (id + i) % 1000, Quantity = i + 1, Price = (id % 13) * 0.5 + i });
        var response = new StringBuilder("{\"items\":[");
        foreach (var r in records)
        {
            response.Append("{\"name\":\"").Append(r.Name).Append("\",\"quantity\":")
                .Append(r.Quantity).Append(",\"price\":")
                .Append(r.Price.ToString("F2", CultureInfo.InvariantCulture)).Append("},");
        }
        response.Append("],\"headers\":").Append(headers.Count).Append('}');
        string body = response.ToString();
        long h = 17;
        foreach (char c in body)
            h = h * 31 + c;
        for (int i = 0; i < 3000; i++)
            h = h * 6364136223846793005L + 1442695040888963407L;
        return h & 0xffff;
    }

    // One connection: answers a request, then sends the next, until all are issued.
    static void Serve(object state)
    {
        int id = Interlocked.Increment(ref issued) - 1;
        if (id >= Requests)
        {
            done.Signal();
            return;
        }
        Interlocked.Add(ref total, Handle(id));
        ThreadPool.QueueUserWorkItem(Serve, null);
    }

    static int Main()
    {
        ThreadPool.SetMinThreads(8, 8);
        for (int i = 0; i < 2000; i++)
            total += Handle(i);
        total = 0;
        Protocol.Go();

        done = new CountdownEvent(Connections);
        for (int c = 0; c < Connections; c++)
            ThreadPool.QueueUserWorkItem(Serve, null);
        done.Wait();

        Protocol.Stop();
        return Protocol.Finish(Interlocked.Read(ref total));
    }
}
