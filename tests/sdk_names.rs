//! The SDK's display names on a real runtime: `tests/programs/Names.cs` runs under the
//! `probe-names` profiler, which writes the names its `Namer` computes for every JIT-compiled
//! function, loaded class, allocated object's class and module, and what it reads from the
//! program's metadata by token. The names are compared exactly.
//!
//! What the runtime gives, observed on CoreCLR 3.1 and asserted below:
//! - Generic code over value types is compiled per instantiation, so it is named with the
//!   actual arguments: `Demo.Box<int>.Put(int, int)`, `Demo.Program.Map<int, int>(...)`.
//! - Generic code over reference types is shared (compiled once over `System.__Canon`), and
//!   named as such: `Demo.Box<__Canon>.Put(__Canon, int)` for `Box<string>` and
//!   `Demo.Program.Map<int, __Canon>(int[], System.Func<int, __Canon>)` for
//!   `Map<int, string>`. `GetFunctionInfo2` without a frame does not tell a shared method's
//!   class; the namer finds it among the canonical classes the runtime loads, which the
//!   probe passes to `Namer::class_loaded`. Loaded classes and allocated objects have exact
//!   ClassIDs (`Demo.Box<string>`), except those canonical ones (`Demo.Box<__Canon>`).
//! - mcs compiles the two lambdas of `Main` to static methods `<Main>m__0` and `<Main>m__1`
//!   of `Demo.Program`.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use clrprof_e2e::{OutputExt, compile, example_lib, probes, run_probe};

/// The lines the probe wrote, from one run of the program shared by all tests.
fn probe_lines() -> &'static [String] {
    static LINES: OnceLock<Vec<String>> = OnceLock::new();
    LINES.get_or_init(|| {
        let program = compile("Names");
        let probes::ProbeRun {
            output: out, text, ..
        } = run_probe(
            &mut program.command_with_profiler(probes::NAMES, &example_lib("probe-names")),
        );
        assert_eq!(
            out.stdout_str(),
            "inner=7 box=5/hi point=25 name=Ada config=names\n\
             map=2,4,6/1;2;3 parse=42/255 swap=2,1 divide=True:3 sum=10 chars=6\n\
             groups=even:2,odd:3 answer=42 old=1\n",
            "the program's output changed under the profiler\n{}",
            out.describe()
        );
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(
            lines.first().map(String::as_str),
            Some("init"),
            "{}",
            out.describe()
        );
        lines
    })
}

/// The names of kind `kind` (the part after `kind\t`).
fn names(kind: &str) -> BTreeSet<&'static str> {
    let prefix = format!("{kind}\t");
    probe_lines()
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect()
}

/// Names of kind `kind` that start with `start`.
fn names_starting(kind: &str, start: &str) -> BTreeSet<&'static str> {
    names(kind)
        .into_iter()
        .filter(|n| n.starts_with(start))
        .collect()
}

#[track_caller]
fn assert_set(actual: BTreeSet<&str>, expected: &[&str]) {
    let expected: BTreeSet<&str> = expected.iter().copied().collect();
    let missing: Vec<_> = expected.difference(&actual).collect();
    let extra: Vec<_> = actual.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nunexpected: {extra:#?}"
    );
}

#[track_caller]
fn assert_contains(actual: &BTreeSet<&str>, expected: &[&str]) {
    let missing: Vec<_> = expected.iter().filter(|e| !actual.contains(*e)).collect();
    assert!(
        missing.is_empty(),
        "missing: {missing:#?}\namong: {actual:#?}"
    );
}

#[test]
fn no_lookup_failed() {
    let errors = names("error");
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn jit_compiled_functions_of_the_program() {
    assert_set(
        names_starting("jit", "Demo."),
        &[
            "Demo.Program.Main(string[])",
            "Demo.Outer.Inner..ctor()",
            "Demo.Outer.Inner.Run()",
            "Demo.Box<int>..ctor()",
            "Demo.Box<int>.Put(int, int)",
            "Demo.Box<int>.Get()",
            // Box<string>: shared code over System.__Canon.
            "Demo.Box<__Canon>..ctor()",
            "Demo.Box<__Canon>.Put(__Canon, int)",
            "Demo.Box<__Canon>.Get()",
            "Demo.Point..ctor(int, int)",
            "Demo.Point.LengthSquared()",
            "Demo.Person..ctor(string)",
            "Demo.Person.get_Name()",
            "Demo.Config..cctor()",
            "Demo.Program.Map<int, int>(int[], System.Func<int, int>)",
            // Map<int, string>: shared code, TOut is a reference type.
            "Demo.Program.Map<int, __Canon>(int[], System.Func<int, __Canon>)",
            "Demo.Program.<Main>m__0(int)",
            "Demo.Program.<Main>m__1(int)",
            "Demo.Program.Parse(string)",
            "Demo.Program.Parse(string, int)",
            "Demo.Program.Swap(ref int, ref int)",
            "Demo.Program.TryDivide(int, int, out int)",
            "Demo.Program.Sum(int[,])",
            "Demo.Program.CountChars(string[][])",
            "Demo.Program.Group(System.Collections.Generic.List<int>)",
            "Demo.Program.Old()",
        ],
    );
}

#[test]
fn jit_compiled_framework_generics() {
    assert_contains(
        &names("jit"),
        &["string.Join<int>(string, System.Collections.Generic.IEnumerable<int>)"],
    );
}

#[test]
fn loaded_classes() {
    assert_set(
        names_starting("class", "Demo."),
        &[
            "Demo.Program",
            "Demo.Outer",
            "Demo.Outer.Inner",
            "Demo.Box<int>",
            "Demo.Box<string>",
            "Demo.Box<__Canon>",
            "Demo.Point",
            "Demo.Person",
            "Demo.Config",
        ],
    );
    assert_contains(
        &names("class"),
        &[
            "System.__Canon",
            "System.Collections.Generic.List<int>",
            "System.Collections.Generic.List<int>.Enumerator",
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>",
            "System.Collections.Generic.KeyValuePair<string, System.Collections.Generic.List<int>>",
            "System.Collections.Generic.Dictionary<__Canon, __Canon>",
            "System.Func<int, int>",
            "System.Func<int, string>",
        ],
    );
}

#[test]
fn allocated_classes_including_arrays() {
    assert_contains(
        &names("alloc"),
        &[
            "int[]",
            "string[]",
            "char[]",
            "int[,]",
            "string[][]",
            "Demo.Outer.Inner",
            "Demo.Box<int>",
            "Demo.Box<string>",
            "Demo.Person",
            "System.Func<int, int>",
            "System.Func<int, string>",
            "System.Collections.Generic.List<int>",
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>",
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>.Entry[]",
        ],
    );
}

#[test]
fn module_names_are_file_names() {
    assert_contains(
        &names("module"),
        &[
            "System.Private.CoreLib.dll",
            "Names.dll",
            "System.Runtime.dll",
        ],
    );
}

#[test]
fn types_and_methods_named_from_tokens() {
    assert_set(
        names("type"),
        &[
            "Demo.Outer",
            "Demo.Outer.Inner",
            "Demo.Box<T>",
            "Demo.Point",
            "Demo.Person",
            "Demo.Config",
            "Demo.Program",
            "<PrivateImplementationDetails>",
            "<PrivateImplementationDetails>.$ArrayType=12",
            "<PrivateImplementationDetails>.$ArrayType=16",
        ],
    );
    assert_set(
        names("method"),
        &[
            "Demo.Outer..ctor()",
            "Demo.Outer.Inner..ctor()",
            "Demo.Outer.Inner.Run()",
            "Demo.Box<T>..ctor()",
            "Demo.Box<T>.Put(T, int)",
            "Demo.Box<T>.Get()",
            "Demo.Box<T>.get_Count()",
            "Demo.Point..ctor(int, int)",
            "Demo.Point.LengthSquared()",
            "Demo.Person..ctor(string)",
            "Demo.Person.get_Name()",
            "Demo.Config..cctor()",
            "Demo.Program.Map<TIn, TOut>(TIn[], System.Func<TIn, TOut>)",
            "Demo.Program.Parse(string)",
            "Demo.Program.Parse(string, int)",
            "Demo.Program.Swap(ref int, ref int)",
            "Demo.Program.TryDivide(int, int, out int)",
            "Demo.Program.Sum(int[,])",
            "Demo.Program.CountChars(string[][])",
            "Demo.Program.Group(System.Collections.Generic.List<int>)",
            "Demo.Program.Old()",
            "Demo.Program.Main(string[])",
            "Demo.Program.<Main>m__0(int)",
            "Demo.Program.<Main>m__1(int)",
        ],
    );
}

#[test]
fn type_specs_named_from_tokens() {
    // Without an enclosing type or method, generic parameters of TypeSpecs print as !n / !!n.
    assert_set(
        names("spec"),
        &[
            "Demo.Box<!0>",
            "!!0",
            "!!1",
            "System.Func<!!0, !!1>",
            "int[,]",
            "string[]",
            "Demo.Box<int>",
            "Demo.Box<string>",
            "System.Func<int, int>",
            "System.Func<int, string>",
            "System.Collections.Generic.List<int>",
            "System.Collections.Generic.List<int>.Enumerator",
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>",
        ],
    );
}

#[test]
fn metadata_reader_calls() {
    let expected: &[(&str, &[&str])] = &[
        ("scope", &["Names.dll"]),
        ("nested", &["Inner in Demo.Outer", "Demo.Outer in None"]),
        ("find", &["Demo.Missing None", "Parse overloads 2"]),
        ("fields", &["Demo.Point X:I4 Y:I4"]),
        ("const", &["Answer = 42"]),
        ("params", &["Parse/1 1:s", "Parse/2 1:s 2:radix"]),
        (
            "attr",
            &["Old Some(\"use Parse\")", "Old compiler-generated false"],
        ),
        ("generics", &["T TIn TOut"]),
    ];
    for (kind, lines) in expected {
        assert_set(names(kind), lines);
    }
}
