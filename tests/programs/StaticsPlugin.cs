// StaticsPlugin: a library for Statics.cs (`Statics PLUGIN.dll`): Plugin.Store.Fill(n) puts an
// int[n] in the static field Plugin.Store.Numbers and returns n. Main does nothing (the
// harness compiles executables).
namespace Plugin
{
    public static class Store
    {
        public static int[] Numbers;

        public static int Fill(int n)
        {
            Numbers = new int[n];
            return Numbers.Length;
        }
    }
}

static class StaticsPluginMain
{
    static void Main()
    {
    }
}
