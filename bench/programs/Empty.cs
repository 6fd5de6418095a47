// Startup benchmark: does nothing but print one line, so that its run time is the runtime's
// startup and shutdown (plus whatever a profiler adds to them).
using System;

static class Empty
{
    static int Main()
    {
        Console.WriteLine("ready");
        return 0;
    }
}
