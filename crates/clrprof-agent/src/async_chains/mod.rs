//! Async call chains in sample mode: which async methods awaited the continuation a sample
//! was taken in.
//!
//! After an `await`, the rest of an async method runs from the thread pool
//! (`ThreadPoolWorkQueue.Dispatch → … → AsyncStateMachineBox.MoveNext → <Method>d__N.MoveNext`):
//! its physical stack no longer holds the methods that called and await it. The agent keeps
//! that chain itself, from probes in the program's state machines:
//!
//! - **A field.** At `ModuleLoadFinished` of a module of the program (the modules count mode
//!   would count: every assembly outside the framework), before any of its types is loaded,
//!   every type that implements `IAsyncStateMachine` (what the C# and F# compilers generate
//!   for an async method) gets an `int32` field, `<clrprof>async_chain`. The module's
//!   precompiled (ReadyToRun) code, which knows the types' old layout, is refused, so all of
//!   it is JIT-compiled.
//! - **Probes** in each such type's `MoveNext` (see [`probes`]): at entry, a call to
//!   [`chains::async_enter`] with the field (0 on the first run) that returns the state
//!   machine's chain for the field: on its first run, a new chain below the chain of the
//!   `MoveNext` running on the thread (the async method that called it), interned in a
//!   fixed table ([`ChainTable`]); later, the same chain, and the thread's *resumed*
//!   chain becomes it. Before each `ret`, [`chains::async_leave`] restores the thread's state.
//!   Two native calls per run of a `MoveNext`; nothing on the program's own objects.
//! - **Samples.** The signal handler copies the thread's resumed chain into the capture. The
//!   sampler finds the frame of that chain's `MoveNext` on the stack and writes, above it,
//!   the chain's async methods as [`clrprof_trace::FrameKind::AsyncCaller`] frames, each
//!   followed by an `[await]` marker (`FrameKind::Await`), between the thread pool's frames
//!   and the continuation: readers show the logical or the physical stack.
//!
//! Only at startup, in sample mode (count mode and coverage rewrite the same methods, and an
//! attached profiler cannot add fields to loaded types); `record --no-async` turns it off.

mod probes;

use clrprof_trace::counters::CounterName;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::il::{Method, append_local};
use clrprof_sdk::metadata::{MetaDataEmit, MetaDataImport};
use clrprof_sdk::{Error, FunctionId, ModuleId, ProfilerInfo, Result, Token};

use crate::config::{Config, Mode};
use crate::instrument::{MethodKey, Methods, ModuleFilter, install, lock};
use crate::recorder::chains::{self, ChainTable};
use crate::session::{Feature, Session};

/// The name of the field added to every state machine type.
pub const CHAIN_FIELD: &str = "<clrprof>async_chain";
/// The interface the compilers' state machines implement.
const STATE_MACHINE_INTERFACE: &str = "System.Runtime.CompilerServices.IAsyncStateMachine";
/// `fdPrivate`.
const FIELD_PRIVATE: u32 = 0x0001;
/// A field signature of type `int32`.
const CHAIN_FIELD_SIG: [u8; 2] = [0x06, 0x08];
/// How many async callers a sample gets at most (a deeper chain is cut there).
pub const MAX_CALLERS: usize = 256;

/// Async chains' state if `config` asks for them (at startup only).
pub fn start(config: &Config, attached: bool) -> Option<AsyncChains> {
    if config.mode != Mode::Sample || !config.async_chains || config.coverage || attached {
        return None;
    }
    chains::start();
    let table = chains::table()?;
    Some(AsyncChains {
        filter: ModuleFilter::new(&[], &[]),
        table,
        fields: Mutex::new(HashMap::new()),
        modules: Mutex::new(HashSet::new()),
        any_module: AtomicBool::new(false),
        monitored: Mutex::new(EventMask::empty()),
        methods: Methods::default(),
        functions: Mutex::new(Vec::new()),
        by_function: Mutex::new(HashMap::new()),
        module_tokens: Mutex::new(HashMap::new()),
        stats: AsyncStats::default(),
    })
}

/// What async chains did, for the trace's counters.
#[derive(Default)]
pub struct AsyncStats {
    /// State machine types that got the chain field.
    pub types: AtomicU64,
    /// `MoveNext` methods that got the probes.
    pub methods: AtomicU64,
    /// State machine types or methods that could not get them.
    pub failed: AtomicU64,
    /// Precompiled methods refused (in modules whose types got a field).
    pub precompiled_refused: AtomicU64,
    /// Samples whose stack got their chain's async callers.
    pub samples_spliced: AtomicU64,
    /// Samples of a thread in a resumed chain whose `MoveNext` was not on the stack.
    pub samples_unmatched: AtomicU64,
}

/// The tokens a module's probes use.
#[derive(Clone)]
struct ModuleTokens {
    emit: MetaDataEmit,
    enter_sig: Token,
    leave_sig: Token,
}

/// The async chain state of a session.
pub struct AsyncChains {
    filter: ModuleFilter,
    table: &'static ChainTable,
    /// The chain field of each state machine type, by module and TypeDef: the token the IL
    /// uses (the FieldDef, or for a generic type a MemberRef on its own instantiation).
    fields: Mutex<HashMap<(ModuleId, Token), Token>>,
    /// Modules with state machine types that got the field.
    modules: Mutex<HashSet<ModuleId>>,
    /// Whether `modules` holds any: until then the JIT callbacks return at once.
    any_module: AtomicBool,
    /// The callbacks turned on for the modules loaded so far.
    monitored: Mutex<EventMask>,
    /// `MoveNext` methods seen at JIT time, with their async method index.
    methods: Methods<u32>,
    /// The first `FunctionID` of each async method (index - 1).
    functions: Mutex<Vec<usize>>,
    /// Async method index by `FunctionID` (every compiled instantiation).
    by_function: Mutex<HashMap<usize, u32>>,
    module_tokens: Mutex<HashMap<ModuleId, ModuleTokens>>,
    /// What async chains did.
    pub stats: AsyncStats,
}

impl AsyncChains {
    /// `ModuleLoadFinished`: gives every state machine type of a program module the chain
    /// field.
    pub fn module_loaded(&self, session: &Session, module: ModuleId) {
        let info = &session.info;
        self.filter.module_loaded(info, module);
        if !self.filter.wants(info, module) {
            return;
        }
        if let Err(e) = self.add_fields(session, module) {
            self.stats.failed.fetch_add(1, Ordering::Relaxed);
            session.warn(format!(
                "async chains: cannot add the chain field to the state machines of module {}: {e}",
                module
            ));
        }
    }

    fn add_fields(&self, session: &Session, module: ModuleId) -> Result<()> {
        let info = &session.info;
        let Some(import) = session.defs.namer().metadata(info, module)? else {
            return Ok(());
        };
        let machines: Vec<Token> = import
            .enum_type_defs()?
            .into_iter()
            .filter(|&td| is_state_machine(&import, td))
            .collect();
        if machines.is_empty() {
            return Ok(());
        }
        // The JIT's callbacks, to add the probes to `MoveNext`; and for a precompiled module,
        // whose code knows the types' old layout, the searches for precompiled code, to refuse
        // it method by method.
        let path = info.get_module_info(module)?.name;
        let mut needed = EventMask::MONITOR_JIT_COMPILATION;
        if precompiled(std::path::Path::new(&path)) {
            needed |= EventMask::MONITOR_CACHE_SEARCHES;
        }
        let mut monitored = lock(&self.monitored);
        if !monitored.contains(needed) {
            session
                .event_mask
                .change(info, |low, high| (low | needed, high))
                .map_err(|e| invalid(&format!("the runtime's callbacks it needs: {e}")))?;
            *monitored |= needed;
        }
        drop(monitored);
        let emit = info
            .get_module_metadata_emit(module)?
            .ok_or_else(|| invalid("no metadata writer"))?;
        let tokens = ModuleTokens {
            enter_sig: emit.get_token_from_sig(&probes::ENTER_SIG)?,
            leave_sig: emit.get_token_from_sig(&probes::LEAVE_SIG)?,
            emit: emit.clone(),
        };
        lock(&self.module_tokens).insert(module, tokens);
        lock(&self.modules).insert(module);
        self.any_module.store(true, Ordering::Release);
        for td in machines {
            match field_for(&import, &emit, td) {
                Ok(field) => {
                    self.stats.types.fetch_add(1, Ordering::Relaxed);
                    lock(&self.fields).insert((module, td), field);
                }
                Err(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    session.warn(format!(
                        "async chains: cannot add the chain field to type {:#010x} of module {module}: {e}",
                        td.0
                    ));
                }
            }
        }
        Ok(())
    }

    /// `JITCachedFunctionSearchStarted`: whether `function` may use its precompiled code: not
    /// in a module whose types got the field.
    pub fn may_use_precompiled(&self, info: &ProfilerInfo, function: FunctionId) -> bool {
        if !self.any_module.load(Ordering::Acquire) {
            return true;
        }
        let Ok(fi) = info.get_function_info(function) else {
            return true;
        };
        let ours = lock(&self.modules).contains(&fi.module);
        if ours {
            self.stats
                .precompiled_refused
                .fetch_add(1, Ordering::Relaxed);
        }
        !ours
    }

    /// `JITCompilationStarted`: adds the probes to a state machine's `MoveNext` (once per
    /// method: its instantiations share the body), and notes which async method `function`
    /// is.
    pub fn compilation_started(&self, session: &Session, function: FunctionId) {
        if !self.any_module.load(Ordering::Acquire) {
            return;
        }
        let info = &session.info;
        let Ok(fi) = info.get_function_info(function) else {
            return;
        };
        if !lock(&self.modules).contains(&fi.module) {
            return;
        }
        let key = (fi.module, fi.token);
        if !self.methods.reserve(key) {
            if let Some(Some(index)) = self.methods.lock().get(&key).copied() {
                lock(&self.by_function).insert(function.0, index);
            }
            return;
        }
        match self.instrument(session, function, key) {
            Ok(Some(index)) => {
                self.stats.methods.fetch_add(1, Ordering::Relaxed);
                lock(&self.by_function).insert(function.0, index);
                self.methods.set(key, index);
            }
            Ok(None) => {}
            Err(e) => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                session.warn(format!(
                    "async chains: cannot add the probes to method {:#010x} of module {}: {e}",
                    key.1.0, key.0
                ));
            }
        }
    }

    /// Adds the probes to `function` if it is a state machine's `MoveNext`; its async method
    /// index.
    fn instrument(
        &self,
        session: &Session,
        function: FunctionId,
        (module, token): MethodKey,
    ) -> Result<Option<u32>> {
        let info = &session.info;
        let Some(import) = session.defs.namer().metadata(info, module)? else {
            return Ok(None);
        };
        let props = import.get_method_props(token)?;
        if props.name != "MoveNext" {
            return Ok(None);
        }
        let Some(field) = lock(&self.fields).get(&(module, props.class)).copied() else {
            return Ok(None);
        };
        let tokens = lock(&self.module_tokens)
            .get(&module)
            .cloned()
            .ok_or_else(|| invalid("no metadata writer"))?;
        let body = info.get_il_function_body(module, token)?;
        let mut method = Method::parse(&body)?;
        let locals = if method.local_var_sig.is_nil() {
            Vec::new()
        } else {
            import.get_sig_from_token(method.local_var_sig)?
        };
        let (locals, saved) = append_local(&locals, &probes::SAVED_LOCAL)?;
        method.local_var_sig = tokens.emit.get_token_from_sig(&locals)?;
        let index = {
            let mut functions = lock(&self.functions);
            functions.push(function.0);
            functions.len() as u32
        };
        let probe = probes::Probe {
            field,
            method: index,
            saved,
            enter_sig: tokens.enter_sig,
            leave_sig: tokens.leave_sig,
            enter: chains::async_enter as *const () as usize,
            leave: chains::async_leave as *const () as usize,
        };
        probes::add_probes(&mut method, &probe);
        if let Some(e) = install(info, function, module, token, &mut method)? {
            session.warn(format!(
                "async chains: the runtime refused the IL offset map of method {:#010x}: {e}",
                token.0
            ));
        }
        Ok(Some(index))
    }

    /// The async method a compiled `MoveNext` is (its index), if it has the probes.
    pub fn method_of(&self, function: usize) -> Option<u32> {
        lock(&self.by_function).get(&function).copied()
    }

    /// The async method of `chain` (its index), and into `callers` the `FunctionID`s of the
    /// `MoveNext`s of the async methods that await it, the nearest first (at most
    /// [`MAX_CALLERS`]).
    pub fn chain(&self, chain: u32, callers: &mut Vec<usize>) -> Option<u32> {
        callers.clear();
        let (mut parent, method) = self.table.node(chain)?;
        let functions = lock(&self.functions);
        while callers.len() < MAX_CALLERS {
            let Some((up, m)) = self.table.node(parent) else {
                break;
            };
            if let Some(&f) = functions.get(m as usize - 1) {
                callers.push(f);
            }
            parent = up;
        }
        Some(method)
    }
}

/// Whether the assembly file at `path` holds precompiled (ReadyToRun) code: its CLI header
/// names a managed native header. A file that cannot be read is taken to.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn precompiled(path: &std::path::Path) -> bool {
    use object::LittleEndian as LE;
    use object::pe::{IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR, ImageCor20Header};
    use object::read::pe::{ImageNtHeaders, PeFile};

    fn native_header<H: ImageNtHeaders>(bytes: &[u8]) -> Option<bool> {
        let file = PeFile::<H>::parse(bytes).ok()?;
        let dir = file.data_directory(IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR)?;
        let data = dir.data(bytes, &file.section_table()).ok()?;
        let (header, _) = object::pod::from_bytes::<ImageCor20Header>(data).ok()?;
        Some(header.managed_native_header.virtual_address.get(LE) != 0)
    }
    let Ok(bytes) = std::fs::read(path) else {
        return true;
    };
    native_header::<object::pe::ImageNtHeaders32>(&bytes)
        .or_else(|| native_header::<object::pe::ImageNtHeaders64>(&bytes))
        .unwrap_or(true)
}

/// Elsewhere (no sampling, so no async chains in practice): taken to.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn precompiled(_path: &std::path::Path) -> bool {
    true
}

/// Whether the TypeDef `td` implements `IAsyncStateMachine`.
fn is_state_machine(import: &MetaDataImport, td: Token) -> bool {
    let Ok(impls) = import.enum_interface_impls(td) else {
        return false;
    };
    impls.into_iter().any(|ii| {
        let Ok((_, iface)) = import.get_interface_impl_props(ii) else {
            return false;
        };
        type_name(import, iface).is_some_and(|n| n == STATE_MACHINE_INTERFACE)
    })
}

/// The namespace-qualified name of a TypeRef or TypeDef.
fn type_name(import: &MetaDataImport, t: Token) -> Option<String> {
    match t.0 >> 24 {
        0x01 => import.get_type_ref_props(t).ok().map(|p| p.name),
        0x02 => import.get_type_def_props(t).ok().map(|p| p.name),
        _ => None,
    }
}

/// Adds the chain field to `td`, unless its metadata has it already (a module whose metadata
/// the runtime shares with an earlier load of the same file would); the token its own
/// methods' IL names it by.
fn field_for(import: &MetaDataImport, emit: &MetaDataEmit, td: Token) -> Result<Token> {
    let existing = import.enum_fields(td)?.into_iter().find(|&f| {
        import
            .get_field_props(f)
            .is_ok_and(|p| p.name == CHAIN_FIELD)
    });
    let field = match existing {
        Some(f) => f,
        None => emit.define_field(td, CHAIN_FIELD, FIELD_PRIVATE, &CHAIN_FIELD_SIG)?,
    };
    let generic = import.enum_generic_params(td)?.len();
    if generic == 0 {
        return Ok(field);
    }
    // Within a generic type, its fields are named through the type's instantiation over its
    // own parameters: `<T>d__1<!0, !1>::<clrprof>async_chain`.
    let value_type = import
        .get_type_def_props(td)
        .ok()
        .and_then(|p| type_name(import, p.extends))
        .is_some_and(|n| n == "System.ValueType");
    let spec = generic_self_instance(td, generic, value_type)?;
    let spec = emit.get_token_from_type_spec(&spec)?;
    emit.define_member_ref(spec, CHAIN_FIELD, &CHAIN_FIELD_SIG)
}

/// The TypeSpec signature `GENERICINST (VALUETYPE|CLASS) td n VAR 0 … VAR n-1`.
fn generic_self_instance(td: Token, n: usize, value_type: bool) -> Result<Vec<u8>> {
    let coded = (td.0 & 0x00FF_FFFF) << 2; // TypeDefOrRef: TypeDef is tag 0
    let n = u8::try_from(n)
        .ok()
        .filter(|&n| n < 0x80)
        .ok_or_else(|| invalid("too many generic parameters"))?;
    let mut sig = vec![0x15, if value_type { 0x11 } else { 0x12 }];
    compress(coded, &mut sig)?;
    sig.push(n);
    for i in 0..n {
        sig.extend_from_slice(&[0x13, i]);
    }
    Ok(sig)
}

/// ECMA-335 II.23.2 compressed unsigned integer.
fn compress(v: u32, out: &mut Vec<u8>) -> Result<()> {
    match v {
        0..=0x7F => out.push(v as u8),
        0x80..=0x3FFF => out.extend_from_slice(&((v as u16) | 0x8000).to_be_bytes()),
        0x4000..=0x1FFF_FFFF => out.extend_from_slice(&(v | 0xC000_0000).to_be_bytes()),
        _ => return Err(invalid("token out of range")),
    }
    Ok(())
}

fn invalid(reason: &str) -> Error {
    Error::InvalidData {
        context: "async chains",
        reason: reason.into(),
    }
}

impl Feature for AsyncChains {
    /// The callbacks async chains need from the start: module loads. The JIT's callbacks
    /// (every compilation and inlining decision) and the searches for precompiled code (one
    /// per precompiled method the program calls, the framework's included), which cost
    /// startup time even when the agent answers them at once, are turned on only when a
    /// module that needs them loads ([`AsyncChains::module_loaded`]).
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        (EventMask::MONITOR_MODULE_LOADS, HighEventMask::empty())
    }

    fn counters(&self, _s: &Session) -> Vec<(CounterName, u64)> {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = &self.stats;
        vec![
            (CounterName::AsyncTypes, load(&s.types)),
            (CounterName::AsyncMethods, load(&s.methods)),
            (CounterName::AsyncFailed, load(&s.failed)),
            (
                CounterName::AsyncPrecompiledRefused,
                load(&s.precompiled_refused),
            ),
            (CounterName::AsyncChainsDropped, load(&self.table.dropped)),
            (CounterName::AsyncSamplesSpliced, load(&s.samples_spliced)),
            (
                CounterName::AsyncSamplesUnmatched,
                load(&s.samples_unmatched),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generic_state_machine_names_its_own_instantiation() {
        // TypeDef 0x02000005 with two parameters, a struct.
        assert_eq!(
            generic_self_instance(Token(0x0200_0005), 2, true).unwrap(),
            vec![0x15, 0x11, 0x14, 2, 0x13, 0, 0x13, 1]
        );
        // A class whose TypeDef row needs two bytes.
        assert_eq!(
            generic_self_instance(Token(0x0200_0100), 1, false).unwrap(),
            vec![0x15, 0x12, 0x84, 0x00, 1, 0x13, 0]
        );
    }
}
