//! The SDK's IL body, ReJIT, heap and statics wrappers, inside a real runtime.
//!
//! `probe-il-heap` (tests/probes/il-heap) is a profiler built on the SDK. `PROBE_SCENARIO`
//! picks one of three scenarios; the probe writes what it saw, one line per fact, to
//! `PROBE_OUTPUT`. Each test checks both sides: the program's own output (which changes when
//! the probe's IL takes effect) and the probe's lines (exact values: sizes, offsets, layouts,
//! HRESULTs).

use std::process::Output;

use clrprof_e2e::{Dotnet, OutputExt, Program, compile, example_lib, probes, run_probe};

/// Runs `program` with `args` under the probe in `scenario`, with extra environment `env`.
/// Returns the process output and the probe's lines.
fn profiled(
    program: &Program,
    scenario: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, Vec<String>) {
    let mut cmd = program.command_with_profiler(probes::IL_HEAP, &example_lib("probe-il-heap"));
    cmd.args(args).env("PROBE_SCENARIO", scenario);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let probes::ProbeRun {
        output: out, text, ..
    } = run_probe(&mut cmd);
    (out, text.lines().map(str::to_string).collect())
}

/// Asserts that the probe wrote exactly `expected`, in order.
#[track_caller]
fn assert_lines<S: AsRef<str>>(lines: &[String], expected: &[S]) {
    let got: Vec<&str> = lines.iter().map(String::as_str).collect();
    let want: Vec<&str> = expected.iter().map(AsRef::as_ref).collect();
    assert_eq!(got, want, "probe output:\n{}", lines.join("\n"));
}

/// Asserts that the probe wrote exactly the lines of `expected`, in any order (lines written
/// from several threads).
#[track_caller]
fn assert_line_set<S: AsRef<str>>(lines: &[String], expected: &[S]) {
    let mut got: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut want: Vec<&str> = expected.iter().map(AsRef::as_ref).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "probe output:\n{}", lines.join("\n"));
}

/// The probe's first line: its scenario and the ICorProfilerInfo version the runtime has.
fn initialized(scenario: &str) -> String {
    format!(
        "initialized: {scenario}, ICorProfilerInfo{}",
        Dotnet::get().profiling_api().info_version
    )
}

/// What the probe writes for a method of ICorProfilerInfo`required`: `ok`, or the typed
/// error on a runtime that lacks it.
fn needs(what: &str, required: u32) -> String {
    let have = Dotnet::get().profiling_api().info_version;
    if have >= required {
        format!("{what}: ok")
    } else {
        format!("{what}: not supported (needs {required}, have {have})")
    }
}

/// The probe lines of the `il-rewrite` scenario when Main is compiled optimized at once (it
/// has a loop) and so inlines Answer: Answer is never compiled on its own.
fn il_rewrite_lines_answer_inlined() -> Vec<String> {
    let mut lines = vec![initialized("IlRewrite")];
    lines.extend(
        [
            // ldc.i4.s 41; ret under a tiny header (3 << 2 | 2), and the new body.
            "Answer original: Tiny 0e1f292a",
            "Answer new: 0e1f2a2a",
            "Answer replace: ok",
            // GetILFunctionBody returns the body SetILFunctionBody installed.
            "Answer read back: 0e1f2a2a",
            "Guarded original: Fat max_stack=2 clauses=1",
            // ldsfld (5) + ldc.i4.1 + add + stsfld (5); needs 2 stack slots, as the body does.
            "Guarded prepended: 12 bytes, max_stack=2",
            "Guarded clause 0: finally try +12 handler +12 lengths kept: true",
            "Guarded replace: ok",
            "Guarded read back equals new body: true",
            "module loaded: IlRewrite.dll",
            "jit IlRewrite.Guarded",
            "Guarded set_il_instrumented_code_map: ok",
            "shutdown",
        ]
        .map(String::from),
    );
    lines
}

#[test]
fn il_rewrite_replaces_a_tiny_body_and_prepends_to_a_fat_one() {
    let program = compile("IlRewrite");
    let plain = program.run(&[]);
    plain.assert_success();
    assert_eq!(
        plain.stdout_str(),
        "answer=41\nguarded: sum=106 finallies=4 prologues=0\n"
    );

    // Answer returns 42 although Main inlined it: the body was replaced at ModuleLoadFinished,
    // before any caller was compiled. Guarded ran the prepended `Prologues++` 4 times, and its
    // try/finally still works after the shift.
    let expected_output = "answer=42\nguarded: sum=106 finallies=4 prologues=4\n";
    let runtime = Dotnet::get();
    let (out, lines) = profiled(&program, "il-rewrite", &[], &[]);
    assert_eq!(out.stdout_str(), expected_output);
    let mut expected = il_rewrite_lines_answer_inlined();
    if runtime.loops_start_at_tier0() {
        // Main, which has a loop, first runs unoptimized tier-0 code that inlines nothing:
        // Answer is compiled on its own (with the new body, hence 42 all the same).
        let at = expected
            .iter()
            .position(|l| l == "jit IlRewrite.Guarded")
            .unwrap();
        expected.insert(at, "jit IlRewrite.Answer".to_string());
    }
    assert_lines(&lines, &expected);

    if runtime.loops_start_at_tier0() {
        // With loops compiled optimized at once, as earlier runtimes do, Main inlines Answer,
        // and the inlined copy has the new body too.
        let (out, lines) = profiled(
            &program,
            "il-rewrite",
            &[],
            &[("COMPlus_TC_QuickJitForLoops", "0")],
        );
        assert_eq!(out.stdout_str(), expected_output);
        assert_lines(&lines, &il_rewrite_lines_answer_inlined());
    }
}

/// The probe lines every `rejit` run has, whatever the inline tracking.
fn rejit_common() -> Vec<String> {
    let mut lines = vec![initialized("Rejit")];
    lines.extend(
        [
            "module loaded: ReJit.dll",
            "worker initialize_current_thread: ok",
            // The .NET 1 API is a stub.
            "set_function_rejit: E_NOTIMPL",
            // GetReJITParameters comes when the new version is first called, on that thread.
            "get_rejit_parameters ReJit.Value: set_il_body ok",
            "rejit compiled ReJit.Value: 0x00000000 S_OK, rejit id non-zero: true",
            "request_revert Value, Inlinee: ok [0x00000000 S_OK, 0x00000000 S_OK]",
            // The original version (0) and the one ReJIT made.
            "get_rejit_ids Value: [0, n]",
            "shutdown",
        ]
        .map(String::from),
    );
    lines
}

#[test]
fn rejit_replaces_running_methods_and_their_inliners_then_reverts() {
    let program = compile("ReJit");
    let plain = program.run(&["50"]);
    plain.assert_success();
    assert_eq!(
        plain.stdout_str(),
        "before: value=1 caller=11\n\
         after rejit: value=1 caller=11 changed=False\n\
         after revert: value=1 caller=11 original=True\n"
    );

    // Tiered compilation off: Caller is optimized (Inlinee inlined) from its first compile.
    let (out, lines) = profiled(
        &program,
        "rejit",
        &[],
        &[("COMPlus_TieredCompilation", "0")],
    );
    assert_eq!(
        out.stdout_str(),
        "before: value=1 caller=11\n\
         after rejit: value=2 caller=21 changed=True\n\
         after revert: value=1 caller=11 original=True\n"
    );
    let mut expected = rejit_common();
    expected.extend(
        [
            "request_rejit_with_inliners Inlinee: ok",
            "request_rejit Value: ok",
            // The inliner is recompiled with its own IL; GetReJITParameters is not asked for it.
            // Inlinee is now called (not inlined) from Caller, so its new version is compiled.
            "rejit compiled ReJit.Caller: 0x00000000 S_OK, rejit id non-zero: true",
            "get_rejit_parameters ReJit.Inlinee: set_il_body ok",
            "rejit compiled ReJit.Inlinee: 0x00000000 S_OK, rejit id non-zero: true",
        ]
        .map(String::from),
    );
    assert_line_set(&lines, &expected);
}

#[test]
fn rejit_turns_block_counters_on_and_off_in_a_running_program() {
    let program = compile("ReJitCoverage");
    let plain = program.run(&["50"]);
    plain.assert_success();
    let unchanged = |instrumented: &str| {
        format!(
            "before: evens=3 odds=2\n\
             instrumented={instrumented}\n\
             during: evens=7 odds=5\n\
             reverted=True\n\
             after: evens=12 odds=9\n"
        )
    };
    assert_eq!(plain.stdout_str(), unchanged("False"));

    let (out, lines) = profiled(
        &program,
        "rejit-coverage",
        &[],
        &[("COMPlus_TieredCompilation", "0")],
    );
    assert_eq!(out.stdout_str(), unchanged("True"));
    // `instrumented=True`: the new body of Instrumented, which returns true through the added
    // local, was accepted by the JIT. Only the 7 calls made while the counters were in: the entry block 7, the even branch 4
    // (0, 2, 4, 6), the odd branch 3, the join 7. Not the 5 calls before, nor the 9 after the
    // revert.
    assert_line_set(
        &lines,
        &[
            initialized("RejitCoverage").as_str(),
            // One bool local (07 01 02), its StandAloneSig defined through IMetaDataEmit.
            "local signature 070102: local 0, token table 0x11",
            "module loaded: ReJitCoverage.dll",
            "worker initialize_current_thread: ok",
            "request_rejit Work, Instrumented: ok",
            "ReJitCoverage.Work: 4 blocks",
            "get_rejit_parameters ReJitCoverage.Work: set_il_body ok",
            "get_rejit_parameters ReJitCoverage.Instrumented: set_il_body ok",
            "rejit compiled ReJitCoverage.Work: 0x00000000 S_OK, rejit id non-zero: true",
            "rejit compiled ReJitCoverage.Instrumented: 0x00000000 S_OK, rejit id non-zero: true",
            "request_revert Work, Instrumented: ok",
            "Work block hits: 7 4 3 7",
            "shutdown",
        ],
    );
}

/// `ProfApi_RejitOnAttach=0` turns the runtime's inline tracking off (the variable name is
/// case-sensitive on Linux).
#[test]
fn rejit_without_inline_tracking_leaves_inlined_copies_alone() {
    let program = compile("ReJit");
    let (out, lines) = profiled(
        &program,
        "rejit",
        &[],
        &[
            ("COMPlus_TieredCompilation", "0"),
            ("COMPlus_ProfApi_RejitOnAttach", "0"),
        ],
    );
    // Inlinee's ReJIT was accepted, but Caller still runs the copy it inlined, and nothing
    // calls Inlinee itself: its new version is never even compiled.
    assert_eq!(
        out.stdout_str(),
        "before: value=1 caller=11\n\
         after rejit: value=2 caller=11 changed=True\n\
         after revert: value=1 caller=11 original=True\n"
    );
    let mut expected = rejit_common();
    expected.extend(
        [
            "request_rejit_with_inliners Inlinee: CORPROF_E_REJIT_INLINING_DISABLED",
            "request_rejit Inlinee, Value: ok",
        ]
        .map(String::from),
    );
    assert_line_set(&lines, &expected);
}

#[test]
fn heap_objects_statics_and_generations() {
    let program = compile("Heap");
    let plain = program.run(&[]);
    plain.assert_success();
    assert_eq!(
        plain.stdout_str(),
        "point=1,2,3 arr=91 s=clrprof-heap boxed=11 tls=9 count=7\n"
    );

    let (out, lines) = profiled(&program, "heap", &["wait-forced-gc"], &[]);
    // The program saw a generation-2 GC it did not induce: the probe's ForceGC.
    assert_eq!(
        out.stdout_str(),
        "forced gc: True\npoint=1,2,3 arr=91 s=clrprof-heap boxed=11 tls=9 count=7\n"
    );
    let runtime = Dotnet::get();
    assert_lines(
        &lines,
        &[
            initialized("Heap").as_str(),
            "module loaded: Heap.dll",
            "class loaded: Heap",
            "class loaded: Pair",
            "class loaded: Point3",
            "class loaded: Node",
            // 8 (header) + 8 (MethodTable) + 3 longs.
            "allocated Point3: size=40 size2=40 class matches=true",
            "inspecting at GarbageCollectionFinished with Phase=1",
            // A literal has no FieldDesc: the runtime refuses it.
            "static kinds: Count=StaticKind(APP_DOMAIN) Tls=StaticKind(THREAD) P=StaticKind(APP_DOMAIN) K=E_INVALIDARG",
            "static kind of instance field Point3.X: StaticKind(0x0)",
            "Count value: 7",
            "Tls value (address2): 9",
            "Tls value (address): 9",
            "K address: CORPROF_E_LITERALS_HAVE_NO_ADDRESS",
            // CoreCLR has no remoting contexts.
            "context static address: E_NOTIMPL",
            "P: class is Point3=true size=40 size2=40",
            // Offsets from the ObjectID (the MethodTable pointer); size is the base size.
            "Point3 layout: size=40 X@8 Y@16 Z@24",
            "P values: X=1 Y=2 Z=3",
            "P generation: GcGeneration::GEN_2, range contains it: true",
            "P references: none",
            // No reference fields at all: the runtime answers S_FALSE.
            "P enumerate_object_references has reference fields: false",
            "Point3 get_class_layout on a string class: E_INVALIDARG",
            // ELEMENT_TYPE_I4, data after MethodTable + length + padding; 24 + 7 * 4 bytes.
            "Arr: element_type=0x8 dims=[7] lower_bounds=[0] data_offset=16 size=52 values=0,1,4,9,16,25,36",
            "Arr generation: GcGeneration::GEN_2",
            "get_array_object_info on Point3: E_INVALIDARG",
            "string layout: buffer_length@8 string_length@8 buffer@12",
            "string layout2: string_length@8 buffer@12",
            // 8 + 8 + 4 (length) + 2 (terminator) + 12 * 2.
            "S: length=12 text=clrprof-heap size=46",
            "Node layout: size=48 A@8 Name@16 Numbers@24 Next@32",
            "N.A holds the expected object: true",
            "N.Name holds the expected object: true",
            "N.Numbers holds the expected object: true",
            // Each reference at its field's offset, pointing at the object the field holds.
            "N references: A->P Name->S Next->N2 Numbers->Arr (ascending offsets: true)",
            "N references when the callback stops at once: 1",
            // Reference fields, all null: S_OK and no callback.
            "N2 references: 0 (has reference fields: true)",
            "Boxed: class is Pair=true box offset=8",
            // Value types: offsets from the start of the value, size of the fields.
            "Pair layout: size=8 A@0 B@4",
            "Boxed values: A=5 B=6",
            // Generations 0, 1, 2, the large object heap, and the pinned object heap of
            // .NET 5 and later.
            if runtime.has_pinned_object_heap() {
                "generation bounds: generations [0, 1, 2, 3, 4]"
            } else {
                "generation bounds: generations [0, 1, 2, 3]"
            },
            "generation bounds: P inside a gen 2 range: true",
            "is_frozen_object P: false",
            "loh threshold: 85000",
            "module frozen objects: 0",
            // Methods of ICorProfilerInfo13..15: run where the runtime has them, a typed
            // error where it does not.
            needs("create_handle", 13).as_str(),
            needs("enumerate_non_gc_objects", 14).as_str(),
            needs("get_non_gc_heap_bounds", 14).as_str(),
            needs("enumerate_gc_heap_objects", 15).as_str(),
            "force_gc from a profiler thread: ok",
            "shutdown",
        ],
    );
}
