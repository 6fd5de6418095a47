#![cfg(unix)]
//! What `--alloc ticks` costs and how far its bytes per type are from the truth, against
//! `--alloc all` (exact), on the runtime the tests run on. Ignored by default (it takes minutes
//! and measures rather than checks); its numbers are in docs/memory-profiling.md:
//!
//! ```sh
//! CLRPROF_TEST_RUNTIME=8.0.4 cargo test --release -p clrprof-e2e --test e2e_alloc_cost -- --ignored --nocapture
//! ```
//!
//! (`--release`: the harness builds the CLI and the agent with the tests' profile.)
//!
//! - **Cost**, on the `Alloc` benchmark workload (bench/programs/Alloc.cs, compiled with
//!   `-optimize+` as the bench does): the program prints `ready`, waits for a line, times its
//!   work (`work_ms=`) and waits again. In every round it runs once unprofiled and once under
//!   each of `clrprof record --mode none --alloc ticks|sampled|all`, the order rotating from
//!   round to round; the slowdown is the median of the per-round ratios to the unprofiled
//!   run of the same round, for the work time the program measures (`work_ms`) and for the
//!   CPU time of the whole run (the program's and the CLI's: less sensitive than elapsed time
//!   to other load on the machine). Each run waits 300 ms after `ready` before it lets the
//!   work start, so that on CoreCLR 3.1 the CLI's EventPipe session is running by then.
//! - **Bias**: the bytes per type that the ticks of each round stand for, against the exact
//!   bytes per type of the same round's `--alloc all`, for the types with the most bytes; and
//!   on Memory.cs's `big` mode, whose three types' exact bytes its header gives (with one
//!   `--alloc all`, which also counts what the runtime's startup allocates of them).
//!
//! `CLRPROF_ROUNDS` sets the number of rounds (default 5).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clrprof_e2e::{
    ChildGuard, Dotnet, OutputExt, Program, compile, compile_source, default_timeout,
    program_source, record, record_command, report_json, temp_dir, workspace_root,
};
use serde_json::Value;

/// The workload, whole or a tenth of it (110 of its 1,100 iterations): `--alloc all` records
/// every one of its allocations, about 60 million for the whole of it, which would take
/// minutes a run and gigabytes of trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Size {
    Whole,
    Tenth,
}

/// The runs of a round, in the order of the first round.
const RUNS: [(Size, Config); 6] = [
    (Size::Whole, Config::None),
    (Size::Whole, Config::Ticks),
    (Size::Whole, Config::Sampled),
    (Size::Tenth, Config::None),
    (Size::Tenth, Config::Ticks),
    (Size::Tenth, Config::All),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    None,
    Ticks,
    Sampled,
    All,
}

impl Config {
    fn alloc(self) -> Option<&'static str> {
        match self {
            Config::None => None,
            Config::Ticks => Some("ticks"),
            Config::Sampled => Some("sampled"),
            Config::All => Some("all"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Config::None => "unprofiled",
            Config::Ticks => "`--alloc ticks`",
            Config::Sampled => "`--alloc sampled`",
            Config::All => "`--alloc all`",
        }
    }
}

/// One run of the Alloc workload.
struct Run {
    work_ms: f64,
    wall_ms: f64,
    /// CPU time of the whole run: the program's, and for profiled runs the CLI's.
    cpu_ms: f64,
    checksum: String,
    /// Bytes per type, from the trace (profiled runs).
    bytes: BTreeMap<String, f64>,
}

/// Bytes per type of a trace's allocation report.
fn bytes_per_type(json: &Value) -> BTreeMap<String, f64> {
    json["allocations"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["type"].as_str().unwrap().to_string(),
                        r["bytes"].as_f64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the program's stdout up to a line that starts with `prefix`.
fn line_starting(out: &mut impl BufRead, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("the program's stdout");
        assert!(n > 0, "the program ended before printing `{prefix}`");
        if line.starts_with(prefix) {
            return line.trim().to_string();
        }
    }
}

/// One run of `config`; `--alloc all` is run again (at most twice) when its agent had to drop
/// records (its buffer fills when the machine is so busy that its writer thread does not
/// get to run), so that its numbers are exact.
fn run_alloc(program: &Program, config: Config) -> Run {
    for _ in 0..2 {
        match run_alloc_once(program, config) {
            Ok(run) => return run,
            Err(dropped) => eprintln!("{config:?}: {dropped} records dropped, again"),
        }
    }
    run_alloc_once(program, config)
        .unwrap_or_else(|dropped| panic!("{config:?}: {dropped} records dropped three times"))
}

fn run_alloc_once(program: &Program, config: Config) -> Result<Run, u64> {
    let dir = temp_dir();
    let trace = dir.path().join("alloc.clrprof");
    let mut cmd: Command = match config.alloc() {
        None => program.command(),
        Some(alloc) => record_command(program, &[], &["--mode", "none", "--alloc", alloc], &trace),
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let cpu_before = children_cpu_ms();
    let mut child = ChildGuard::spawn(&mut cmd);
    let mut stdin = child.child_mut().stdin.take().unwrap();
    let mut stdout = BufReader::new(child.child_mut().stdout.take().unwrap());
    line_starting(&mut stdout, "ready");
    std::thread::sleep(Duration::from_millis(300));
    writeln!(stdin, "go").unwrap();
    let work = line_starting(&mut stdout, "work_ms=");
    let checksum = line_starting(&mut stdout, "checksum=");
    writeln!(stdin).unwrap();
    drop(stdin);
    let output = child.wait_with_output(default_timeout());
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = children_cpu_ms() - cpu_before;
    output.assert_success();
    let bytes = if config == Config::None {
        BTreeMap::new()
    } else {
        let json = report_json(&trace);
        let dropped = json["allocations_dropped"].as_u64().unwrap();
        if dropped > 0 {
            return Err(dropped);
        }
        bytes_per_type(&json)
    };
    Ok(Run {
        work_ms: work["work_ms=".len()..].parse().unwrap(),
        wall_ms,
        cpu_ms,
        checksum: checksum["checksum=".len()..].to_string(),
        bytes,
    })
}

/// User and system CPU time of this process's children that ended and were waited for, in
/// milliseconds (a child's includes that of its own children it waited for: the program's, for
/// `clrprof record`).
fn children_cpu_ms() -> f64 {
    // SAFETY: `rusage` is plain data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid out-pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// The run of `config` on `size` in a round.
fn of(round: &[(Size, Config, Run)], size: Size, config: Config) -> &Run {
    &round
        .iter()
        .find(|(s, c, _)| (*s, *c) == (size, config))
        .unwrap()
        .2
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

fn percent(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

#[test]
#[ignore = "measures for minutes; see the module's documentation"]
fn alloc_ticks_cost_and_bias_against_alloc_all() {
    let rounds: usize = std::env::var("CLRPROF_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let source = program_source(&workspace_root().join("bench/programs/Alloc.cs"));
    let whole = compile_source("Alloc", &format!("// @mcs -optimize+\n{source}"));
    let iterations = "const int Iterations = 1100;";
    assert!(
        source.contains(iterations),
        "Alloc.cs changed: {iterations}"
    );
    let tenth = compile_source(
        "AllocTenth",
        &format!(
            "// @mcs -optimize+\n{}",
            source.replace(iterations, "const int Iterations = 110;")
        ),
    );
    let version = &Dotnet::get().version;

    let mut runs: Vec<Vec<(Size, Config, Run)>> = Vec::new();
    for round in 0..rounds {
        let mut this = Vec::new();
        for i in 0..RUNS.len() {
            let (size, config) = RUNS[(i + round) % RUNS.len()];
            let program = if size == Size::Whole { &whole } else { &tenth };
            let run = run_alloc(program, config);
            eprintln!(
                "round {round}: {size:?} {config:?} work {:.0} ms, wall {:.0} ms",
                run.work_ms, run.wall_ms
            );
            this.push((size, config, run));
        }
        runs.push(this);
    }
    for size in [Size::Whole, Size::Tenth] {
        let checksums: Vec<&str> = runs
            .iter()
            .flatten()
            .filter(|(s, _, _)| *s == size)
            .map(|(_, _, r)| r.checksum.as_str())
            .collect();
        assert!(checksums.windows(2).all(|w| w[0] == w[1]), "{checksums:?}");
    }

    println!("\n### .NET {version}: cost on the Alloc workload, {rounds} rounds\n");
    println!(
        "| `clrprof record --mode none` | workload | work time, median ratio | min-max | \
         CPU time, median ratio | min-max | wall time, median ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (size, config) in RUNS.into_iter().filter(|(_, c)| *c != Config::None) {
        let ratio = |f: fn(&Run) -> f64| -> Vec<f64> {
            runs.iter()
                .map(|r| f(of(r, size, config)) / f(of(r, size, Config::None)))
                .collect()
        };
        let work = ratio(|r| r.work_ms);
        let cpu = ratio(|r| r.cpu_ms);
        let none = median(
            runs.iter()
                .map(|r| of(r, size, Config::None).work_ms)
                .collect(),
        );
        let (lo, hi) = min_max(&work);
        let (cpu_lo, cpu_hi) = min_max(&cpu);
        println!(
            "| {} | {} ({none:.0} ms unprofiled) | {:.3}x | {lo:.3}-{hi:.3} | {:.3}x | \
             {cpu_lo:.3}-{cpu_hi:.3} | {:.3}x |",
            config.label(),
            if size == Size::Whole {
                "whole"
            } else {
                "a tenth"
            },
            median(work),
            median(cpu),
            median(ratio(|r| r.wall_ms))
        );
    }

    // Bias, on the tenth: each round's ticks against the same round's exact bytes (the
    // program is deterministic, but the runtime's startup allocates a few strings whose length
    // depends on the process, e.g. its id).
    fn exact(r: &[(Size, Config, Run)]) -> &BTreeMap<String, f64> {
        &of(r, Size::Tenth, Config::All).bytes
    }
    fn ticks(r: &[(Size, Config, Run)]) -> &BTreeMap<String, f64> {
        &of(r, Size::Tenth, Config::Ticks).bytes
    }
    let first = exact(&runs[0]);
    let mut types: Vec<(&String, &f64)> = first.iter().collect();
    types.sort_by(|a, b| b.1.total_cmp(a.1));
    let first_total: f64 = first.values().sum();
    println!(
        "\n### .NET {version}: bytes per type of a tenth of the Alloc workload, ticks against \
         `--alloc all` ({rounds} rounds)\n"
    );
    println!("| type | exact bytes (share) | ticks, median error | min-max |");
    println!("|---|---|---|---|");
    for &(t, &b) in types.iter().take(8) {
        let errors: Vec<f64> = runs
            .iter()
            .map(|r| ticks(r).get(t).copied().unwrap_or(0.0) / exact(r)[t] - 1.0)
            .collect();
        let (lo, hi) = min_max(&errors);
        println!(
            "| `{t}` | {b:.0} ({:.1}%) | {} | {} to {} |",
            100.0 * b / first_total,
            percent(median(errors)),
            percent(lo),
            percent(hi)
        );
    }
    let totals: Vec<f64> = runs
        .iter()
        .map(|r| ticks(r).values().sum::<f64>() / exact(r).values().sum::<f64>() - 1.0)
        .collect();
    let (lo, hi) = min_max(&totals);
    println!(
        "| all types | {first_total:.0} | {} | {} to {} |",
        percent(median(totals)),
        percent(lo),
        percent(hi)
    );

    // Memory.cs `big`: three types of known size, allocated in a strict rhythm.
    let memory = compile("Memory");
    let truth: [(&str, f64); 3] = [
        ("Memory.Small", 160_000_000.0),
        ("int[]", 164_800_000.0),
        ("byte[]", 201_200_000.0),
    ];
    let all_bytes = (0..3)
        .find_map(|_| {
            let all = record(&memory, &["big"], &["--mode", "none", "--alloc", "all"]);
            all.output.assert_success();
            let json = all.report_json();
            let dropped = json["allocations_dropped"].as_u64().unwrap();
            eprintln!("Memory big, --alloc all: {dropped} records dropped");
            (dropped == 0).then(|| bytes_per_type(&json))
        })
        .expect("an --alloc all run of Memory big without drops");
    let mut errors: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut totals = Vec::new();
    for _ in 0..rounds {
        let ticks = record(&memory, &["big"], &["--mode", "none", "--alloc", "ticks"]);
        ticks.output.assert_success();
        let json = ticks.report_json();
        let bytes = bytes_per_type(&json);
        for (t, b) in truth {
            errors
                .entry(t)
                .or_default()
                .push(bytes.get(t).copied().unwrap_or(0.0) / b - 1.0);
        }
        totals.push(json["allocation_records"].as_f64().unwrap());
    }
    println!(
        "\n### .NET {version}: Memory.cs `big` (526,000,000 bytes), ticks against the exact \
         bytes ({rounds} rounds; {} to {} ticks a run)\n",
        min_max(&totals).0,
        min_max(&totals).1
    );
    println!("| type | exact bytes (`--alloc all`) | ticks, median error | min-max |");
    println!("|---|---|---|---|");
    for (t, b) in truth {
        // `--alloc all` counts the header's bytes and those of the same type the runtime's
        // startup allocates.
        let exact = all_bytes.get(t).copied().unwrap_or(0.0);
        let e = errors.remove(t).unwrap();
        let (lo, hi) = min_max(&e);
        println!(
            "| `{t}` | {exact:.0} (header: {b:.0}) | {} | {} to {} |",
            percent(median(e)),
            percent(lo),
            percent(hi)
        );
    }
}
