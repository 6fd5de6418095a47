// Typing: writes 3 lines of 20 digits, one digit every 30 ms with no newline until the line
// is done, so that each line takes about 0.6 s to complete. A status line drawn where the
// cursor is would land in the middle of these lines.
//
// Output:
//   01234567890123456789
//   01234567890123456789
//   01234567890123456789
using System;
using System.Threading;

static class Typing
{
    static void Main()
    {
        for (int line = 0; line < 3; line++)
        {
            for (int i = 0; i < 20; i++)
            {
                Console.Write((char)('0' + i % 10));
                Thread.Sleep(30);
            }
            Console.WriteLine();
        }
    }
}
