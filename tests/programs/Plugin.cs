// Plugin: a library loaded by Generics.cs (`Generics calls PLUGIN.dll ...`). The tests compile
// it twice, under two assembly names, so that the same full name `Lib.Util.Run(int)` exists
// in two assemblies. Run(1) returns 1; Main does nothing (the harness compiles executables).
using System.Runtime.CompilerServices;

namespace Lib
{
    public static class Util
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Run(int n)
        {
            int h = 0;
            for (int i = 0; i < n; i++)
                h = h * 31 + i + 1;
            return n == 1 ? 1 : h;
        }
    }
}

static class PluginMain
{
    static void Main()
    {
    }
}
