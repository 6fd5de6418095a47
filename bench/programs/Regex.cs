// Benchmark workload: code generated at run time. A Regex with RegexOptions.Compiled (a
// DynamicMethod the runtime compiles) scans text for matches, so most of the time is spent in
// generated code that only GetFunctionFromIP3 and GetDynamicFunctionInfo name.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System.Text;
using System.Text.RegularExpressions;

static class RegexWorkload
{
    const int Rounds = 2000;

    static int Main()
    {
        // 200 KB of log-like lines, a tenth of which the pattern matches.
        var text = new StringBuilder();
        for (int i = 0; i < 4000; i++)
        {
            text.Append("2026-11-25 12:").Append(i % 60).Append(" worker-").Append(i % 7);
            text.Append(i % 10 == 0 ? " ERROR code=" + (i * 37 % 1000) : " ok");
            text.Append(" latency=").Append(i * 13 % 997).Append("ms\n");
        }
        var input = text.ToString();
        var regex = new Regex(@"worker-(\d+) ERROR code=(\d{2,3}) latency=(\d+)ms", RegexOptions.Compiled);
        Protocol.Go();

        long sum = 0;
        for (int round = 0; round < Rounds; round++)
        {
            for (Match m = regex.Match(input); m.Success; m = m.NextMatch())
                sum += m.Groups[2].Length + m.Groups[3].Value.Length;
        }

        Protocol.Stop();
        return Protocol.Finish(sum);
    }
}
