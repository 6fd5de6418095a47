// Benchmark workload: a real HTTP server (System.Net.HttpListener) on loopback, under load from a
// real HTTP client (wrk, which the bench runs). Each request parses its query, hashes its words
// and does about 50 us of arithmetic, then answers a short text; 16 accepts are outstanding at
// once, so the thread pool's threads keep waking, serving and waiting, as a web server's do.
//
// Protocol (the bench's, with a load): the first argument is the port; the program serves from
// the start, prints `ready` once it listens, and counts from the go line it reads on stdin to
// the stop line the bench sends when the client is done: then it prints `work_ms=` (the
// serving time), `cpu_ms=` (the process's CPU time meanwhile, every thread, user and system),
// `requests=` (the requests answered meanwhile) and `checksum=` (`ok`: what it computes depends
// on how many requests came, which a run does not choose), and waits for a last line.
// @include ProcessCpu.cs
// @reference System.Net.HttpListener
// @reference System.Net.Primitives
using System;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

static class HttpServer
{
    const int Accepts = 16;

    static long served;
    static volatile bool counting;
    static long sink;

    static long Work(string query)
    {
        long h = 17;
        foreach (string part in query.Split('&'))
        {
            h = h * 31 + part.Length;
            foreach (char c in part)
                h = h * 33 + c;
        }
        for (int i = 0; i < 20000; i++)
            h = h * 6364136223846793005L + 1442695040888963407L;
        return h;
    }

    static async Task Serve(HttpListener listener)
    {
        while (listener.IsListening)
        {
            HttpListenerContext context;
            try
            {
                context = await listener.GetContextAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                return;
            }
            string url = context.Request.RawUrl ?? "";
            int mark = url.IndexOf('?');
            string query = mark >= 0 ? url.Substring(mark + 1) : "";
            long h = Work(query.Length > 0 ? query : "a=1&b=22&c=333");
            Interlocked.Add(ref sink, h & 0xff);
            byte[] body = Encoding.ASCII.GetBytes("ok " + (h & 0xffff).ToString(CultureInfo.InvariantCulture) + "\n");
            context.Response.ContentLength64 = body.Length;
            context.Response.OutputStream.Write(body, 0, body.Length);
            context.Response.OutputStream.Close();
            if (counting)
                Interlocked.Increment(ref served);
        }
    }

    static int Main(string[] args)
    {
        ThreadPool.SetMinThreads(8, 8);
        var listener = new HttpListener();
        listener.Prefixes.Add("http://127.0.0.1:" + args[0] + "/");
        listener.Start();
        var servers = new Task[Accepts];
        for (int i = 0; i < Accepts; i++)
            servers[i] = Serve(listener);
        Console.WriteLine("ready");
        Console.ReadLine();
        served = 0;
        counting = true;
        double cpu0 = ProcessCpu.Ms();
        Stopwatch watch = Stopwatch.StartNew();

        Console.ReadLine();

        counting = false;
        watch.Stop();
        double cpu = ProcessCpu.Ms() - cpu0;
        long requests = Interlocked.Read(ref served);
        listener.Stop();
        Console.WriteLine("work_ms=" + watch.Elapsed.TotalMilliseconds.ToString("F1", CultureInfo.InvariantCulture));
        Console.WriteLine("cpu_ms=" + cpu.ToString("F1", CultureInfo.InvariantCulture));
        Console.WriteLine("requests=" + requests.ToString(CultureInfo.InvariantCulture));
        Console.WriteLine("checksum=ok");
        Console.ReadLine();
        return 0;
    }
}
