//! Source lines on a real runtime: `tests/programs/Lines.cs` has one method whose three loops,
//! each on a line of its own, take about 60%, 30% and 10% of its CPU, as the program measures
//! with its thread's CPU clock; `report --lines` must give each loop's line its share within 5
//! points, with Mono symbols, a portable PDB beside the assembly and one embedded in it, with
//! the method's first-tier and optimized code (and, on .NET 8, on-stack replacement) alike;
//! `report --source` annotates the method's source.

use std::collections::BTreeMap;

use clrprof_e2e::{
    LINES_LOOPS, OutputExt, PdbKind, Program, Recording, compile, line_markers, lines_loop_shares,
    programs_dir, record_with_env, with_portable_pdb,
};
use serde_json::Value;

/// The lines of `Lines.cs` marked `// @name`, by name.
fn markers() -> BTreeMap<String, u32> {
    line_markers("Lines.cs")
}

const LOOPS: [&str; 3] = LINES_LOOPS;

/// The program's own shares of the three loops, from its output.
fn measured(rec: &Recording) -> [f64; 3] {
    lines_loop_shares(&rec.output.stdout_str())
}

/// Each loop line's share of the three lines' self CPU in `report --lines`.
fn reported(rec: &Recording) -> [f64; 3] {
    let json = rec.report_json_with(&["--lines"]);
    let markers = markers();
    let rows = json["lines"]["rows"].as_array().expect("rows");
    let self_at = |line: u32| -> f64 {
        rows.iter()
            .filter(|r| {
                r["method"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("Lines.Loops(")
            })
            .filter(|r| r["place"]["kind"] == "line" && r["place"]["line"] == line)
            .filter(|r| {
                r["place"]["file"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("Lines.cs")
            })
            .map(|r| r["self"].as_u64().unwrap() as f64)
            .sum()
    };
    let cpu = LOOPS.map(|m| self_at(markers[m]));
    let all: f64 = cpu.iter().sum();
    assert!(
        all > 0.0,
        "no CPU on the loops' lines: {}",
        serde_json::to_string_pretty(&json).unwrap()
    );
    cpu.map(|c| c * 100.0 / all)
}

/// Records `program` with `env` and checks that each loop's line gets its measured share.
#[track_caller]
fn lines_match(program: &Program, env: &[(&str, &str)], what: &str) -> Recording {
    // 200 rounds: about 2.5 s of CPU, 2,500 samples, so that a share of 30% is within about
    // 1 point of the truth by sampling (the bound is 5).
    let rec = record_with_env(program, &["200"], &["--rate", "1000"], env);
    rec.output.assert_success();
    let want = measured(&rec);
    let got = reported(&rec);
    for k in 0..3 {
        assert!(
            (got[k] - want[k]).abs() <= 5.0,
            "{what}: {} has {:.1}% of the loops' CPU in the report, {:.1}% by the program's \
             clock (all: report {got:?}, program {want:?})",
            LOOPS[k],
            got[k],
            want[k]
        );
    }
    rec
}

/// `report --source --source-root FROM=TO` reads the method's source where the rule says: the
/// directory the symbols name (where the program was built) becomes the rule's. Without the
/// rule the source beside the assembly is read.
#[test]
fn the_source_is_read_where_the_source_root_says() {
    let program = compile("Lines");
    let rec = record_with_env(&program, &["20"], &["--rate", "1000"], &[]);
    rec.output.assert_success();
    // Where the symbols say the source is (the compiler's directory, gone since).
    let symbols = clrprof_symbols::managed::ModuleSymbols::for_module(&program.dll);
    let built = (1..64)
        .find_map(|row| symbols.method(0x0600_0000 | row))
        .map(|m| m.file)
        .expect("a method with a source file");
    let (dir, _) = built.rsplit_once('/').unwrap();
    assert!(!std::path::Path::new(&built).exists(), "{built}");
    // A copy of the compiled source whose first loop's line says where it was read.
    let said = "// read at the source root";
    let marker = format!("@{}", LOOPS[0]);
    let compiled = std::fs::read_to_string(program.dll.with_file_name("Lines.cs")).unwrap();
    let copy: Vec<String> = compiled
        .lines()
        .map(|l| {
            if l.contains(&marker) {
                format!("{l} {said}")
            } else {
                l.to_string()
            }
        })
        .collect();
    let elsewhere = clrprof_e2e::temp_dir();
    std::fs::write(elsewhere.path().join("Lines.cs"), copy.join("\n")).unwrap();
    let annotated = |args: &[&str]| {
        let out = rec.report(args);
        out.assert_success();
        out.stdout_str()
    };
    assert!(!annotated(&["--source", "Loops"]).contains(said));
    let rule = format!("{dir}={}", elsewhere.path().display());
    let source = annotated(&["--source", "Loops", "--source-root", &rule]);
    let row = source
        .lines()
        .find(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("{marker} not in the annotated source: {source}"));
    assert!(row.contains(said), "{source}");
    // A rule that is not FROM=TO is refused, naming the option.
    let bad = rec.report(&["--source", "Loops", "--source-root", "/nowhere"]);
    assert!(!bad.status.success());
    bad.assert_stderr_contains(
        "clrprof: error: --source-root `/nowhere`: a source root is FROM=TO, e.g.",
    );
}

#[test]
fn each_loop_line_gets_its_share_with_every_kind_of_symbols() {
    let program = compile("Lines");
    let rec = lines_match(&program, &[], "Mono symbols");
    // The text table names the lines and shows their code.
    let text = rec.report(&["--lines"]);
    text.assert_success();
    let table = text.stdout_str();
    let markers = markers();
    for (m, bound) in LOOPS.iter().zip(["a", "b", "c"]) {
        let row = table
            .lines()
            .find(|l| l.contains(&format!("Lines.cs:{} ", markers[*m])))
            .unwrap_or_else(|| panic!("{m}: {table}"));
        assert!(
            row.contains(&format!("for (long i = 0; i < {bound}; i++)")),
            "{m}: the line's code: {row}"
        );
    }
    // The annotated source: every line of the method, the loops with their shares.
    let source = rec.report(&["--source", "Loops"]);
    source.assert_success();
    let annotated = source.stdout_str();
    for m in LOOPS {
        let row = annotated
            .lines()
            .find(|l| l.contains(&format!("@{m}")))
            .unwrap_or_else(|| panic!("{m} not in the annotated source: {annotated}"));
        assert!(row.contains('%'), "{m} has no share: {row}");
    }
    assert!(
        annotated.contains("Lines.Loops(long, long, long)"),
        "{annotated}"
    );
    let unknown = rec.report(&["--source", "NoSuchMethod"]);
    assert!(!unknown.status.success());
    unknown.assert_stderr_contains("no method with CPU samples");
    pprof_lists_the_hot_line(&rec);
    speedscope_names_the_method_s_file_and_first_line(&rec);
    html_shows_the_hot_lines(&rec);
    for kind in [PdbKind::Beside, PdbKind::Embedded] {
        let (_dir, converted) = with_portable_pdb(&program, kind);
        lines_match(&converted, &[], &format!("{kind:?} portable PDB"));
    }
}

/// The HTML report's Source lines tab: its data (the page's embedded JSON) holds the hottest
/// method's source with each loop's line and its CPU, the first loop the hottest.
fn html_shows_the_hot_lines(rec: &Recording) {
    let (html, data) = html_page(rec);
    let lines = &data["lines"][0];
    assert_eq!(lines["measure"], "cpu", "{}", data["lines"]);
    let source = &lines["sources"][0];
    assert_eq!(source["method"], "Lines.Loops(long, long, long)", "{lines}");
    let markers = markers();
    let self_of = |m: &str| {
        source["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["line"] == markers[m])
            .unwrap_or_else(|| panic!("{m}: {source}"))["self"]
            .as_u64()
            .unwrap()
    };
    let [a, b, c] = LOOPS.map(self_of);
    assert!(a > b && b > c && c > 0, "the loops' CPU: {a}, {b}, {c}");
    assert!(
        source["lines"].as_array().unwrap().iter().any(|l| l["text"]
            .as_str()
            .unwrap()
            .contains("for (long i = 0; i < a; i++)")),
        "{source}"
    );
    assert!(html.contains(r#"<section id="tab-lines" class="tab">"#));
}

/// The HTML report of `rec`, and the data embedded in it.
fn html_page(rec: &Recording) -> (String, serde_json::Value) {
    let page = rec.dir.path().join("lines.html");
    rec.report(&["--format", "html", "-o", page.to_str().unwrap()])
        .assert_success();
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html
        .find(r#"<script type="application/json" id="data">"#)
        .expect("the page's data")
        + r#"<script type="application/json" id="data">"#.len();
    let end = start + html[start..].find("</script>").unwrap();
    let data = serde_json::from_str(&html[start..end]).unwrap();
    (html, data)
}

/// `go tool pprof -list Loops` on the pprof export annotates `Lines.cs` with the loops' CPU:
/// the first loop's line the hottest of the method, then the second, then the third.
fn pprof_lists_the_hot_line(rec: &Recording) {
    let pprof = rec.dir.path().join("lines.pb.gz");
    rec.report(&["--format", "pprof", "-o", pprof.to_str().unwrap()])
        .assert_success();
    let out = std::process::Command::new("go")
        .args([
            "tool",
            "pprof",
            "-list",
            "Lines.Loops",
            "-sample_index",
            "cpu",
        ])
        .arg(&pprof)
        .output()
        .expect("go (Debian's golang-go, installed by `cargo xtask setup`)");
    out.assert_success();
    let listing = out.stdout_str();
    assert!(listing.contains("ROUTINE"), "{listing}");
    assert!(listing.contains("Lines.cs"), "{listing}");
    // Rows are `flat cum line: code`, with `.` for nothing; flat as a duration (`1.20s`,
    // `350ms`).
    let flat_at = |line: u32| -> f64 {
        listing
            .lines()
            .find_map(|row| {
                let mut words = row.split_whitespace();
                let flat = words.next()?;
                let _cum = words.next()?;
                let number = words.next()?.strip_suffix(':')?;
                (number.parse::<u32>().ok()? == line).then(|| seconds(flat))
            })
            .unwrap_or_else(|| panic!("line {line} is not in the listing: {listing}"))
    };
    let markers = markers();
    let flat = LOOPS.map(|m| flat_at(markers[m]));
    assert!(
        flat[0] > flat[1] && flat[1] > flat[2] && flat[2] > 0.0,
        "the loops' lines in pprof's listing: {flat:?}\n{listing}"
    );
}

/// The speedscope export names `Lines.Loops`'s source file and the first of its lines the
/// profile has: in the method's body (after its declaration), at or before the first loop.
fn speedscope_names_the_method_s_file_and_first_line(rec: &Recording) {
    let out = rec.report(&["--format", "speedscope"]);
    out.assert_success();
    let file: Value = serde_json::from_str(&out.stdout_str()).unwrap();
    let frame = file["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Lines.Loops(long, long, long)")
        .unwrap_or_else(|| panic!("no Loops frame: {}", file["shared"]));
    assert!(
        frame["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("Lines.cs")),
        "{frame}"
    );
    let source = std::fs::read_to_string(programs_dir().join("Lines.cs")).unwrap();
    let declared = source
        .lines()
        .position(|l| l.contains("static long Loops("))
        .unwrap() as u64
        + 1;
    let line = frame["line"].as_u64().unwrap_or_else(|| panic!("{frame}"));
    assert!(
        declared < line && line <= u64::from(markers()[LOOPS[0]]),
        "Loops is declared on line {declared}, its first loop is on line {}: {frame}",
        markers()[LOOPS[0]]
    );
}

/// pprof's duration (`1.20s`, `350ms`, `12us`, `.` for none) in seconds.
fn seconds(text: &str) -> f64 {
    if text == "." {
        return 0.0;
    }
    for (unit, scale) in [("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)] {
        if let Some(n) = text.strip_suffix(unit) {
            return n.parse::<f64>().unwrap_or_else(|_| panic!("{text}")) * scale;
        }
    }
    panic!("not a duration: {text}")
}

#[test]
fn every_code_version_of_a_method_maps_to_the_same_lines() {
    let program = compile("Lines");
    // The default: on .NET 8 the loops start in first-tier code and move to optimized code by
    // on-stack replacement, then the method is recompiled optimized; on CoreCLR 3.1 a method
    // with loops is optimized at once.
    lines_match(&program, &[], "default tiers");
    // First-tier code for loops on 3.1 too (replaced by optimized code after 30 calls), and
    // without on-stack replacement on .NET 8.
    lines_match(
        &program,
        &[
            ("DOTNET_TC_QuickJitForLoops", "1"),
            ("COMPlus_TC_QuickJitForLoops", "1"),
            ("DOTNET_TC_OnStackReplacement", "0"),
        ],
        "first tier, no on-stack replacement",
    );
    // Optimized code only.
    lines_match(
        &program,
        &[
            ("DOTNET_TieredCompilation", "0"),
            ("COMPlus_TieredCompilation", "0"),
        ],
        "optimized only",
    );
}

#[test]
fn a_module_without_symbols_shows_il_offsets_and_says_why() {
    let program = compile("Lines");
    let dir = clrprof_e2e::temp_dir();
    for file in ["Lines.dll", "Lines.runtimeconfig.json"] {
        std::fs::copy(program.dll.with_file_name(file), dir.path().join(file)).unwrap();
    }
    let bare = Program {
        dll: dir.path().join("Lines.dll"),
        ..program.clone()
    };
    let rec = record_with_env(&bare, &["10"], &["--rate", "1000"], &[]);
    rec.output.assert_success();
    let json = rec.report_json_with(&["--lines"]);
    let lines = &json["lines"];
    let rows: Vec<&Value> = lines["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["method"]
                .as_str()
                .unwrap_or("")
                .starts_with("Lines.Loops(")
        })
        .collect();
    assert!(!rows.is_empty());
    // No line is invented: places are IL offsets, or unknown where the runtime's map has none
    // for the sampled instruction (code it marks as mapped to no IL).
    assert!(
        rows.iter()
            .all(|r| r["place"]["kind"] == "il_offset" || r["place"]["kind"] == "unknown"),
        "{rows:#?}"
    );
    assert_eq!(rows[0]["place"]["kind"], "il_offset", "{rows:#?}");
    let notes: Vec<&str> = lines["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("Lines.dll: no symbols") && n.contains("IL offsets")),
        "{notes:?}"
    );
}

/// The rows of `report --lines <view>` in method `method`, as (line, self, total); rows with
/// no line are `(0, ..)`.
fn rows_of(rec: &Recording, view: &[&str], method: &str) -> Vec<(u32, u64, u64)> {
    let mut args = vec!["--lines"];
    args.extend_from_slice(view);
    let json = rec.report_json_with(&args);
    json["lines"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["method"].as_str().unwrap_or("").starts_with(method))
        .map(|r| {
            let line = match r["place"]["kind"].as_str() {
                Some("line") => r["place"]["line"].as_u64().unwrap() as u32,
                _ => 0,
            };
            (
                line,
                r["self"].as_u64().unwrap(),
                r["total"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn allocations_lock_waits_and_throws_are_on_their_lines() {
    let program = compile("LineSites");
    let rec = record_with_env(
        &program,
        &[],
        &["--alloc", "--contention", "--events", "exception"],
        &[],
    );
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        "allocated 20971520\ncaught 7\ncontended 5\n",
        "the program ran unharmed"
    );
    let m = line_markers("LineSites.cs");

    // Every allocation of `Allocate()` is on its line: 20 large arrays of 1 MiB, each a tick
    // that stands for the bytes allocated on the large object heap since the previous one.
    // Where the runtime has no in-process event sessions (CoreCLR 3.1) the CLI reads the
    // ticks and the contention events with the runtime's own stacks, and their lines from the
    // native-to-IL maps of the session's rundown: the same lines.
    let alloc = rows_of(&rec, &["--alloc"], "LineSites.Allocate(");
    assert!(!alloc.is_empty(), "no allocation in Allocate()");
    assert!(alloc.iter().all(|r| r.0 == m["alloc"]), "{alloc:?}");
    // Each tick stands for its array and whatever else the large object heap took since the
    // previous one: CoreCLR 3.1 counts about 900 bytes more per tick, .NET 8 about 20.
    let bytes: u64 = alloc.iter().map(|r| r.1).sum();
    assert!(
        (20 << 20..=(20 << 20) + 20 * 1024).contains(&bytes),
        "{bytes} bytes on the line: {alloc:?}"
    );
    // The agent's own allocation stacks (`--alloc sampled`) have lines on every runtime.
    let sampled = record_with_env(&program, &[], &["--alloc", "sampled"], &[]);
    sampled.output.assert_success();
    let alloc = rows_of(&sampled, &["--alloc"], "LineSites.Allocate(");
    assert!(!alloc.is_empty(), "no sampled allocation in Allocate()");
    assert!(alloc.iter().all(|r| r.0 == m["alloc"]), "{alloc:?}");

    // The 7 throws: on the throw's line in `Throw`, through the call's line in `Catch`.
    let thrown = rows_of(&rec, &["--exceptions"], "LineSites.Throw(");
    assert_eq!(thrown, vec![(m["throw"], 7, 7)]);
    let calls = rows_of(&rec, &["--exceptions"], "LineSites.Catch(");
    assert_eq!(calls, vec![(m["call-throw"], 0, 7)]);

    // The 5 waits: all on the `lock` line of `Enter()`, the whole wait.
    let waits = rows_of(&rec, &["--contention"], "LineSites.Enter(");
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!(waits[0].0, m["lock"], "{waits:?}");
    // The HTML report's Source lines tab has the same lines by bytes, wait and throws: each
    // measure's hottest method's source with its line.
    let (_, data) = html_page(&rec);
    for (measure, method, marker) in [
        ("allocated_bytes", "LineSites.Allocate()", "alloc"),
        ("lock_wait", "LineSites.Enter()", "lock"),
        ("throws", "LineSites.Throw(int)", "throw"),
    ] {
        let lines = data["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["measure"] == measure)
            .unwrap_or_else(|| panic!("no {measure} lines: {}", data["lines"]));
        let source = lines["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["method"].as_str().unwrap().starts_with(method))
            .unwrap_or_else(|| panic!("{measure}: no source of {method}: {lines}"));
        // Only the marked line has a value in the method (its own, or under it: CoreCLR 3.1's
        // lock waits end in the framework's `Monitor.Enter`).
        let hot: Vec<u64> = source["lines"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["total"].as_u64().unwrap() > 0)
            .map(|l| l["line"].as_u64().unwrap())
            .collect();
        assert_eq!(hot, [u64::from(m[marker])], "{measure}: {source}");
    }
    let json = rec.report_json_with(&["--contention"]);
    let text = serde_json::to_string(&json).unwrap();
    // The whole wait is under the line (below it, on CoreCLR 3.1's event stacks, the
    // framework's `Monitor.Enter`).
    assert!(waits[0].2 >= 5 * 20_000_000, "{waits:?}: {text}");
}
