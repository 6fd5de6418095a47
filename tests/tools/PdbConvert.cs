// PdbConvert: gives an assembly that `mcs -debug` compiled portable PDB symbols, written by
// Mono.Cecil (Debian's libmono-cecil-private-cil, Cecil 0.11), so that clrprof's reader of
// portable PDBs is tested against files a library no one here wrote makes.
//
//   mono PdbConvert.exe IN.dll OUT_DIR portable|embedded
//
// Reads IN.dll and its Mono symbols IN.dll.mdb (with Mono's own symbol-file reader,
// Mono.CompilerServices.SymbolWriter), gives every method the sequence points the .mdb has
// (source file, IL offset, line; hidden points left out), and saves the assembly with Cecil
// into OUT_DIR: `portable` writes OUT_DIR/IN.pdb beside it, `embedded` puts the PDB inside
// the assembly (its debug directory). Prints the number of sequence points written.
using System;
using System.Collections.Generic;
using System.IO;
using Mono.Cecil;
using Mono.Cecil.Cil;
using Mono.CompilerServices.SymbolWriter;

static class PdbConvert
{
    static int Main(string[] args)
    {
        if (args.Length != 3 || (args[2] != "portable" && args[2] != "embedded"))
        {
            Console.Error.WriteLine("usage: PdbConvert IN.dll OUT_DIR portable|embedded");
            return 2;
        }
        string input = args[0];
        MonoSymbolFile mdb = MonoSymbolFile.ReadSymbolFile(input + ".mdb");
        var byToken = new Dictionary<int, MethodEntry>();
        for (int i = 0; i < mdb.MethodCount; i++)
        {
            MethodEntry m = mdb.GetMethod(i + 1);
            byToken[m.Token] = m;
        }
        var module = ModuleDefinition.ReadModule(input, new ReaderParameters { InMemory = true });
        var documents = new Dictionary<int, Document>();
        int points = 0;
        foreach (TypeDefinition type in module.GetTypes())
        {
            foreach (MethodDefinition method in type.Methods)
            {
                MethodEntry entry;
                if (!method.HasBody || !byToken.TryGetValue(method.MetadataToken.ToInt32(), out entry))
                    continue;
                var offsets = new Dictionary<int, Instruction>();
                foreach (Instruction ins in method.Body.Instructions)
                    offsets[ins.Offset] = ins;
                foreach (LineNumberEntry line in entry.GetLineNumberTable().LineNumbers)
                {
                    Instruction at;
                    if (line.IsHidden || line.Row <= 0 || line.Row == 0xfeefee || !offsets.TryGetValue(line.Offset, out at))
                        continue;
                    Document doc;
                    if (!documents.TryGetValue(line.File, out doc))
                    {
                        doc = new Document(mdb.GetSourceFile(line.File).FileName)
                        {
                            Language = DocumentLanguage.CSharp,
                        };
                        documents[line.File] = doc;
                    }
                    int column = line.Column > 0 ? line.Column : 1;
                    method.DebugInformation.SequencePoints.Add(new SequencePoint(at, doc)
                    {
                        StartLine = line.Row,
                        EndLine = line.Row,
                        StartColumn = column,
                        EndColumn = column + 1,
                    });
                    points++;
                }
            }
        }
        ISymbolWriterProvider provider = args[2] == "portable"
            ? (ISymbolWriterProvider)new PortablePdbWriterProvider()
            : new EmbeddedPortablePdbWriterProvider();
        Directory.CreateDirectory(args[1]);
        module.Write(Path.Combine(args[1], Path.GetFileName(input)), new WriterParameters
        {
            WriteSymbols = true,
            SymbolWriterProvider = provider,
        });
        Console.WriteLine(points);
        return 0;
    }
}
