//! Memory profiling on a real runtime: allocations by type, method and stack (`--alloc all`
//! exact, `--alloc sampled` estimated), garbage collections with their pauses, and heap
//! snapshots (retained sizes, root paths, diffs, ages; at exit, every GC and on a signal). The
//! facts asserted are documented at the top of `tests/programs/Memory.cs`.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use clrprof_e2e::{
    ChildGuard, Dotnet, OutputExt, Program, Recording, assert_tick_reader, assert_valid_speedscope,
    compile, default_timeout, record, record_command, record_unchanged, report_json,
    signal_snapshot_when_ready, temp_dir,
};
use clrprof_sdk::flags::EventMask;
use clrprof_trace::Record;
use serde_json::Value;

/// Records `Memory.cs` in `mode` with `clrprof_args`, checking that it succeeded and printed
/// what it prints unprofiled.
fn record_memory(mode: &str, clrprof_args: &[&str]) -> Recording {
    record_unchanged(&compile("Memory"), &[mode], clrprof_args)
}

/// The row of `allocations[]` for a type.
fn type_row<'a>(json: &'a Value, type_name: &str) -> &'a Value {
    json["allocations"]
        .as_array()
        .expect("allocations[]")
        .iter()
        .find(|r| r["type"] == type_name)
        .unwrap_or_else(|| panic!("no allocations of {type_name}: {:#}", json["allocations"]))
}

/// The `allocated_by` entries of a type whose method name contains `method`.
fn allocated_by<'a>(row: &'a Value, method: &str) -> Vec<&'a Value> {
    row["allocated_by"]
        .as_array()
        .expect("allocated_by[]")
        .iter()
        .filter(|m| m["function"].as_str().unwrap_or("").contains(method))
        .collect()
}

#[test]
fn alloc_all_counts_every_allocation_with_its_method() {
    let rec = record_memory("exact", &["--mode", "none", "--alloc", "all"]);

    let json = rec.report_json();
    assert_eq!(json["allocation_mode"], "all");
    assert_eq!(json["allocations_dropped"], 0);

    let nodes = type_row(&json, "Memory.Node");
    assert_eq!(nodes["count"], 12_345);
    assert_eq!(nodes["bytes"], 12_345 * 40);
    assert_eq!(nodes["estimated"], false);
    let by = nodes["allocated_by"].as_array().unwrap();
    assert_eq!(by.len(), 1, "{by:#?}");
    assert_eq!(by[0]["function"], "Memory.Program.MakeNodes(int)");
    assert_eq!(by[0]["count"], 12_345);

    // Other code (the runtime, Console) allocates byte[] too: count MakeBuffers' own.
    let buffers = type_row(&json, "byte[]");
    assert_eq!(buffers["estimated"], false);
    assert_eq!(buffers["array"], true);
    let made = allocated_by(buffers, "MakeBuffers");
    assert_eq!(made.len(), 1, "{buffers:#}");
    assert_eq!(made[0]["function"], "Memory.Program.MakeBuffers(int)");
    assert_eq!(made[0]["count"], 5_000);
    assert_eq!(made[0]["bytes"], 5_000 * 128);
    assert_eq!(made[0]["array_length_max"], 100);
    assert_eq!(nodes["array_length_max"], Value::Null);
    assert_eq!(nodes["large_object_heap"], 0);

    // The stacks: MakeNodes innermost, called from Exact and Main.
    let stacks = json["allocation_stacks"].as_array().unwrap();
    let node_stack = stacks
        .iter()
        .find(|s| s["frames"][0] == "Memory.Program.MakeNodes(int)")
        .expect("a stack allocating in MakeNodes");
    assert_eq!(node_stack["count"], 12_345);
    assert_eq!(node_stack["frames"][1], "Memory.Program.Exact()");
    assert_eq!(node_stack["frames"][2], "Memory.Program.Main(string[])");

    // The text section names the same facts.
    let text = rec.report(&["--alloc"]);
    text.assert_success();
    let text = text.stdout_str();
    assert!(text.contains("Memory.Node"), "{text}");
    assert!(text.contains("12,345"), "{text}");
    assert!(text.contains("Memory.Program.MakeBuffers(int)"), "{text}");

    // Allocation bytes in the profile formats.
    let folded = rec.report(&["--alloc", "--format", "folded"]);
    folded.assert_success();
    let line = folded
        .stdout_str()
        .lines()
        .find(|l| l.contains("MakeNodes") && l.contains("[Memory.Node]"))
        .map(str::to_string)
        .expect("a folded line for MakeNodes");
    assert!(line.ends_with(&format!(" {}", 12_345 * 40)), "{line}");
    let svg = rec.report(&["--alloc", "--format", "flamegraph"]);
    svg.assert_success();
    assert!(svg.stdout_str().contains("MakeBuffers"));
    let speedscope = rec.report(&["--alloc", "--format", "speedscope"]);
    speedscope.assert_success();
    let doc: Value = serde_json::from_str(&speedscope.stdout_str()).unwrap();
    assert_eq!(doc["profiles"][0]["unit"], "bytes");
    assert_valid_speedscope(&doc);
    let pprof_path = rec.dir.path().join("alloc.pb.gz");
    let pprof = rec.report(&[
        "--alloc",
        "--format",
        "pprof",
        "-o",
        pprof_path.to_str().unwrap(),
    ]);
    pprof.assert_success();
    let profile = read_pprof(&pprof_path);
    let names: Vec<&str> = profile
        .sample_type
        .iter()
        .map(|t| profile.string_table[t.r#type as usize].as_str())
        .collect();
    assert_eq!(names, ["alloc_objects", "alloc_space"]);
    let node_bytes: i64 = profile
        .sample
        .iter()
        .filter(|s| {
            s.label
                .iter()
                .any(|l| profile.string_table[l.str as usize] == "Memory.Node")
        })
        .map(|s| s.value[1])
        .sum();
    assert_eq!(node_bytes, 12_345 * 40);
}

fn read_pprof(path: &std::path::Path) -> clrprof_analysis::output::pprof_proto::Profile {
    use prost::Message;
    use std::io::Read;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut bytes)
        .unwrap();
    clrprof_analysis::output::pprof_proto::Profile::decode(&bytes[..]).unwrap()
}

#[test]
fn alloc_sampled_estimates_are_within_15_percent() {
    let rec = record_memory(
        "big",
        &["--mode", "none", "--alloc", "sampled", "--events", "gc"],
    );

    let json = rec.report_json();
    assert_eq!(json["allocation_mode"], "sampled");
    assert_eq!(json["allocations_dropped"], 0);
    // Far fewer records than the 5,250,000 allocations: this is sampling, and no event per
    // allocation is written besides, even with the gc events on.
    let records = json["allocation_records"].as_u64().unwrap();
    assert!(records < 100_000, "{records} records");
    assert_eq!(json["events"].get("ObjectAllocated"), None);
    assert!(json["session"]["records"].as_u64().unwrap() < 200_000);
    assert!(!json["gc"]["gcs"].as_array().unwrap().is_empty());
    for (type_name, truth) in [
        ("Memory.Small", 160_000_000u64),
        ("int[]", 164_800_000),
        ("byte[]", 201_200_000),
    ] {
        let row = type_row(&json, type_name);
        assert_eq!(row["estimated"], true);
        let estimate = row["bytes"].as_u64().unwrap();
        let error = (estimate as f64 - truth as f64).abs() / truth as f64;
        assert!(
            error < 0.15,
            "{type_name}: estimated {estimate} bytes, true {truth} ({:.1}% off)",
            error * 100.0
        );
        let by = allocated_by(row, "Churn");
        assert_eq!(by.len(), 1, "{row:#}");
    }
}

#[test]
fn alloc_ticks_give_bytes_per_type_and_allocating_stack_from_the_runtime_events() {
    // `--alloc` without a method: ticks are the default.
    let rec = record_memory("big", &["--mode", "none", "--alloc"]);

    let json = rec.report_json();
    assert_eq!(json["allocation_mode"], "ticks");
    // The runtime's `ObjectAllocated` callback is not asked for: allocations stay on its fast
    // path.
    let mask = event_mask(&rec.trace);
    assert!(
        !mask.intersects(EventMask::ENABLE_OBJECT_ALLOCATED | EventMask::MONITOR_OBJECT_ALLOCATED),
        "{mask:?}"
    );
    // One tick per ~100 KB of the 526,000,000 bytes (a few more for startup and the
    // allocation contexts' unused ends): thousands of records, not millions.
    let ticks = json["allocation_records"].as_u64().unwrap();
    assert!((4_000..=7_000).contains(&ticks), "{ticks} ticks");
    // Who read them: the agent, through an in-process EventPipe session, on a runtime that
    // offers one (it walks the allocating thread's stack, so it needs stack snapshots); the
    // CLI over the diagnostics socket on one that does not.
    let in_process = assert_tick_reader(&json);
    let counters = &json["counters"];
    if in_process {
        assert!(mask.contains(EventMask::ENABLE_STACK_SNAPSHOT), "{mask:?}");
        // Every tick was delivered on the allocating thread and became a record.
        assert_eq!(counters["allocation_ticks"], ticks, "{counters:#}");
        assert_eq!(counters["allocation_ticks_other_thread"], 0, "{counters:#}");
        assert_eq!(json["allocations_dropped"], 0);
    }
    // The ticks' bytes add up to what the runtime handed out: the program's bytes plus the
    // unused ends of allocation contexts (see docs/memory-profiling.md).
    let total = json["allocated_bytes"].as_u64().unwrap() as f64;
    let truth = 526_000_000f64;
    assert!(
        (truth..truth * 1.15).contains(&total),
        "ticks stand for {total} bytes, the program allocated {truth}"
    );
    assert_eq!(json["allocated_objects"], 0);
    let folded = rec.report(&["--alloc", "--format", "folded"]);
    folded.assert_success();
    let folded = folded.stdout_str();
    for type_name in ["Memory.Small", "int[]", "byte[]"] {
        let row = type_row(&json, type_name);
        assert_eq!(row["estimated"], true);
        assert_eq!(row["count"], 0, "{row:#}");
        // Each of the three types is at least a sixth of the bytes (each is 30-38% of them).
        assert!(row["bytes"].as_f64().unwrap() > total / 6.0, "{row:#}");
        let by = allocated_by(row, "Churn");
        assert_eq!(by.len(), 1, "{row:#}");
        assert_eq!(by[0]["function"], "Memory.Program.Churn(int)");
        // Every tick of the type in the program's own code is Churn's. (A tick that falls in
        // the runtime's startup, before `Main`, names what the runtime allocated there: how
        // much that is depends on the paths and the environment, e.g. the list of the
        // framework's files, some 100 KB with a long path; the program's ticks do not.)
        let leaf = format!(";[{type_name}] ");
        let program_bytes: u64 = folded
            .lines()
            .filter(|l| l.starts_with("Memory.Program.Main(string[]);") && l.contains(&leaf))
            .map(|l| {
                assert!(
                    l.starts_with(&format!(
                        "Memory.Program.Main(string[]);Memory.Program.Big();Memory.Program.Churn(int){leaf}"
                    )),
                    "{l}"
                );
                l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(by[0]["bytes"], program_bytes, "{row:#}\n{folded}");
    }
    // The runtime's own work for the agent's event session (its event source's set-up, about
    // a megabyte allocated before `Main` on .NET 5 and later) is the profiler's: counted
    // apart, in no figure of the program's.
    let induced = json["profiler_allocation_records"].as_u64().unwrap();
    assert_eq!(
        induced > 0,
        in_process,
        "{induced} induced allocation records"
    );
    assert!(
        !folded.contains("NativeRuntimeEventSource..ctor()"),
        "{folded}"
    );
    let stack = &json["allocation_stacks"][0];
    assert_eq!(
        stack["frames"],
        serde_json::json!([
            "Memory.Program.Churn(int)",
            "Memory.Program.Big()",
            "Memory.Program.Main(string[])"
        ])
    );

    assert!(
        folded.lines().any(|l| l.starts_with(
            "Memory.Program.Main(string[]);Memory.Program.Big();Memory.Program.Churn(int);[byte[]] "
        )),
        "{folded}"
    );
}

/// One type, one name, one frame name, whichever runtime delivered them: CoreCLR 3.1's ticks
/// are read by the CLI, which names their types from the runtime's own type names
/// (``System.Collections.Generic.Dictionary`2[System.IntPtr,System.String]``) and their
/// frames from the rundown's method names and signatures (`int64  (int32,int,...)`); .NET
/// 8's are read by the agent, which names both from metadata through the profiling API. Both
/// spell them as C# does (facts of the mode `names` at the top of `tests/programs/Memory.cs`).
#[test]
fn alloc_ticks_name_types_and_frames_alike_on_every_runtime() {
    let rec = record_memory("names", &["--mode", "none", "--alloc", "ticks"]);
    let json = rec.report_json();
    assert_eq!(json["allocation_mode"], "ticks");
    let in_process = assert_tick_reader(&json);
    // A generic type nested in a generic type: CoreCLR 3.1's tick names it by its own name
    // only (``Inner`1[System.Int32,System.String]``, no enclosing type, no namespace), so its
    // type arguments all go at the end, as for any name whose arity does not say where they
    // belong.
    let nested = if in_process {
        "Memory.Outer<int>.Inner<string>"
    } else {
        "Inner<int, string>"
    };
    let named = "Memory.Program.Named(int, nint, Memory.Pair, \
                 System.Collections.Generic.List<string>)";
    let folded = rec.report(&["--alloc", "--format", "folded"]);
    folded.assert_success();
    let folded = folded.stdout_str();
    for type_name in [
        "Memory.Box<int, string>",
        nested,
        "System.Collections.Generic.Dictionary<nint, string>",
        "char[][,]",
        "nint[]",
    ] {
        let row = type_row(&json, type_name);
        let by = allocated_by(row, "");
        assert_eq!(by.len(), 1, "{type_name}: {row:#}");
        assert_eq!(by[0]["function"], named, "{type_name}: {row:#}");
        let leaf =
            format!("Memory.Program.Main(string[]);Memory.Program.Names();{named};[{type_name}] ");
        assert!(
            folded.lines().any(|l| l.starts_with(&leaf)),
            "{leaf}\n{folded}"
        );
    }
}

/// The event mask the agent set, from its `SessionStart`.
fn event_mask(trace: &Path) -> EventMask {
    let file = std::fs::File::open(trace).expect("the trace");
    let start = clrprof_trace::Reader::new(std::io::BufReader::new(file))
        .expect("a trace")
        .find_map(|r| match r.expect("a readable trace") {
            Record::SessionStart(s) => Some(s),
            _ => None,
        })
        .expect("a SessionStart");
    EventMask::from_bits_retain(start.event_mask as u32)
}

/// `Memory.cs signal <dir>` run unprofiled, which must succeed: a `go` file in `dir` lets it go
/// on at once; the files of the run (`go`, and the `pid` it writes) are removed after it.
fn run_signal_mode_unprofiled(program: &Program, dir: &Path) -> Output {
    std::fs::write(dir.join("go"), "").unwrap();
    let plain = program.run(&["signal", dir.to_str().unwrap()]);
    plain.assert_success();
    std::fs::remove_file(dir.join("go")).unwrap();
    std::fs::remove_file(dir.join("pid")).unwrap();
    plain
}

#[test]
fn alloc_ticks_need_no_diagnostics_socket_where_the_agent_reads_them() {
    let program = compile("Memory");
    let dir = temp_dir();
    let dir_arg = dir.path().to_str().unwrap();
    let plain = run_signal_mode_unprofiled(&program, dir.path());

    // The program's runtime opens no diagnostics socket (looked for in its own TMPDIR while it
    // waits), yet loads the agent.
    let dotnet = Dotnet::get();
    let (setting, value) = dotnet.no_diagnostics_socket();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let trace = dir.path().join("ticks.clrprof");
    let mut cmd = record_command(
        &program,
        &["signal", dir_arg],
        &["--mode", "none", "--alloc", "ticks"],
        &trace,
    );
    cmd.env(setting, value)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(&mut cmd);
    let pid_file = dir.path().join("pid");
    let started = Instant::now();
    while !pid_file.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the program never wrote its pid"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let socket_prefix = format!("dotnet-diagnostic-{}-", pid.trim());
    let sockets: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&socket_prefix))
        .collect();
    assert_eq!(sockets, Vec::<String>::new(), "with {setting}={value}");
    std::fs::write(dir.path().join("go"), "").unwrap();
    let output = child.wait_with_output(default_timeout());
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout, "profiling changed the output");

    let json = report_json(&trace);
    let counters = &json["counters"];
    if !dotnet.has_in_process_eventpipe() {
        // CoreCLR 3.1: only the diagnostics socket carries the ticks, and there is none.
        assert_eq!(counters["allocation_ticks_reader"], 0, "{counters:#}");
        assert_eq!(json.get("allocation_records"), None, "{json:#}");
        assert!(
            output.stderr_str().contains(
                "no allocation samples: the program exited before its diagnostics socket appeared"
            ),
            "{}",
            output.describe()
        );
        return;
    }
    assert_eq!(counters["allocation_ticks_reader"], 1, "{counters:#}");
    assert!(
        !output.stderr_str().contains("warning"),
        "{}",
        output.describe()
    );
    assert_eq!(json["allocation_mode"], "ticks");
    let ticks = json["allocation_records"].as_u64().unwrap();
    assert_eq!(counters["allocation_ticks"], ticks, "{counters:#}");
    // `AddHeapNodes(1000)` allocates 1,000 `Memory.HeapNode` (32 bytes) and 1,000 `byte[1000]`
    // (1,024 bytes), and its list grows through arrays of 4, 8, ... 1,024 references (16,568
    // bytes): 1,072,568 bytes, about ten ticks' worth. Each tick while it runs names one of
    // those types, with the agent's own stack of the allocating thread: the allocating method
    // innermost (or the list's, called from it).
    let stacks = json["allocation_stacks"].as_array().unwrap();
    let in_add: Vec<&Value> = stacks
        .iter()
        .filter(|s| {
            s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "Memory.Program.AddHeapNodes(int)")
        })
        .collect();
    // The ticks stand for the bytes allocated since the previous tick, so those in the method
    // add up to its bytes, give or take what was counted before the first one and after the
    // last one: at most a tick's budget (102,400 bytes) and an allocation context (8 KiB).
    let add_bytes: f64 = in_add.iter().map(|s| s["bytes"].as_f64().unwrap()).sum();
    let slack = 102_400.0 + 8_192.0;
    assert!(
        (1_072_568.0 - slack..=1_072_568.0 + slack).contains(&add_bytes),
        "{add_bytes} bytes in AddHeapNodes: {in_add:#?}"
    );
    let byte_arrays = type_row(&json, "byte[]");
    let by = allocated_by(byte_arrays, "AddHeapNodes");
    assert_eq!(by.len(), 1, "{byte_arrays:#}");
    assert_eq!(by[0]["function"], "Memory.Program.AddHeapNodes(int)");
    let stack = stacks
        .iter()
        .find(|s| s["frames"][0] == "Memory.Program.AddHeapNodes(int)")
        .expect("a tick in AddHeapNodes");
    assert_eq!(
        stack["frames"],
        serde_json::json!([
            "Memory.Program.AddHeapNodes(int)",
            "Memory.Program.WaitForSignal(string)",
            "Memory.Program.Main(string[])"
        ])
    );
}

#[test]
fn gc_report_shows_induced_gen2_collections_with_pauses() {
    let rec = record_memory("gc", &["--mode", "none", "--events", "gc,suspension"]);

    let json = rec.report_json();
    let gcs = json["gc"]["gcs"].as_array().expect("gc.gcs[]");
    let induced: Vec<&Value> = gcs.iter().filter(|g| g["reason"] == "induced").collect();
    assert_eq!(induced.len(), 3, "{gcs:#?}");
    for g in induced {
        assert_eq!(g["generation"], 2, "{g:#}");
        assert!(g["pause_ns"].as_u64().unwrap() > 0, "{g:#}");
        let before = g["heap_before"].as_array().expect("heap sizes before");
        let after = g["heap_after"].as_array().expect("heap sizes after");
        assert_eq!((before.len(), after.len()), (5, 5));
        // Each collection follows 1,000 new nodes (40 KB) in generation 0, and moves the
        // survivors out of it.
        let (gen0_before, gen0_after) = (before[0].as_u64().unwrap(), after[0].as_u64().unwrap());
        assert!(gen0_before >= 40_000, "{g:#}");
        assert!(gen0_after < gen0_before, "{g:#}");
    }
    assert!(json["gc"]["pause_max_ns"].as_u64().unwrap() > 0);
    assert_eq!(json["gc"]["pauses_known"], true);

    let text = rec.report(&["--gc"]);
    text.assert_success();
    let text = text.stdout_str();
    assert!(text.contains("induced"), "{text}");
    assert!(text.contains("p50"), "{text}");
}

/// Without suspension events the pause of a collection is unknown (`-`), and `--gc` shows
/// each collection's duration, as the full report does; the collections and the events agree
/// (a finish callback that ends no started collection is said, not counted).
#[test]
fn gc_report_without_suspensions_shows_durations_and_counts_agree() {
    let program = compile("Memory");
    let rec = record(&program, &["gc"], &["--mode", "none", "--events", "gc"]);
    rec.output.assert_success();
    let json = rec.report_json();
    let gcs = json["gc"]["gcs"].as_array().expect("gc.gcs[]");
    assert!(gcs.len() >= 3, "{gcs:#?}");
    let started = json["events"]["GarbageCollectionStarted"].as_u64().unwrap();
    let finished = json["events"]["GarbageCollectionFinished"]
        .as_u64()
        .unwrap();
    assert_eq!(gcs.len() as u64, started);
    assert!(
        gcs.iter().all(|g| g["duration_ns"].as_u64().is_some()),
        "{gcs:#?}"
    );

    let out = rec.report(&["--gc"]);
    out.assert_success();
    let text = out.stdout_str();
    let header = text
        .lines()
        .find(|l| l.contains("reason") && l.contains("pause"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(header.contains("duration"), "{text}");
    assert!(!text.contains('?'), "{text}");
    assert!(text.contains("pauses unknown (-)"), "{text}");
    let full = rec.report(&[]);
    full.assert_success();
    let full = full.stdout_str();
    assert!(
        full.contains(&format!("\nGarbage collections ({started})")),
        "{full}"
    );
    for t in [&text, &full] {
        if finished > started {
            assert!(
                t.contains(&format!(
                    "(and {} GarbageCollectionFinished without a start",
                    finished - started
                )),
                "{t}"
            );
        } else {
            assert!(
                !t.contains("GarbageCollectionFinished without a start"),
                "{t}"
            );
        }
    }
}

/// The row of `heap.types[]` (or of a diff's `types[]`) for a type.
fn heap_type<'a>(types: &'a Value, type_name: &str) -> &'a Value {
    types
        .as_array()
        .expect("types[]")
        .iter()
        .find(|r| r["type"] == type_name)
        .unwrap_or_else(|| panic!("no {type_name} in {types:#}"))
}

#[test]
fn heap_snapshots_show_retained_sizes_root_paths_and_growth() {
    let rec = record_memory(
        "heap",
        &[
            "--mode",
            "none",
            "--events",
            "gc",
            "--heap-snapshot",
            "every-gc",
        ],
    );

    // The program's two induced collections, and the snapshots taken in them.
    let json = rec.report_json();
    let induced: Vec<u64> = json["gc"]["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["reason"] == "induced")
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(induced.len(), 2, "{:#}", json["gc"]);
    let snapshot_of = |gc: u64| -> String {
        json["heap"]["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["gc"] == gc)
            .unwrap_or_else(|| panic!("no snapshot in GC {gc}: {:#}", json["heap"]["snapshots"]))
            ["snapshot"]
            .to_string()
    };
    let (first, second) = (snapshot_of(induced[0]), snapshot_of(induced[1]));
    // With the heap walk on, the runtime reports what survived each collection, and what was
    // allocated per class before it: every node was allocated before the second collection.
    for g in json["gc"]["gcs"].as_array().unwrap() {
        assert!(g["survived_bytes"].as_u64().unwrap() > 0, "{g:#}");
        assert!(g["allocated_objects"].as_u64().unwrap() > 0, "{g:#}");
    }
    let allocated = heap_type(&json["gc"]["allocated_by_class"], "Memory.HeapNode");
    assert_eq!(allocated["count"], 1_500);

    let at = |n: &str| -> Value {
        let out = rec.report(&["--format", "json", "--snapshot", n]);
        out.assert_success();
        serde_json::from_str(&out.stdout_str()).unwrap()
    };
    let before = at(&first);
    let types = &before["heap"]["types"];
    let nodes = heap_type(types, "Memory.HeapNode");
    assert_eq!(nodes["count"], 1_000);
    assert_eq!(nodes["shallow_bytes"], 1_000 * 32);
    let node_and_data = 32 + 1_024;
    assert_eq!(nodes["retained_bytes"], 1_000 * node_and_data);
    // Every node survived at least this collection: none is left in generation 0.
    let ages = nodes["generations"].as_array().unwrap();
    assert_eq!(ages[0], 0, "{nodes:#}");
    assert_eq!(
        ages[1].as_u64().unwrap() + ages[2].as_u64().unwrap(),
        1_000,
        "{nodes:#}"
    );
    let list = heap_type(types, "System.Collections.Generic.List<Memory.HeapNode>");
    assert_eq!(list["count"], 1);
    assert!(
        list["retained_bytes"].as_u64().unwrap() >= 1_000 * node_and_data,
        "{list:#}"
    );
    // The list is among the top retainers, with a path from a root.
    let retainers = before["heap"]["top_retainers"].as_array().unwrap();
    let list_retainer = retainers
        .iter()
        .find(|r| r["type"] == "System.Collections.Generic.List<Memory.HeapNode>")
        .unwrap_or_else(|| panic!("{retainers:#?}"));
    let path: Vec<&str> = list_retainer["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(path[0].starts_with("root: "), "{path:?}");
    assert_eq!(
        path.last(),
        Some(&"System.Collections.Generic.List<Memory.HeapNode>")
    );

    let diff = rec.report(&["--format", "json", "--diff", &first, &second]);
    diff.assert_success();
    let diff: Value = serde_json::from_str(&diff.stdout_str()).unwrap();
    let grown = heap_type(&diff["diff"]["types"], "Memory.HeapNode");
    assert_eq!(grown["count_before"], 1_000);
    assert_eq!(grown["count_after"], 1_500);
    assert_eq!(grown["count_delta"], 500);
    assert_eq!(grown["shallow_bytes_delta"], 500 * 32);

    let text = rec.report(&["--heap"]);
    text.assert_success();
    let text = text.stdout_str();
    assert!(text.contains("Memory.HeapNode"), "{text}");
    assert!(text.contains("root: "), "{text}");

    // A snapshot the trace does not have: a clear error, no panic.
    let bad = rec.report(&["--heap", "--snapshot", "99"]);
    assert!(!bad.status.success());
    let err = bad.stderr_str();
    assert!(err.contains("there is no heap snapshot 99"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn heap_snapshot_at_exit_sees_the_final_heap() {
    let rec = record_memory("heap", &["--mode", "none", "--heap-snapshot", "at-exit"]);
    let json = rec.report_json();
    let snapshots = json["heap"]["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:#?}");
    let nodes = heap_type(&json["heap"]["types"], "Memory.HeapNode");
    assert_eq!(nodes["count"], 1_500);
    assert_eq!(nodes["retained_bytes"], 1_500 * (32 + 1_024));
    // Each node survived the program's second induced collection and the one at exit.
    assert_eq!(
        nodes["generations"],
        serde_json::json!([0, 0, 1_500, 0, 0, 0])
    );
    let gen2 = &json["heap"]["generations"][2];
    assert_eq!(gen2["generation"], "gen2");
    assert!(gen2["objects"].as_u64().unwrap() >= 3_000, "{gen2:#}");
}

#[test]
fn heap_snapshot_on_signal_while_the_program_runs() {
    let program = compile("Memory");
    let dir = temp_dir();
    let dir_arg = dir.path().to_str().unwrap();
    let plain = run_signal_mode_unprofiled(&program, dir.path());

    let trace = dir.path().join("signal.clrprof");
    let mut cmd = record_command(
        &program,
        &["signal", dir_arg],
        &["--mode", "none", "--heap-snapshot", "on-signal"],
        &trace,
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(&mut cmd);
    signal_snapshot_when_ready(dir.path());
    let output = child.wait_with_output(default_timeout());
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout, "profiling changed the output");

    let json = report_json(&trace);
    let snapshots = json["heap"]["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:#?}");
    assert_eq!(snapshots[0]["complete"], true);
    let nodes = heap_type(&json["heap"]["types"], "Memory.HeapNode");
    assert_eq!(nodes["count"], 1_000);
}
