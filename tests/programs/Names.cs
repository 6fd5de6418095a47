// Names: the constructs whose display names the SDK's Namer must get right (namespaces, nested
// and generic types, generic methods, overloads, ref/out, multi-dimensional and jagged arrays,
// structs, properties, static constructors, lambdas, framework generics). Run under the
// probe-names profiler by tests/sdk_names.rs. Expected output:
//   inner=7 box=5/hi point=25 name=Ada config=names
//   map=2,4,6/1;2;3 parse=42/255 swap=2,1 divide=True:3 sum=10 chars=6
//   groups=even:2,odd:3 answer=42 old=1
using System;
using System.Collections.Generic;

namespace Demo
{
    public class Outer
    {
        public class Inner
        {
            public int Run()
            {
                return 7;
            }
        }
    }

    public class Box<T>
    {
        private T item;
        private int count;

        public void Put(T item, int count)
        {
            this.item = item;
            this.count = count;
        }

        public T Get()
        {
            return item;
        }

        public int Count
        {
            get { return count; }
        }
    }

    public struct Point
    {
        public int X;
        public int Y;

        public Point(int x, int y)
        {
            X = x;
            Y = y;
        }

        public int LengthSquared()
        {
            return X * X + Y * Y;
        }
    }

    public class Person
    {
        private readonly string name;

        public Person(string name)
        {
            this.name = name;
        }

        public string Name
        {
            get { return name; }
        }
    }

    public static class Config
    {
        public static readonly string Mode;

        static Config()
        {
            Mode = "names";
        }
    }

    public static class Program
    {
        public const int Answer = 42;

        public static TOut[] Map<TIn, TOut>(TIn[] items, Func<TIn, TOut> f)
        {
            var result = new TOut[items.Length];
            for (int i = 0; i < items.Length; i++)
                result[i] = f(items[i]);
            return result;
        }

        public static int Parse(string s)
        {
            return Parse(s, 10);
        }

        public static int Parse(string s, int radix)
        {
            return Convert.ToInt32(s, radix);
        }

        public static void Swap(ref int a, ref int b)
        {
            int t = a;
            a = b;
            b = t;
        }

        public static bool TryDivide(int a, int b, out int quotient)
        {
            if (b == 0)
            {
                quotient = 0;
                return false;
            }
            quotient = a / b;
            return true;
        }

        public static int Sum(int[,] grid)
        {
            int total = 0;
            for (int i = 0; i < grid.GetLength(0); i++)
                for (int j = 0; j < grid.GetLength(1); j++)
                    total += grid[i, j];
            return total;
        }

        public static int CountChars(string[][] rows)
        {
            int n = 0;
            foreach (var row in rows)
                foreach (var s in row)
                    n += s.Length;
            return n;
        }

        public static Dictionary<string, List<int>> Group(List<int> values)
        {
            var groups = new Dictionary<string, List<int>>();
            foreach (var v in values)
            {
                string key = v % 2 == 0 ? "even" : "odd";
                List<int> list;
                if (!groups.TryGetValue(key, out list))
                {
                    list = new List<int>();
                    groups[key] = list;
                }
                list.Add(v);
            }
            return groups;
        }

        [Obsolete("use Parse")]
        public static int Old()
        {
            return 1;
        }

        static int Main(string[] args)
        {
            int inner = new Outer.Inner().Run();

            var intBox = new Box<int>();
            intBox.Put(5, 1);
            var stringBox = new Box<string>();
            stringBox.Put("hi", 2);
            var point = new Point(3, 4);
            var person = new Person("Ada");
            Console.WriteLine("inner=" + inner + " box=" + intBox.Get() + "/" + stringBox.Get()
                + " point=" + point.LengthSquared() + " name=" + person.Name
                + " config=" + Config.Mode);

            int[] numbers = { 1, 2, 3 };
            int[] doubled = Map(numbers, x => x * 2);
            string[] texts = Map(numbers, x => x.ToString());
            int a = 1, b = 2;
            Swap(ref a, ref b);
            int q;
            bool ok = TryDivide(7, 2, out q);
            var grid = new int[2, 2] { { 1, 2 }, { 3, 4 } };
            var rows = new string[][] { new[] { "ab", "c" }, new[] { "def" } };
            Console.WriteLine("map=" + string.Join(",", doubled) + "/" + string.Join(";", texts)
                + " parse=" + Parse("42") + "/" + Parse("ff", 16)
                + " swap=" + a + "," + b + " divide=" + ok + ":" + q
                + " sum=" + Sum(grid) + " chars=" + CountChars(rows));

            var groups = Group(new List<int> { 1, 2, 3, 4, 5 });
#pragma warning disable 618
            int old = Old();
#pragma warning restore 618
            Console.WriteLine("groups=even:" + groups["even"].Count + ",odd:" + groups["odd"].Count
                + " answer=" + Answer + " old=" + old);
            return 0;
        }
    }
}
