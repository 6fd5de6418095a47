// Benchmark workload: an async server. 16 clients on the thread pool each send 16,000 requests,
// one after the other (`await HandleAsync(id)`); a request awaits a chain of nested async
// methods (HandleAsync -> ComputeAsync -> StepAsync, and ParseAsync) that do a little CPU work
// each, and a quarter of them give their thread back with `await Task.Yield()` on the way, so
// that the rest of the request continues as a continuation on another pool thread; one
// request in 512 waits for a timer (`await Task.Delay(1)`). The result is the sum of the
// requests' results: the same however the awaits were scheduled.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Threading.Tasks;

static class Async
{
    const int Clients = 16;
    const int Requests = 16000;

    static long Mix(long h, int steps)
    {
        for (int i = 0; i < steps; i++)
            h = h * 6364136223846793005L + 1442695040888963407L;
        return h;
    }

    static async Task<long> ClientAsync(int client, int requests)
    {
        long sum = 0;
        for (int i = 0; i < requests; i++)
            sum += await HandleAsync(client * requests + i);
        return sum;
    }

    static async Task<long> HandleAsync(int id)
    {
        long parsed = await ParseAsync(id);
        long result = await ComputeAsync(parsed, id);
        return result & 0xffff;
    }

    static async Task<long> ParseAsync(int id)
    {
        long h = Mix(id, 1500);
        if (id % 8 == 0)
            await Task.Yield();
        return h;
    }

    static async Task<long> ComputeAsync(long seed, int id)
    {
        long h = await StepAsync(seed, id);
        h = Mix(h, 2000);
        if (id % 512 == 0)
            await Task.Delay(1);
        return h ^ id;
    }

    static async Task<long> StepAsync(long seed, int id)
    {
        if (id % 8 == 4)
            await Task.Yield();
        return Mix(seed, 1500);
    }

    static long Serve(int requests)
    {
        var clients = new Task<long>[Clients];
        for (int c = 0; c < Clients; c++)
        {
            int client = c;
            clients[c] = Task.Run(() => ClientAsync(client, requests));
        }
        Task.WaitAll(clients);
        long sum = 0;
        for (int c = 0; c < Clients; c++)
            sum += clients[c].Result;
        return sum;
    }

    static int Main()
    {
        // Compile every method and start the pool's threads before the work, as a server that
        // has been running would have.
        Serve(200);
        Protocol.Go();

        long checksum = Serve(Requests);

        Protocol.Stop();
        return Protocol.Finish(checksum);
    }
}
