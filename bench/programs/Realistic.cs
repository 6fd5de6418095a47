// Benchmark workload: a typical line-of-business mix. Generates a CSV-like sales ledger, parses
// it, aggregates with Dictionary/List and LINQ (GroupBy, OrderBy, Select), builds a formatted
// text report, and evaluates small expression trees recursively.
//
// Protocol: see Protocol.cs.
// @include Protocol.cs
// @include ProcessCpu.cs
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;

sealed class Sale
{
    public int Id;
    public string Region;
    public string Product;
    public string Customer;
    public int Quantity;
    public double Price;
    public int Day;
}

sealed class Expr
{
    public char Op;
    public int Value;
    public Expr Left;
    public Expr Right;
}

static class Realistic
{
    const int Rows = 40000;
    const int Passes = 18;

    static readonly string[] Regions = { "north", "south", "east", "west", "central" };
    static readonly string[] Products =
    {
        "anvil", "bolt", "cable", "drill", "engine", "flange", "gear", "hinge",
        "insulator", "jack", "kettle", "lathe", "magnet", "nozzle", "oiler", "piston",
    };

    static uint state;

    static int Next(int bound)
    {
        state = state * 1664525u + 1013904223u;
        return (int)((state >> 8) % (uint)bound);
    }

    static string Generate(int seed)
    {
        state = (uint)seed;
        StringBuilder sb = new StringBuilder(Rows * 48);
        sb.Append("id,region,product,customer,quantity,price,day\n");
        for (int i = 0; i < Rows; i++)
        {
            sb.Append(i).Append(',');
            sb.Append(Regions[Next(Regions.Length)]).Append(',');
            sb.Append(Products[Next(Products.Length)]).Append(',');
            sb.Append("cust").Append(Next(2000).ToString("D4", CultureInfo.InvariantCulture)).Append(',');
            sb.Append(1 + Next(50)).Append(',');
            double price = (100 + Next(99900)) / 100.0;
            sb.Append(price.ToString("F2", CultureInfo.InvariantCulture)).Append(',');
            sb.Append(Next(365)).Append('\n');
        }
        return sb.ToString();
    }

    static List<Sale> Parse(string text)
    {
        List<Sale> sales = new List<Sale>(Rows);
        string[] lines = text.Split(new[] { '\n' }, StringSplitOptions.RemoveEmptyEntries);
        for (int i = 1; i < lines.Length; i++)
        {
            string[] f = lines[i].Split(',');
            Sale s = new Sale();
            s.Id = int.Parse(f[0], CultureInfo.InvariantCulture);
            s.Region = f[1];
            s.Product = f[2];
            s.Customer = f[3];
            s.Quantity = int.Parse(f[4], CultureInfo.InvariantCulture);
            s.Price = double.Parse(f[5], CultureInfo.InvariantCulture);
            s.Day = int.Parse(f[6], CultureInfo.InvariantCulture);
            sales.Add(s);
        }
        return sales;
    }

    static Expr Build(int depth)
    {
        Expr e = new Expr();
        if (depth <= 0)
        {
            e.Op = 'n';
            e.Value = 1 + Next(9);
            return e;
        }
        int k = Next(3);
        e.Op = k == 0 ? '+' : k == 1 ? '-' : '*';
        e.Left = Build(depth - 1);
        e.Right = Build(depth - 1 - Next(2));
        return e;
    }

    static long Eval(Expr e)
    {
        switch (e.Op)
        {
            case 'n': return e.Value;
            case '+': return Eval(e.Left) + Eval(e.Right);
            case '-': return Eval(e.Left) - Eval(e.Right);
            default: return (Eval(e.Left) * Eval(e.Right)) % 1000003;
        }
    }

    static void Print(Expr e, StringBuilder sb)
    {
        if (e.Op == 'n')
        {
            sb.Append(e.Value);
            return;
        }
        sb.Append('(');
        Print(e.Left, sb);
        sb.Append(' ').Append(e.Op).Append(' ');
        Print(e.Right, sb);
        sb.Append(')');
    }

    static string Report(List<Sale> sales, int pass)
    {
        StringBuilder report = new StringBuilder();

        // Dictionary aggregation by hand.
        Dictionary<string, double> revenueByCustomer = new Dictionary<string, double>();
        Dictionary<string, int> unitsByProduct = new Dictionary<string, int>();
        foreach (Sale s in sales)
        {
            double revenue;
            revenueByCustomer.TryGetValue(s.Customer, out revenue);
            revenueByCustomer[s.Customer] = revenue + s.Quantity * s.Price;
            int units;
            unitsByProduct.TryGetValue(s.Product, out units);
            unitsByProduct[s.Product] = units + s.Quantity;
        }
        List<KeyValuePair<string, double>> customers = new List<KeyValuePair<string, double>>(revenueByCustomer);
        customers.Sort(delegate (KeyValuePair<string, double> a, KeyValuePair<string, double> b)
        {
            int c = b.Value.CompareTo(a.Value);
            return c != 0 ? c : string.CompareOrdinal(a.Key, b.Key);
        });
        report.AppendLine("top customers:");
        for (int i = 0; i < 10 && i < customers.Count; i++)
            report.AppendFormat(CultureInfo.InvariantCulture, "  {0,-10} {1,14:N2}\n", customers[i].Key, customers[i].Value);

        // LINQ: per region and product.
        var byRegion = sales
            .GroupBy(s => s.Region)
            .Select(g => new
            {
                Region = g.Key,
                Orders = g.Count(),
                Revenue = g.Sum(s => s.Quantity * s.Price),
                Best = g.GroupBy(s => s.Product)
                    .Select(p => new { Product = p.Key, Units = p.Sum(s => s.Quantity) })
                    .OrderByDescending(p => p.Units)
                    .ThenBy(p => p.Product, StringComparer.Ordinal)
                    .First(),
            })
            .OrderBy(r => r.Region, StringComparer.Ordinal)
            .ToList();
        report.AppendLine("regions:");
        foreach (var r in byRegion)
            report.AppendFormat(CultureInfo.InvariantCulture, "  {0,-8} orders={1} revenue={2:F2} best={3} ({4})\n",
                r.Region, r.Orders, r.Revenue, r.Best.Product, r.Best.Units);

        var months = sales
            .Where(s => s.Quantity > 10)
            .GroupBy(s => s.Day / 31)
            .OrderBy(g => g.Key)
            .Select(g => string.Format(CultureInfo.InvariantCulture, "m{0:D2}:{1}", g.Key, g.Count()));
        report.Append("busy months: ").AppendLine(string.Join(" ", months));

        List<string> products = unitsByProduct.Keys.ToList();
        products.Sort(StringComparer.Ordinal);
        foreach (string p in products)
            report.Append(p.ToUpperInvariant()).Append('=').Append(unitsByProduct[p]).Append(';');
        report.AppendLine();

        // A little recursion.
        state = (uint)(pass * 7919 + 17);
        long exprTotal = 0;
        for (int i = 0; i < 300; i++)
        {
            Expr e = Build(10);
            exprTotal += Eval(e);
            if (i == 0)
            {
                StringBuilder sb = new StringBuilder();
                Print(e, sb);
                report.Append("expr length ").Append(sb.Length).AppendLine();
            }
        }
        report.Append("expr total ").Append(exprTotal).AppendLine();
        return report.ToString();
    }

    static ulong Hash(string s, ulong h)
    {
        foreach (char c in s)
        {
            h ^= c;
            h *= 1099511628211UL;
        }
        return h;
    }

    static int Main()
    {
        Protocol.Go();

        ulong checksum = 14695981039346656037UL;
        for (int pass = 0; pass < Passes; pass++)
        {
            string text = Generate(pass + 1);
            List<Sale> sales = Parse(text);
            string report = Report(sales, pass);
            checksum = Hash(report, checksum);
        }

        Protocol.Stop();
        return Protocol.Finish(checksum.ToString("x16", CultureInfo.InvariantCulture));
    }
}
