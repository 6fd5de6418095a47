//! In-process EventPipe (ICorProfilerInfo12, .NET 5+): sessions that deliver runtime events
//! to the profiler's `EventPipeEventDelivered` callback, and providers and events of the
//! profiler's own.

use core::fmt;
use core::ptr;

use clrprof_sys::*;

use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::types::EventPipeProviderId;
use crate::wide::read_wide;
use crate::wide::to_wide;

/// An EventPipe session started by the profiler (`EVENTPIPE_SESSION`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EventPipeSessionId(pub u64);

impl fmt::Debug for EventPipeSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventPipeSessionId({:#x})", self.0)
    }
}

/// An event defined with `EventPipeDefineEvent` (`EVENTPIPE_EVENT`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EventPipeEventId(pub usize);

impl fmt::Debug for EventPipeEventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventPipeEventId({:#x})", self.0)
    }
}

macro_rules! open_u32 {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:expr,)* }) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            $($(#[$vdoc])* pub const $variant: $name = $name($value);)*

            /// The constant's name, or `None` for a value this SDK does not know.
            pub fn name(self) -> Option<&'static str> {
                $(if self == $name::$variant { return Some(stringify!($variant)); })*
                None
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, concat!(stringify!($name), "::{}"), name),
                    None => write!(f, concat!(stringify!($name), "({})"), self.0),
                }
            }
        }
    };
}

open_u32! {
    /// EventPipe verbosity (`COR_PRF_EVENTPIPE_LEVEL`); a session enables events up to its
    /// level.
    EventPipeLevel {
        /// Always logged.
        LOG_ALWAYS = COR_PRF_EVENTPIPE_LOGALWAYS,
        /// Critical errors.
        CRITICAL = COR_PRF_EVENTPIPE_CRITICAL,
        /// Errors.
        ERROR = COR_PRF_EVENTPIPE_ERROR,
        /// Warnings.
        WARNING = COR_PRF_EVENTPIPE_WARNING,
        /// Informational events.
        INFORMATIONAL = COR_PRF_EVENTPIPE_INFORMATIONAL,
        /// Everything.
        VERBOSE = COR_PRF_EVENTPIPE_VERBOSE,
    }
}

open_u32! {
    /// Type of one field of a profiler-defined event (`COR_PRF_EVENTPIPE_PARAM_TYPE`).
    EventPipeParamType {
        /// An object; refused by the runtime (it cannot describe one).
        OBJECT = COR_PRF_EVENTPIPE_OBJECT,
        /// 4-byte boolean.
        BOOLEAN = COR_PRF_EVENTPIPE_BOOLEAN,
        /// UTF-16 code unit.
        CHAR = COR_PRF_EVENTPIPE_CHAR,
        /// `i8`.
        SBYTE = COR_PRF_EVENTPIPE_SBYTE,
        /// `u8`.
        BYTE = COR_PRF_EVENTPIPE_BYTE,
        /// `i16`.
        INT16 = COR_PRF_EVENTPIPE_INT16,
        /// `u16`.
        UINT16 = COR_PRF_EVENTPIPE_UINT16,
        /// `i32`.
        INT32 = COR_PRF_EVENTPIPE_INT32,
        /// `u32`.
        UINT32 = COR_PRF_EVENTPIPE_UINT32,
        /// `i64`.
        INT64 = COR_PRF_EVENTPIPE_INT64,
        /// `u64`.
        UINT64 = COR_PRF_EVENTPIPE_UINT64,
        /// `f32`.
        SINGLE = COR_PRF_EVENTPIPE_SINGLE,
        /// `f64`.
        DOUBLE = COR_PRF_EVENTPIPE_DOUBLE,
        /// .NET `decimal` (16 bytes).
        DECIMAL = COR_PRF_EVENTPIPE_DECIMAL,
        /// .NET `DateTime` (8 bytes).
        DATETIME = COR_PRF_EVENTPIPE_DATETIME,
        /// 16-byte GUID.
        GUID = COR_PRF_EVENTPIPE_GUID,
        /// NUL-terminated UTF-16 string.
        STRING = COR_PRF_EVENTPIPE_STRING,
        /// Array of `element_type` (a `u16` count, then the elements).
        ARRAY = COR_PRF_EVENTPIPE_ARRAY,
    }
}

/// One provider to enable in a session (`COR_PRF_EVENTPIPE_PROVIDER_CONFIG`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EventPipeProviderConfig<'a> {
    /// Provider name, e.g. `Microsoft-Windows-DotNETRuntime`.
    pub name: &'a str,
    /// Keywords to enable.
    pub keywords: u64,
    /// Highest level to enable.
    pub level: EventPipeLevel,
    /// `key=value;...` arguments for the provider, if any.
    pub filter_data: Option<&'a str>,
}

/// One field of a profiler-defined event (`COR_PRF_EVENTPIPE_PARAM_DESC`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EventPipeParamDesc<'a> {
    /// The field's type.
    pub param_type: EventPipeParamType,
    /// For [`EventPipeParamType::ARRAY`], the element type; ignored otherwise.
    pub element_type: EventPipeParamType,
    /// The field's name.
    pub name: &'a str,
}

/// Everything `EventPipeDefineEvent` needs to define an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EventPipeEventDesc<'a> {
    /// The event's name.
    pub name: &'a str,
    /// Its id within the provider.
    pub id: u32,
    /// Keywords that enable it.
    pub keywords: u64,
    /// Its version.
    pub version: u32,
    /// Its level.
    pub level: EventPipeLevel,
    /// Its opcode (0 = info, 1 = start, 2 = stop, ...).
    pub opcode: u8,
    /// Whether the runtime records the writing thread's stack with each event.
    pub need_stack: bool,
    /// The payload's fields, in order.
    pub params: &'a [EventPipeParamDesc<'a>],
}

/// Provider configs with their UTF-16 strings kept alive for the call.
struct RawConfigs {
    _strings: Vec<Vec<u16>>,
    configs: Vec<COR_PRF_EVENTPIPE_PROVIDER_CONFIG>,
}

fn raw_configs(providers: &[EventPipeProviderConfig<'_>]) -> RawConfigs {
    let mut strings = Vec::with_capacity(providers.len() * 2);
    let mut configs = Vec::with_capacity(providers.len());
    for p in providers {
        let name = to_wide(p.name);
        let filter = p.filter_data.map(to_wide);
        configs.push(COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
            providerName: name.as_ptr(),
            keywords: p.keywords,
            loggingLevel: p.level.0,
            filterData: filter.as_ref().map_or(ptr::null(), |f| f.as_ptr()),
        });
        // Moving a Vec does not move its heap buffer, so the pointers above stay valid.
        strings.push(name);
        strings.extend(filter);
    }
    RawConfigs {
        _strings: strings,
        configs,
    }
}

impl ProfilerInfo {
    /// Starts a synchronous session whose events arrive in the profiler's
    /// `EventPipeEventDelivered` callback (`ICorProfilerInfo12::EventPipeStartSession`);
    /// `request_rundown` adds the rundown events at the end. Needs at least one provider.
    /// Any time.
    pub fn event_pipe_start_session(
        &self,
        providers: &[EventPipeProviderConfig<'_>],
        request_rundown: bool,
    ) -> Result<EventPipeSessionId> {
        const M: &str = "ICorProfilerInfo12::EventPipeStartSession";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        let raw = raw_configs(providers);
        let count = u32::try_from(raw.configs.len()).unwrap_or(u32::MAX);
        let mut session: EVENTPIPE_SESSION = 0;
        // SAFETY: `this` is live; `raw.configs` holds `count` configs whose strings live in
        // `raw`; `session` is a valid out-param.
        ok(M, unsafe {
            (vt.EventPipeStartSession)(
                self.this(),
                count,
                raw.configs.as_ptr(),
                i32::from(request_rundown),
                &mut session,
            )
        })?;
        Ok(EventPipeSessionId(session))
    }

    /// Enables one more provider in a running session
    /// (`ICorProfilerInfo12::EventPipeAddProviderToSession`). Any time.
    ///
    /// The runtime only adds the provider to the session's list: a provider made afterwards is
    /// enabled as it is made, but one that already exists (such as the runtime's own
    /// `Microsoft-Windows-DotNETRuntime`) keeps its state until a session starts or stops
    /// (observed on .NET 8.0.4). Name existing providers in `event_pipe_start_session`.
    pub fn event_pipe_add_provider_to_session(
        &self,
        session: EventPipeSessionId,
        provider: &EventPipeProviderConfig<'_>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo12::EventPipeAddProviderToSession";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        let raw = raw_configs(core::slice::from_ref(provider));
        // SAFETY: `this` is live; the config (passed by value) points at strings in `raw`.
        ok(M, unsafe {
            (vt.EventPipeAddProviderToSession)(self.this(), session.0, raw.configs[0])
        })
    }

    /// Stops a session started with `event_pipe_start_session`
    /// (`ICorProfilerInfo12::EventPipeStopSession`). Any time.
    pub fn event_pipe_stop_session(&self, session: EventPipeSessionId) -> Result<()> {
        const M: &str = "ICorProfilerInfo12::EventPipeStopSession";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        // SAFETY: `this` is live.
        ok(M, unsafe {
            (vt.EventPipeStopSession)(self.this(), session.0)
        })
    }

    /// Creates (or finds) a provider the profiler can define events on
    /// (`ICorProfilerInfo12::EventPipeCreateProvider`). Any time.
    pub fn event_pipe_create_provider(&self, name: &str) -> Result<EventPipeProviderId> {
        const M: &str = "ICorProfilerInfo12::EventPipeCreateProvider";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        let wide = to_wide(name);
        let mut provider: EVENTPIPE_PROVIDER = 0;
        // SAFETY: `this` is live; `wide` is NUL-terminated; `provider` is a valid out-param.
        ok(M, unsafe {
            (vt.EventPipeCreateProvider)(self.this(), wide.as_ptr(), &mut provider)
        })?;
        Ok(EventPipeProviderId(provider))
    }

    /// The name of a provider, e.g. one seen in `EventPipeEventDelivered`
    /// (`ICorProfilerInfo12::EventPipeGetProviderInfo`). Any time.
    pub fn event_pipe_get_provider_info(&self, provider: EventPipeProviderId) -> Result<String> {
        const M: &str = "ICorProfilerInfo12::EventPipeGetProviderInfo";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; `buf` has `cap` units; `needed` is a valid out-param.
            unsafe { (vt.EventPipeGetProviderInfo)(self.this(), provider.0, cap, needed, buf) }
        })
    }

    /// Defines an event on a provider made by the profiler
    /// (`ICorProfilerInfo12::EventPipeDefineEvent`). `OBJECT` fields are refused. Any time.
    pub fn event_pipe_define_event(
        &self,
        provider: EventPipeProviderId,
        event: &EventPipeEventDesc<'_>,
    ) -> Result<EventPipeEventId> {
        const M: &str = "ICorProfilerInfo12::EventPipeDefineEvent";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        let name = to_wide(event.name);
        let param_names: Vec<Vec<u16>> = event.params.iter().map(|p| to_wide(p.name)).collect();
        let params: Vec<COR_PRF_EVENTPIPE_PARAM_DESC> = event
            .params
            .iter()
            .zip(&param_names)
            .map(|(p, n)| COR_PRF_EVENTPIPE_PARAM_DESC {
                r#type: p.param_type.0,
                elementType: p.element_type.0,
                name: n.as_ptr(),
            })
            .collect();
        let count = u32::try_from(params.len()).unwrap_or(u32::MAX);
        let params_ptr = if params.is_empty() {
            ptr::null()
        } else {
            params.as_ptr()
        };
        let mut id: EVENTPIPE_EVENT = 0;
        // SAFETY: `this` is live; `name` and every parameter name are NUL-terminated and
        // outlive the call; `params_ptr` has `count` descriptors (or is null with 0); `id` is
        // a valid out-param.
        ok(M, unsafe {
            (vt.EventPipeDefineEvent)(
                self.this(),
                provider.0,
                name.as_ptr(),
                event.id,
                event.keywords,
                event.version,
                event.level.0,
                event.opcode,
                i32::from(event.need_stack),
                count,
                params_ptr,
                &mut id,
            )
        })?;
        Ok(EventPipeEventId(id))
    }

    /// Writes one instance of a profiler-defined event whose payload is the concatenation of
    /// `data` (`ICorProfilerInfo12::EventPipeWriteEvent`). Any time, any thread.
    pub fn event_pipe_write_event(
        &self,
        event: EventPipeEventId,
        data: &[&[u8]],
        activity_id: Option<&GUID>,
        related_activity_id: Option<&GUID>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo12::EventPipeWriteEvent";
        let vt = self.vt::<ICorProfilerInfo12Vtbl>(12, M)?;
        let chunks: Vec<COR_PRF_EVENT_DATA> = data
            .iter()
            .map(|d| COR_PRF_EVENT_DATA {
                ptr: d.as_ptr() as u64,
                size: u32::try_from(d.len()).unwrap_or(u32::MAX),
                reserved: 0,
            })
            .collect();
        let count = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
        let activity = activity_id.map_or(ptr::null(), |g| g as *const GUID);
        let related = related_activity_id.map_or(ptr::null(), |g| g as *const GUID);
        // SAFETY: `this` is live; every chunk points at a slice that outlives the call and
        // that the runtime only reads; the GUIDs are null or valid.
        ok(M, unsafe {
            (vt.EventPipeWriteEvent)(
                self.this(),
                event.0,
                count,
                chunks.as_ptr(),
                activity,
                related,
            )
        })
    }

    /// Like `event_pipe_create_provider`, with a function the runtime calls whenever a
    /// session enables or disables the provider (`ICorProfilerInfo14::EventPipeCreateProvider2`).
    /// The callback's `callback_data` is always null. Any time.
    pub fn event_pipe_create_provider2(
        &self,
        name: &str,
        callback: Option<EventPipeProviderCallback>,
    ) -> Result<EventPipeProviderId> {
        const M: &str = "ICorProfilerInfo14::EventPipeCreateProvider2";
        let vt = self.vt::<ICorProfilerInfo14Vtbl>(14, M)?;
        let wide = to_wide(name);
        let mut provider: EVENTPIPE_PROVIDER = 0;
        // SAFETY: `this` is live; `wide` is NUL-terminated; `callback` is null or a function
        // with the IDL's signature; `provider` is a valid out-param.
        ok(M, unsafe {
            (vt.EventPipeCreateProvider2)(self.this(), wide.as_ptr(), callback, &mut provider)
        })?;
        Ok(EventPipeProviderId(provider))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wide::from_wide;

    #[test]
    fn provider_configs_keep_their_strings() {
        let providers = [
            EventPipeProviderConfig {
                name: "Microsoft-Windows-DotNETRuntime",
                keywords: 0x4c14fccbd,
                level: EventPipeLevel::VERBOSE,
                filter_data: None,
            },
            EventPipeProviderConfig {
                name: "My-Provider",
                keywords: 1,
                level: EventPipeLevel::INFORMATIONAL,
                filter_data: Some("a=b;c=d"),
            },
        ];
        let raw = raw_configs(&providers);
        assert_eq!(raw.configs.len(), 2);
        // SAFETY: the strings live in `raw` and are NUL-terminated.
        let read = |p: *const u16| unsafe {
            let mut n = 0;
            while *p.add(n) != 0 {
                n += 1;
            }
            from_wide(core::slice::from_raw_parts(p, n))
        };
        assert_eq!(
            read(raw.configs[0].providerName),
            "Microsoft-Windows-DotNETRuntime"
        );
        assert!(raw.configs[0].filterData.is_null());
        assert_eq!(raw.configs[0].loggingLevel, 5);
        assert_eq!(read(raw.configs[1].filterData), "a=b;c=d");
        assert_eq!(raw.configs[1].keywords, 1);
    }

    #[test]
    fn levels_and_types_print_by_name() {
        assert_eq!(
            format!("{:?}", EventPipeLevel::VERBOSE),
            "EventPipeLevel::VERBOSE"
        );
        assert_eq!(
            format!("{:?}", EventPipeParamType(2)),
            "EventPipeParamType(2)"
        );
        assert_eq!(EventPipeParamType::STRING.0, 18);
    }
}
