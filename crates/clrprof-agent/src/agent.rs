//! The agent's [`Profiler`]: sets the session up in `Initialize` (or `InitializeForAttach`),
//! records every callback the configuration asks for, keeps trace mode's shadow stacks right
//! through exceptions and thread ends, and flushes everything at `Shutdown` (or when the
//! runtime confirms a detach, see [`crate::detach`]).

use std::io::Write;

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::sys::GUID;
use clrprof_sdk::types::*;
use clrprof_sdk::*;
use clrprof_trace::{
    EventCategory, EventKind as K, ExceptionInfo, IlPosition, MessageLevel, Record, SessionStart,
    ThreadDef, callbacks, callbacks::CallbackArgs, protocol,
};

use crate::cli_link::FromCli;
use crate::config::{AgentConfig, AllocMode, Config, Mode};
use crate::coverage::Coverage;
use crate::exceptions;
use crate::features::{Features, Running};
use crate::recorder::published::Published;
use crate::recorder::{cct, hooks, sys, threads};
use crate::session::Session;
use crate::start_error::StartError;
use crate::transport::Transport;

/// The profiler the runtime loads. There is one per process, so its session is a static.
#[derive(Default)]
pub struct Agent;

/// The current session. An attach after a detach publishes a new one (when the runtime kept
/// the library loaded in between).
static SESSION: Published<Running> = Published::new();

/// How the agent was loaded, and so where its settings come from.
enum Origin {
    /// At the program's startup: the environment variables `clrprof record` set.
    Startup,
    /// Into a running program by `clrprof attach`: the client data of `InitializeForAttach`.
    Attach {
        /// The CLI's socket.
        session: String,
        /// The configuration string.
        config: String,
    },
    /// Into a running program by `clrprof attach --export`: export mode with these settings,
    /// until the process ends or `clrprof attach --stop` (see [`crate::export::control`]).
    AttachExport(crate::config::ExportSettings),
}

/// The version written into traces.
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");

fn hr(status: HResult) -> u64 {
    status.0 as u32 as u64
}

fn b(v: bool) -> u64 {
    v as u64
}

impl Agent {
    fn session(&self) -> Option<&'static Session> {
        self.running().map(|r| &r.session)
    }

    /// The running session with its features, until it ends.
    fn running(&self) -> Option<&'static Running> {
        SESSION.get().filter(|r| !r.session.ended())
    }

    /// Records a callback's event whose args take work to compute, computing them only if a
    /// session runs and wants it (GC callbacks summarize arrays while the runtime is
    /// suspended).
    fn callback_with<C: CallbackArgs>(&self, args: impl FnOnce() -> C) -> Result<()> {
        if let Some(s) = self.session().filter(|s| s.wants(C::KIND)) {
            s.callback(args());
        }
        Ok(())
    }

    /// Records a callback's event if a session runs and wants it.
    fn callback<C: CallbackArgs>(&self, args: C) -> Result<()> {
        if let Some(s) = self.session() {
            s.callback(args);
        }
        Ok(())
    }

    fn start(&self, info: ProfilerInfo, origin: Origin) -> Result<()> {
        let start_ns = sys::monotonic_ns();
        if self.session().is_some() {
            return Err(StartError::InitializedTwice.into());
        }
        let mut attached_export = false;
        // The reading half of a launched agent's connection to the CLI.
        let mut launched_from_cli = None;
        let (mut config, sink, from_cli) = match origin {
            Origin::Startup => match export_settings()? {
                Some(settings) => {
                    let config = Config::for_export(AgentConfig::for_export(settings));
                    match crate::export::start(&config) {
                        Some(sink) => (config, sink, None),
                        None => return Err(StartError::ExportStartedTwice.into()),
                    }
                }
                None => {
                    let mut config =
                        Config::parse(&std::env::var(protocol::ENV_CONFIG).unwrap_or_default());
                    let (sink, replies) = open_sink()?;
                    launched_from_cli = replies;
                    let sink = crate::export::beside_the_trace(&mut config, sink);
                    (config, sink, None)
                }
            },
            Origin::Attach { session, config } => {
                let (sink, from_cli) = crate::detach::connect(&session)?;
                (Config::parse(&config), sink, Some(from_cli))
            }
            Origin::AttachExport(settings) => {
                attached_export = true;
                let config = Config::for_export(AgentConfig::for_export(settings));
                match crate::export::start(&config) {
                    Some(sink) => (config, sink, None),
                    None => return Err(StartError::ExportStartedTwice.into()),
                }
            }
        };
        let attached = from_cli.is_some() || attached_export;
        if from_cli.is_some() && config.mode == Mode::Trace {
            config.mode = Mode::None;
            config.warnings.push(
                "trace mode needs enter/leave hooks, which the runtime refuses to a profiler that \
                 attached to a running process; recording without CPU profiling"
                    .into(),
            );
        }
        if from_cli.is_some() && config.mode == Mode::Count {
            config.mode = Mode::Sample;
            config.warnings.push(
                "count mode adds counters to methods as they are compiled, which an attached \
                 profiler cannot do for the methods compiled before it came; sampling without \
                 counts"
                    .into(),
            );
        }
        let coverage = Coverage::new(&config);
        let chains = crate::async_chains::start(&config, attached);
        let count = crate::count::start(&config).unwrap_or_else(|e| {
            config.mode = Mode::Sample;
            config.warnings.push(e.to_string());
            None
        });
        let features = Features::new(count, coverage, chains, launched_from_cli);
        let out = Transport::start(sink, config.buffer_bytes);
        crate::recorder::termination::install();
        let running = SESSION.publish(Running {
            session: Session::new(info, config, out, start_ns, attached),
            features,
        });
        running.configure();
        let session = &running.session;
        if session.config.export.is_some() {
            crate::export::say_what_the_runtime_lacks(
                &session.config,
                running.features.alloc_ticks.reads_ticks(),
                running.features.contention.reads_events(),
            );
        }
        if from_cli.is_none() {
            crate::recorder::exit::on_exit(write_exit_status);
        }
        if let Some(from_cli) = from_cli {
            crate::detach::watch(running, from_cli);
        }
        if attached_export {
            crate::export::control::listen(running);
        }
        Ok(())
    }
}

/// Export mode's settings, when no CLI waits for the agent (`CLRPROF_SESSION`) and no trace
/// file is asked for (`CLRPROF_OUTPUT`): a wrong variable is said once on standard error and
/// the program runs without the profiler.
fn export_settings() -> Result<Option<crate::config::ExportSettings>> {
    if std::env::var_os(protocol::ENV_SESSION).is_some()
        || std::env::var_os(protocol::ENV_OUTPUT).is_some()
    {
        return Ok(None);
    }
    crate::export::settings_from_env().map_err(|reason| {
        crate::export::tell(&format!("{reason}; the program runs without profiling"));
        StartError::ExportSettings(reason).into()
    })
}

/// Opens where the trace goes: the CLI's socket (with the connection's reading half), or a
/// file. The file header goes first.
fn open_sink() -> std::result::Result<(Box<dyn Write + Send>, Option<FromCli>), StartError> {
    let (mut sink, from_cli): (Box<dyn Write + Send>, _) =
        if let Ok(path) = std::env::var(protocol::ENV_SESSION) {
            #[cfg(unix)]
            {
                let s = std::os::unix::net::UnixStream::connect(&path)
                    .map_err(|source| StartError::Connect { path, source })?;
                introduce(&s)?;
                // Without it the program's start is not held for the CLI's event sessions.
                let from_cli = s.try_clone().ok();
                (Box::new(s), from_cli)
            }
            #[cfg(not(unix))]
            {
                return Err(StartError::NoUnixSockets { path });
            }
        } else if let Ok(path) = std::env::var(protocol::ENV_OUTPUT) {
            let f = std::fs::File::create(&path)
                .map_err(|source| StartError::CreateOutput { path, source })?;
            (Box::new(std::io::BufWriter::new(f)), None)
        } else {
            return Err(StartError::NoDestination);
        };
    clrprof_trace::write_header(&mut sink).map_err(StartError::WriteHeader)?;
    Ok((sink, from_cli))
}

/// How long the agent waits for the CLI's verdict on its process.
#[cfg(unix)]
const VERDICT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Says which process this is ([`protocol::Hello`]) and waits for the CLI's verdict: an
/// error if the CLI leaves the process out (its process filter), so that the runtime goes on
/// without the profiler.
#[cfg(unix)]
fn introduce(s: &std::os::unix::net::UnixStream) -> std::result::Result<(), StartError> {
    use std::io::Read;
    let hello = protocol::Hello {
        pid: std::process::id(),
        parent_pid: parent_pid(),
        command_line: command_line(),
    };
    let mut w = s;
    w.write_all(&hello.encode())
        .map_err(StartError::Introduce)?;
    let _ = s.set_read_timeout(Some(VERDICT_TIMEOUT));
    let mut answer = [0u8; 1];
    let mut r = s;
    r.read_exact(&mut answer).map_err(StartError::NoVerdict)?;
    let _ = s.set_read_timeout(None);
    match protocol::Verdict::from_byte(answer[0]) {
        Some(protocol::Verdict::Record) => Ok(()),
        Some(protocol::Verdict::LeaveOut) => Err(StartError::LeftOut),
        None => Err(StartError::UnknownVerdict(answer[0])),
    }
}

/// The parent process's id, from `/proc/self/stat` (0 if unknown).
#[cfg(unix)]
fn parent_pid() -> u32 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let rest = &stat[stat.rfind(')')? + 1..];
            rest.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// The process's command line, arguments separated by spaces.
pub(crate) fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// At `exit`, the status the process passed, as the stream's last record.
fn write_exit_status(status: i32) {
    if let Some(s) = SESSION.get().map(|r| &r.session) {
        s.out
            .push_record(&Record::ProcessExit(clrprof_trace::ProcessExit {
                ts: s.now(),
                exit_code: status,
            }));
        s.out.drain();
    }
    crate::export::finish();
}

impl Running {
    /// Chooses the runtime callbacks, installs hooks, starts sampling, announces the session.
    fn configure(&'static self) {
        let s = &self.session;
        let features = &self.features;
        // Before the event mask: reading the ticks in process needs stack snapshots.
        let tick_reader = features.alloc_ticks.start(s);
        let contention_reader = features.contention.start(s);
        // Before the event mask: holding the program's start needs its module loads.
        let left_to_cli = u32::from(tick_reader == Some(protocol::TickReader::Cli))
            + u32::from(contention_reader == Some(0));
        features.cli_sessions.arm(left_to_cli);
        let (low, high) = self.event_masks();
        let mut mask_ok = if s.info.version() >= 5 {
            s.info.set_event_mask2(low, high)
        } else {
            s.info.set_event_mask(
                low | if high.is_empty() {
                    EventMask::empty()
                } else {
                    EventMask::MONITOR_GC
                },
            )
        };
        if let Err(e) = &mask_ok {
            s.warn(format!(
                "the runtime refused the event mask ({e}); retrying without optional events"
            ));
            mask_ok = s.info.set_event_mask(low);
        }
        let toggles = matches!(mask_ok, Ok(())) && s.info.version() >= 5;
        if let Err(e) = mask_ok {
            s.message(
                MessageLevel::Error,
                format!("the runtime refused the event mask: {e}"),
            );
        }
        s.event_mask.configured(low, high, toggles);
        features.heap.configured(s, low, high, toggles);

        if s.config.mode == Mode::Trace {
            cct::set_node_budget(s.config.max_nodes);
            if let Err(e) = hooks::install(&s.info) {
                s.message(
                    MessageLevel::Error,
                    format!("trace mode is unavailable: {e}"),
                );
            }
        }

        let runtime = crate::runtime_version::describe(&s.info);
        let start_unix_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            .saturating_sub(s.now());
        s.out.push_record(&Record::SessionStart(SessionStart {
            pid: std::process::id(),
            agent_version: crate::agent::AGENT_VERSION.into(),
            runtime,
            info_version: s.info.version() as u16,
            callback_version: clrprof_sdk::callback_versions_asked()
                .last()
                .map_or(0, |&v| v as u16),
            start_unix_ns,
            event_mask: u64::from(low.bits()),
            event_mask_high: u64::from(high.bits()),
            config: s.config.raw.clone(),
            command_line: command_line(),
        }));
        if let Some(reader) = tick_reader {
            // Right after SessionStart: the CLI waits for it to know who reads the ticks.
            s.out.push_record(&Record::Counter(reader.counter(s.now())));
        }
        if let Some(value) = contention_reader {
            // Right after SessionStart: the CLI waits for it to know who reads the events.
            s.out
                .push_record(&Record::Counter(clrprof_trace::Counter::named(
                    clrprof_trace::protocol::CONTENTION_READER_COUNTER,
                    s.now(),
                    value,
                )));
        }
        // The CLI starts its own event sessions (CoreCLR 3.1) when these reach it: before the
        // program's first events, not a writer's period later.
        s.out.send_now();
        for w in &s.config.warnings {
            s.warn(w.clone());
        }
        if !s.attached {
            // An attached agent records InitializeForAttach instead.
            s.callback(callbacks::Initialize {});
        }
        features.heap.start_heap_thread(s);
        if s.config.mode != Mode::None {
            features.sampling.start(s, features.chains.as_ref());
        }
    }

    /// The callbacks to ask the runtime for.
    fn event_masks(&self) -> (EventMask, HighEventMask) {
        let s = &self.session;
        let c = &s.config;
        // Class loads always: the canonical classes the runtime loads are how the namer tells
        // which instantiation a body of shared generic code belongs to (`Two<int, __Canon>`).
        // They are recorded as events only with `--events class`.
        let mut low = EventMask::MONITOR_THREADS | EventMask::MONITOR_CLASS_LOADS;
        let mut high = HighEventMask::empty();
        let on = |cat| c.wants(cat);
        if on(EventCategory::AppDomain) {
            low |= EventMask::MONITOR_APPDOMAIN_LOADS;
        }
        if on(EventCategory::Assembly) {
            low |= EventMask::MONITOR_ASSEMBLY_LOADS;
        }
        if on(EventCategory::Module) {
            low |= EventMask::MONITOR_MODULE_LOADS;
        }
        if on(EventCategory::Jit) {
            low |= EventMask::MONITOR_JIT_COMPILATION | EventMask::MONITOR_CACHE_SEARCHES;
        }
        if on(EventCategory::Transition) {
            low |= EventMask::MONITOR_CODE_TRANSITIONS;
        }
        if on(EventCategory::Suspension) {
            low |= EventMask::MONITOR_SUSPENDS;
        }
        if on(EventCategory::Gc) {
            // Start/finish only, without the heap walks COR_PRF_MONITOR_GC triggers.
            high |= HighEventMask::BASIC_GC;
        }
        if on(EventCategory::HeapRefs) {
            low |= EventMask::MONITOR_GC;
        }
        if on(EventCategory::Exception) {
            low |= EventMask::MONITOR_EXCEPTIONS | EventMask::ENABLE_STACK_SNAPSHOT;
        }
        let (features_low, features_high) = self.features.event_mask(s);
        low |= features_low;
        high |= features_high;
        match c.alloc {
            AllocMode::Off => {}
            // No ObjectAllocated: the runtime's ticks come through the agent's EventPipe
            // session (see `AllocTicks`), or through the CLI.
            AllocMode::Ticks => {}
            AllocMode::Sampled | AllocMode::All => {
                low |= EventMask::ENABLE_OBJECT_ALLOCATED
                    | EventMask::MONITOR_OBJECT_ALLOCATED
                    | EventMask::ENABLE_STACK_SNAPSHOT;
            }
        }
        if c.mode == Mode::Trace {
            // Unwind callbacks keep the shadow stacks right; JITInlining says what was inlined.
            low |= EventMask::MONITOR_ENTERLEAVE
                | EventMask::MONITOR_EXCEPTIONS
                | EventMask::MONITOR_JIT_COMPILATION;
            if !c.inline {
                low |= EventMask::DISABLE_INLINING;
            }
        }
        if s.attached {
            // Cache searches come with `jit` but are not allowed after attach: JIT events are.
            low.remove(EventMask::MONITOR_CACHE_SEARCHES);
            let refused = low - EventMask::ALLOWABLE_AFTER_ATTACH;
            let refused_high = high - HighEventMask::ALLOWABLE_AFTER_ATTACH;
            if !refused.is_empty() || !refused_high.is_empty() {
                s.warn(format!(
                    "the runtime does not allow {refused:?} {refused_high:?} after attach; \
                     those events are not recorded"
                ));
            }
            low &= EventMask::ALLOWABLE_AFTER_ATTACH;
            high &= HighEventMask::ALLOWABLE_AFTER_ATTACH;
        }
        if c.mode != Mode::None {
            // Unloads end the lives of ids the samples and call trees name code by (see
            // `defs`): collected dynamic methods, and modules of unloaded assemblies with
            // their functions. Recorded as events only when asked for. The runtime does not
            // report dynamic-method unloads to an attached profiler.
            low |= EventMask::MONITOR_MODULE_LOADS;
            if !s.attached {
                high |= HighEventMask::MONITOR_DYNAMIC_FUNCTION_UNLOADS;
            }
        }
        (low, high)
    }
}

impl Profiler for Agent {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        self.start(info, Origin::Startup)
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(r) = self.running() {
            let s = &r.session;
            r.features.heap.snapshot_at_exit(s);
            r.features.heap.finish(s);
            s.callback(callbacks::Shutdown {});
            r.stop_features();
            if let Some(coverage) = &r.features.coverage {
                coverage.write(s);
            }
            if let Some(count) = &r.features.count {
                count.write(s);
            }
            r.end("shutdown");
            crate::export::finish();
        }
        Ok(())
    }

    fn app_domain_creation_started(&self, d: AppDomainId) -> Result<()> {
        self.callback(callbacks::AppDomainCreationStarted {
            app_domain: d.as_u64(),
        })
    }
    fn app_domain_creation_finished(&self, d: AppDomainId, status: HResult) -> Result<()> {
        if let Some(s) = self
            .session()
            .filter(|s| s.wants(K::APP_DOMAIN_CREATION_FINISHED))
        {
            s.defs.app_domain(&s.info, &s.out, d);
        }
        self.callback(callbacks::AppDomainCreationFinished {
            app_domain: d.as_u64(),
            hr_status: hr(status),
        })
    }
    fn app_domain_shutdown_started(&self, d: AppDomainId) -> Result<()> {
        self.callback(callbacks::AppDomainShutdownStarted {
            app_domain: d.as_u64(),
        })
    }
    fn app_domain_shutdown_finished(&self, d: AppDomainId, status: HResult) -> Result<()> {
        self.callback(callbacks::AppDomainShutdownFinished {
            app_domain: d.as_u64(),
            hr_status: hr(status),
        })
    }
    fn assembly_load_started(&self, a: AssemblyId) -> Result<()> {
        self.callback(callbacks::AssemblyLoadStarted {
            assembly: a.as_u64(),
        })
    }
    fn assembly_load_finished(&self, a: AssemblyId, status: HResult) -> Result<()> {
        if let Some(s) = self
            .session()
            .filter(|s| s.wants(K::ASSEMBLY_LOAD_FINISHED))
        {
            s.defs.assembly(&s.info, &s.out, a);
        }
        self.callback(callbacks::AssemblyLoadFinished {
            assembly: a.as_u64(),
            hr_status: hr(status),
        })
    }
    fn assembly_unload_started(&self, a: AssemblyId) -> Result<()> {
        self.callback(callbacks::AssemblyUnloadStarted {
            assembly: a.as_u64(),
        })
    }
    fn assembly_unload_finished(&self, a: AssemblyId, status: HResult) -> Result<()> {
        self.callback(callbacks::AssemblyUnloadFinished {
            assembly: a.as_u64(),
            hr_status: hr(status),
        })
    }
    fn module_load_started(&self, m: ModuleId) -> Result<()> {
        self.callback(callbacks::ModuleLoadStarted {
            module: self.mid(m),
        })
    }
    fn module_load_finished(&self, m: ModuleId, status: HResult) -> Result<()> {
        if let Some(r) = self.running() {
            let (s, f) = (&r.session, &r.features);
            f.cli_sessions.module_loaded(s, m);
            if let Some(coverage) = &f.coverage {
                coverage.module_loaded(&s.info, m);
            }
            if let Some(count) = &f.count {
                count.module_loaded(&s.info, m);
            }
            if let Some(chains) = &f.chains {
                chains.module_loaded(s, m);
            }
        }
        self.callback(callbacks::ModuleLoadFinished {
            module: self.mid(m),
            hr_status: hr(status),
        })
    }
    fn module_unload_started(&self, m: ModuleId) -> Result<()> {
        self.callback(callbacks::ModuleUnloadStarted {
            module: self.mid(m),
        })?;
        if let Some(s) = self.session() {
            // Its ModuleID and its functions' FunctionIDs can be reused from now on.
            let ts = sys::monotonic_ns();
            let gone = s.defs.forget_module(m, ts);
            s.gone_code.notify_at(ts, &gone);
        }
        Ok(())
    }
    fn module_unload_finished(&self, m: ModuleId, status: HResult) -> Result<()> {
        self.callback(callbacks::ModuleUnloadFinished {
            module: self.mid(m),
            hr_status: hr(status),
        })
    }
    fn module_attached_to_assembly(&self, m: ModuleId, a: AssemblyId) -> Result<()> {
        // The module's assembly is known from here on: a good moment to name it.
        if let Some(s) = self
            .session()
            .filter(|s| s.wants(K::MODULE_ATTACHED_TO_ASSEMBLY))
        {
            s.defs.module(&s.info, &s.out, m);
        }
        self.callback(callbacks::ModuleAttachedToAssembly {
            module: self.mid(m),
            assembly: a.as_u64(),
        })
    }
    fn class_load_started(&self, c: ClassId) -> Result<()> {
        self.callback(callbacks::ClassLoadStarted { class: c.as_u64() })
    }
    fn class_load_finished(&self, c: ClassId, status: HResult) -> Result<()> {
        if let Some(r) = self.running() {
            let s = &r.session;
            if status.is_ok() {
                // A class the namer cannot look at is only a class it cannot name code after.
                let _ = s.defs.namer().class_loaded(&s.info, c);
                r.features.heap.statics.class_loaded(s, c);
            }
            if s.wants(K::CLASS_LOAD_FINISHED) {
                s.defs.class(&s.info, &s.out, c);
            }
        }
        self.callback(callbacks::ClassLoadFinished {
            class: c.as_u64(),
            hr_status: hr(status),
        })
    }
    fn class_unload_started(&self, c: ClassId) -> Result<()> {
        if let Some(r) = self.running() {
            // The ClassID can be reused: drop what is kept under it.
            r.session.defs.forget_class(c);
            r.features.heap.statics.class_unloaded(c);
        }
        self.callback(callbacks::ClassUnloadStarted { class: c.as_u64() })
    }
    fn class_unload_finished(&self, c: ClassId, status: HResult) -> Result<()> {
        self.callback(callbacks::ClassUnloadFinished {
            class: c.as_u64(),
            hr_status: hr(status),
        })
    }
    fn function_unload_started(&self, f: FunctionId) -> Result<()> {
        self.callback(callbacks::FunctionUnloadStarted {
            function: self.fid(f),
        })
    }
    fn jit_compilation_started(&self, f: FunctionId, safe: bool) -> Result<()> {
        let Some(r) = self.running() else {
            return Ok(());
        };
        let s = &r.session;
        let wanted = s.wants(K::JIT_COMPILATION_STARTED);
        let coverage = r.features.coverage.as_ref();
        let count = r.features.count.as_ref();
        if let Some(count) = count {
            count.compilation_started(f);
        }
        if let Some(chains) = &r.features.chains {
            chains.compilation_started(s, f);
        }
        if !wanted && coverage.is_none() && count.is_none() {
            return Ok(());
        }
        // The method's IL body, read once (before coverage or count mode rewrites it) for
        // both its size in the event and the probes.
        let mut il_bytes = 0;
        if let Ok(fi) = s.info.get_function_info(f) {
            let covered = coverage.and_then(|c| Some((c, c.reserve(&s.info, &fi)?)));
            let counted =
                count.and_then(|c| Some((c, c.reserve(&s.info, f, (fi.module, fi.token))?)));
            let body = (wanted || covered.is_some() || counted.is_some())
                .then(|| s.info.get_il_function_body(fi.module, fi.token).ok())
                .flatten();
            il_bytes = body.as_deref().map_or(0, il_code_size_of_body);
            if let Some((coverage, key)) = covered {
                coverage.instrument(s, f, key, body.as_deref());
            }
            if let Some((count, key)) = counted {
                count.instrument(s, f, key, body.as_deref());
            }
        }
        if wanted {
            s.callback(callbacks::JITCompilationStarted {
                function: self.fid(f),
                is_safe_to_block: b(safe),
                il_bytes: u64::from(il_bytes),
            });
        }
        Ok(())
    }
    fn jit_compilation_finished(&self, f: FunctionId, status: HResult, safe: bool) -> Result<()> {
        if let Some(s) = self
            .session()
            .filter(|s| s.wants(K::JIT_COMPILATION_FINISHED))
        {
            s.defs.function(&s.info, &s.out, f);
        }
        self.callback(callbacks::JITCompilationFinished {
            function: self.fid(f),
            hr_status: hr(status),
            is_safe_to_block: b(safe),
        })
    }
    fn jit_cached_function_search_started(&self, f: FunctionId) -> Result<bool> {
        self.callback(callbacks::JITCachedFunctionSearchStarted {
            function: self.fid(f),
        })?;
        let Some(r) = self.running() else {
            return Ok(true);
        };
        let (s, features) = (&r.session, &r.features);
        let count = (features.count.as_ref()).is_none_or(|c| c.may_use_precompiled(&s.info, f));
        let chains = (features.chains.as_ref()).is_none_or(|c| c.may_use_precompiled(&s.info, f));
        Ok(count && chains)
    }
    fn jit_cached_function_search_finished(
        &self,
        f: FunctionId,
        result: JitCacheResult,
    ) -> Result<()> {
        let Some(s) = self
            .session()
            .filter(|s| s.wants(K::JIT_CACHED_FUNCTION_SEARCH_FINISHED))
        else {
            return Ok(());
        };
        let id = s.defs.function(&s.info, &s.out, f);
        s.callback(callbacks::JITCachedFunctionSearchFinished {
            function: id,
            result: u64::from(result.0),
            il_bytes: u64::from(il_code_size(&s.info, f)),
        });
        Ok(())
    }
    fn jit_function_pitched(&self, f: FunctionId) -> Result<()> {
        self.callback(callbacks::JITFunctionPitched {
            function: self.fid(f),
        })
    }
    fn jit_inlining(&self, caller: FunctionId, callee: FunctionId) -> Result<bool> {
        let Some(r) = self.running() else {
            return Ok(true);
        };
        let s = &r.session;
        let inline =
            (r.features.count.as_ref()).is_none_or(|c| c.may_inline(&s.info, caller, callee));
        if inline && s.wants(K::JIT_INLINING) {
            let caller = s.defs.function(&s.info, &s.out, caller);
            let callee = s.defs.function(&s.info, &s.out, callee);
            s.callback(callbacks::JITInlining { caller, callee });
        }
        Ok(inline)
    }
    fn thread_created(&self, t: ThreadId) -> Result<()> {
        // The runtime calls this on the new thread itself: register it for sampling, and arm
        // its CPU clock at once (sample mode) so that its first CPU is sampled too.
        if let Some(slot) = threads::register_current(t.0) {
            crate::recorder::cpu_clock::arm_slot(slot, crate::recorder::capture::SAMPLE_SIGNAL);
        }
        if let Some(r) = self.running() {
            let (s, f) = (&r.session, &r.features);
            if let Some(count) = &f.count {
                count.thread_started(t.0);
            }
            f.heap.runtime_started();
            f.heap.statics.thread_created(s, t);
            s.out.push_record(&Record::ThreadDef(ThreadDef {
                tid: sys::gettid(),
                managed_id: t.as_u64(),
                name: String::new(),
            }));
        }
        self.callback(callbacks::ThreadCreated { thread: t.as_u64() })
    }
    fn thread_destroyed(&self, t: ThreadId) -> Result<()> {
        self.callback(callbacks::ThreadDestroyed { thread: t.as_u64() })?;
        if let Some(r) = self.running() {
            r.features.heap.statics.thread_destroyed(t);
        }
        if let Some(r) = self.running()
            && let Some(count) = &r.features.count
        {
            count.thread_ended(&r.session, t.0);
        }
        if let Some(slot) = threads::find_managed(t.0) {
            if let (Some(s), Some(state)) = (self.session(), cct::state_of(slot)) {
                s.dump_call_tree(state);
            }
            slot.mark_dead();
        }
        if threads::current()
            .is_some_and(|slot| slot.managed_id.load(std::sync::atomic::Ordering::Relaxed) == t.0)
        {
            threads::unregister_current();
        }
        Ok(())
    }
    fn thread_assigned_to_os_thread(&self, t: ThreadId, os: u32) -> Result<()> {
        self.callback(callbacks::ThreadAssignedToOSThread {
            thread: t.as_u64(),
            os_thread_id: u64::from(os),
        })
    }
    fn remoting_client_invocation_started(&self) -> Result<()> {
        self.callback(callbacks::RemotingClientInvocationStarted {})
    }
    fn remoting_client_sending_message(&self, _c: &GUID, is_async: bool) -> Result<()> {
        self.callback(callbacks::RemotingClientSendingMessage {
            is_async: b(is_async),
        })
    }
    fn remoting_client_receiving_reply(&self, _c: &GUID, is_async: bool) -> Result<()> {
        self.callback(callbacks::RemotingClientReceivingReply {
            is_async: b(is_async),
        })
    }
    fn remoting_client_invocation_finished(&self) -> Result<()> {
        self.callback(callbacks::RemotingClientInvocationFinished {})
    }
    fn remoting_server_receiving_message(&self, _c: &GUID, is_async: bool) -> Result<()> {
        self.callback(callbacks::RemotingServerReceivingMessage {
            is_async: b(is_async),
        })
    }
    fn remoting_server_invocation_started(&self) -> Result<()> {
        self.callback(callbacks::RemotingServerInvocationStarted {})
    }
    fn remoting_server_invocation_returned(&self) -> Result<()> {
        self.callback(callbacks::RemotingServerInvocationReturned {})
    }
    fn remoting_server_sending_reply(&self, _c: &GUID, is_async: bool) -> Result<()> {
        self.callback(callbacks::RemotingServerSendingReply {
            is_async: b(is_async),
        })
    }
    fn unmanaged_to_managed_transition(
        &self,
        f: FunctionId,
        reason: TransitionReason,
    ) -> Result<()> {
        self.function_callback(f, |function| callbacks::UnmanagedToManagedTransition {
            function,
            reason: u64::from(reason.0),
        })
    }
    fn managed_to_unmanaged_transition(
        &self,
        f: FunctionId,
        reason: TransitionReason,
    ) -> Result<()> {
        self.function_callback(f, |function| callbacks::ManagedToUnmanagedTransition {
            function,
            reason: u64::from(reason.0),
        })
    }
    fn runtime_suspend_started(&self, reason: SuspendReason) -> Result<()> {
        if let Some(r) = self.running() {
            r.features.heap.suspend_started(&r.session);
        }
        self.callback(callbacks::RuntimeSuspendStarted {
            reason: u64::from(reason.0),
        })
    }
    fn runtime_suspend_finished(&self) -> Result<()> {
        self.callback(callbacks::RuntimeSuspendFinished {})
    }
    fn runtime_suspend_aborted(&self) -> Result<()> {
        self.callback(callbacks::RuntimeSuspendAborted {})
    }
    fn runtime_resume_started(&self) -> Result<()> {
        if let Some(r) = self.running() {
            r.features.heap.resume_started(&r.session);
        }
        self.callback(callbacks::RuntimeResumeStarted {})
    }
    fn runtime_resume_finished(&self) -> Result<()> {
        self.callback(callbacks::RuntimeResumeFinished {})?;
        if let Some(r) = self.running() {
            r.features.heap.resume_finished(&r.session);
        }
        Ok(())
    }
    fn runtime_thread_suspended(&self, t: ThreadId) -> Result<()> {
        self.callback(callbacks::RuntimeThreadSuspended { thread: t.as_u64() })
    }
    fn runtime_thread_resumed(&self, t: ThreadId) -> Result<()> {
        self.callback(callbacks::RuntimeThreadResumed { thread: t.as_u64() })
    }
    fn moved_references(
        &self,
        _old: &[ObjectId],
        _new: &[ObjectId],
        lengths: &[u32],
    ) -> Result<()> {
        self.callback_with(|| callbacks::MovedReferences {
            range_count: lengths.len() as u64,
            moved_bytes: lengths.iter().map(|&l| u64::from(l)).sum(),
        })
    }
    fn object_allocated(&self, o: ObjectId, c: ClassId) -> Result<()> {
        // The runtime calls this only with `--alloc`, whose `Allocation` records (sampled or
        // not, with size and stack) take the place of an event per allocation.
        if let Some(s) = self.session() {
            crate::alloc::object_allocated(s, o, c);
        }
        Ok(())
    }
    fn objects_allocated_by_class(&self, classes: &[ClassId], counts: &[u32]) -> Result<()> {
        if let Some(s) = self.session() {
            crate::gc::write_allocated_by_class(s, classes, counts);
        }
        self.callback_with(|| callbacks::ObjectsAllocatedByClass {
            class_count: classes.len() as u64,
            object_count: counts.iter().map(|&c| u64::from(c)).sum(),
        })
    }
    fn object_references(&self, o: ObjectId, c: ClassId, refs: &[ObjectId]) -> Result<()> {
        if let Some(r) = self.running() {
            r.features.heap.object_references(&r.session, o, c, refs);
        }
        self.callback(callbacks::ObjectReferences {
            object: o.as_u64(),
            class: c.as_u64(),
            ref_count: refs.len() as u64,
        })
    }
    fn root_references(&self, roots: &[ObjectId]) -> Result<()> {
        self.callback(callbacks::RootReferences {
            root_count: roots.len() as u64,
        })
    }
    fn exception_thrown(&self, exception: ObjectId) -> Result<()> {
        let Some(s) = self.session().filter(|s| s.wants(K::EXCEPTION_THROWN)) else {
            return Ok(());
        };
        let class = s.info.get_class_from_object(exception).unwrap_or_default();
        let (stack, stack_truncated) = exceptions::throw_site_stack(&s.info);
        s.defs.class(&s.info, &s.out, class);
        let stack_ids: Vec<u64> = stack
            .iter()
            .map(|f| s.defs.function(&s.info, &s.out, FunctionId(f.function)))
            .collect();
        // Each frame at its call: the throw helper's for the thrower, the call for callers.
        let stack_il: Vec<IlPosition> = stack
            .iter()
            .map(|f| match f.ip {
                0 => IlPosition::Unknown,
                ip => s.il_positions.position(&s.info, &s.gone_code, ip - 1),
            })
            .collect();
        let message = s
            .exceptions
            .message(&s.info, s.defs.namer(), exception, class);
        s.out.push_record(&Record::ExceptionInfo(ExceptionInfo {
            ts: s.now(),
            tid: sys::gettid(),
            object: exception.as_u64(),
            message,
            stack: stack_ids.clone(),
            stack_truncated,
            stack_il,
        }));
        s.callback(callbacks::ExceptionThrown {
            object: exception.as_u64(),
            class: class.as_u64(),
            throwing_function: stack_ids.first().copied().unwrap_or(0),
        });
        Ok(())
    }
    fn exception_search_function_enter(&self, f: FunctionId) -> Result<()> {
        self.function_callback(f, |function| callbacks::ExceptionSearchFunctionEnter {
            function,
        })
    }
    fn exception_search_function_leave(&self) -> Result<()> {
        self.callback(callbacks::ExceptionSearchFunctionLeave {})
    }
    fn exception_search_filter_enter(&self, f: FunctionId) -> Result<()> {
        self.function_callback(f, |function| callbacks::ExceptionSearchFilterEnter {
            function,
        })
    }
    fn exception_search_filter_leave(&self) -> Result<()> {
        self.callback(callbacks::ExceptionSearchFilterLeave {})
    }
    fn exception_search_catcher_found(&self, f: FunctionId) -> Result<()> {
        self.function_callback(f, |function| callbacks::ExceptionSearchCatcherFound {
            function,
        })
    }
    fn exception_os_handler_enter(&self) -> Result<()> {
        self.callback(callbacks::ExceptionOSHandlerEnter {})
    }
    fn exception_os_handler_leave(&self) -> Result<()> {
        self.callback(callbacks::ExceptionOSHandlerLeave {})
    }
    fn exception_unwind_function_enter(&self, f: FunctionId) -> Result<()> {
        if let Some(state) = cct::current_state() {
            state.unwind_function_enter(f.0);
        }
        self.function_callback(f, |function| callbacks::ExceptionUnwindFunctionEnter {
            function,
        })
    }
    fn exception_unwind_function_leave(&self) -> Result<()> {
        if let Some(state) = cct::current_state() {
            state.unwind_function_leave();
        }
        self.callback(callbacks::ExceptionUnwindFunctionLeave {})
    }
    fn exception_unwind_finally_enter(&self, f: FunctionId) -> Result<()> {
        self.function_callback(f, |function| callbacks::ExceptionUnwindFinallyEnter {
            function,
        })
    }
    fn exception_unwind_finally_leave(&self) -> Result<()> {
        self.callback(callbacks::ExceptionUnwindFinallyLeave {})
    }
    fn exception_catcher_enter(&self, f: FunctionId, exception: ObjectId) -> Result<()> {
        self.function_callback(f, |function| callbacks::ExceptionCatcherEnter {
            function,
            object: exception.as_u64(),
        })
    }
    fn exception_catcher_leave(&self) -> Result<()> {
        self.callback(callbacks::ExceptionCatcherLeave {})
    }
    fn com_classic_vtable_created(
        &self,
        c: ClassId,
        _iid: &GUID,
        vtable: usize,
        slots: u32,
    ) -> Result<()> {
        self.callback(callbacks::COMClassicVTableCreated {
            class: c.as_u64(),
            vtable: vtable as u64,
            slot_count: u64::from(slots),
        })
    }
    fn com_classic_vtable_destroyed(&self, c: ClassId, _iid: &GUID, vtable: usize) -> Result<()> {
        self.callback(callbacks::COMClassicVTableDestroyed {
            class: c.as_u64(),
            vtable: vtable as u64,
        })
    }
    fn exception_clr_catcher_found(&self) -> Result<()> {
        self.callback(callbacks::ExceptionCLRCatcherFound {})
    }
    fn exception_clr_catcher_execute(&self) -> Result<()> {
        self.callback(callbacks::ExceptionCLRCatcherExecute {})
    }
    fn thread_name_changed(&self, t: ThreadId, name: &str) -> Result<()> {
        if let Some(s) = self.session() {
            // Called on whichever thread set the name: find the named thread's OS id.
            let tid = threads::find_managed(t.0)
                .map(|slot| slot.tid.load(std::sync::atomic::Ordering::Relaxed))
                .or_else(|| s.info.get_thread_info(t).ok())
                .unwrap_or(0);
            s.out.push_record(&Record::ThreadDef(ThreadDef {
                tid,
                managed_id: t.as_u64(),
                name: name.to_string(),
            }));
        }
        self.callback(callbacks::ThreadNameChanged {
            thread: t.as_u64(),
            name_len: name.encode_utf16().count() as u64,
        })
    }
    fn garbage_collection_started(&self, generations: Generations, reason: GcReason) -> Result<()> {
        if let Some(r) = self.running() {
            let s = &r.session;
            if s.wants(K::GARBAGE_COLLECTION_STARTED)
                && let Ok(bounds) = s.info.get_generation_bounds()
            {
                crate::gc::write_generation_sizes(s, 0, &bounds);
            }
            r.features.heap.gc_started(s);
        }
        self.callback(callbacks::GarbageCollectionStarted {
            generations_collected_mask: u64::from(generations.bits()),
            reason: u64::from(reason.0),
        })
    }
    fn surviving_references(&self, _starts: &[ObjectId], lengths: &[u32]) -> Result<()> {
        self.callback_with(|| callbacks::SurvivingReferences {
            range_count: lengths.len() as u64,
            surviving_bytes: lengths.iter().map(|&l| u64::from(l)).sum(),
        })
    }
    fn garbage_collection_finished(&self) -> Result<()> {
        if let Some(r) = self.running() {
            let s = &r.session;
            // One `GetGenerationBounds` for both the sizes and a heap snapshot's ranges.
            let sizes = s.wants(K::GARBAGE_COLLECTION_FINISHED);
            if (sizes || r.features.heap.wants_bounds())
                && let Ok(bounds) = s.info.get_generation_bounds()
            {
                if sizes {
                    crate::gc::write_generation_sizes(s, 1, &bounds);
                }
                r.features.heap.gc_finished(s, &bounds);
            } else {
                r.features.heap.gc_finished(s, &[]);
            }
        }
        self.callback(callbacks::GarbageCollectionFinished {})
    }
    fn finalizeable_object_queued(&self, flags: FinalizerFlags, o: ObjectId) -> Result<()> {
        self.callback(callbacks::FinalizeableObjectQueued {
            finalizer_flags: u64::from(flags.bits()),
            object: o.as_u64(),
        })
    }
    fn root_references2(
        &self,
        roots: &[ObjectId],
        kinds: &[GcRootKind],
        flags: &[GcRootFlags],
        ids: &[usize],
    ) -> Result<()> {
        if let Some(r) = self.running() {
            r.features
                .heap
                .root_references(&r.session, roots, kinds, flags, ids);
        }
        self.callback(callbacks::RootReferences2 {
            root_count: roots.len() as u64,
        })
    }
    fn handle_created(&self, h: GcHandleId, o: ObjectId) -> Result<()> {
        self.callback(callbacks::HandleCreated {
            handle: h.as_u64(),
            object: o.as_u64(),
        })
    }
    fn handle_destroyed(&self, h: GcHandleId) -> Result<()> {
        self.callback(callbacks::HandleDestroyed { handle: h.as_u64() })
    }
    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        let origin = match protocol::parse_attach_request(client_data) {
            Some(protocol::AttachRequest::Session { session, config }) => {
                Origin::Attach { session, config }
            }
            Some(protocol::AttachRequest::Export { vars }) => {
                let names: Vec<String> = vars.iter().map(|(k, _)| k.clone()).collect();
                let get = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
                match crate::config::ExportSettings::from_env(get, names, "unknown_service") {
                    Ok(Some(settings)) => Origin::AttachExport(settings),
                    Ok(None) => return Err(StartError::NoExportSettings.into()),
                    Err(reason) => return Err(StartError::ExportSettings(reason).into()),
                }
            }
            None => {
                return Err(Error::InvalidData {
                    context: "clrprof agent",
                    reason: "attached without clrprof's client data (use `clrprof attach`)".into(),
                });
            }
        };
        // The library stays loaded after a detach: this session counts its own threads.
        threads::THREADS_DROPPED.store(0, core::sync::atomic::Ordering::Relaxed);
        self.start(info, origin)?;
        self.callback(callbacks::InitializeForAttach {
            client_data_len: client_data.len() as u64,
        })
    }
    fn profiler_attach_complete(&self) -> Result<()> {
        if let Some(s) = self.session().filter(|s| s.config.mode.samples()) {
            // The runtime announces only threads created from now on: sample the others too.
            let running = s.info.enum_threads().and_then(|e| e.into_vec());
            for t in running.unwrap_or_default() {
                if let Ok(tid) = s.info.get_thread_info(t) {
                    threads::adopt(tid, t.0);
                }
            }
        }
        self.callback(callbacks::ProfilerAttachComplete {})
    }
    fn profiler_detach_succeeded(&self) -> Result<()> {
        // The last callback before the runtime unloads the library.
        if let Some(r) = SESSION.get() {
            r.detached();
        }
        Ok(())
    }
    fn rejit_compilation_started(&self, f: FunctionId, rejit: ReJitId, safe: bool) -> Result<()> {
        self.callback(callbacks::ReJITCompilationStarted {
            function: self.fid(f),
            rejit_id: rejit.as_u64(),
            is_safe_to_block: b(safe),
        })
    }
    fn get_rejit_parameters(
        &self,
        m: ModuleId,
        method: Token,
        _control: &FunctionControl,
    ) -> Result<()> {
        self.callback(callbacks::GetReJITParameters {
            module: self.mid(m),
            method_token: u64::from(method.0),
        })
    }
    fn rejit_compilation_finished(
        &self,
        f: FunctionId,
        rejit: ReJitId,
        status: HResult,
        safe: bool,
    ) -> Result<()> {
        self.callback(callbacks::ReJITCompilationFinished {
            function: self.fid(f),
            rejit_id: rejit.as_u64(),
            hr_status: hr(status),
            is_safe_to_block: b(safe),
        })
    }
    fn rejit_error(
        &self,
        m: ModuleId,
        method: Token,
        f: FunctionId,
        status: HResult,
    ) -> Result<()> {
        self.callback(callbacks::ReJITError {
            module: self.mid(m),
            method_token: u64::from(method.0),
            function: self.fid(f),
            hr_status: hr(status),
        })
    }
    fn moved_references2(
        &self,
        _old: &[ObjectId],
        _new: &[ObjectId],
        lengths: &[usize],
    ) -> Result<()> {
        self.callback_with(|| callbacks::MovedReferences2 {
            range_count: lengths.len() as u64,
            moved_bytes: lengths.iter().map(|&l| l as u64).sum(),
        })
    }
    fn surviving_references2(&self, _starts: &[ObjectId], lengths: &[usize]) -> Result<()> {
        self.callback_with(|| callbacks::SurvivingReferences2 {
            range_count: lengths.len() as u64,
            surviving_bytes: lengths.iter().map(|&l| l as u64).sum(),
        })
    }
    fn conditional_weak_table_element_references(
        &self,
        keys: &[ObjectId],
        _v: &[ObjectId],
        _h: &[GcHandleId],
    ) -> Result<()> {
        self.callback(callbacks::ConditionalWeakTableElementReferences {
            root_count: keys.len() as u64,
        })
    }
    fn get_assembly_references(
        &self,
        _path: &str,
        _provider: &AssemblyReferenceProvider,
    ) -> Result<()> {
        self.callback(callbacks::GetAssemblyReferences {})
    }
    fn module_in_memory_symbols_updated(&self, m: ModuleId) -> Result<()> {
        self.callback(callbacks::ModuleInMemorySymbolsUpdated {
            module: self.mid(m),
        })
    }
    fn dynamic_method_jit_compilation_started(
        &self,
        f: FunctionId,
        safe: bool,
        il_header: &[u8],
    ) -> Result<()> {
        self.callback(callbacks::DynamicMethodJITCompilationStarted {
            function: self.fid(f),
            is_safe_to_block: b(safe),
            il_header_len: il_header.len() as u64,
        })
    }
    fn dynamic_method_jit_compilation_finished(
        &self,
        f: FunctionId,
        status: HResult,
        safe: bool,
    ) -> Result<()> {
        if let Some(s) = self.session().filter(|s| s.config.mode == Mode::Trace) {
            // No enter/leave hooks will tell of it: the definition says it was there.
            s.defs.function(&s.info, &s.out, f);
        }
        self.function_callback(f, |function| {
            callbacks::DynamicMethodJITCompilationFinished {
                function,
                hr_status: hr(status),
                is_safe_to_block: b(safe),
            }
        })
    }
    fn dynamic_method_unloaded(&self, f: FunctionId) -> Result<()> {
        self.callback(callbacks::DynamicMethodUnloaded {
            function: self.fid(f),
        })?;
        if let Some(s) = self.session() {
            // The method was collected: its FunctionID and code can be reused from now on.
            let ts = sys::monotonic_ns();
            if s.config.mode.samples() {
                // Captures of it may still wait for the sampler, which could not name it
                // after this (the runtime would name what replaces it): name it now, and
                // say where its code is while the runtime still knows.
                s.defs.function(&s.info, &s.out, f);
                if let Ok(blocks) = s.info.get_code_info2(f) {
                    let ranges = blocks
                        .iter()
                        .map(|b| (b.start, b.start.saturating_add(b.size)));
                    // And how its frame is laid out, while its code is still there: a
                    // method without a frame pointer is unwound by its shape only.
                    let shape = blocks.first().and_then(|b| {
                        crate::sampler::prologue_at(b.start).map(|shape| (b.start, shape))
                    });
                    s.gone_code.dying(ts, f, ranges, shape);
                }
            }
            s.defs.forget_function(f, ts);
            s.gone_code.notify_at(ts, &[f]);
        }
        Ok(())
    }
    fn event_pipe_event_delivered(&self, e: &EventPipeEvent<'_>) -> Result<()> {
        // Only the agent's own session (`--alloc ticks`) delivers events.
        if let Some(r) = self.running() {
            let (s, f) = (&r.session, &r.features);
            f.alloc_ticks.event_delivered(s, e);
            f.contention.event_delivered(s, e);
        }
        self.callback(callbacks::EventPipeEventDelivered {
            provider: e.provider.0 as u64,
            event_id: u64::from(e.event_id),
            event_version: u64::from(e.event_version),
            metadata_len: e.metadata.len() as u64,
            event_data_len: e.data.len() as u64,
            thread: e.thread.as_u64(),
            stack_frame_count: e.stack.len() as u64,
        })
    }
    fn event_pipe_provider_created(&self, p: EventPipeProviderId) -> Result<()> {
        self.callback(callbacks::EventPipeProviderCreated {
            provider: p.0 as u64,
        })
    }
}

impl Agent {
    /// The trace id of a function (see `defs`: the runtime's id with its life).
    fn fid(&self, f: FunctionId) -> u64 {
        self.session().map_or(f.as_u64(), |s| s.defs.function_id(f))
    }

    /// The trace id of a module.
    fn mid(&self, m: ModuleId) -> u64 {
        self.session().map_or(m.as_u64(), |s| s.defs.module_id(m))
    }

    /// A callback's event whose function is named if the event is recorded: `args` makes
    /// the event from the function's trace id.
    fn function_callback<C: CallbackArgs>(
        &self,
        f: FunctionId,
        args: impl FnOnce(u64) -> C,
    ) -> Result<()> {
        if let Some(s) = self.session().filter(|s| s.wants(C::KIND)) {
            let function = s.defs.function(&s.info, &s.out, f);
            s.callback(args(function));
        }
        Ok(())
    }
}

/// The size of a method's IL code (without header and exception clauses), 0 if unknown.
fn il_code_size(info: &ProfilerInfo, f: FunctionId) -> u32 {
    info.get_function_info(f)
        .and_then(|fi| info.get_il_function_body(fi.module, fi.token))
        .map_or(0, |body| il_code_size_of_body(&body))
}

/// The size of the IL code in a method body, 0 if it cannot be parsed.
fn il_code_size_of_body(body: &[u8]) -> u32 {
    il::IlBody::parse(body).map_or(0, |body| body.code.len() as u32)
}
