// Statics: objects of known sizes held by static fields, for the names of a heap snapshot's
// roots. With the path of a library built from StaticsPlugin.cs as argument, that library's
// static field is filled too (a static in a second assembly).
//
// What each static holds (sizes on 64-bit; a Node is 24 bytes: header, method table, a long):
//   Statics.Cache.Entries         a Dictionary<int, Statics.Node> made with capacity 1,000
//                                 (1,103 buckets and entries) holding 1,000 nodes
//   Statics.Cache.Table           a Node[500] holding 500 nodes (24 + 4,000 + 12,000 bytes)
//   Statics.Cache.Current         [ThreadStatic], the main thread's: a List<Node> made with
//                                 capacity 200 holding 200 nodes
//   Statics.Registry<Statics.Node>.Items
//                                 a static of a generic class: a List<Node> made with
//                                 capacity 300 holding 300 nodes (not named: see Registry)
//   Plugin.Store.Numbers          (in the library) an int[3000] (24 + 12,000 bytes)
//   Statics.Cache.Missing         null;  Statics.Cache.Name: a const (no value)
//
// All of it is made in a method of its own (no stack slot holds a part of it afterwards).
// Then GC.Collect() once, with everything alive, and the output
//   "entries=1000 table=500 current=200 items=300 numbers=3000" (numbers=0 without the library).
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace Statics
{
    class Node
    {
        public long Value;

        public Node(long value)
        {
            Value = value;
        }
    }

    static class Cache
    {
        public const string Name = "cache";
        public static Dictionary<int, Node> Entries;
        public static Node[] Table;
        [ThreadStatic] public static List<Node> Current;
        public static string Missing;
    }

    // The runtime gives no address for the statics of a generic class's instantiation
    // (GetAppDomainStaticAddress looks at the generic type definition's field, whose class is
    // never initialized, and answers CORPROF_E_DATAINCOMPLETE): Items cannot be named.
    static class Registry<T>
    {
        public static List<T> Items;
    }

    static class Program
    {
        // Everything is allocated here, not in Main: once this returns, no stack slot of the
        // program still references the last node made (which a stack root would then share
        // with the static that holds it).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Fill(string[] args)
        {
            Cache.Entries = new Dictionary<int, Node>(1000);
            for (int i = 0; i < 1000; i++)
                Cache.Entries.Add(i, new Node(i));
            Cache.Table = new Node[500];
            for (int i = 0; i < Cache.Table.Length; i++)
                Cache.Table[i] = new Node(i);
            Cache.Current = new List<Node>(200);
            for (int i = 0; i < 200; i++)
                Cache.Current.Add(new Node(i));
            Registry<Node>.Items = new List<Node>(300);
            for (int i = 0; i < 300; i++)
                Registry<Node>.Items.Add(new Node(i));
            int numbers = 0;
            if (args.Length > 0)
            {
                Type store = Assembly.LoadFrom(args[0]).GetType("Plugin.Store");
                numbers = (int)store.GetMethod("Fill").Invoke(null, new object[] { 3000 });
            }
            return numbers;
        }

        static int Main(string[] args)
        {
            int numbers = Fill(args);
            GC.Collect();
            Console.WriteLine("entries=" + Cache.Entries.Count + " table=" + Cache.Table.Length
                + " current=" + Cache.Current.Count + " items=" + Registry<Node>.Items.Count
                + " numbers=" + numbers + (Cache.Missing == null ? "" : Cache.Name));
            return 0;
        }
    }
}
