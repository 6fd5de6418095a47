// EventPipeProbe: the program of the EventPipe probe (tests/sdk_eventpipe.rs).
//
// Induces 3 blocking gen-2 GCs, then calls `StopMarker` (whose JIT compilation makes the probe
// write its own event and stop its session), then induces 2 gen-0 GCs that no session sees.
//
// Output (with or without a profiler):
//   gcs before stop: 3
//   marker: 1
//   gcs after stop: 2
using System;
using System.Runtime.CompilerServices;

class EventPipeProbe
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int StopMarker()
    {
        return 1;
    }

    static int Main()
    {
        int before = GC.CollectionCount(2);
        GC.Collect(2, GCCollectionMode.Forced, true);
        GC.Collect(2, GCCollectionMode.Forced, true);
        GC.Collect(2, GCCollectionMode.Forced, true);
        Console.WriteLine("gcs before stop: " + (GC.CollectionCount(2) - before));
        Console.WriteLine("marker: " + StopMarker());
        int gen0 = GC.CollectionCount(0);
        GC.Collect(0, GCCollectionMode.Forced, true);
        GC.Collect(0, GCCollectionMode.Forced, true);
        Console.WriteLine("gcs after stop: " + (GC.CollectionCount(0) - gen0));
        return 0;
    }
}
