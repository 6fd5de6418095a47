/*
 * NativeSpin: a native library whose CPU time is in two local (static) functions, for the
 * tests of symbol servers (e2e_symbol_server.rs). The harness builds it with `cc`, splits its
 * debug information off (`objcopy --only-keep-debug`) and strips the library, as .NET 8 ships
 * libcoreclr.so and publishes its debug file on a symbol server: a recording names spin_mix
 * and spin_fold `libnativespin.so!+0x...` until the debug file names them.
 *
 * nativespin_run(seed, rounds) runs each function rounds times over 1,000,000 steps (about
 * 2 ms a round for both) and returns the state, which depends only on its arguments.
 */
#include <stdint.h>

__attribute__((noinline)) static uint64_t spin_mix(uint64_t x, long n)
{
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    return x;
}

__attribute__((noinline)) static uint64_t spin_fold(uint64_t x, long n)
{
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

__attribute__((visibility("default"))) uint64_t nativespin_run(uint64_t seed, long rounds)
{
    uint64_t x = seed;
    for (long r = 0; r < rounds; r++) {
        x = spin_mix(x, 1000000);
        x = spin_fold(x, 1000000);
    }
    return x;
}
