//! The SDK's general ICorProfilerInfo wrappers, inside a real runtime.
//!
//! `probe-info` (tests/probes/info) is a profiler built on the SDK: it calls the wrappers from
//! its callbacks and writes what it saw as JSON lines. `InfoProbe.cs` prints the same facts
//! from the managed side (metadata tokens, OS thread ids, the process id), so every assertion
//! compares two independent sources, or a value with a fact of the pinned runtime.

use std::collections::HashMap;
use std::path::Path;

use clrprof_e2e::{Dotnet, OutputExt, Program, compile, example_lib, probes, run_probe};
use serde_json::Value;

const E_NOTIMPL: u64 = 0x8000_4001;
const E_FAIL: u64 = 0x8000_4005;
const CORPROF_E_DATAINCOMPLETE: u64 = 0x8013_1351;
const CORPROF_E_NOT_MANAGED_THREAD: u64 = 0x8013_1355;
const CORPROF_E_TYPE_IS_PARAMETERIZED: u64 = 0x8013_135C;
const CORPROF_E_FUNCTION_IS_PARAMETERIZED: u64 = 0x8013_135D;

/// `COR_PRF_MODULE_FLAGS` bits.
const MODULE_DISK: u64 = 0x1;
const MODULE_NGEN: u64 = 0x2;
const MODULE_FLAT_LAYOUT: u64 = 0x20;

/// The event mask the probe sets: module, assembly, app domain, class loads, JIT, threads,
/// exceptions.
const PROBE_EVENT_MASK: u64 = 0x4 | 0x8 | 0x10 | 0x2 | 0x20 | 0x200 | 0x40;

/// One profiled run: the program's `key=value` output and the probe's lines.
struct Run {
    program: Program,
    facts: HashMap<String, String>,
    lines: Vec<Value>,
    output_path: String,
}

impl Run {
    fn fact(&self, key: &str) -> &str {
        self.facts
            .get(key)
            .unwrap_or_else(|| panic!("the program printed no `{key}=`: {:?}", self.facts))
    }

    fn num(&self, key: &str) -> u64 {
        let v = self.fact(key);
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => v.parse().unwrap(),
        }
    }

    fn all(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["kind"] == kind).collect()
    }

    fn one(&self, kind: &str) -> &Value {
        let found = self.all(kind);
        assert_eq!(found.len(), 1, "expected one `{kind}` line, got {found:#?}");
        found[0]
    }

    /// The `kind` lines (`jit`, `snapshot`, ...) about the method with metadata token `token`.
    fn by_token(&self, kind: &str, token: u64) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["kind"] == kind && l["token"] == token)
            .collect()
    }

    /// The `module` line (from `ModuleLoadFinished`) of the module whose path ends with `file`.
    fn module(&self, file: &str) -> &Value {
        self.all("module")
            .into_iter()
            .find(|l| {
                l["info"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(file))
            })
            .unwrap_or_else(|| panic!("no module line for {file}"))
    }
}

fn profiled_run(program: Program) -> Run {
    let probes::ProbeRun {
        output: out,
        text,
        path: output,
    } = run_probe(&mut program.command_with_profiler(probes::INFO, &example_lib("probe-info")));
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad probe line {l:?}: {e}")))
        .collect();
    Run {
        program,
        facts: parse_facts(&out.stdout_str()),
        lines,
        output_path: output.to_string_lossy().into_owned(),
    }
}

fn parse_facts(stdout: &str) -> HashMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether the tests run on one of the pinned runtimes, whose exact facts are known.
fn pinned() -> bool {
    clrprof_e2e::pinned(&Dotnet::get().version).is_some()
}

/// `{"failed": method, "hr": hr}`.
fn assert_failed(v: &Value, method: &str, hr: u64) {
    assert_eq!(v["failed"], method, "{v}");
    assert_eq!(v["hr"], hr, "{v}");
}

fn same_file(a: &str, b: &Path) -> bool {
    std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
}

#[test]
fn info_wrappers_inside_a_real_runtime() {
    let run = profiled_run(compile("InfoProbe"));

    // ----- what the program did, and that the profiler changed its environment -----
    assert_eq!(run.fact("results"), "471272268,5,42,echo,11,42,2");
    assert_eq!(run.fact("env_set_by_profiler"), "from-profiler");
    let unprofiled = parse_facts(&run.program.run(&[]).stdout_str());
    assert_eq!(unprofiled["env_set_by_profiler"], "<unset>");
    let pid = run.num("pid");
    assert_eq!(
        run.num("main_tid"),
        pid,
        "the main thread's OS id is the process id"
    );

    // ----- Initialize: version, runtime information, event masks -----
    let init = run.one("init");
    let runtime = Dotnet::get();
    if pinned() {
        assert_eq!(init["version"], runtime.profiling_api().info_version);
        let reported = if runtime.major_minor() < (5, 0) {
            // 3.1 reports the version of the product it descends from, not 3.1.23.
            serde_json::json!({
                "clr_instance_id": 0, "runtime_type": 2, "major": 4, "minor": 0,
                "build": 30319, "qfe": 0, "version_string": "v4.0.30319"
            })
        } else {
            // .NET 5 and later report their own version, the patch as the build number.
            let parts: Vec<u64> = runtime
                .version
                .split('.')
                .map(|p| p.parse().unwrap())
                .collect();
            serde_json::json!({
                "clr_instance_id": 0, "runtime_type": 2, "major": parts[0], "minor": parts[1],
                "build": parts[2], "qfe": 0, "version_string": runtime.version
            })
        };
        assert_eq!(init["runtime"], reported);
    }
    assert_eq!(init["runtime"]["runtime_type"], 2, "COR_PRF_CORE_CLR");
    assert_eq!(init["set_event_mask2"], Value::Null);
    assert_eq!(init["expected_mask"], PROBE_EVENT_MASK);
    assert_eq!(init["event_mask"], PROBE_EVENT_MASK);
    assert_eq!(
        init["event_mask2"],
        serde_json::json!([PROBE_EVENT_MASK, 0])
    );
    assert_eq!(init["initialize_current_thread"], Value::Null);
    // Initialize runs before the main thread has become a managed thread.
    assert_failed(
        &init["current_thread"],
        "ICorProfilerInfo::GetCurrentThreadID",
        CORPROF_E_NOT_MANAGED_THREAD,
    );

    // ----- environment variables -----
    let env = run.one("env");
    assert_eq!(env["probe_output"], run.output_path.as_str());
    assert_eq!(env["set"], Value::Null);
    assert_eq!(env["tmp_read"], "temporary");
    assert_eq!(env["tmp_unset"], Value::Null);
    assert_eq!(env["tmp_after_unset"], Value::Null, "removed, so None");
    assert_eq!(
        env["long_read_len"], 3000,
        "a value longer than the first buffer"
    );
    assert_eq!(env["long_read_matches"], true);
    assert_eq!(env["never_set"], Value::Null);

    // ----- the obsolete methods can be called and answer E_NOTIMPL -----
    let obsolete = run.one("obsolete");
    for (key, method) in [
        (
            "get_inproc_inspection_interface",
            "GetInprocInspectionInterface",
        ),
        (
            "get_inproc_inspection_i_this_thread",
            "GetInprocInspectionIThisThread",
        ),
        ("begin_inproc_debugging", "BeginInprocDebugging"),
        ("end_inproc_debugging", "EndInprocDebugging"),
    ] {
        assert_failed(
            &obsolete[key],
            &format!("ICorProfilerInfo::{method}"),
            E_NOTIMPL,
        );
    }

    // ----- modules, assemblies, app domains -----
    let program_module = run.module("InfoProbe.dll");
    let module_id = program_module["module"].as_u64().unwrap();
    let mi = &program_module["info"];
    assert!(
        same_file(mi["name"].as_str().unwrap(), &run.program.dll),
        "{mi} is not {}",
        run.program.dll.display()
    );
    assert_ne!(mi["base"], 0);
    let flags = mi["flags"].as_u64().unwrap();
    assert_eq!(flags & MODULE_DISK, MODULE_DISK);
    assert_eq!(flags & MODULE_NGEN, 0, "the program is not precompiled");
    if pinned() {
        assert_eq!(flags, MODULE_DISK | MODULE_FLAT_LAYOUT);
    }
    let assembly = &program_module["assembly_info"];
    assert_eq!(assembly["name"], "InfoProbe");
    assert_eq!(assembly["manifest_module"], module_id);
    let app_domain = assembly["app_domain"].as_u64().unwrap();
    assert_eq!(
        program_module["app_domains"],
        serde_json::json!([app_domain])
    );
    assert_eq!(program_module["in_memory_symbols"], 0);
    assert_eq!(program_module["app_domain_info"]["process_id"], pid);

    let corelib = run.module("System.Private.CoreLib.dll");
    let corelib_id = corelib["module"].as_u64().unwrap();
    assert_eq!(corelib["assembly_info"]["name"], "System.Private.CoreLib");
    assert_eq!(corelib["assembly_info"]["manifest_module"], corelib_id);
    assert_eq!(
        corelib["info"]["flags"].as_u64().unwrap() & (MODULE_DISK | MODULE_NGEN),
        MODULE_DISK | MODULE_NGEN,
        "CoreLib is ReadyToRun"
    );

    // ----- classes: tokens and type arguments agree with the program's own reflection -----
    let classes = run.all("class");
    let class_by_token = |token: u64| {
        classes
            .iter()
            .copied()
            .find(|c| c["token"] == token)
            .unwrap_or_else(|| panic!("no class load of token {token:#x}: {classes:#?}"))
    };
    let object_token = run.num("token_Object");
    let int32_token = run.num("token_Int32");
    let corelib_class = |token: u64| {
        move |c: &Value| c["token"] == token && c["module"] == corelib_id && c["corelib"] == true
    };
    let target = class_by_token(run.num("token_ProbeTarget"));
    assert_eq!(target["module"], module_id);
    assert!(
        corelib_class(object_token)(&target["parent_info"]),
        "{target}"
    );
    assert_eq!(target["type_args"], serde_json::json!([]));
    assert_eq!(
        target["class_id_info"],
        serde_json::json!([module_id, run.num("token_ProbeTarget")])
    );
    assert_eq!(target["is_array_class"], false);
    let boxed = class_by_token(run.num("token_Box"));
    let box_args = boxed["type_args"].as_array().unwrap();
    assert_eq!(box_args.len(), 1, "{boxed}");
    assert!(
        corelib_class(int32_token)(&box_args[0]),
        "Box<int>'s argument is Int32: {boxed}"
    );

    // ----- every JIT-compiled program method: code ranges, IP lookups, IL maps agree -----
    let jits = run.all("jit");
    assert!(jits.len() >= 8, "{jits:#?}");
    for j in &jits {
        let function = j["function"].as_u64().unwrap();
        let ranges = j["code_info2"].as_array().unwrap_or_else(|| panic!("{j}"));
        assert!(!ranges.is_empty(), "{j}");
        let (start, size) = (
            ranges[0][0].as_u64().unwrap(),
            ranges[0][1].as_u64().unwrap(),
        );
        assert!(start != 0 && size != 0, "{j}");
        assert_eq!(
            j["code_info"], ranges[0],
            "GetCodeInfo = first GetCodeInfo2 block"
        );
        assert_eq!(j["code_info3"], j["code_info2"]);
        assert_eq!(j["code_info4"], j["code_info2"]);
        assert_eq!(j["native_code_starts"], serde_json::json!([start]));
        for lookup in j["ip_lookups"].as_array().unwrap() {
            let ip = lookup["ip"].as_u64().unwrap();
            assert!(ip >= start && ip < start + size);
            assert_eq!(
                lookup["v1"], function,
                "GetFunctionFromIP inside the code: {j}"
            );
            assert_eq!(lookup["v2"], serde_json::json!([function, 0]));
            assert_eq!(lookup["v3"], serde_json::json!([function, 0]));
        }
        assert_ne!(j["il_map_len"], 0, "{j}");
        assert_eq!(j["il_map2_len"], j["il_map_len"]);
        assert_eq!(j["il_map3_len"], j["il_map_len"]);
        assert_eq!(j["il_maps_equal"], true);
        assert_eq!(j["il_map_has_offset_0"], true);
        assert_eq!(j["is_dynamic"], false);
        assert_eq!(j["clause_outside_exception"], false);
        assert_eq!(j["class_info"]["module"], module_id);
    }

    let only_jit = |name: &str| {
        let found = run.by_token("jit", run.num(name));
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        found[0]
    };
    let main = only_jit("token_Main");
    let main_function = main["function"].as_u64().unwrap();
    assert_eq!(
        main["from_token"], main_function,
        "GetFunctionFromToken finds Main"
    );
    assert_eq!(main["class_info"]["token"], run.num("token_InfoProbe"));
    assert_eq!(main["class_from_token"], main["class"]);
    assert_eq!(main["class_from_token_and_type_args"], main["class"]);

    let work = only_jit("token_Work");
    assert_eq!(work["from_token"], work["function"]);
    assert_eq!(work["class"], target["class"]);
    assert_eq!(work["class_from_token"], target["class"]);

    // Box<int>.Get: generic class, so the token-only lookups refuse and the type-arg ones work.
    let box_get = only_jit("token_BoxGet");
    assert_eq!(box_get["class"], boxed["class"]);
    assert_failed(
        &box_get["from_token"],
        "ICorProfilerInfo::GetFunctionFromToken",
        CORPROF_E_FUNCTION_IS_PARAMETERIZED,
    );
    assert_failed(
        &box_get["class_from_token"],
        "ICorProfilerInfo::GetClassFromToken",
        CORPROF_E_TYPE_IS_PARAMETERIZED,
    );
    assert_eq!(box_get["class_from_token_and_type_args"], boxed["class"]);

    // Echo<int> (and the shared Echo<__Canon> for the string call).
    let echoes = run.by_token("jit", run.num("token_Echo"));
    assert_eq!(echoes.len(), 2, "{echoes:#?}");
    let echo_int = echoes
        .iter()
        .find(|e| corelib_class(int32_token)(&e["type_args"][0]))
        .unwrap_or_else(|| panic!("no Echo<int>: {echoes:#?}"));
    assert_eq!(echo_int["type_args"].as_array().unwrap().len(), 1);
    assert_failed(
        &echo_int["from_token"],
        "ICorProfilerInfo::GetFunctionFromToken",
        CORPROF_E_FUNCTION_IS_PARAMETERIZED,
    );
    assert_eq!(echo_int["from_token_and_type_args"], echo_int["function"]);
    for e in &echoes {
        assert_eq!(e["from_token_and_type_args"], e["function"], "{e}");
    }

    // ----- exceptions: the clause being run, and the function its code belongs to -----
    let thrower = only_jit("token_Thrower")["function"].as_u64().unwrap();
    let finally = run.one("finally");
    assert_eq!(finally["function"], thrower);
    assert_eq!(finally["clause"]["type"], 3, "COR_PRF_CLAUSE_FINALLY");
    assert_eq!(finally["function_at_pc"], thrower);
    let catch = run.one("catch");
    assert_eq!(catch["function"], thrower);
    assert_eq!(catch["clause"]["type"], 2, "COR_PRF_CLAUSE_CATCH");
    assert_eq!(catch["function_at_pc"], thrower);
    let order: Vec<&str> = run
        .lines
        .iter()
        .filter_map(|l| l["kind"].as_str())
        .filter(|k| *k == "finally" || *k == "catch")
        .collect();
    assert_eq!(order, ["finally", "catch"], "the inner finally runs first");

    // ----- dynamic methods have no metadata: only the *3 IP lookup finds them -----
    let dynamic: Vec<&Value> = run
        .all("dynamic")
        .into_iter()
        .filter(|d| d["info"]["name"] == "probe_dynamic")
        .collect();
    assert_eq!(dynamic.len(), 1, "{:#?}", run.all("dynamic"));
    let dynamic = dynamic[0];
    assert_eq!(dynamic["is_dynamic"], true);
    assert_eq!(
        dynamic["info"]["module"], module_id,
        "the DynamicMethod's owner module"
    );
    assert_ne!(dynamic["info"]["signature_len"], 0);
    assert_failed(
        &dynamic["from_ip"],
        "ICorProfilerInfo::GetFunctionFromIP",
        E_FAIL,
    );
    assert_eq!(dynamic["from_ip3"], dynamic["function"]);
    // The runtime generates an IL stub, a dynamic method, for a P/Invoke that marshals: Strlen
    // (`native int (string)`, a 4-byte signature). The blittable Syscall, with a signature of
    // the same length, needs none: the JIT inlines its transition into the caller.
    assert_eq!(run.num("strlen"), 18);
    let stubs: Vec<&Value> = run
        .all("dynamic")
        .into_iter()
        .filter(|d| d["info"]["name"] == "IL_STUB_PInvoke")
        .collect();
    let strlen: Vec<&&Value> = stubs
        .iter()
        .filter(|d| d["info"]["module"] == module_id && d["info"]["signature_len"] == 4)
        .collect();
    assert_eq!(
        strlen.len(),
        1,
        "Strlen's stub, and not Syscall's: {stubs:#?}"
    );
    assert_eq!(strlen[0]["is_dynamic"], true);
    assert_eq!(strlen[0]["from_ip3"], strlen[0]["function"]);
    // The framework's own stubs depend on the runtime. .NET 7 and later generate the
    // framework's marshalling when it is built (LibraryImport), so its P/Invokes are blittable
    // and precompiled: Strlen's is the only stub. 3.1 makes three for System.Console, and keeps
    // every stub in one method table created in the module of the first stub made (Strlen's,
    // made when the JIT compiled Main).
    let runtime = Dotnet::get();
    if runtime.major_minor() >= (7, 0) {
        assert_eq!(stubs.len(), 1, "{stubs:#?}");
    } else if pinned() {
        assert_eq!(stubs.len(), 4, "{stubs:#?}");
        assert!(
            stubs.iter().all(|d| d["info"]["module"] == module_id),
            "{stubs:#?}"
        );
    }

    // ----- threads: names from ThreadNameChanged, OS ids from GetThreadInfo -----
    let names = run.all("thread_name");
    for (name, tid_key) in [
        ("probe-worker-1", "worker1_tid"),
        ("probe-worker-2", "worker2_tid"),
    ] {
        let t = names
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no ThreadNameChanged for {name}: {names:#?}"));
        assert_eq!(t["current_thread"], t["thread"], "the thread named itself");
        assert_eq!(
            t["os_tid"],
            run.num(tid_key),
            "GetThreadInfo = gettid() of {name}"
        );
        assert_eq!(t["app_domain"], app_domain);
        assert_eq!(
            t["context"], app_domain,
            "on CoreCLR the context is the app domain"
        );
        assert_eq!(t["handle"], true);
    }

    // ----- the snapshot taken while Checkpoint was compiled (workers alive and named) -----
    let snaps = run.by_token("snapshot", run.num("token_Checkpoint"));
    assert_eq!(snaps.len(), 1, "{snaps:#?}");
    let snap = snaps[0];
    assert_eq!(
        snap["current_os_tid"], pid,
        "Checkpoint is compiled on the main thread"
    );
    assert_eq!(snap["current_app_domain"], app_domain);
    let threads = snap["threads"].as_array().unwrap();
    assert!(
        threads
            .iter()
            .any(|t| t["thread"] == snap["current_thread"] && t["os_tid"] == pid),
        "EnumThreads includes the main thread: {threads:#?}"
    );
    for (name, tid_key) in [
        ("probe-worker-1", "worker1_tid"),
        ("probe-worker-2", "worker2_tid"),
    ] {
        let t = threads
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("EnumThreads misses {name}: {threads:#?}"));
        assert_eq!(t["os_tid"], run.num(tid_key));
    }
    let modules: Vec<&str> = snap["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        modules
            .iter()
            .any(|m| m.ends_with("/System.Private.CoreLib.dll")),
        "{modules:?}"
    );
    assert!(
        modules.iter().any(|m| same_file(m, &run.program.dll)),
        "{modules:?}"
    );
    assert_eq!(snap["jited_includes_self"], true);
    assert_eq!(snap["jited2_includes_self"], true);
    assert_eq!(snap["jited_rejit_ids_zero"], true);
    assert_eq!(snap["jited_count"], snap["jited2_count"]);
    assert!(snap["jited_count"].as_u64().unwrap() >= jits.len() as u64);
    assert_failed(
        &snap["inliners_program"],
        "ICorProfilerInfo6::EnumNgenModuleMethodsInliningThisMethod",
        CORPROF_E_DATAINCOMPLETE,
    );
    assert!(snap["inliners_corelib"].is_array(), "{snap}");

    assert_eq!(run.one("shutdown")["panics_caught"], 0);
}

/// Module paths longer than the SDK's first-try buffer (512 UTF-16 units) come back whole:
/// `GetModuleInfo2` refuses short buffers with `ERROR_INSUFFICIENT_BUFFER`, and the wrapper
/// retries with the size the runtime asked for.
#[test]
fn long_module_paths_are_read_whole() {
    let compiled = compile("InfoProbe");
    let dir = clrprof_e2e::temp_dir();
    let mut deep = dir.path().to_path_buf();
    for i in 0..16 {
        deep.push(format!(
            "{i:02}-a-directory-name-long-enough-to-matter-{}",
            "x".repeat(20)
        ));
    }
    std::fs::create_dir_all(&deep).unwrap();
    for file in ["InfoProbe.dll", "InfoProbe.runtimeconfig.json"] {
        std::fs::copy(compiled.dll.with_file_name(file), deep.join(file)).unwrap();
    }
    let dll = deep.join("InfoProbe.dll");
    assert!(dll.to_string_lossy().encode_utf16().count() > 800);
    let run = profiled_run(Program {
        dll: dll.clone(),
        ..compiled
    });
    let module = run.module("InfoProbe.dll");
    assert!(
        same_file(module["info"]["name"].as_str().unwrap(), &dll),
        "{module}"
    );
    assert_eq!(module["assembly_info"]["name"], "InfoProbe");
    assert_eq!(run.fact("results"), "471272268,5,42,echo,11,42,2");
}
