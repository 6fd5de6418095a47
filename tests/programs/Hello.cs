// Hello: the smallest test program. Expected output for arguments `a` and `b c`:
//   Hello from clrprof's test program!
//   args: 2 [a] [b c]
//   sum(1..100) = 5050
using System;

class Hello
{
    static int Main(string[] args)
    {
        Console.WriteLine("Hello from clrprof's test program!");
        var line = "args: " + args.Length;
        foreach (var arg in args)
            line += " [" + arg + "]";
        Console.WriteLine(line);
        int sum = 0;
        for (int i = 1; i <= 100; i++)
            sum += i;
        Console.WriteLine($"sum(1..100) = {sum}");
        return 0;
    }
}
