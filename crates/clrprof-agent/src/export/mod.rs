//! Export mode: the agent alone ships a profile of every period to a profiling backend.
//!
//! Loaded with the `CLRPROF_EXPORT_*` variables (and no `clrprof` process), the agent records
//! as in sample mode and its transport writes the record stream to an [`ExportSink`] instead
//! of a socket or a file: the sink, on the transport's writer thread, decodes the records and
//! adds them to the current period ([`aggregate::Aggregator`]). The exporter thread ends each
//! period, encodes it (OTLP profiles or Pyroscope's push, `clrprof-export`) and sends it,
//! keeping the periods a backend could not take in a bounded retry queue. No program thread
//! ever waits for the network, except at exit: [`finish`] sends the last, partial period from
//! the thread that ends the runtime, within [`FINISH_TIMEOUT`].

pub mod aggregate;
pub mod control;
pub mod lines;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clrprof_export::{
    Auth, DEFAULT_MAX_STACKS, ExportConfig, Exporter, Outcome, PeriodProfiles, Protocol,
    QueueLimits, Resource, RetryQueue,
};
use clrprof_trace::config::{
    AgentConfig, ExportAuth, ExportProfile, ExportProtocol, ExportSettings, SettingsError,
};

use crate::config::Config;
use crate::recorder::termination;
use aggregate::Aggregator;

/// The longest the process's exit waits for the last period to be sent.
pub const FINISH_TIMEOUT: Duration = Duration::from_secs(2);

/// The timeout of one exchange with the backend from the exporter thread.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The count every profile carries of the periods this process dropped so far (the queue was
/// full, or the backend refused them for good): an OTLP profile attribute, a pprof comment.
pub const PERIODS_DROPPED: &str = "clrprof.periods_dropped";

/// The `process.runtime.name` of the resource.
const RUNTIME_NAME: &str = ".NET";

/// Export mode's settings from the environment: `Ok(None)` when no `CLRPROF_EXPORT_*`
/// variable is set; an error (one line, naming the variable) when one is wrong.
pub fn settings_from_env() -> Result<Option<ExportSettings>, SettingsError> {
    let names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    ExportSettings::from_env(
        |name| std::env::var(name).ok(),
        names.collect::<Vec<_>>(),
        &format!("unknown_service:{exe}"),
    )
}

/// Writes one line for the user on the program's standard error (never fails, never panics).
pub fn tell(text: &str) {
    let _ = writeln!(std::io::stderr(), "clrprof: {text}");
}

/// What became of the periods, for the line at exit.
#[derive(Default)]
struct Counts {
    /// Periods that had something and were queued.
    periods: AtomicU64,
    /// Periods the backend took (wholly or partly).
    delivered: AtomicU64,
    /// Periods dropped: the queue was full, or the backend refused them for good.
    dropped: AtomicU64,
    /// Profiles a partial success rejected.
    rejected_profiles: AtomicU64,
    /// Periods still waiting in the queue.
    waiting: AtomicU64,
    /// Sends that failed (every attempt counts, retried or not).
    failed_sends: AtomicU64,
}

struct Shared {
    settings: ExportSettings,
    aggregator: Mutex<Aggregator>,
    /// Set to stop the exporter thread; the condition variable wakes it.
    stop: Mutex<bool>,
    wake: Condvar,
    counts: Counts,
    /// The last failed send, said at exit.
    last_failure: Mutex<Option<String>>,
    finished: AtomicBool,
    /// The resource, once the stream said which runtime this is.
    resource: OnceLock<Resource>,
}

/// The export of the current session; replaced when a later session (an attach after
/// `clrprof attach --stop`) starts export mode again once this one finished.
static EXPORT: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

/// The current export, if any.
fn current() -> Option<Arc<Shared>> {
    EXPORT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Where the transport writes the record stream in export mode.
pub struct ExportSink(Arc<Shared>);

impl Write for ExportSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let errors = {
            let mut aggregator = self.0.aggregator.lock().unwrap_or_else(|e| e.into_inner());
            aggregator.push(bytes);
            aggregator.take_errors()
        };
        for e in errors {
            tell(&e);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn export_config(settings: &ExportSettings, timeout: Duration) -> ExportConfig {
    ExportConfig {
        endpoint: settings.endpoint.clone(),
        protocol: match settings.protocol {
            ExportProtocol::OtlpHttp => Protocol::OtlpHttp,
            ExportProtocol::OtlpGrpc => Protocol::OtlpGrpc,
            ExportProtocol::Pyroscope => Protocol::PyroscopePush,
        },
        auth: settings.auth.as_ref().map(|a| match a {
            ExportAuth::Bearer(token) => Auth::Bearer(token.clone()),
            ExportAuth::Basic { user, password } => Auth::Basic {
                user: user.clone(),
                password: password.clone(),
            },
        }),
        tenant: settings.tenant.clone(),
        timeout,
    }
}

/// A recording whose configuration says `also_export`: export mode with the settings of the
/// `CLRPROF_EXPORT_*` variables, fed the same records as the trace. Returns the sink the
/// transport is to write to: both, or the trace alone when the variables are wrong (said in
/// `config`'s warnings, which reach the trace) or export mode runs already.
pub fn beside_the_trace(
    config: &mut Config,
    trace: Box<dyn Write + Send>,
) -> Box<dyn Write + Send> {
    if !config.also_export {
        return trace;
    }
    match settings_from_env() {
        Ok(Some(settings)) => config.settings.export = Some(settings),
        Ok(None) => {
            config.warnings.push(
                "export beside the trace was asked for, but no CLRPROF_EXPORT_ENDPOINT is set: \
                 recording the trace only"
                    .into(),
            );
            return trace;
        }
        Err(reason) => {
            config
                .warnings
                .push(format!("{reason}; recording the trace only"));
            return trace;
        }
    }
    match start(config) {
        Some(export) => Box::new(Tee { trace, export }),
        None => {
            config.settings.export = None;
            trace
        }
    }
}

/// The transport's sink when a trace and export mode take the same records: the trace's
/// errors are the transport's; export mode's sink takes everything.
struct Tee {
    trace: Box<dyn Write + Send>,
    export: Box<dyn Write + Send>,
}

impl Write for Tee {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.trace.write(bytes)?;
        // Export mode's sink takes every byte and never fails (it aggregates in memory).
        let _ = self.export.write_all(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.trace.flush()
    }
}

/// Starts export mode for `config` (whose `export` is set): the exporter thread, and the sink
/// the transport is to write to (the stream's header already in it). `None` if export mode
/// is off, or runs already (started and not finished).
pub fn start(config: &AgentConfig) -> Option<Box<dyn Write + Send>> {
    let settings = config.export.clone()?;
    let aggregator = Aggregator::new(
        &settings,
        config.rate_hz,
        config.wall_rate(),
        DEFAULT_MAX_STACKS,
        unix_now_ns(),
    );
    let shared = Arc::new(Shared {
        settings,
        aggregator: Mutex::new(aggregator),
        stop: Mutex::new(false),
        wake: Condvar::new(),
        counts: Counts::default(),
        last_failure: Mutex::new(None),
        finished: AtomicBool::new(false),
        resource: OnceLock::new(),
    });
    {
        let mut current = EXPORT.lock().unwrap_or_else(|e| e.into_inner());
        if current
            .as_ref()
            .is_some_and(|c| !c.finished.load(Ordering::Acquire))
        {
            return None;
        }
        *current = Some(Arc::clone(&shared));
    }
    let for_thread = Arc::clone(&shared);
    let spawned = crate::recorder::threads::spawn_agent_thread("clrprof-export", move || {
        termination::block_on_this_thread();
        ship_periods(&for_thread);
    });
    if let Err(e) = spawned {
        tell(&format!(
            "cannot start the exporter thread ({e}); profiles are not sent"
        ));
    }
    let mut sink = ExportSink(shared);
    clrprof_trace::write_header(&mut sink).ok()?;
    Some(Box::new(sink))
}

impl Shared {
    fn resource(&self) -> &Resource {
        self.resource.get_or_init(|| {
            let version = self
                .aggregator
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .session()
                .map(|s| s.runtime_version.clone())
                .unwrap_or_default();
            let mut r = Resource::of_this_process(
                self.settings.service_name.clone(),
                RUNTIME_NAME,
                version,
            );
            r.service_version = self.settings.service_version.clone();
            r.labels = self.settings.labels.clone();
            r
        })
    }

    fn take_period(&self) -> PeriodProfiles {
        self.aggregator
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take_period(unix_now_ns())
    }

    fn stopped(&self) -> bool {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts what the sends did.
    fn note(&self, outcomes: &[Outcome], queue: &RetryQueue) {
        for o in outcomes {
            if !matches!(o, Outcome::Accepted | Outcome::PartiallyAccepted { .. }) {
                self.counts.failed_sends.fetch_add(1, Ordering::Relaxed);
                *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(o.to_string());
            }
        }
        let q = queue.counts();
        let c = &self.counts;
        c.delivered
            .store(q.accepted + q.partially_accepted, Ordering::Relaxed);
        c.dropped.store(q.dropped(), Ordering::Relaxed);
        c.rejected_profiles
            .store(q.rejected_profiles, Ordering::Relaxed);
        c.waiting.store(queue.len() as u64, Ordering::Relaxed);
    }
}

/// The exporter thread: ends a period every `settings.period`, queues it and sends what is
/// due, until [`finish`] stops it.
fn ship_periods(shared: &Shared) {
    let exporter = Exporter::new(export_config(&shared.settings, SEND_TIMEOUT));
    let mut queue = RetryQueue::new(QueueLimits::default());
    let period = shared.settings.period;
    let mut period_end = Instant::now() + period;
    loop {
        let wake_at = queue
            .next_attempt()
            .map_or(period_end, |retry| retry.min(period_end));
        {
            let mut stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
            while !*stop {
                let now = Instant::now();
                if now >= wake_at {
                    break;
                }
                stop = shared
                    .wake
                    .wait_timeout(stop, wake_at - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if *stop {
                return;
            }
        }
        let now = Instant::now();
        if now >= period_end {
            period_end += period;
            if period_end <= now {
                period_end = now + period;
            }
            let mut p = shared.take_period();
            if !p.is_empty() {
                shared.counts.periods.fetch_add(1, Ordering::Relaxed);
                p.set_counter(PERIODS_DROPPED, queue.counts().dropped());
                queue.push(exporter.encode(&p, shared.resource()));
                // Counted before the sends, which may take long: at exit it is waiting.
                shared.note(&[], &queue);
            }
        }
        if shared.stopped() {
            return;
        }
        let outcomes = queue.send_due(&exporter, Instant::now());
        shared.note(&outcomes, &queue);
    }
}

/// At the end of the process (the runtime's `Shutdown`, or `exit`): stops the exporter thread
/// and sends the last, partial period from the calling thread within [`FINISH_TIMEOUT`]; then,
/// if any period was not delivered or any send failed, says so in one line on standard error.
/// Only the first call of an export does anything. Call it after the transport's last drain.
pub fn finish() {
    let Some(shared) = current() else {
        return;
    };
    if shared.finished.swap(true, Ordering::AcqRel) {
        return;
    }
    *shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
    shared.wake.notify_all();
    let mut last = shared.take_period();
    last.set_counter(
        PERIODS_DROPPED,
        shared.counts.dropped.load(Ordering::Relaxed),
    );
    // The last period's fate, apart: the exporter thread may still store its own counts.
    let (mut periods, mut delivered, mut dropped, mut failed) = (0, 0, 0, 0);
    if !last.is_empty() {
        periods = 1;
        let exporter = Exporter::new(export_config(&shared.settings, FINISH_TIMEOUT));
        match exporter.export(&last, shared.resource()) {
            Outcome::Accepted | Outcome::PartiallyAccepted { .. } => delivered = 1,
            refused_or_unreachable => {
                (dropped, failed) = (1, 1);
                *shared
                    .last_failure
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(refused_or_unreachable.to_string());
            }
        }
    }
    let c = &shared.counts;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    periods += load(&c.periods);
    delivered += load(&c.delivered);
    dropped += load(&c.dropped);
    failed += load(&c.failed_sends);
    if delivered < periods || failed > 0 {
        let last = shared
            .last_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default();
        tell(&format!(
            "export to {}: {periods} periods, {delivered} delivered, {dropped} dropped, {} waiting at exit; {failed} sends failed (last: {last})",
            shared.settings.endpoint,
            load(&c.waiting),
        ));
    }
}

/// After the session is configured: if the runtime cannot give a profile the user chose (the
/// allocation and lock profiles need the runtime's events in process, which CoreCLR 3.1 does
/// not offer a profiler), says so once on standard error. Profiles left out by default are
/// left out silently (docs/continuous-profiling.md says which runtimes give which).
pub fn say_what_the_runtime_lacks(config: &AgentConfig, reads_ticks: bool, reads_contention: bool) {
    let Some(settings) = &config.export else {
        return;
    };
    if !settings.profiles_chosen {
        return;
    }
    let mut lacking = Vec::new();
    if settings.wants(ExportProfile::Alloc) && !reads_ticks {
        lacking.push(ExportProfile::Alloc.name());
    }
    if settings.wants(ExportProfile::Lock) && !reads_contention {
        lacking.push(ExportProfile::Lock.name());
    }
    if !lacking.is_empty() {
        tell(&format!(
            "the {} profile(s) need the runtime's events in process (.NET 5 or later), which this runtime does not offer; they are not exported",
            lacking.join(" and ")
        ));
    }
}
