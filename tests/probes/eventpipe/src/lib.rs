//! probe-eventpipe: a test profiler that writes which profiling API versions the runtime
//! answers, and runs an in-process EventPipe session (ICorProfilerInfo12, .NET 5 and later)
//! through the SDK. `tests/sdk_eventpipe.rs` runs it against `tests/programs/EventPipeProbe.cs`.
//!
//! It writes one line per fact, `key<TAB>value`, to the file named by `PROBE_OUTPUT`:
//!
//! - `info_version`, `info_versions_answered`, `callback_versions_asked` at `Initialize`;
//! - at `Initialize`, each EventPipe call and its result: it creates two providers of its own
//!   (the second with an enable callback, ICorProfilerInfo14), defines an event on the first,
//!   starts a session with the first, then adds the second and the runtime's GC events
//!   (`Microsoft-Windows-DotNETRuntime`, keyword GC, informational);
//! - `event` for every event delivered to `EventPipeEventDelivered`: its provider, id and
//!   version, the writing thread the runtime names (0: the thread the callback runs on), the
//!   thread the callback runs on, the number of stack frames given, and for GC starts and ends
//!   and its own event what the payload says;
//! - when the JIT compiles `EventPipeProbe.StopMarker` (on the main thread): `main_thread`,
//!   `write_event` (its own event, written on that thread) and `stop_session`;
//! - `provider2_callback` for every call of the second provider's enable callback, and
//!   `shutdown` at the end.
//!
//! A result is its value, or `not supported: METHOD needs N has M`, or `failed: METHOD HRESULT`.

use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use clrprof_sdk::info::{
    EventPipeEventDesc, EventPipeEventId, EventPipeLevel, EventPipeParamDesc, EventPipeParamType,
    EventPipeProviderConfig, EventPipeSessionId,
};
use core::ffi::c_void;

use clrprof_sdk::sys::COR_PRF_FILTER_DATA;
use clrprof_sdk::{
    Error, EventMask, EventPipeEvent, EventPipeProviderId, FunctionId, Profiler, ProfilerInfo,
    Result, callback_versions_asked,
};

/// The probe's CLSID (what `CORECLR_PROFILER` names).
pub const CLSID: &str = "{3F6B2D8E-1A47-4C90-B5E3-9D0C7A16E2F4}";

clrprof_sdk::export_profiler!(EventPipeProbe, CLSID);

/// The providers the probe makes.
const PROVIDER: &str = "Clrprof-EventPipe-Probe";
const PROVIDER2: &str = "Clrprof-EventPipe-Probe-2";
/// The runtime's provider, and its GC keyword.
const RUNTIME_PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
const GC_KEYWORD: u64 = 0x1;
/// Event ids of `Microsoft-Windows-DotNETRuntime`.
const GC_START: u32 = 1;
const GC_END: u32 = 2;
/// The id of the probe's own event.
const PROBE_EVENT: u32 = 1;

#[derive(Default)]
struct EventPipeProbe {
    info: OnceLock<ProfilerInfo>,
    out: Mutex<Option<File>>,
    event: OnceLock<EventPipeEventId>,
    session: OnceLock<EventPipeSessionId>,
    stopped: AtomicBool,
}

/// A result as the probe writes it.
fn res<T>(r: &Result<T>, show: impl FnOnce(&T) -> String) -> String {
    match r {
        Ok(v) => show(v),
        Err(Error::NotSupported {
            method,
            required,
            available,
        }) => format!("not supported: {method} needs {required} has {available}"),
        Err(Error::Failed { method, hr }) => format!("failed: {method} {:#010x}", hr.0 as u32),
        Err(other) => format!("error: {other}"),
    }
}

fn ok(_: &()) -> String {
    "ok".to_string()
}

fn list(values: &[u32]) -> String {
    let items: Vec<String> = values.iter().map(u32::to_string).collect();
    items.join(",")
}

/// The calls of the second provider's enable callback, written at shutdown (the callback
/// itself must not do I/O while the runtime holds its EventPipe lock).
static PROVIDER2_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The enable callback of the second provider (`EventPipeCreateProvider2`).
unsafe extern "system" fn provider2_callback(
    _source_id: *const u8,
    is_enabled: u32,
    level: u8,
    match_any_keywords: u64,
    _match_all_keywords: u64,
    _filter_data: *mut COR_PRF_FILTER_DATA,
    _callback_data: *mut c_void,
) {
    // A panic must not unwind into the runtime.
    let _ = std::panic::catch_unwind(|| {
        let mut calls = PROVIDER2_CALLS.lock().unwrap_or_else(|e| e.into_inner());
        calls.push(format!(
            "enabled={is_enabled} level={level} keywords={match_any_keywords:#x}"
        ));
    });
}

impl EventPipeProbe {
    fn emit(&self, key: &str, value: impl AsRef<str>) {
        if let Some(file) = self.out.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let _ = writeln!(file, "{key}\t{}", value.as_ref());
            let _ = file.flush();
        }
    }

    /// The versions, then the providers, the event and the session.
    fn start(&self, info: &ProfilerInfo) {
        self.emit("info_version", info.version().to_string());
        self.emit("info_versions_answered", list(&info.versions_answered()));
        self.emit("callback_versions_asked", list(&callback_versions_asked()));

        let provider = info.event_pipe_create_provider(PROVIDER);
        self.emit(
            "create_provider",
            res(&provider, |p| (p.0 != 0).to_string()),
        );
        let provider_id = provider.as_ref().copied().unwrap_or(EventPipeProviderId(0));
        self.emit(
            "get_provider_info",
            res(&info.event_pipe_get_provider_info(provider_id), |n| {
                n.clone()
            }),
        );
        let params = [
            EventPipeParamDesc {
                param_type: EventPipeParamType::UINT32,
                element_type: EventPipeParamType(0),
                name: "Value",
            },
            EventPipeParamDesc {
                param_type: EventPipeParamType::STRING,
                element_type: EventPipeParamType(0),
                name: "Text",
            },
        ];
        let event = info.event_pipe_define_event(
            provider_id,
            &EventPipeEventDesc {
                name: "ProbeEvent",
                id: PROBE_EVENT,
                keywords: 1,
                version: 0,
                level: EventPipeLevel::INFORMATIONAL,
                opcode: 0,
                need_stack: true,
                params: &params,
            },
        );
        self.emit("define_event", res(&event, |e| (e.0 != 0).to_string()));
        if let Ok(e) = event {
            let _ = self.event.set(e);
        }

        // The probe's provider and the runtime's GC events.
        let session = info.event_pipe_start_session(
            &[
                EventPipeProviderConfig {
                    name: PROVIDER,
                    keywords: 1,
                    level: EventPipeLevel::VERBOSE,
                    filter_data: None,
                },
                EventPipeProviderConfig {
                    name: RUNTIME_PROVIDER,
                    keywords: GC_KEYWORD,
                    level: EventPipeLevel::INFORMATIONAL,
                    filter_data: None,
                },
            ],
            false,
        );
        self.emit("start_session", res(&session, |s| (s.0 != 0).to_string()));
        let session_id = session.as_ref().copied().unwrap_or(EventPipeSessionId(0));
        if let Ok(s) = session {
            let _ = self.session.set(s);
        }
        // A provider added to the running session is enabled when it is created: the runtime
        // adds it to the session's list and computes a provider's state when the provider is
        // made (and when a session starts or stops).
        let added = info.event_pipe_add_provider_to_session(
            session_id,
            &EventPipeProviderConfig {
                name: PROVIDER2,
                keywords: 0x30,
                level: EventPipeLevel::WARNING,
                filter_data: None,
            },
        );
        self.emit("add_provider", res(&added, ok));
        let provider2 = info.event_pipe_create_provider2(PROVIDER2, Some(provider2_callback));
        self.emit(
            "create_provider2",
            res(&provider2, |p| (p.0 != 0).to_string()),
        );
    }

    /// At `StopMarker`'s compilation: one event of the probe's own, then the end of the session.
    fn stop(&self, info: &ProfilerInfo) {
        if let Ok(main) = info.get_current_thread_id() {
            self.emit("main_thread", main.as_u64().to_string());
        }
        let text: Vec<u8> = "seven\0"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let write = match self.event.get() {
            Some(e) => info.event_pipe_write_event(*e, &[&7u32.to_le_bytes(), &text], None, None),
            None => Err(Error::NotSupported {
                method: "ICorProfilerInfo12::EventPipeWriteEvent",
                required: 12,
                available: info.version(),
            }),
        };
        self.emit("write_event", res(&write, ok));
        let stop = match self.session.get() {
            Some(s) => info.event_pipe_stop_session(*s),
            None => info.event_pipe_stop_session(EventPipeSessionId(0)),
        };
        self.stopped.store(true, Ordering::SeqCst);
        self.emit("stop_session", res(&stop, ok));
    }

    /// What an event says: its provider and id, the thread it came on, and its payload for
    /// the events the test knows.
    fn describe(&self, info: &ProfilerInfo, event: &EventPipeEvent<'_>) -> String {
        let provider = res(&info.event_pipe_get_provider_info(event.provider), |n| {
            n.clone()
        });
        // The thread the runtime names as the writer (0: the thread the callback runs on),
        // and the thread the callback runs on.
        let current = info
            .get_current_thread_id()
            .map_or_else(|_| "none".to_string(), |t| t.as_u64().to_string());
        let mut line = format!(
            "provider={provider} id={} version={} writer={} current={current} stack={} after_stop={}",
            event.event_id,
            event.event_version,
            event.thread.as_u64(),
            event.stack.len(),
            self.stopped.load(Ordering::SeqCst),
        );
        let u32_at = |at: usize| {
            event
                .data
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        if provider == RUNTIME_PROVIDER && event.event_id == GC_START {
            // GCStart_V2: Count, Depth, Reason, Type (u32 each), ...
            if let (Some(depth), Some(reason)) = (u32_at(4), u32_at(8)) {
                line.push_str(&format!(" depth={depth} reason={reason}"));
            }
        } else if provider == PROVIDER && event.event_id == PROBE_EVENT {
            let text: Vec<u16> = event.data[4.min(event.data.len())..]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .take_while(|&c| c != 0)
                .collect();
            line.push_str(&format!(
                " value={} text={}",
                u32_at(0).unwrap_or(0),
                String::from_utf16_lossy(&text)
            ));
        } else if provider == RUNTIME_PROVIDER
            && event.event_id == GC_END
            && let Some(depth) = u32_at(4)
        {
            line.push_str(&format!(" depth={depth}"));
        }
        line
    }
}

impl Profiler for EventPipeProbe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        if let Some(path) = std::env::var_os("PROBE_OUTPUT") {
            *self.out.lock().unwrap_or_else(|e| e.into_inner()) = File::create(path).ok();
        }
        info.set_event_mask(EventMask::MONITOR_JIT_COMPILATION)?;
        self.start(&info);
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, _safe_to_block: bool) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        let name = info.get_function_info(function).and_then(|f| {
            Ok(match info.get_module_metadata(f.module, false)? {
                Some(import) => Some(import.get_method_props(f.token)?.name),
                None => None,
            })
        });
        let is_marker = matches!(name, Ok(Some(n)) if n == "StopMarker");
        if is_marker {
            self.stop(info);
        }
        Ok(())
    }

    fn event_pipe_event_delivered(&self, event: &EventPipeEvent<'_>) -> Result<()> {
        if let Some(info) = self.info.get() {
            let line = self.describe(info, event);
            self.emit("event", line);
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let calls = PROVIDER2_CALLS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for call in calls {
            self.emit("provider2_callback", call);
        }
        self.emit(
            "shutdown",
            format!("panics_caught={}", clrprof_sdk::panics_caught()),
        );
        Ok(())
    }
}
