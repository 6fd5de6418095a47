// NativeSpin: spends its CPU time in a stripped native library of the tests
// (tests/programs/NativeSpin.c, built by the harness into libnativespin.so and found through
// LD_LIBRARY_PATH), for the tests of symbol servers (e2e_symbol_server.rs).
//
// One P/Invoke, nativespin_run(42, rounds), with 400 rounds unless given (about 1 s of CPU, in
// two local functions of the library).
//
// Output:
//   nativespin: done 400
using System;
using System.Runtime.InteropServices;

static class NativeSpin
{
    [DllImport("nativespin")]
    static extern ulong nativespin_run(ulong seed, long rounds);

    static int Main(string[] args)
    {
        long rounds = args.Length > 0 ? long.Parse(args[0]) : 400;
        nativespin_run(42, rounds);
        Console.WriteLine("nativespin: done " + rounds);
        return 0;
    }
}
