//! `clrprof coverage` on a real runtime: exact hit counts per line and per block of
//! `tests/programs/Coverage.cs` (branches, a loop, a switch, try/catch/finally with a filter,
//! a generic method, a struct return, a method never called), whose output must not change
//! under instrumentation; and every output format.

use std::collections::BTreeMap;

use clrprof_e2e::{
    OutputExt, PdbKind, Program, Recording, compile, coverage, programs_dir, run_command,
    with_portable_pdb,
};
use serde_json::Value;

/// The lines of `Coverage.cs` marked `// @name`, by name.
fn markers() -> BTreeMap<String, u32> {
    clrprof_e2e::line_markers("Coverage.cs")
}

/// Expected hits of every marked line, as derived in the comment at the top of `Coverage.cs`.
const EXPECTED_LINES: &[(&str, u64)] = &[
    ("classify-test", 10),
    ("negative", 3),
    ("zero-test", 7),
    ("zero", 1),
    ("positive", 6),
    ("sum-init", 4),
    ("sum-body", 18),
    ("switch", 10),
    ("case0", 1),
    ("case3", 1),
    ("default", 3),
    ("want", 3),
    ("throw-test", 6),
    ("big", 1),
    ("divide", 5),
    ("caught", 2),
    ("finally", 6),
    ("pick-test", 5),
    ("pick-a", 3),
    ("pick-b", 2),
    ("pair", 4),
    ("big-switch", 50),
    ("big-case0", 1),
    ("big-default", 10),
    ("never", 0),
];

/// Runs the program with `args` under `clrprof coverage`, checks its output is the
/// uninstrumented one, and returns the recording (`trace` is the coverage file).
fn covered(program: &Program, args: &[&str], clrprof_args: &[&str], extension: &str) -> Recording {
    let plain = program.run(args);
    plain.assert_success();
    let rec = coverage(program, args, clrprof_args, extension);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        plain.stdout_str(),
        "{}",
        rec.output.describe()
    );
    // No warning from the agent (an uninstrumented method, a refused IL map).
    assert!(
        !rec.output.stderr_str().contains("coverage:"),
        "{}",
        rec.output.describe()
    );
    rec
}

/// The coverage file of a `--format json` recording, parsed.
fn coverage_json(rec: &Recording) -> Value {
    serde_json::from_str(&std::fs::read_to_string(&rec.trace).unwrap()).unwrap()
}

/// Checks that every marked line of `Coverage.cs` has, in the coverage `json`, the hits
/// [`EXPECTED_LINES`] gives it (`what`: which coverage file, for the messages).
#[track_caller]
fn assert_expected_line_hits(json: &Value, markers: &BTreeMap<String, u32>, what: &str) {
    for &(marker, expected) in EXPECTED_LINES {
        let line = markers[marker].to_string();
        let found: Vec<u64> = json["methods"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["lines"].get(&line).and_then(Value::as_u64))
            .collect();
        assert_eq!(found, [expected], "{what}line {line} (@{marker})");
    }
}

fn method<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method_name"] == name)
        .unwrap_or_else(|| panic!("no method {name} in {json:#}"))
}

fn hits(m: &Value) -> Vec<u64> {
    m["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["hits"].as_u64().unwrap())
        .collect()
}

#[test]
fn exact_counts_per_line_and_block() {
    let program = compile("Coverage");
    let json = coverage_json(&covered(&program, &[], &["--format", "json"], "json"));

    // Every method of the program, compiled or not, and nothing from the framework.
    let mut names: Vec<&str> = json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["assembly"], "Coverage");
            assert_eq!(m["type_name"], "Coverage");
            m["method_name"].as_str().unwrap()
        })
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            ".ctor", "Big", "Classify", "Guarded", "Main", "MakePair", "Name", "Never", "Pick<T>",
            "SumTo", "Want"
        ]
    );

    // Every marked line has the count its source says.
    let markers = markers();
    assert_eq!(markers.len(), EXPECTED_LINES.len());
    assert_expected_line_hits(&json, &markers, "");

    // Blocks, in IL order. Classify: the `x < 0` test, `return -1`, the `x == 0` test,
    // `return 0`, `return 1`.
    assert_eq!(hits(method(&json, "Classify")), [10, 3, 7, 1, 6]);
    // Name: the switch's block, its fall-through for days past 6, one block per case (days
    // 0..6 once each) and the default (7, 8, 9).
    let mut name = hits(method(&json, "Name"));
    assert_eq!(name.remove(0), 10);
    name.sort_unstable();
    assert_eq!(name, [1, 1, 1, 1, 1, 1, 1, 3, 3]);
    // Big: entered 50 times, each of the 40 cases once, the default 10 times.
    let big = hits(method(&json, "Big"));
    assert_eq!(big[0], 50);
    assert_eq!(big.iter().filter(|&&h| h == 1).count(), 40, "{big:?}");
    assert!(big.contains(&10), "{big:?}");
    // One body (and one set of counters) for Pick<int> and Pick<string>.
    assert_eq!(hits(method(&json, "Pick<T>"))[0], 5);
    // A method without branches is one block; one never called has only zeros.
    assert_eq!(hits(method(&json, "MakePair")), [4]);
    assert!(hits(method(&json, "Never")).iter().all(|&h| h == 0));
    assert_eq!(hits(method(&json, ".ctor")), [0]);
    // Guarded: entered 6 times; the filter's and the handlers' blocks are counted too.
    let guarded = hits(method(&json, "Guarded"));
    assert_eq!(guarded[0], 6);
    assert!(guarded.contains(&2) && guarded.contains(&1), "{guarded:?}");
    // Blocks tile each method's IL without gaps.
    for m in json["methods"].as_array().unwrap() {
        let blocks = m["blocks"].as_array().unwrap();
        assert_eq!(blocks[0]["il_start"], 0);
        for w in blocks.windows(2) {
            assert_eq!(w[0]["il_end"], w[1]["il_start"], "{m:#}");
        }
    }
}

#[test]
fn lcov_cobertura_and_text_outputs() {
    let program = compile("Coverage");
    let markers = markers();

    let lcov = covered(&program, &[], &["--format", "lcov"], "info");
    let text = std::fs::read_to_string(&lcov.trace).unwrap();
    // One source file: the program's, which exists.
    let sources: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("SF:")).collect();
    assert_eq!(sources.len(), 1, "{text}");
    assert!(sources[0].ends_with("Coverage.cs") && std::path::Path::new(sources[0]).is_file());
    for &(marker, expected) in EXPECTED_LINES {
        let da = format!("DA:{},{expected}", markers[marker]);
        assert!(text.lines().any(|l| l == da), "no {da} in\n{text}");
    }
    assert!(
        text.lines().any(|l| l == "FNDA:10,Coverage.Classify(int)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "FNDA:0,Coverage.Never()"),
        "{text}"
    );
    // 10 methods with source lines (the implicit constructor has none), 9 of them called.
    assert!(
        text.lines().any(|l| l == "FNF:10") && text.lines().any(|l| l == "FNH:9"),
        "{text}"
    );
    assert!(text.ends_with("end_of_record\n"));
    // lcov's own HTML generator accepts it, branches (blocks) included, without warnings.
    let html = lcov.dir.path().join("html");
    let out = run_command(
        std::process::Command::new("genhtml")
            .arg("--branch-coverage")
            .arg("--output-directory")
            .arg(&html)
            .arg(&lcov.trace),
    );
    out.assert_success();
    assert!(!out.stderr_str().contains("WARNING"), "{}", out.describe());
    assert!(html.join("index.html").is_file());
    let summary = out.stdout_str();
    // 9 of the 10 methods with lines were called (not Never).
    assert!(
        summary.contains("functions..: 90.0% (9 of 10 functions)"),
        "{summary}"
    );

    let cobertura = covered(&program, &[], &["--format", "cobertura"], "xml");
    let xml = std::fs::read_to_string(&cobertura.trace).unwrap();
    // Valid against Cobertura's DTD, by libxml2.
    let dtd = programs_dir()
        .parent()
        .unwrap()
        .join("schemas/coverage-04.dtd");
    let out = run_command(
        std::process::Command::new("xmllint")
            .arg("--noout")
            .arg("--nonet")
            .arg("--dtdvalid")
            .arg(&dtd)
            .arg(&cobertura.trace),
    );
    out.assert_success();
    assert_eq!(out.stderr_str(), "", "{}", out.describe());
    let line = format!("<line number=\"{}\" hits=\"18\"", markers["sum-body"]);
    assert!(xml.contains(&line), "{xml}");
    assert!(xml.contains("<method name=\"Pick&lt;T&gt;\" signature=\"(bool, T, T)\""));

    let text = covered(&program, &[], &[], "txt");
    let report = std::fs::read_to_string(&text.trace).unwrap();
    assert!(report.starts_with("Coverage: "), "{report}");
    assert!(report.contains("Coverage.Classify(int) [Coverage] 5/5 blocks, 10 calls"));
}

/// Every method of the other test programs runs with a counter in every block (the JIT
/// accepts all those bodies: a rejected one would throw `InvalidProgramException`), and each
/// program's output and exit code stay the same.
#[test]
fn every_test_program_runs_unchanged_with_counters_in_every_block() {
    let programs: &[(&str, &[&str])] = &[
        ("Hello", &["a", "b c"]),
        ("Events", &[]),
        ("Doubles", &[]),
        ("Calls", &[]),
        ("Traced", &[]),
        ("Names", &[]),
        ("IlRewrite", &[]),
        ("JitCount", &[]),
        ("Heap", &[]),
        ("Crash", &["exit", "3"]),
    ];
    for &(name, args) in programs {
        let program = compile(name);
        let plain = program.run(args);
        let rec = coverage(&program, args, &["--format", "json"], "json");
        assert_eq!(
            rec.output.status.code(),
            plain.status.code(),
            "{name}: {}",
            rec.output.describe()
        );
        assert_eq!(rec.output.stdout_str(), plain.stdout_str(), "{name}");
        // No warning from the agent (an uninstrumented method, a refused IL map).
        assert!(
            !rec.output.stderr_str().contains("coverage:"),
            "{name}: {}",
            rec.output.describe()
        );
        let json = coverage_json(&rec);
        let methods = json["methods"].as_array().unwrap();
        // Main ran once, through its first block.
        let main = methods
            .iter()
            .find(|m| m["method_name"] == "Main")
            .unwrap_or_else(|| panic!("{name}: no Main"));
        assert_eq!(main["blocks"][0]["hits"], 1, "{name}");
        assert!(methods.iter().all(|m| m["assembly"] == name), "{name}");
    }
}

/// `--include` and `--exclude` choose assemblies; an included framework assembly is
/// JIT-compiled (not run from its precompiled code) and instrumented too.
#[test]
fn include_and_exclude_choose_assemblies() {
    let program = compile("Hello");
    let assemblies = |clrprof_args: &[&str]| -> Vec<(String, u64)> {
        let json = coverage_json(&covered(&program, &["a"], clrprof_args, "json"));
        let mut seen: BTreeMap<String, u64> = BTreeMap::new();
        for m in json["methods"].as_array().unwrap() {
            *seen
                .entry(m["assembly"].as_str().unwrap().to_string())
                .or_default() += hits(m).first().copied().unwrap_or(0);
        }
        seen.into_iter().collect()
    };
    let only_hello = assemblies(&["--format", "json"]);
    assert_eq!(only_hello.len(), 1);
    assert_eq!(only_hello[0].0, "Hello");
    assert!(assemblies(&["--format", "json", "--exclude", "Hello"]).is_empty());
    // System.Console: its methods that printed the line ran instrumented (calls counted).
    let with_console = assemblies(&["--format", "json", "--include", "System.Console"]);
    assert_eq!(with_console.len(), 1, "{with_console:?}");
    assert_eq!(with_console[0].0, "System.Console");
    assert!(with_console[0].1 > 0, "{with_console:?}");
}

/// The hits of every line of every method, by method name and line.
fn all_lines(json: &Value) -> BTreeMap<String, Value> {
    json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["method_name"].as_str().unwrap().to_string(),
                m["lines"].clone(),
            )
        })
        .collect()
}

#[test]
fn portable_pdbs_beside_and_embedded_give_the_same_lines_as_mono_symbols() {
    let program = compile("Coverage");
    let from_mdb = coverage_json(&covered(&program, &[], &["--format", "json"], "json"));
    let expected = all_lines(&from_mdb);
    assert_eq!(expected["Classify"].as_object().unwrap().len(), 5);
    let markers = markers();
    for kind in [PdbKind::Beside, PdbKind::Embedded] {
        let (_dir, converted) = with_portable_pdb(&program, kind);
        // Cecil wrote the assembly anew: no `.mdb` beside it.
        assert!(!converted.dll.with_extension("dll.mdb").exists());
        let rec = covered(&converted, &[], &["--format", "json"], "json");
        assert!(
            !rec.output.stderr_str().contains("warning"),
            "{kind:?}: {}",
            rec.output.describe()
        );
        let json = coverage_json(&rec);
        assert_eq!(all_lines(&json), expected, "{kind:?}");
        let status = &json["symbols"][0]["status"]["kind"];
        assert_eq!(
            status,
            match kind {
                PdbKind::Beside => "portable_pdb",
                PdbKind::Embedded => "embedded_pdb",
            }
        );
        assert_expected_line_hits(&json, &markers, &format!("{kind:?}: "));
        // genhtml reads the lcov made from them.
        let lcov = covered(&converted, &[], &["--format", "lcov"], "info");
        let text = std::fs::read_to_string(&lcov.trace).unwrap();
        assert!(text.contains("SF:") && text.contains("DA:"), "{text}");
    }
}

#[test]
fn coverage_says_which_assemblies_have_no_symbols_and_what_it_means() {
    let program = compile("Coverage");
    let dir = clrprof_e2e::temp_dir();
    for file in ["Coverage.dll", "Coverage.runtimeconfig.json"] {
        std::fs::copy(program.dll.with_file_name(file), dir.path().join(file)).unwrap();
    }
    let bare = Program {
        dll: dir.path().join("Coverage.dll"),
        ..program.clone()
    };
    let expected = [
        (
            "lcov",
            "info",
            "lcov has no place for code without source lines, so its 11 methods are left out",
        ),
        (
            "cobertura",
            "xml",
            "its methods are shown by IL block, without source lines (their rates are block rates)",
        ),
        (
            "text",
            "txt",
            "its methods are shown by IL block, without source lines",
        ),
    ];
    for (format, extension, meaning) in expected {
        let rec = coverage(&bare, &[], &["--format", format], extension);
        rec.output.assert_success();
        assert!(
            rec.output.stderr_str().contains(&format!(
                "clrprof: warning: no source lines for Coverage: no symbols: no Coverage.pdb \
                 beside it, none embedded in it, no Coverage.dll.mdb; {meaning}\n"
            )),
            "{format}: {}",
            rec.output.describe()
        );
    }
    let lcov = coverage(&bare, &[], &["--format", "lcov"], "info");
    assert!(
        !std::fs::read_to_string(&lcov.trace)
            .unwrap()
            .contains("DA:")
    );

    // A Windows PDB beside it is named as such.
    std::fs::write(
        dir.path().join("Coverage.pdb"),
        b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0\0\x10\0\0",
    )
    .unwrap();
    let rec = coverage(&bare, &[], &["--format", "json"], "json");
    rec.output.assert_success();
    assert!(
        rec.output.stderr_str().contains(
            "clrprof: warning: no source lines for Coverage: Coverage.pdb is a Windows PDB, \
             which clrprof does not read; build with <DebugType>portable</DebugType>"
        ),
        "{}",
        rec.output.describe()
    );
}
