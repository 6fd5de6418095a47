//! Count mode: exact calls per function and per call site, from counters the agent adds to
//! the IL of the methods the JIT compiles, beside sample mode's samples.
//!
//! - **What is counted**: the methods of the modules `instrument::ModuleFilter` picks
//!   (`count_include`, `count_exclude`: by default every assembly outside the framework). At
//!   `JITCompilationStarted` of such a method, its IL gets a counter at entry and one before
//!   each `call`, `callvirt` and `newobj` (the SDK's `il::calls`), and the new body is
//!   installed with `SetILFunctionBody`. Every later compilation of the method reads that
//!   body: tier-up, on-stack replacement, every instantiation of a generic method (which
//!   share one body and so one set of counters).
//! - **Inlining stays on**, and is refused only when it would lose counts: the JIT inlines a
//!   callee from the IL it reads while it compiles the caller, so `JITInlining` lets a
//!   counted method be inlined only if its instrumented body was installed before the
//!   caller's compilation started (the sequence number of the install against the one the
//!   compiling thread noted at `JITCompilationStarted`). A callee the JIT meets before its
//!   own first compilation is called instead, compiled, instrumented, and inlined by the
//!   callers compiled after that (with tiered compilation, the optimized versions).
//! - **Precompiled code**: a counted module's ReadyToRun code is refused method by method
//!   (`JITCachedFunctionSearchStarted`), so the method is JIT-compiled and counted; with an
//!   include list, precompiled code is turned off altogether (as coverage does), because the
//!   framework's precompiled code may have inlined the methods asked for.
//! - **Threads**: each thread counts in its own block of counters (`recorder::counters`),
//!   found at method entry from a stack address through a page table: exact, whatever the
//!   threads do, and no cache line is written by two threads. A thread's counts are written
//!   when it ends (its block is then reused) and at shutdown. Threads the agent was not told
//!   about share the default block (written with thread id 0).
//!
//! The counts are written as `CountedMethod` (once per method, with its call sites, before
//! its first counts) and `CallCounts` records (per thread and method), see
//! docs/trace-format.md.

use clrprof_trace::counters::CounterName;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::il::calls::{self, ThreadCounters};
use clrprof_sdk::il::{Method, OpCode, append_local};
use clrprof_sdk::metadata::MetaDataEmit;
use clrprof_sdk::sys::ELEMENT_TYPE_I;
use clrprof_sdk::{Error, FunctionId, ModuleId, ProfilerInfo, Result, Token};
use clrprof_trace::{CallCounts, CallKind, CallSite, CountedMethod, MAX_CALL_SITES, Record};

use crate::config::{Config, CountLayout, Mode};
use crate::instrument::{MethodKey, Methods, ModuleFilter, install, lock};
use crate::recorder::counters::{BLOCK_COUNTERS, Block, CounterMemory};
use crate::recorder::sys;
use crate::session::{Feature, Session};

/// Why count mode is unavailable.
#[derive(Debug, thiserror::Error)]
#[error(
    "count mode is unavailable: the system refused the address space for the counters \
     (a virtual memory limit?); sampling without counts"
)]
pub struct NoCounterMemory;

/// Count mode's state if `config` asks for it (at initialization, on the program's main
/// thread, which is registered here). `Err` says why count mode is unavailable.
pub fn start(config: &Config) -> std::result::Result<Option<Counting>, NoCounterMemory> {
    if config.mode != Mode::Count || config.coverage {
        return Ok(None);
    }
    let memory = CounterMemory::reserve().ok_or(NoCounterMemory)?;
    let c = Counting {
        filter: ModuleFilter::new(&config.count_include, &config.count_exclude),
        layout: config.count_layout,
        memory,
        methods: Methods::default(),
        counted: Mutex::new(Vec::new()),
        next_slot: AtomicUsize::new(0),
        installed: AtomicU64::new(0),
        threads: Mutex::new(HashMap::new()),
        emits: Mutex::new(HashMap::new()),
        stats: CountStats::default(),
    };
    c.thread_started(0);
    Ok(Some(c))
}

/// What count mode did, for the trace's counters.
#[derive(Default)]
pub struct CountStats {
    /// Methods whose IL got counters.
    pub methods: AtomicU64,
    /// Methods of counted modules that could not get them (no IL, refused by the runtime,
    /// no room left for their counters).
    pub methods_failed: AtomicU64,
    /// Inlines refused because the callee's counted body was not what the JIT read.
    pub inlines_refused: AtomicU64,
    /// Precompiled methods refused so that they are JIT-compiled with counters.
    pub precompiled_refused: AtomicU64,
    /// Threads that count in the default block (their stack could not be mapped).
    pub threads_unmapped: AtomicU64,
}

/// A call site as found in the IL.
struct Site {
    il_offset: u32,
    kind: CallKind,
    token: Token,
}

/// A method with counters.
struct Counted {
    /// Its first counter (the entry; its sites follow): also its id in the trace.
    slot: usize,
    module: ModuleId,
    token: Token,
    sites: Vec<Site>,
    /// The value of [`Counting::installed`] once its body was installed.
    installed_at: AtomicU64,
    /// The bodies the runtime compiled or inlined from its IL.
    functions: Mutex<Vec<FunctionId>>,
    /// Whether its `CountedMethod` record was written.
    defined: AtomicBool,
}

impl Counted {
    fn saw(&self, f: FunctionId) {
        let mut functions = lock(&self.functions);
        if functions.len() < 2 && !functions.contains(&f) {
            functions.push(f);
        }
    }
}

/// What instrumenting a method gave.
enum State {
    Counted(Arc<Counted>),
    /// No counters (no IL, or they could not be added): nothing to lose by inlining it.
    NotCounted,
}

/// A registered thread.
struct ThreadBlock {
    managed_id: usize,
    stack: (usize, usize),
    block: Block,
}

/// The count mode state of a session.
pub struct Counting {
    filter: ModuleFilter,
    layout: CountLayout,
    memory: CounterMemory,
    methods: Methods<State>,
    /// Every method with counters, in the order they got them.
    counted: Mutex<Vec<Arc<Counted>>>,
    /// The next free counter.
    next_slot: AtomicUsize,
    /// How many bodies were installed so far.
    installed: AtomicU64,
    /// Registered threads by OS thread id.
    threads: Mutex<HashMap<u32, ThreadBlock>>,
    /// Each module's metadata writer (for the locals the probes need).
    emits: Mutex<HashMap<ModuleId, MetaDataEmit>>,
    /// What count mode did.
    pub stats: CountStats,
}

thread_local! {
    /// The method this thread is compiling and how many bodies were installed when its
    /// compilation started.
    static COMPILING: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

fn call_kind(op: OpCode) -> CallKind {
    match op {
        OpCode::CALLVIRT => CallKind::CallVirt,
        OpCode::NEWOBJ => CallKind::NewObj,
        _ => CallKind::Call,
    }
}

impl Counting {
    /// `ModuleLoadFinished`.
    pub fn module_loaded(&self, info: &ProfilerInfo, module: ModuleId) {
        self.filter.module_loaded(info, module);
    }

    /// `JITCompilationStarted`, first: notes what the calling thread compiles and how many
    /// bodies were installed then, for [`Counting::may_inline`].
    pub fn compilation_started(&self, function: FunctionId) {
        let installed = self.installed.load(Ordering::SeqCst);
        COMPILING.with(|c| c.set((function.0, installed)));
    }

    /// `JITCompilationStarted`, second: reserves the method `key` (of `function`) if its
    /// module is counted and it has no counters yet. The caller then reads the body and calls
    /// [`Counting::instrument`].
    pub fn reserve(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
        key: MethodKey,
    ) -> Option<MethodKey> {
        if !self.filter.wants(info, key.0) {
            return None;
        }
        if self.methods.reserve(key) {
            return Some(key);
        }
        if let Some(Some(State::Counted(c))) = self.methods.lock().get(&key) {
            c.saw(function);
        }
        None
    }

    /// `JITCompilationStarted`, third: adds counters to the method reserved as `key`, whose
    /// original IL body is `body` (`None` if it has none), and installs it.
    pub fn instrument(
        &self,
        session: &Session,
        function: FunctionId,
        key: MethodKey,
        body: Option<&[u8]>,
    ) {
        let result = match body {
            Some(body) => self.add_counters(session, function, key, body),
            None => Ok(None),
        };
        match result {
            Ok(Some(c)) => {
                self.stats.methods.fetch_add(1, Ordering::Relaxed);
                lock(&self.counted).push(c.clone());
                self.methods.set(key, State::Counted(c));
            }
            Ok(None) => self.methods.set(key, State::NotCounted),
            Err(e) => {
                self.stats.methods_failed.fetch_add(1, Ordering::Relaxed);
                self.methods.set(key, State::NotCounted);
                session.warn(format!(
                    "count mode: cannot count the calls of method {:#010x} of module {}: {e}",
                    key.1.0, key.0
                ));
            }
        }
    }

    fn add_counters(
        &self,
        session: &Session,
        function: FunctionId,
        (module, token): MethodKey,
        body: &[u8],
    ) -> Result<Option<Arc<Counted>>> {
        let info = &session.info;
        let mut method = Method::parse(body)?;
        let found = calls::calls(&method);
        if found.len() >= MAX_CALL_SITES {
            return Err(invalid(format!("{} call sites", found.len())));
        }
        let n = 1 + found.len();
        let slot = self.next_slot.fetch_add(n, Ordering::Relaxed);
        if slot + n > BLOCK_COUNTERS {
            return Err(invalid(format!(
                "no room left for its counters ({BLOCK_COUNTERS} in all)"
            )));
        }
        let sites = found
            .iter()
            .map(|c| Site {
                il_offset: method.instructions[c.at].original_offset.unwrap_or(0),
                kind: call_kind(c.opcode),
                token: c.token,
            })
            .collect();
        let first = self.memory.default_block().addr() + slot * 8;
        match self.layout {
            CountLayout::Thread => {
                let (base_local, address_local) = self.add_locals(session, module, &mut method)?;
                let c = ThreadCounters {
                    table: self.memory.table(),
                    first,
                    base_local,
                    address_local,
                };
                calls::add_thread_call_counters(&mut method, &found, &c);
            }
            CountLayout::Shared => {
                let cells: Vec<usize> = (0..n).map(|i| first + i * 8).collect();
                calls::add_shared_call_counters(&mut method, &found, &cells);
            }
        }
        if let Some(e) = install(info, function, module, token, &mut method)? {
            session.warn(format!(
                "count mode: the runtime refused the IL offset map of method {:#010x}: {e}",
                token.0
            ));
        }
        let seq = self.installed.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Some(Arc::new(Counted {
            slot,
            module,
            token,
            sites,
            installed_at: AtomicU64::new(seq),
            functions: Mutex::new(vec![function]),
            defined: AtomicBool::new(false),
        })))
    }

    /// Appends the two `native int` locals of the per-thread probes to the method's local
    /// signature: (base, address-taken).
    fn add_locals(
        &self,
        session: &Session,
        module: ModuleId,
        method: &mut Method,
    ) -> Result<(u16, u16)> {
        let info = &session.info;
        let sig = if method.local_var_sig.is_nil() {
            Vec::new()
        } else {
            let import = session
                .defs
                .namer()
                .metadata(info, module)?
                .ok_or_else(|| invalid("no metadata".into()))?;
            import.get_sig_from_token(method.local_var_sig)?
        };
        let local = [ELEMENT_TYPE_I as u8];
        let (sig, base) = append_local(&sig, &local)?;
        let (sig, address) = append_local(&sig, &local)?;
        let cached = lock(&self.emits).get(&module).cloned();
        let emit = match cached {
            Some(e) => e,
            None => {
                let e = info
                    .get_module_metadata_emit(module)?
                    .ok_or_else(|| invalid("no metadata writer".into()))?;
                lock(&self.emits).insert(module, e.clone());
                e
            }
        };
        method.local_var_sig = emit.get_token_from_sig(&sig)?;
        Ok((base, address))
    }

    /// `JITInlining`: whether `callee` may be inlined into `caller`, the method the calling
    /// thread compiles. A counted callee may be only if its counted body was installed before
    /// the caller's compilation started: only then is it what the JIT read.
    pub fn may_inline(&self, info: &ProfilerInfo, caller: FunctionId, callee: FunctionId) -> bool {
        let Ok(fi) = info.get_function_info(callee) else {
            return true;
        };
        if !self.filter.wants(info, fi.module) {
            return true;
        }
        let state = match self.methods.lock().get(&(fi.module, fi.token)) {
            Some(Some(State::Counted(c))) => Some(c.clone()),
            Some(Some(State::NotCounted)) => return true,
            // Not compiled yet, or being instrumented right now.
            Some(None) | None => None,
        };
        let (compiling, installed) = COMPILING.with(Cell::get);
        let allowed = state.is_some_and(|c| {
            c.saw(callee);
            compiling == caller.0 && c.installed_at.load(Ordering::SeqCst) <= installed
        });
        if !allowed {
            self.stats.inlines_refused.fetch_add(1, Ordering::Relaxed);
        }
        allowed
    }

    /// `JITCachedFunctionSearchStarted`: whether the runtime may use the precompiled code of
    /// `function`: not for a counted method, which must be JIT-compiled to be counted.
    pub fn may_use_precompiled(&self, info: &ProfilerInfo, function: FunctionId) -> bool {
        let counted = info
            .get_function_info(function)
            .is_ok_and(|fi| self.filter.wants(info, fi.module));
        if counted {
            self.stats
                .precompiled_refused
                .fetch_add(1, Ordering::Relaxed);
        }
        !counted
    }

    /// Registers the calling thread (`ThreadCreated`, on the new thread; and the main
    /// thread at initialization): its stack's pages point at a block of its own.
    pub fn thread_started(&self, managed_id: usize) {
        if self.layout == CountLayout::Shared {
            return;
        }
        let tid = sys::gettid();
        let mut threads = lock(&self.threads);
        if let Some(t) = threads.get_mut(&tid) {
            if managed_id != 0 {
                t.managed_id = managed_id;
            }
            return;
        }
        let registered = sys::current_stack_bounds().and_then(|(lo, hi)| {
            let block = self.memory.new_block()?;
            if self.memory.map_stack(lo, hi, &block) {
                Some(ThreadBlock {
                    managed_id,
                    stack: (lo, hi),
                    block,
                })
            } else {
                self.memory.recycle(block);
                None
            }
        });
        match registered {
            Some(t) => {
                threads.insert(tid, t);
            }
            None => {
                self.stats.threads_unmapped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `ThreadDestroyed` of the managed thread `managed_id`: writes its counts and gives its
    /// block to the next thread.
    pub fn thread_ended(&self, session: &Session, managed_id: usize) {
        if managed_id == 0 {
            return;
        }
        let ended = {
            let mut threads = lock(&self.threads);
            let tid = threads
                .iter()
                .find(|(_, t)| t.managed_id == managed_id)
                .map(|(&tid, _)| tid);
            tid.and_then(|tid| threads.remove(&tid).map(|t| (tid, t)))
        };
        if let Some((tid, t)) = ended {
            self.memory.unmap_stack(t.stack.0, t.stack.1, &t.block);
            self.write_block(session, tid, &t.block);
            self.memory.recycle(t.block);
        }
    }

    /// At shutdown: writes the counts of every thread still registered and of the default
    /// block. Their blocks stay mapped (code may still run) and are not reused.
    pub fn write(&self, session: &Session) {
        let threads = std::mem::take(&mut *lock(&self.threads));
        let mut threads: Vec<(u32, ThreadBlock)> = threads.into_iter().collect();
        threads.sort_by_key(|(tid, _)| *tid);
        for (tid, t) in &threads {
            self.write_block(session, *tid, &t.block);
        }
        self.write_block(session, 0, self.memory.default_block());
        // Leaked on purpose: instrumented code may still count in them.
        std::mem::forget(threads);
    }

    /// Writes a `CallCounts` record for every method with a non-zero counter in `block`.
    fn write_block(&self, session: &Session, tid: u32, block: &Block) {
        let counted: Vec<Arc<Counted>> = lock(&self.counted).clone();
        let mut counts = Vec::new();
        for m in counted {
            block.read(m.slot, 1 + m.sites.len(), &mut counts);
            if counts.iter().all(|&c| c == 0) {
                continue;
            }
            self.define(session, &m);
            session
                .out
                .push_record_or_drain(&Record::CallCounts(CallCounts {
                    tid,
                    method: m.slot as u32,
                    calls: counts[0],
                    sites: counts[1..].to_vec(),
                }));
        }
    }

    /// Writes the `CountedMethod` record of `m`, once.
    fn define(&self, session: &Session, m: &Counted) {
        if m.defined.swap(true, Ordering::AcqRel) {
            return;
        }
        let info = &session.info;
        let namer = session.defs.namer();
        session.defs.module(info, &session.out, m.module);
        let (type_name, method_name, signature) =
            match namer.get_method_name(info, m.module, m.token) {
                Ok(n) => (n.type_name, n.method_name, n.signature),
                Err(_) => (String::new(), format!("{}", m.token), String::new()),
            };
        let functions = lock(&m.functions).clone();
        let function = match functions.as_slice() {
            [one] => session.defs.function(info, &session.out, *one),
            _ => 0,
        };
        let sites = m
            .sites
            .iter()
            .map(|s| {
                let target = namer.get_call_target(info, m.module, s.token, m.token);
                CallSite {
                    il_offset: s.il_offset,
                    kind: s.kind,
                    callee_token: target
                        .as_ref()
                        .ok()
                        .and_then(|t| t.definition)
                        .map_or(0, |t| t.0),
                    callee: target.map_or_else(|_| format!("{}", s.token), |t| t.full_name()),
                }
            })
            .collect();
        session
            .out
            .push_record_or_drain(&Record::CountedMethod(CountedMethod {
                id: m.slot as u32,
                module: m.module.as_u64(),
                token: m.token.0,
                function,
                type_name,
                method_name,
                signature,
                sites,
            }));
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidData {
        context: "count mode",
        reason,
    }
}

impl Feature for Counting {
    /// The callbacks and codegen settings count mode needs.
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        self.filter.event_mask(
            EventMask::MONITOR_JIT_COMPILATION
                | EventMask::MONITOR_MODULE_LOADS
                | EventMask::MONITOR_CACHE_SEARCHES,
        )
    }

    fn counters(&self, _s: &Session) -> Vec<(CounterName, u64)> {
        let s = &self.stats;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        vec![
            (CounterName::CountMethods, load(&s.methods)),
            (CounterName::CountMethodsFailed, load(&s.methods_failed)),
            (CounterName::CountInlinesRefused, load(&s.inlines_refused)),
            (
                CounterName::CountPrecompiledRefused,
                load(&s.precompiled_refused),
            ),
            (CounterName::CountThreadsUnmapped, load(&s.threads_unmapped)),
        ]
    }
}
