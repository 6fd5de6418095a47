// Demo: a small "sales report" batch job, the example profiled in the README.
//
// It generates a deterministic CSV-like text, parses it, validates product codes with a regex
// on a few worker threads, aggregates with LINQ and dictionaries, sorts revenues with a
// recursive merge sort, evaluates a recursive pricing rule tree and builds a text report.
// Runs for about 1-2 s on CoreCLR 3.1 and prints a short, deterministic summary.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;

namespace Demo
{
    sealed class Sale
    {
        public int Id;
        public string Region;
        public string Product;
        public int Quantity;
        public double UnitPrice;
        public int Month;

        public double Revenue => Quantity * UnitPrice;
    }

    /// Deterministic pseudo-random numbers (a 64-bit LCG), so every run is the same.
    sealed class Lcg
    {
        ulong state;

        public Lcg(ulong seed) { state = seed; }

        public int Next(int bound)
        {
            state = state * 6364136223846793005UL + 1442695040888963407UL;
            return (int)((state >> 33) % (ulong)bound);
        }
    }

    static class DataGenerator
    {
        static readonly string[] Regions = { "north", "south", "east", "west", "central" };

        public static string Generate(int rows, ulong seed)
        {
            var rng = new Lcg(seed);
            var sb = new StringBuilder(rows * 40);
            sb.Append("id,region,product,quantity,unit_price,month\n");
            for (int i = 0; i < rows; i++)
            {
                // One row in 500 has a malformed product code.
                string product = rng.Next(500) == 0
                    ? "bad-" + rng.Next(100)
                    : "P" + (char)('A' + rng.Next(6)) + "-" + rng.Next(400).ToString("D4");
                sb.Append(i).Append(',')
                  .Append(Regions[rng.Next(Regions.Length)]).Append(',')
                  .Append(product).Append(',')
                  .Append(1 + rng.Next(20)).Append(',')
                  .Append((rng.Next(100000) / 100.0).ToString("F2", CultureInfo.InvariantCulture)).Append(',')
                  .Append(1 + rng.Next(12)).Append('\n');
            }
            return sb.ToString();
        }
    }

    static class CsvParser
    {
        public static List<Sale> Parse(string text)
        {
            var sales = new List<Sale>();
            var lines = text.Split('\n');
            for (int i = 1; i < lines.Length; i++)
            {
                if (lines[i].Length == 0)
                    continue;
                sales.Add(ParseLine(lines[i]));
            }
            return sales;
        }

        static Sale ParseLine(string line)
        {
            var fields = line.Split(',');
            return new Sale
            {
                Id = int.Parse(fields[0], CultureInfo.InvariantCulture),
                Region = fields[1],
                Product = fields[2],
                Quantity = int.Parse(fields[3], CultureInfo.InvariantCulture),
                UnitPrice = double.Parse(fields[4], CultureInfo.InvariantCulture),
                Month = int.Parse(fields[5], CultureInfo.InvariantCulture),
            };
        }
    }

    static class Validator
    {
        static readonly Regex ProductCode = new Regex(@"^P[A-F]-\d{4}$");

        /// Validates product codes on `threads` worker threads; returns the number of invalid rows.
        public static int CountInvalid(List<Sale> sales, int threads)
        {
            var counts = new int[threads];
            var workers = new List<Thread>();
            int chunk = (sales.Count + threads - 1) / threads;
            for (int t = 0; t < threads; t++)
            {
                int index = t;
                var worker = new Thread(() =>
                {
                    int end = Math.Min(sales.Count, (index + 1) * chunk);
                    for (int r = 0; r < 3; r++) // a few passes: this is the "hot" part
                    {
                        int bad = 0;
                        for (int i = index * chunk; i < end; i++)
                        {
                            if (!ProductCode.IsMatch(sales[i].Product))
                                bad++;
                        }
                        counts[index] = bad;
                    }
                });
                worker.Name = "validator-" + (t + 1);
                workers.Add(worker);
                worker.Start();
            }
            foreach (var worker in workers)
                worker.Join();
            return counts.Sum();
        }
    }

    static class MergeSort
    {
        public static void Sort(double[] items)
        {
            var scratch = new double[items.Length];
            Sort(items, scratch, 0, items.Length);
        }

        static void Sort(double[] items, double[] scratch, int lo, int hi)
        {
            if (hi - lo < 2)
                return;
            int mid = (lo + hi) / 2;
            Sort(items, scratch, lo, mid);
            Sort(items, scratch, mid, hi);
            Merge(items, scratch, lo, mid, hi);
        }

        static void Merge(double[] items, double[] scratch, int lo, int mid, int hi)
        {
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                scratch[k++] = items[i] <= items[j] ? items[i++] : items[j++];
            while (i < mid)
                scratch[k++] = items[i++];
            while (j < hi)
                scratch[k++] = items[j++];
            Array.Copy(scratch, lo, items, lo, hi - lo);
        }
    }

    /// A recursive discount rule tree: a node either applies a rate or splits on quantity.
    sealed class PricingRule
    {
        public int Threshold;
        public double Rate;
        public PricingRule Below;
        public PricingRule Above;

        public static PricingRule Build(int depth, int lo, int hi)
        {
            if (depth == 0 || hi - lo < 2)
                return new PricingRule { Rate = 1.0 - lo * 0.01 };
            int mid = (lo + hi) / 2;
            return new PricingRule
            {
                Threshold = mid,
                Below = Build(depth - 1, lo, mid),
                Above = Build(depth - 1, mid, hi),
            };
        }

        public double Apply(Sale sale)
        {
            if (Below == null)
                return sale.Revenue * Rate;
            return sale.Quantity < Threshold ? Below.Apply(sale) : Above.Apply(sale);
        }
    }

    static class Report
    {
        public static string Build(List<Sale> sales, int invalid, double[] sortedRevenues, double discounted)
        {
            var byRegion = sales
                .GroupBy(s => s.Region)
                .Select(g => new { Region = g.Key, Revenue = g.Sum(s => s.Revenue), Count = g.Count() })
                .OrderByDescending(r => r.Revenue)
                .ToList();
            var topProducts = sales
                .GroupBy(s => s.Product)
                .Select(g => new { Product = g.Key, Revenue = g.Sum(s => s.Revenue) })
                .OrderByDescending(p => p.Revenue)
                .ThenBy(p => p.Product, StringComparer.Ordinal)
                .Take(3)
                .ToList();
            var byMonth = new Dictionary<int, double>();
            foreach (var s in sales)
            {
                byMonth.TryGetValue(s.Month, out double sum);
                byMonth[s.Month] = sum + s.Revenue;
            }
            int bestMonth = byMonth.OrderByDescending(kv => kv.Value).First().Key;

            var inv = CultureInfo.InvariantCulture;
            var sb = new StringBuilder();
            sb.AppendLine("rows: " + sales.Count + ", invalid product codes: " + invalid);
            foreach (var r in byRegion)
                sb.AppendLine(string.Format(inv, "region {0,-8} {1,6} sales {2,16:F2}", r.Region, r.Count, r.Revenue));
            foreach (var p in topProducts)
                sb.AppendLine(string.Format(inv, "top product {0} {1:F2}", p.Product, p.Revenue));
            sb.AppendLine("best month: " + bestMonth);
            double median = sortedRevenues[sortedRevenues.Length / 2];
            sb.AppendLine(string.Format(inv, "median sale {0:F2}, largest {1:F2}", median, sortedRevenues[sortedRevenues.Length - 1]));
            sb.AppendLine(string.Format(inv, "revenue after discounts {0:F2}", discounted));
            return sb.ToString();
        }
    }

    static class Program
    {
        static int Main(string[] args)
        {
            int rows = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 400000;
            string text = DataGenerator.Generate(rows, 42);
            List<Sale> sales = CsvParser.Parse(text);
            int invalid = Validator.CountInvalid(sales, 4);

            double[] revenues = sales.Select(s => s.Revenue).ToArray();
            MergeSort.Sort(revenues);

            PricingRule rules = PricingRule.Build(6, 1, 21);
            double discounted = 0;
            foreach (var s in sales)
                discounted += rules.Apply(s);

            Console.Write(Report.Build(sales, invalid, revenues, discounted));
            return 0;
        }
    }
}
