//! probe-il-heap: a test profiler that exercises the SDK's IL, ReJIT, heap and statics
//! wrappers inside a real runtime. `PROBE_SCENARIO` picks what it does; it writes what it saw,
//! one `key: value` line per fact (each distinct line once, in order), to the file named by
//! `PROBE_OUTPUT`. `tests/sdk_il_heap.rs` runs it against `tests/programs/{IlRewrite,ReJit,Heap}.cs`.
//!
//! - `il-rewrite`: at `ModuleLoadFinished` of `IlRewrite.dll`, replaces `IlRewrite.Answer()`
//!   (41 -> 42) and prepends to `IlRewrite.Guarded(int)` IL that increments
//!   `IlRewrite.Prologues`; sets an IL map for `Guarded` when it is compiled.
//! - `rejit`: when `ReJit.AskRejit()` is compiled, a thread of the probe re-JITs
//!   `ReJit.Inlinee()` with its inliners (-> 20; if the runtime does not track inliners,
//!   alone) and `ReJit.Value()` (-> 2); when `ReJit.AskRevert()` is compiled, it reverts both.
//! - `rejit-coverage`: when `ReJitCoverage.AskInstrument()` is compiled, a thread of the
//!   probe re-JITs `ReJitCoverage.Work(int)` with the SDK's block counters and
//!   `ReJitCoverage.Instrumented()` (-> true, through a local variable whose signature the
//!   probe added at ModuleLoadFinished) in one request; when `AskRevert()` is compiled,
//!   it reverts both. At shutdown it prints Work's block counts.
//! - `heap`: inspects the objects `Heap.cs` keeps in statics, in the `GarbageCollectionFinished`
//!   of the GC the program induces after setting `Heap.Phase = 1`, then calls `ForceGC` from
//!   a thread of its own.
//!
//! Values that differ between runs (addresses) never appear in the output: the probe prints
//! offsets and comparisons instead. Errors are printed as `error <what>: <error>`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_sdk::il::{
    ClauseKind, HeaderFormat, IlBody, Method, append_local, counters, ldc_i4, op,
};
use clrprof_sdk::info::{MethodRef, RejitFlags};
use clrprof_sdk::metadata::MetaDataImport;
use clrprof_sdk::{
    AppDomainId, ClassId, Error, EventMask, FunctionControl, FunctionId, GcGeneration,
    GcHandleType, HResult, IlMapEntry, ModuleId, ObjectId, Profiler, ProfilerInfo, ReJitId, Result,
    ThreadId, Token,
};

/// The probe's CLSID (what `CORECLR_PROFILER` names).
pub const CLSID: &str = "{8E2A41C7-5B36-4D0F-A1E9-3C7D92B6F054}";

clrprof_sdk::export_profiler!(IlHeapProbe, CLSID);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    IlRewrite,
    Rejit,
    RejitCoverage,
    Heap,
}

impl Scenario {
    fn from_env() -> Option<Scenario> {
        match std::env::var("PROBE_SCENARIO").ok()?.as_str() {
            "il-rewrite" => Some(Scenario::IlRewrite),
            "rejit" => Some(Scenario::Rejit),
            "rejit-coverage" => Some(Scenario::RejitCoverage),
            "heap" => Some(Scenario::Heap),
            _ => None,
        }
    }

    /// The assembly file the scenario works on.
    fn module_file(self) -> &'static str {
        match self {
            Scenario::IlRewrite => "IlRewrite.dll",
            Scenario::Rejit => "ReJit.dll",
            Scenario::RejitCoverage => "ReJitCoverage.dll",
            Scenario::Heap => "Heap.dll",
        }
    }

    fn event_mask(self) -> EventMask {
        let base = EventMask::MONITOR_MODULE_LOADS;
        match self {
            Scenario::IlRewrite => base | EventMask::MONITOR_JIT_COMPILATION,
            Scenario::Rejit | Scenario::RejitCoverage => {
                base | EventMask::MONITOR_JIT_COMPILATION | EventMask::ENABLE_REJIT
            }
            Scenario::Heap => {
                base | EventMask::MONITOR_CLASS_LOADS
                    | EventMask::MONITOR_GC
                    | EventMask::MONITOR_OBJECT_ALLOCATED
                    | EventMask::ENABLE_OBJECT_ALLOCATED
            }
        }
    }
}

/// Work for the probe's own thread (calls that must not come from a callback).
enum Job {
    Rejit,
    Revert,
    /// `rejit-coverage`: re-JIT (`true`) or revert (`false`) Work and Instrumented.
    Counters(bool),
    ForceGc,
}

struct Worker {
    jobs: Sender<Job>,
    thread: JoinHandle<()>,
}

struct Output {
    seen: HashSet<String>,
    file: File,
}

/// What the probe learned from metadata and callbacks.
#[derive(Default)]
struct State {
    module: Option<ModuleId>,
    /// Names of the program's TypeDefs, MethodDefs and FieldDefs the probe cares about.
    names: HashMap<Token, String>,
    tokens: HashMap<String, Token>,
    /// ClassIds of the program's types, by TypeDef name.
    classes: HashMap<String, ClassId>,
    app_domain: Option<AppDomainId>,
    /// `ReJit.Value`'s FunctionID.
    value_function: Option<FunctionId>,
    point3_allocated: bool,
    inspected: bool,
    /// `rejit-coverage`: the block counters of `ReJitCoverage.Work`, once re-JIT'd.
    work_counters: Option<&'static [AtomicU64]>,
    /// `rejit-coverage`: the StandAloneSig of a local signature with one `bool`.
    bool_local: Option<Token>,
}

#[derive(Default)]
struct IlHeapProbe {
    info: OnceLock<ProfilerInfo>,
    scenario: OnceLock<Scenario>,
    out: Mutex<Option<Output>>,
    state: Mutex<State>,
    worker: Mutex<Option<Worker>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An error in a stable form (no method-specific wording beyond the HRESULT's name).
fn describe(e: &Error) -> String {
    match e {
        Error::Failed { hr, .. } => match hr.name() {
            Some(name) => name.to_string(),
            None => format!("{:#010x}", hr.0 as u32),
        },
        Error::NotSupported {
            required,
            available,
            ..
        } => format!("not supported (needs {required}, have {available})"),
        other => other.to_string(),
    }
}

fn status<T>(r: &Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => describe(e),
    }
}

/// Reads a plain value at `address` (a static's home or an object's field).
///
/// # Safety
/// `address` must point at a readable, initialised `T`.
unsafe fn read<T: Copy>(address: usize) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { (address as *const T).read_unaligned() }
}

impl IlHeapProbe {
    fn info(&self) -> &ProfilerInfo {
        self.info.get().expect("initialized")
    }

    fn emit(&self, line: impl Display) {
        let line = line.to_string();
        let mut out = lock(&self.out);
        if let Some(out) = out.as_mut()
            && out.seen.insert(line.clone())
        {
            let _ = writeln!(out.file, "{line}");
            let _ = out.file.flush();
        }
    }

    fn emit_result<T: Display>(&self, what: &str, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => {
                self.emit(format!("{what}: {v}"));
                Some(v)
            }
            Err(e) => {
                self.emit(format!("{what}: {}", describe(&e)));
                None
            }
        }
    }

    fn token(&self, name: &str) -> Token {
        lock(&self.state)
            .tokens
            .get(name)
            .copied()
            .unwrap_or(Token::NIL)
    }

    fn name_of(&self, token: Token) -> Option<String> {
        lock(&self.state).names.get(&token).cloned()
    }

    fn class(&self, name: &str) -> Option<ClassId> {
        lock(&self.state).classes.get(name).copied()
    }

    fn send(&self, job: Job) {
        let mut worker = lock(&self.worker);
        if worker.is_none() {
            let (jobs, rx) = mpsc::channel::<Job>();
            let thread = std::thread::spawn(move || {
                let Some(probe) = clrprof_sdk::instance::<IlHeapProbe>() else {
                    return;
                };
                for job in rx {
                    probe.run(job);
                }
            });
            *worker = Some(Worker { jobs, thread });
        }
        if let Some(w) = worker.as_ref() {
            let _ = w.jobs.send(job);
        }
    }

    /// Records the program's tokens: `types` are TypeDef names, each with the member names
    /// (methods and fields) to look up.
    fn learn_metadata(&self, md: &MetaDataImport, types: &[(&str, &[&str])]) -> Result<()> {
        let mut names = Vec::new();
        for (type_name, members) in types {
            let Some(td) = md.find_type_def_by_name(type_name, Token::NIL)? else {
                self.emit(format!("error metadata: no type {type_name}"));
                continue;
            };
            names.push((type_name.to_string(), td));
            let fields: Vec<(String, Token)> = md
                .enum_fields(td)?
                .into_iter()
                .filter_map(|f| md.get_field_props(f).ok().map(|p| (p.name, f)))
                .collect();
            for member in members.iter() {
                let key = format!("{type_name}.{member}");
                if let Some(&(_, f)) = fields.iter().find(|(n, _)| n == member) {
                    names.push((key, f));
                } else if let Some(&m) = md.enum_methods_with_name(td, member)?.first() {
                    names.push((key, m));
                } else {
                    self.emit(format!("error metadata: no member {key}"));
                }
            }
        }
        let mut state = lock(&self.state);
        for (name, token) in names {
            state.names.insert(token, name.clone());
            state.tokens.insert(name, token);
        }
        Ok(())
    }

    fn run(&self, job: Job) {
        let info = self.info();
        match job {
            Job::Rejit => {
                self.emit_result(
                    "worker initialize_current_thread",
                    info.initialize_current_thread().map(|_| "ok"),
                );
                let module = lock(&self.state).module.unwrap_or_default();
                let method = |name: &str| MethodRef {
                    module,
                    token: self.token(name),
                };
                if let Some(f) = lock(&self.state).value_function {
                    self.emit(format!(
                        "set_function_rejit: {}",
                        status(&info.set_function_rejit(f))
                    ));
                }
                // Inlinee first: once Value changes, the program looks at Caller. Without
                // inline tracking (COMPlus_ProfApi_RejitOnAttach=0) the request fails and
                // Inlinee is re-JIT'd alone, with Value: Caller keeps its inlined copy.
                let with_inliners = info.request_rejit_with_inliners(
                    RejitFlags::BLOCK_INLINING,
                    &[method("ReJit.Inlinee")],
                );
                self.emit(format!(
                    "request_rejit_with_inliners Inlinee: {}",
                    status(&with_inliners)
                ));
                let (names, methods) = if with_inliners.is_ok() {
                    ("Value", vec![method("ReJit.Value")])
                } else {
                    (
                        "Inlinee, Value",
                        vec![method("ReJit.Inlinee"), method("ReJit.Value")],
                    )
                };
                self.emit(format!(
                    "request_rejit {names}: {}",
                    status(&info.request_rejit(&methods))
                ));
            }
            Job::Revert => {
                let module = lock(&self.state).module.unwrap_or_default();
                let methods = [
                    MethodRef {
                        module,
                        token: self.token("ReJit.Value"),
                    },
                    MethodRef {
                        module,
                        token: self.token("ReJit.Inlinee"),
                    },
                ];
                match info.request_revert(&methods) {
                    Ok(statuses) => {
                        let s: Vec<String> = statuses.iter().map(|h| h.to_string()).collect();
                        self.emit(format!(
                            "request_revert Value, Inlinee: ok [{}]",
                            s.join(", ")
                        ));
                    }
                    Err(e) => self.emit(format!("request_revert Value, Inlinee: {}", describe(&e))),
                }
                if let Some(f) = lock(&self.state).value_function {
                    let ids = info.get_rejit_ids(f);
                    self.emit(format!(
                        "get_rejit_ids Value: {}",
                        match &ids {
                            Ok(ids) => {
                                // The non-zero ids come from a global counter: print them as n.
                                let mut ids: Vec<&str> = ids
                                    .iter()
                                    .map(|i| if i.is_null() { "0" } else { "n" })
                                    .collect();
                                ids.sort_unstable();
                                format!("[{}]", ids.join(", "))
                            }
                            Err(e) => describe(e),
                        }
                    ));
                }
            }
            Job::Counters(on) => {
                let module = lock(&self.state).module.unwrap_or_default();
                let methods: Vec<MethodRef> = ["ReJitCoverage.Work", "ReJitCoverage.Instrumented"]
                    .iter()
                    .map(|name| MethodRef {
                        module,
                        token: self.token(name),
                    })
                    .collect();
                if on {
                    self.emit_result(
                        "worker initialize_current_thread",
                        info.initialize_current_thread().map(|_| "ok"),
                    );
                    self.emit(format!(
                        "request_rejit Work, Instrumented: {}",
                        status(&info.request_rejit(&methods))
                    ));
                } else {
                    self.emit(format!(
                        "request_revert Work, Instrumented: {}",
                        status(&info.request_revert(&methods))
                    ));
                }
            }
            Job::ForceGc => {
                self.emit(format!(
                    "force_gc from a profiler thread: {}",
                    status(&info.force_gc())
                ));
            }
        }
    }

    // ----- il-rewrite -----

    fn rewrite_module(&self, module: ModuleId, md: &MetaDataImport) -> Result<()> {
        self.learn_metadata(
            md,
            &[(
                "IlRewrite",
                &["Answer", "Guarded", "Prologues", "Finallies"],
            )],
        )?;
        let info = self.info();

        // Answer: ldc.i4.s 41; ret -> ldc.i4.s 42; ret.
        let answer = self.token("IlRewrite.Answer");
        let original = info.get_il_function_body(module, answer)?;
        self.emit(format!(
            "Answer original: {:?} {}",
            HeaderFormat::of(&original).unwrap_or(HeaderFormat::Fat),
            hex(&original)
        ));
        let mut body = IlBody::parse(&original)?;
        if body.code == [op::LDC_I4_S, 41, op::RET] {
            body.code = [ldc_i4(42), vec![op::RET]].concat();
            self.emit(format!("Answer new: {}", hex(&body.encode()?)));
            self.emit(format!(
                "Answer replace: {}",
                status(&info.replace_il_function_body(module, answer, &body))
            ));
            self.emit(format!(
                "Answer read back: {}",
                hex(&info.get_il_function_body(module, answer)?)
            ));
        } else {
            self.emit(format!("error Answer: unexpected code {}", hex(&body.code)));
        }

        // Guarded: prepend `Prologues++` (ldsfld; ldc.i4.1; add; stsfld).
        let guarded = self.token("IlRewrite.Guarded");
        let field = self.token("IlRewrite.Prologues").0.to_le_bytes();
        let mut body = info.get_il_body(module, guarded)?;
        self.emit(format!(
            "Guarded original: {:?} max_stack={} clauses={}",
            body.header_format(),
            body.max_stack,
            body.clauses.len()
        ));
        let before = body.clauses.clone();
        let mut prologue = vec![op::LDSFLD];
        prologue.extend_from_slice(&field);
        prologue.extend_from_slice(&[op::LDC_I4_0 + 1, op::ADD, op::STSFLD]);
        prologue.extend_from_slice(&field);
        let shift = body.prepend(&prologue, 2)?;
        self.emit(format!(
            "Guarded prepended: {} bytes, max_stack={}",
            shift, body.max_stack
        ));
        for (i, (old, new)) in before.iter().zip(&body.clauses).enumerate() {
            let kind = match old.kind {
                ClauseKind::Finally => "finally",
                ClauseKind::Catch(_) => "catch",
                ClauseKind::Filter { .. } => "filter",
                ClauseKind::Fault => "fault",
                ClauseKind::Other { .. } => "other",
            };
            self.emit(format!(
                "Guarded clause {i}: {kind} try +{} handler +{} lengths kept: {}",
                new.try_offset - old.try_offset,
                new.handler_offset - old.handler_offset,
                new.try_length == old.try_length && new.handler_length == old.handler_length
            ));
        }
        self.emit(format!(
            "Guarded replace: {}",
            status(&info.replace_il_function_body(module, guarded, &body))
        ));
        let reread = IlBody::parse(&info.get_il_function_body(module, guarded)?)?;
        self.emit(format!(
            "Guarded read back equals new body: {}",
            reread == body
        ));
        Ok(())
    }

    fn rewrite_jit_started(&self, function: FunctionId) -> Result<()> {
        let f = self.info().get_function_info(function)?;
        if Some(f.module) != lock(&self.state).module {
            return Ok(());
        }
        if let Some(name) = self.name_of(f.token) {
            self.emit(format!("jit {name}"));
            if name == "IlRewrite.Guarded" {
                // Old offset 0 is now at 12, after the prologue.
                let map = [IlMapEntry {
                    old_offset: 0,
                    new_offset: 12,
                }];
                self.emit(format!(
                    "Guarded set_il_instrumented_code_map: {}",
                    status(
                        &self
                            .info()
                            .set_il_instrumented_code_map(function, true, &map)
                    )
                ));
            }
        }
        Ok(())
    }

    // ----- rejit -----

    fn rejit_jit_started(&self, function: FunctionId) -> Result<()> {
        let f = self.info().get_function_info(function)?;
        if Some(f.module) != lock(&self.state).module {
            return Ok(());
        }
        match self.name_of(f.token).as_deref() {
            Some("ReJit.Value") => lock(&self.state).value_function = Some(function),
            Some("ReJit.AskRejit") => self.send(Job::Rejit),
            Some("ReJit.AskRevert") => self.send(Job::Revert),
            _ => {}
        }
        Ok(())
    }

    fn new_body(&self, method: Token) -> Option<(String, IlBody)> {
        let name = self.name_of(method)?;
        let value = match name.as_str() {
            "ReJit.Value" => 2,
            "ReJit.Inlinee" => 20,
            _ => return Some((name, IlBody::new(Vec::new()))),
        };
        Some((name, IlBody::new([ldc_i4(value), vec![op::RET]].concat())))
    }

    // ----- rejit-coverage -----

    fn rejit_coverage_jit_started(&self, function: FunctionId) -> Result<()> {
        let f = self.info().get_function_info(function)?;
        if Some(f.module) != lock(&self.state).module {
            return Ok(());
        }
        match self.name_of(f.token).as_deref() {
            Some("ReJitCoverage.AskInstrument") => self.send(Job::Counters(true)),
            Some("ReJitCoverage.AskRevert") => self.send(Job::Counters(false)),
            _ => {}
        }
        Ok(())
    }

    /// Adds a local variable signature with one `bool` (`Instrumented` has no locals).
    fn add_bool_local(&self, module: ModuleId) -> Result<()> {
        const ELEMENT_TYPE_BOOLEAN: u8 = 0x02;
        let (sig, index) = append_local(&[], &[ELEMENT_TYPE_BOOLEAN])?;
        let Some(emit) = self.info().get_module_metadata_emit(module)? else {
            self.emit("error metadata: no emitter");
            return Ok(());
        };
        let token = emit.get_token_from_sig(&sig)?;
        self.emit(format!(
            "local signature {}: local {index}, token table {:#04x}",
            hex(&sig),
            token.0 >> 24
        ));
        lock(&self.state).bool_local = Some(token);
        Ok(())
    }

    /// The re-JIT body of `Work` (the original with a counter in every block) or of
    /// `Instrumented` (`return true`).
    fn counted_body(&self, module: ModuleId, method: Token) -> Result<Option<(String, IlBody)>> {
        let Some(name) = self.name_of(method) else {
            return Ok(None);
        };
        if name == "ReJitCoverage.Instrumented" {
            return Ok(Some((
                name,
                IlBody::new([ldc_i4(1), vec![op::RET]].concat()),
            )));
        }
        let mut work = Method::parse(&self.info().get_il_function_body(module, method)?)?;
        let blocks = counters::probed_blocks(&work);
        let block_counters = counters::leak_counters(blocks.len());
        counters::add_block_counters(&mut work, &blocks, block_counters);
        lock(&self.state).work_counters = Some(block_counters);
        self.emit(format!("{name}: {} blocks", blocks.len()));
        Ok(Some((name, work.to_body()?.0)))
    }

    // ----- heap -----

    fn heap_class_loaded(&self, class: ClassId) -> Result<()> {
        let info = self.info();
        let id = info.get_class_id_info(class)?;
        if Some(id.module) != lock(&self.state).module {
            return Ok(());
        }
        let Some(name) = self.name_of(id.token) else {
            return Ok(());
        };
        if name == "Heap" {
            let module = info.get_module_info(id.module)?;
            let assembly = info.get_assembly_info(module.assembly)?;
            lock(&self.state).app_domain = Some(assembly.app_domain);
        }
        self.emit(format!("class loaded: {name}"));
        lock(&self.state).classes.insert(name, class);
        Ok(())
    }

    fn heap_object_allocated(&self, object: ObjectId, class: ClassId) -> Result<()> {
        if Some(class) != self.class("Point3") {
            return Ok(());
        }
        {
            let mut state = lock(&self.state);
            if state.point3_allocated {
                return Ok(());
            }
            state.point3_allocated = true;
        }
        let info = self.info();
        self.emit(format!(
            "allocated Point3: size={} size2={} class matches={}",
            info.get_object_size(object)?,
            info.get_object_size2(object)?,
            info.get_class_from_object(object)? == class
        ));
        Ok(())
    }

    /// The home of static `Heap.<field>`.
    fn static_address(&self, field: &str) -> Result<usize> {
        let (class, domain) = {
            let state = lock(&self.state);
            (
                state.classes.get("Heap").copied().unwrap_or_default(),
                state.app_domain.unwrap_or_default(),
            )
        };
        self.info().get_app_domain_static_address(
            class,
            self.token(&format!("Heap.{field}")),
            domain,
        )
    }

    /// Reads the object reference stored in static `Heap.<field>`.
    fn static_object(&self, field: &str) -> Result<ObjectId> {
        let address = self.static_address(field)?;
        // SAFETY: the runtime returned the home of a static of a reference type: a slot
        // holding an object reference, readable while the runtime is suspended for the GC.
        Ok(ObjectId(unsafe { read::<usize>(address) }))
    }

    fn heap_gc_finished(&self) -> Result<()> {
        if lock(&self.state).inspected || self.class("Heap").is_none() {
            return Ok(());
        }
        // Not yet allocated statics fail with CORPROF_E_DATAINCOMPLETE: not our GC yet.
        let Ok(phase_address) = self.static_address("Phase") else {
            return Ok(());
        };
        // SAFETY: the home of `static int Phase`.
        if unsafe { read::<i32>(phase_address) } != 1 {
            return Ok(());
        }
        lock(&self.state).inspected = true;
        self.emit("inspecting at GarbageCollectionFinished with Phase=1");
        let r = self.inspect();
        if let Err(e) = &r {
            self.emit(format!("error inspect: {}", describe(e)));
        }
        self.send(Job::ForceGc);
        Ok(())
    }

    fn inspect(&self) -> Result<()> {
        let info = self.info();
        let heap = self.class("Heap").unwrap_or_default();
        let field_kind = |name: &str| -> String {
            match info.get_static_field_info(heap, self.token(&format!("Heap.{name}"))) {
                Ok(k) => format!("{k:?}"),
                Err(e) => describe(&e),
            }
        };
        self.emit(format!(
            "static kinds: Count={} Tls={} P={} K={}",
            field_kind("Count"),
            field_kind("Tls"),
            field_kind("P"),
            field_kind("K")
        ));
        if let Some(point3) = self.class("Point3") {
            self.emit(format!(
                "static kind of instance field Point3.X: {}",
                match info.get_static_field_info(point3, self.token("Point3.X")) {
                    Ok(k) => format!("{k:?}"),
                    Err(e) => describe(&e),
                }
            ));
        }

        // Statics: an int, a thread static, a literal, a context static.
        let count = self.static_address("Count")?;
        // SAFETY: the home of `static int Count`.
        self.emit(format!("Count value: {}", unsafe { read::<i32>(count) }));
        let domain = lock(&self.state).app_domain.unwrap_or_default();
        let thread = info.get_current_thread_id()?;
        let tls = self.token("Heap.Tls");
        match info.get_thread_static_address2(heap, tls, domain, thread) {
            // SAFETY: the home of `[ThreadStatic] static int Tls` on this (the main) thread.
            Ok(a) => self.emit(format!("Tls value (address2): {}", unsafe {
                read::<i32>(a)
            })),
            Err(e) => self.emit(format!("Tls value (address2): {}", describe(&e))),
        }
        match info.get_thread_static_address(heap, tls, ThreadId::NULL) {
            // SAFETY: as above.
            Ok(a) => self.emit(format!("Tls value (address): {}", unsafe {
                read::<i32>(a)
            })),
            Err(e) => self.emit(format!("Tls value (address): {}", describe(&e))),
        }
        self.emit(format!("K address: {}", status(&self.static_address("K"))));
        self.emit(format!(
            "context static address: {}",
            status(&info.get_context_static_address(
                heap,
                self.token("Heap.Count"),
                clrprof_sdk::ContextId::NULL
            ))
        ));

        self.inspect_point()?;
        self.inspect_array()?;
        self.inspect_string()?;
        self.inspect_node()?;
        self.inspect_boxed()?;

        // The heap as a whole.
        let bounds = info.get_generation_bounds()?;
        let generations: Vec<u32> = bounds
            .iter()
            .map(|r| r.generation.0)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        self.emit(format!("generation bounds: generations {generations:?}"));
        let p = self.static_object("P")?;
        self.emit(format!(
            "generation bounds: P inside a gen 2 range: {}",
            bounds
                .iter()
                .any(|r| r.generation == GcGeneration::GEN_2 && r.contains(p))
        ));
        self.emit(format!("is_frozen_object P: {}", info.is_frozen_object(p)?));
        self.emit_result("loh threshold", info.get_loh_object_size_threshold());
        let module = lock(&self.state).module.unwrap_or_default();
        let frozen = info
            .enum_module_frozen_objects(module)
            .and_then(|e| e.into_vec());
        self.emit(format!(
            "module frozen objects: {}",
            match frozen {
                Ok(v) => v.len().to_string(),
                Err(e) => describe(&e),
            }
        ));

        // Newer than this runtime: each reports the version it needs.
        self.emit(format!(
            "create_handle: {}",
            status(&info.create_handle(p, GcHandleType::STRONG))
        ));
        self.emit(format!(
            "enumerate_non_gc_objects: {}",
            status(&info.enumerate_non_gc_objects())
        ));
        self.emit(format!(
            "get_non_gc_heap_bounds: {}",
            status(&info.get_non_gc_heap_bounds())
        ));
        self.emit(format!(
            "enumerate_gc_heap_objects: {}",
            status(&info.enumerate_gc_heap_objects(|_| true))
        ));
        Ok(())
    }

    fn layout_line(&self, class_name: &str) -> Result<(String, BTreeMap<u32, String>)> {
        let info = self.info();
        let class = self.class(class_name).unwrap_or_default();
        let layout = info.get_class_layout(class)?;
        let mut by_offset = BTreeMap::new();
        for f in &layout.fields {
            let name = self
                .name_of(f.field)
                .unwrap_or_else(|| format!("{}", f.field));
            let short = name.rsplit('.').next().unwrap_or(&name).to_string();
            by_offset.insert(f.offset, short);
        }
        let fields: Vec<String> = by_offset
            .iter()
            .map(|(off, name)| format!("{name}@{off}"))
            .collect();
        Ok((
            format!(
                "{class_name} layout: size={} {}",
                layout.size,
                fields.join(" ")
            ),
            by_offset,
        ))
    }

    fn inspect_point(&self) -> Result<()> {
        let info = self.info();
        let p = self.static_object("P")?;
        let class = info.get_class_from_object(p)?;
        self.emit(format!(
            "P: class is Point3={} size={} size2={}",
            Some(class) == self.class("Point3"),
            info.get_object_size(p)?,
            info.get_object_size2(p)?
        ));
        let (line, by_offset) = self.layout_line("Point3")?;
        self.emit(line);
        let values: Vec<String> = by_offset
            .iter()
            // SAFETY: `off` is the offset of a `long` field of the live object `p`.
            .map(|(off, name)| format!("{name}={}", unsafe { read::<i64>(p.0 + *off as usize) }))
            .collect();
        self.emit(format!("P values: {}", values.join(" ")));
        let generation = info.get_object_generation(p)?;
        self.emit(format!(
            "P generation: {:?}, range contains it: {}",
            generation.generation,
            generation.contains(p)
        ));
        self.emit(format!(
            "P references: {}",
            match info.object_references(p) {
                Ok(r) if r.is_empty() => "none".to_string(),
                Ok(r) => format!("{} (unexpected)", r.len()),
                Err(e) => describe(&e),
            }
        ));
        self.emit(format!(
            "P enumerate_object_references has reference fields: {}",
            info.enumerate_object_references(p, |_| true)?
        ));
        self.emit(format!(
            "Point3 get_class_layout on a string class: {}",
            status(&info.get_class_layout(info.get_class_from_object(self.static_object("S")?)?))
        ));
        Ok(())
    }

    fn inspect_array(&self) -> Result<()> {
        let info = self.info();
        let arr = self.static_object("Arr")?;
        let a = info.get_array_object_info(arr)?;
        let values: Vec<String> = (0..a.len() as usize)
            // SAFETY: `data` is the first of `len` i32 elements of the live array.
            .map(|i| unsafe { read::<i32>(a.data + 4 * i) }.to_string())
            .collect();
        self.emit(format!(
            "Arr: element_type={:#x} dims={:?} lower_bounds={:?} data_offset={} size={} values={}",
            a.element_type,
            a.dims,
            a.lower_bounds,
            a.data - arr.0,
            info.get_object_size2(arr)?,
            values.join(",")
        ));
        self.emit(format!(
            "Arr generation: {:?}",
            info.get_object_generation(arr)?.generation
        ));
        self.emit(format!(
            "get_array_object_info on Point3: {}",
            status(&info.get_array_object_info(self.static_object("P")?))
        ));
        Ok(())
    }

    fn inspect_string(&self) -> Result<()> {
        let info = self.info();
        let s = self.static_object("S")?;
        let l1 = info.get_string_layout()?;
        let l2 = info.get_string_layout2()?;
        self.emit(format!(
            "string layout: buffer_length@{} string_length@{} buffer@{}",
            l1.buffer_length_offset, l1.string_length_offset, l1.buffer_offset
        ));
        self.emit(format!(
            "string layout2: string_length@{} buffer@{}",
            l2.string_length_offset, l2.buffer_offset
        ));
        // SAFETY: the layout says where a string's length is.
        let len = unsafe { read::<u32>(s.0 + l2.string_length_offset as usize) };
        let units: Vec<u16> = (0..len as usize)
            // SAFETY: the string has `len` UTF-16 units from the buffer offset on.
            .map(|i| unsafe { read::<u16>(s.0 + l2.buffer_offset as usize + 2 * i) })
            .collect();
        self.emit(format!(
            "S: length={} text={} size={}",
            len,
            String::from_utf16_lossy(&units),
            info.get_object_size2(s)?
        ));
        Ok(())
    }

    fn inspect_node(&self) -> Result<()> {
        let info = self.info();
        let n = self.static_object("N")?;
        let (line, by_offset) = self.layout_line("Node")?;
        self.emit(line);
        // What N's fields hold, read through the layout.
        let field_value = |name: &str| -> Option<ObjectId> {
            let off = by_offset.iter().find(|(_, n)| n.as_str() == name)?.0;
            // SAFETY: `off` is the offset of a reference field of the live object `n`.
            Some(ObjectId(unsafe { read::<usize>(n.0 + *off as usize) }))
        };
        let expected: Vec<(&str, ObjectId)> = vec![
            ("A", self.static_object("P")?),
            ("Name", self.static_object("S")?),
            ("Numbers", self.static_object("Arr")?),
        ];
        for (field, object) in &expected {
            self.emit(format!(
                "N.{field} holds the expected object: {}",
                field_value(field) == Some(*object)
            ));
        }
        let next = field_value("Next").unwrap_or_default();
        let refs = info.object_references(n)?;
        let mut described: Vec<String> = refs
            .iter()
            .map(|r| {
                let field = by_offset
                    .get(&(r.offset as u32))
                    .cloned()
                    .unwrap_or_else(|| format!("?{}", r.offset));
                let target = expected
                    .iter()
                    .find(|(_, o)| *o == r.target)
                    .map(|(f, _)| match *f {
                        "A" => "P",
                        "Name" => "S",
                        _ => "Arr",
                    })
                    .or((r.target == next).then_some("N2"))
                    .unwrap_or("?");
                format!("{field}->{target}")
            })
            .collect();
        let offsets_ascending = refs.windows(2).all(|w| w[0].offset < w[1].offset);
        described.sort();
        self.emit(format!(
            "N references: {} (ascending offsets: {offsets_ascending})",
            described.join(" ")
        ));
        let mut first_only = 0;
        info.enumerate_object_references(n, |_| {
            first_only += 1;
            false
        })?;
        self.emit(format!(
            "N references when the callback stops at once: {first_only}"
        ));
        self.emit(format!(
            "N2 references: {} (has reference fields: {})",
            info.object_references(next)?.len(),
            info.enumerate_object_references(next, |_| true)?
        ));
        Ok(())
    }

    fn inspect_boxed(&self) -> Result<()> {
        let info = self.info();
        let boxed = self.static_object("Boxed")?;
        let class = info.get_class_from_object(boxed)?;
        let pair = self.class("Pair");
        let offset = info.get_box_class_layout(class)?;
        let (line, by_offset) = self.layout_line("Pair")?;
        self.emit(format!(
            "Boxed: class is Pair={} box offset={offset}",
            Some(class) == pair
        ));
        self.emit(line);
        let values: Vec<String> = by_offset
            .iter()
            .map(|(off, name)| {
                // SAFETY: an `int` field of the boxed value at `offset` inside the live box.
                let v = unsafe { read::<i32>(boxed.0 + offset as usize + *off as usize) };
                format!("{name}={v}")
            })
            .collect();
        self.emit(format!("Boxed values: {}", values.join(" ")));
        Ok(())
    }
}

impl Profiler for IlHeapProbe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        let Some(scenario) = Scenario::from_env() else {
            return Err(Error::Failed {
                method: "probe-il-heap: PROBE_SCENARIO",
                hr: HResult(clrprof_sdk::sys::E_INVALIDARG),
            });
        };
        if let Some(path) = std::env::var_os("PROBE_OUTPUT")
            && let Ok(file) = File::create(path)
        {
            *lock(&self.out) = Some(Output {
                seen: HashSet::new(),
                file,
            });
        }
        let _ = self.scenario.set(scenario);
        info.set_event_mask(scenario.event_mask())?;
        self.emit(format!(
            "initialized: {scenario:?}, ICorProfilerInfo{}",
            info.version()
        ));
        let _ = self.info.set(info);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        // Let the worker finish what it was asked (bounded: never hang the process).
        if let Some(worker) = lock(&self.worker).take() {
            drop(worker.jobs);
            let deadline = Instant::now() + Duration::from_secs(10);
            while !worker.thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if let Some(c) = lock(&self.state).work_counters {
            let hits: Vec<String> = c
                .iter()
                .map(|h| h.load(Ordering::Relaxed).to_string())
                .collect();
            self.emit(format!("Work block hits: {}", hits.join(" ")));
        }
        self.emit("shutdown");
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        let Some(&scenario) = self.scenario.get() else {
            return Ok(());
        };
        if !status.is_ok() {
            return Ok(());
        }
        let info = self.info();
        let name = info.get_module_info(module)?.name;
        let file = name.rsplit(['/', '\\']).next().unwrap_or(&name);
        if file != scenario.module_file() {
            return Ok(());
        }
        lock(&self.state).module = Some(module);
        let Some(md) = info.get_module_metadata(module, false)? else {
            self.emit("error metadata: none");
            return Ok(());
        };
        let r = match scenario {
            Scenario::IlRewrite => self.rewrite_module(module, &md),
            Scenario::Rejit => self.learn_metadata(
                &md,
                &[(
                    "ReJit",
                    &["Value", "Inlinee", "Caller", "AskRejit", "AskRevert"],
                )],
            ),
            Scenario::RejitCoverage => self
                .learn_metadata(
                    &md,
                    &[(
                        "ReJitCoverage",
                        &["Work", "Instrumented", "AskInstrument", "AskRevert"],
                    )],
                )
                .and_then(|()| self.add_bool_local(module)),
            Scenario::Heap => self.learn_metadata(
                &md,
                &[
                    (
                        "Heap",
                        &["Phase", "Count", "Tls", "K", "P", "Arr", "S", "N", "Boxed"],
                    ),
                    ("Point3", &["X", "Y", "Z"]),
                    ("Node", &["A", "Name", "Numbers", "Next"]),
                    ("Pair", &["A", "B"]),
                ],
            ),
        };
        if let Err(e) = &r {
            self.emit(format!("error module {file}: {}", describe(e)));
        } else {
            self.emit(format!("module loaded: {file}"));
        }
        Ok(())
    }

    fn class_load_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        if self.scenario.get() == Some(&Scenario::Heap) && status.is_ok() {
            self.heap_class_loaded(class)?;
        }
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, _safe: bool) -> Result<()> {
        match self.scenario.get() {
            Some(Scenario::IlRewrite) => self.rewrite_jit_started(function),
            Some(Scenario::Rejit) => self.rejit_jit_started(function),
            Some(Scenario::RejitCoverage) => self.rejit_coverage_jit_started(function),
            _ => Ok(()),
        }
    }

    fn get_rejit_parameters(
        &self,
        module: ModuleId,
        method: Token,
        control: &FunctionControl,
    ) -> Result<()> {
        if Some(module) != lock(&self.state).module {
            self.emit(format!("get_rejit_parameters: another module, {method}"));
            return Ok(());
        }
        let body = if self.scenario.get() == Some(&Scenario::RejitCoverage) {
            match self.counted_body(module, method) {
                Ok(body) => body,
                Err(e) => {
                    self.emit(format!("error rejit body {method}: {}", describe(&e)));
                    return Ok(());
                }
            }
        } else {
            self.new_body(method)
        };
        let Some((name, body)) = body else {
            self.emit(format!("get_rejit_parameters: unknown method {method}"));
            return Ok(());
        };
        if body.code.is_empty() {
            // An inliner re-JIT'd by the runtime: keep its IL.
            self.emit(format!("get_rejit_parameters {name}: original IL"));
            return Ok(());
        }
        self.emit(format!(
            "get_rejit_parameters {name}: set_il_body {}",
            status(&control.set_il_body(&body))
        ));
        Ok(())
    }

    fn rejit_compilation_finished(
        &self,
        function: FunctionId,
        rejit: ReJitId,
        status: HResult,
        _safe: bool,
    ) -> Result<()> {
        let f = self.info().get_function_info(function)?;
        let name = self.name_of(f.token).unwrap_or_else(|| f.token.to_string());
        self.emit(format!(
            "rejit compiled {name}: {status}, rejit id non-zero: {}",
            !rejit.is_null()
        ));
        Ok(())
    }

    fn rejit_error(
        &self,
        _module: ModuleId,
        method: Token,
        _function: FunctionId,
        status: HResult,
    ) -> Result<()> {
        let name = self.name_of(method).unwrap_or_else(|| method.to_string());
        self.emit(format!("rejit error {name}: {status}"));
        Ok(())
    }

    fn object_allocated(&self, object: ObjectId, class: ClassId) -> Result<()> {
        if self.scenario.get() == Some(&Scenario::Heap) {
            self.heap_object_allocated(object, class)?;
        }
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        if self.scenario.get() == Some(&Scenario::Heap) {
            self.heap_gc_finished()?;
        }
        Ok(())
    }
}
