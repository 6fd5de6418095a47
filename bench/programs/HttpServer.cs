// Benchmark workload: a real HTTP/1.1 server on loopback, under load from a real HTTP client
// (wrk, which the bench runs). It is built the way Kestrel's core is: a listening socket,
// one asynchronous loop per connection on the thread pool (receive, parse the request line
// and headers, answer, keep the connection alive), the runtime's socket engine waking the
// loops from epoll. Each request's query is parsed and hashed with about 50 us of arithmetic,
// then answered with a short text. (System.Net.HttpListener would be the obvious choice, but on
// CoreCLR 3.1 it loads OpenSSL 1.x, which current Linux distributions no longer ship.)
//
// Protocol (that of Protocol.cs, with a load): the first argument is the port; the program serves
// from the start, prints `ready` once it listens, and counts from the go line it reads on stdin to
// the stop line the bench sends when the client is done: then it prints `work_ms=` (the serving
// time), `cpu_ms=` (the process's CPU time meanwhile, every thread, user and system), `requests=`
// (the requests answered meanwhile) and `checksum=` (`ok`: what it computes depends on how many
// requests came, which a run does not choose), and waits for a last line.
// @include Protocol.cs
// @include ProcessCpu.cs
// @reference System.Net.Primitives
// @reference System.Net.Sockets
// @reference Microsoft.Win32.Primitives
using System;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

static class HttpServer
{
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

    // The end of the request's head (the blank line), or -1.
    static int HeadEnd(byte[] buffer, int length)
    {
        for (int i = 3; i < length; i++)
            if (buffer[i] == '\n' && buffer[i - 1] == '\r' && buffer[i - 2] == '\n' && buffer[i - 3] == '\r')
                return i + 1;
        return -1;
    }

    static string Answer(string requestLine)
    {
        // GET /path?query HTTP/1.1
        string[] parts = requestLine.Split(' ');
        string target = parts.Length > 1 ? parts[1] : "/";
        int mark = target.IndexOf('?');
        string query = mark >= 0 ? target.Substring(mark + 1) : "a=1&b=22&c=333";
        long h = Work(query);
        Interlocked.Add(ref sink, h & 0xff);
        string body = "ok " + (h & 0xffff).ToString(CultureInfo.InvariantCulture) + "\n";
        return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
            + body.Length.ToString(CultureInfo.InvariantCulture) + "\r\n\r\n" + body;
    }

    static async Task Serve(Socket client)
    {
        var buffer = new byte[8192];
        int filled = 0;
        try
        {
            while (true)
            {
                int n = await client.ReceiveAsync(new ArraySegment<byte>(buffer, filled, buffer.Length - filled), SocketFlags.None).ConfigureAwait(false);
                if (n == 0)
                    return;
                filled += n;
                int end;
                while ((end = HeadEnd(buffer, filled)) > 0)
                {
                    string head = Encoding.ASCII.GetString(buffer, 0, end);
                    string answer = Answer(head.Substring(0, head.IndexOf('\r')));
                    byte[] bytes = Encoding.ASCII.GetBytes(answer);
                    await client.SendAsync(new ArraySegment<byte>(bytes), SocketFlags.None).ConfigureAwait(false);
                    if (counting)
                        Interlocked.Increment(ref served);
                    Buffer.BlockCopy(buffer, end, buffer, 0, filled - end);
                    filled -= end;
                }
                if (filled == buffer.Length)
                    return; // a head larger than the buffer: not a client of this bench
            }
        }
        catch (SocketException)
        {
        }
        catch (ObjectDisposedException)
        {
        }
        finally
        {
            client.Dispose();
        }
    }

    static async Task Accept(Socket listener)
    {
        while (true)
        {
            Socket client;
            try
            {
                client = await listener.AcceptAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                return;
            }
            client.NoDelay = true;
            var _ = Serve(client);
        }
    }

    static int Main(string[] args)
    {
        ThreadPool.SetMinThreads(8, 8);
        var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, int.Parse(args[0], CultureInfo.InvariantCulture)));
        listener.Listen(128);
        var accepting = Accept(listener);
        Protocol.Go();
        served = 0;
        counting = true;

        Console.ReadLine();

        counting = false;
        Protocol.Stop();
        long requests = Interlocked.Read(ref served);
        listener.Dispose();
        Protocol.PrintTimes();
        Console.WriteLine("requests=" + requests.ToString(CultureInfo.InvariantCulture));
        Console.WriteLine("checksum=ok");
        return Protocol.End();
    }
}
