//! Event kinds: which `ICorProfilerCallback*` method an [`crate::Event`] reports, and what its
//! arguments mean.

use std::fmt;

/// The profiler callback an [`crate::Event`] reports: the 0-based vtable slot of the
/// `ICorProfilerCallback*` method (slots 0..=2 are `IUnknown`'s, so the first callback,
/// `Initialize`, is 3).
///
/// Every callback of `ICorProfilerCallback` through `ICorProfilerCallback11` has an associated
/// constant. A value without one is an event from a newer minor version of the format:
/// [`name`](Self::name) is `None` and [`category`](Self::category) is
/// [`EventCategory::Other`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventKind(pub u16);

/// What the format says about one callback.
struct Info {
    slot: u16,
    name: &'static str,
    interface: &'static str,
    category: EventCategory,
    args: &'static [&'static str],
}

macro_rules! event_kinds {
    ($($iface:literal {
        $($slot:literal $konst:ident $name:ident $cat:ident [$($arg:ident),*];)*
    })*) => {
        impl EventKind {
            $($(
                #[doc = concat!("`", $iface, "::", stringify!($name), "` (vtable slot ",
                    stringify!($slot), ").")]
                pub const $konst: EventKind = EventKind($slot);
            )*)*
        }

        /// One entry per callback, in slot order, starting at slot [`FIRST_SLOT`].
        static TABLE: &[Info] = &[$($(
            Info {
                slot: $slot,
                name: stringify!($name),
                interface: $iface,
                category: EventCategory::$cat,
                args: &[$(stringify!($arg)),*],
            },
        )*)*];

        /// Every callback's event with its args by name: one struct per callback, named as in
        /// `corprof.idl`, its fields the args in order ([`EventKind::arg_names`]). Made from the
        /// same table as [`EventKind`], so a reader never counts positions.
        pub mod callbacks {
            use super::EventKind;
            use crate::Event;

            /// A callback's args by name, as a writer fills them: what an event of
            /// [`KIND`](Self::KIND) carries, in the trace's order, without allocating.
            pub trait CallbackArgs: Copy {
                /// The event kind.
                const KIND: EventKind;
                /// The args as the trace carries them (an array as long as the callback has
                /// args).
                type Args: AsRef<[u64]>;
                /// The args in the trace's order.
                fn to_args(&self) -> Self::Args;
            }

            $($(
                #[doc = concat!("`", $iface, "::", stringify!($name), "`'s args.")]
                #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
                pub struct $name {
                    $(
                        #[doc = concat!("`", stringify!($arg), "`.")]
                        pub $arg: u64,
                    )*
                }

                impl $name {
                    /// The event kind this callback is.
                    pub const KIND: EventKind = EventKind::$konst;

                    /// The args of `e` if it is this callback's event; an arg the event
                    /// lacks (written by an older agent) reads as 0.
                    pub fn of(e: &Event) -> Option<Self> {
                        if e.event != Self::KIND {
                            return None;
                        }
                        #[allow(unused_mut, unused_variables)]
                        let mut args = e.args().iter().copied();
                        Some(Self {
                            $($arg: args.next().unwrap_or(0),)*
                        })
                    }

                    /// The args in the order the trace carries them.
                    pub fn args(&self) -> [u64; <[&str]>::len(&[$(stringify!($arg)),*])] {
                        [$(self.$arg),*]
                    }
                }

                impl CallbackArgs for $name {
                    const KIND: EventKind = EventKind::$konst;
                    type Args = [u64; <[&str]>::len(&[$(stringify!($arg)),*])];

                    fn to_args(&self) -> Self::Args {
                        self.args()
                    }
                }
            )*)*

            /// An event by its callback, with the callback's args by name.
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub enum Callback {
                $($(
                    #[doc = concat!("`", $iface, "::", stringify!($name), "`.")]
                    $name($name),
                )*)*
            }

            impl Callback {
                /// The callback `e` reports, with its args by name; `None` for a kind this
                /// crate does not know (a newer format's).
                pub fn of(e: &Event) -> Option<Callback> {
                    match e.event {
                        $($(
                            EventKind::$konst => $name::of(e).map(Callback::$name),
                        )*)*
                        _ => None,
                    }
                }

                /// The event kind of the callback.
                pub fn kind(&self) -> EventKind {
                    match self {
                        $($(
                            Callback::$name(_) => EventKind::$konst,
                        )*)*
                    }
                }

                /// The args in the order the trace carries them.
                pub fn args(&self) -> Vec<u64> {
                    match self {
                        $($(
                            Callback::$name(c) => c.args().to_vec(),
                        )*)*
                    }
                }
            }
        }
    };
}

/// What the names of the per-kind dropped-event counters start with.
const DROPPED_COUNTER_PREFIX: &str = "events_dropped:";

/// The slot of `Initialize`, the first callback after `IUnknown`'s three methods.
const FIRST_SLOT: u16 = 3;

// The order is the declaration order in `corprof.idl` (dotnet/runtime, src/coreclr/inc).
// Args: the callback's scalar `[in]` arguments in order; `[out]` arguments, GUIDs, strings
// and interface pointers are left out; arrays are summarized; a few values are looked up by
// the agent (see `docs/trace-format.md`).
event_kinds! {
    "ICorProfilerCallback" {
        3 INITIALIZE Initialize Runtime [];
        4 SHUTDOWN Shutdown Runtime [];
        5 APP_DOMAIN_CREATION_STARTED AppDomainCreationStarted AppDomain [app_domain];
        6 APP_DOMAIN_CREATION_FINISHED AppDomainCreationFinished AppDomain [app_domain, hr_status];
        7 APP_DOMAIN_SHUTDOWN_STARTED AppDomainShutdownStarted AppDomain [app_domain];
        8 APP_DOMAIN_SHUTDOWN_FINISHED AppDomainShutdownFinished AppDomain [app_domain, hr_status];
        9 ASSEMBLY_LOAD_STARTED AssemblyLoadStarted Assembly [assembly];
        10 ASSEMBLY_LOAD_FINISHED AssemblyLoadFinished Assembly [assembly, hr_status];
        11 ASSEMBLY_UNLOAD_STARTED AssemblyUnloadStarted Assembly [assembly];
        12 ASSEMBLY_UNLOAD_FINISHED AssemblyUnloadFinished Assembly [assembly, hr_status];
        13 MODULE_LOAD_STARTED ModuleLoadStarted Module [module];
        14 MODULE_LOAD_FINISHED ModuleLoadFinished Module [module, hr_status];
        15 MODULE_UNLOAD_STARTED ModuleUnloadStarted Module [module];
        16 MODULE_UNLOAD_FINISHED ModuleUnloadFinished Module [module, hr_status];
        17 MODULE_ATTACHED_TO_ASSEMBLY ModuleAttachedToAssembly Module [module, assembly];
        18 CLASS_LOAD_STARTED ClassLoadStarted Class [class];
        19 CLASS_LOAD_FINISHED ClassLoadFinished Class [class, hr_status];
        20 CLASS_UNLOAD_STARTED ClassUnloadStarted Class [class];
        21 CLASS_UNLOAD_FINISHED ClassUnloadFinished Class [class, hr_status];
        22 FUNCTION_UNLOAD_STARTED FunctionUnloadStarted Jit [function];
        23 JIT_COMPILATION_STARTED JITCompilationStarted Jit [function, is_safe_to_block, il_bytes];
        24 JIT_COMPILATION_FINISHED JITCompilationFinished Jit [function, hr_status, is_safe_to_block];
        25 JIT_CACHED_FUNCTION_SEARCH_STARTED JITCachedFunctionSearchStarted Jit [function];
        26 JIT_CACHED_FUNCTION_SEARCH_FINISHED JITCachedFunctionSearchFinished Jit [function, result, il_bytes];
        27 JIT_FUNCTION_PITCHED JITFunctionPitched Jit [function];
        28 JIT_INLINING JITInlining Jit [caller, callee];
        29 THREAD_CREATED ThreadCreated Thread [thread];
        30 THREAD_DESTROYED ThreadDestroyed Thread [thread];
        31 THREAD_ASSIGNED_TO_OS_THREAD ThreadAssignedToOSThread Thread [thread, os_thread_id];
        32 REMOTING_CLIENT_INVOCATION_STARTED RemotingClientInvocationStarted Remoting [];
        33 REMOTING_CLIENT_SENDING_MESSAGE RemotingClientSendingMessage Remoting [is_async];
        34 REMOTING_CLIENT_RECEIVING_REPLY RemotingClientReceivingReply Remoting [is_async];
        35 REMOTING_CLIENT_INVOCATION_FINISHED RemotingClientInvocationFinished Remoting [];
        36 REMOTING_SERVER_RECEIVING_MESSAGE RemotingServerReceivingMessage Remoting [is_async];
        37 REMOTING_SERVER_INVOCATION_STARTED RemotingServerInvocationStarted Remoting [];
        38 REMOTING_SERVER_INVOCATION_RETURNED RemotingServerInvocationReturned Remoting [];
        39 REMOTING_SERVER_SENDING_REPLY RemotingServerSendingReply Remoting [is_async];
        40 UNMANAGED_TO_MANAGED_TRANSITION UnmanagedToManagedTransition Transition [function, reason];
        41 MANAGED_TO_UNMANAGED_TRANSITION ManagedToUnmanagedTransition Transition [function, reason];
        42 RUNTIME_SUSPEND_STARTED RuntimeSuspendStarted Suspension [reason];
        43 RUNTIME_SUSPEND_FINISHED RuntimeSuspendFinished Suspension [];
        44 RUNTIME_SUSPEND_ABORTED RuntimeSuspendAborted Suspension [];
        45 RUNTIME_RESUME_STARTED RuntimeResumeStarted Suspension [];
        46 RUNTIME_RESUME_FINISHED RuntimeResumeFinished Suspension [];
        47 RUNTIME_THREAD_SUSPENDED RuntimeThreadSuspended Suspension [thread];
        48 RUNTIME_THREAD_RESUMED RuntimeThreadResumed Suspension [thread];
        49 MOVED_REFERENCES MovedReferences Gc [range_count, moved_bytes];
        50 OBJECT_ALLOCATED ObjectAllocated Gc [object, class, size];
        51 OBJECTS_ALLOCATED_BY_CLASS ObjectsAllocatedByClass Gc [class_count, object_count];
        52 OBJECT_REFERENCES ObjectReferences HeapRefs [object, class, ref_count];
        53 ROOT_REFERENCES RootReferences HeapRefs [root_count];
        54 EXCEPTION_THROWN ExceptionThrown Exception [object, class, throwing_function];
        55 EXCEPTION_SEARCH_FUNCTION_ENTER ExceptionSearchFunctionEnter Exception [function];
        56 EXCEPTION_SEARCH_FUNCTION_LEAVE ExceptionSearchFunctionLeave Exception [];
        57 EXCEPTION_SEARCH_FILTER_ENTER ExceptionSearchFilterEnter Exception [function];
        58 EXCEPTION_SEARCH_FILTER_LEAVE ExceptionSearchFilterLeave Exception [];
        59 EXCEPTION_SEARCH_CATCHER_FOUND ExceptionSearchCatcherFound Exception [function];
        60 EXCEPTION_OS_HANDLER_ENTER ExceptionOSHandlerEnter Exception [];
        61 EXCEPTION_OS_HANDLER_LEAVE ExceptionOSHandlerLeave Exception [];
        62 EXCEPTION_UNWIND_FUNCTION_ENTER ExceptionUnwindFunctionEnter Exception [function];
        63 EXCEPTION_UNWIND_FUNCTION_LEAVE ExceptionUnwindFunctionLeave Exception [];
        64 EXCEPTION_UNWIND_FINALLY_ENTER ExceptionUnwindFinallyEnter Exception [function];
        65 EXCEPTION_UNWIND_FINALLY_LEAVE ExceptionUnwindFinallyLeave Exception [];
        66 EXCEPTION_CATCHER_ENTER ExceptionCatcherEnter Exception [function, object];
        67 EXCEPTION_CATCHER_LEAVE ExceptionCatcherLeave Exception [];
        68 COM_CLASSIC_VTABLE_CREATED COMClassicVTableCreated Com [class, vtable, slot_count];
        69 COM_CLASSIC_VTABLE_DESTROYED COMClassicVTableDestroyed Com [class, vtable];
        70 EXCEPTION_CLR_CATCHER_FOUND ExceptionCLRCatcherFound Exception [];
        71 EXCEPTION_CLR_CATCHER_EXECUTE ExceptionCLRCatcherExecute Exception [];
    }
    "ICorProfilerCallback2" {
        72 THREAD_NAME_CHANGED ThreadNameChanged Thread [thread, name_len];
        73 GARBAGE_COLLECTION_STARTED GarbageCollectionStarted Gc [generations_collected_mask, reason];
        74 SURVIVING_REFERENCES SurvivingReferences Gc [range_count, surviving_bytes];
        75 GARBAGE_COLLECTION_FINISHED GarbageCollectionFinished Gc [];
        76 FINALIZEABLE_OBJECT_QUEUED FinalizeableObjectQueued Gc [finalizer_flags, object];
        77 ROOT_REFERENCES2 RootReferences2 HeapRefs [root_count];
        78 HANDLE_CREATED HandleCreated Gc [handle, object];
        79 HANDLE_DESTROYED HandleDestroyed Gc [handle];
    }
    "ICorProfilerCallback3" {
        80 INITIALIZE_FOR_ATTACH InitializeForAttach Runtime [client_data_len];
        81 PROFILER_ATTACH_COMPLETE ProfilerAttachComplete Runtime [];
        82 PROFILER_DETACH_SUCCEEDED ProfilerDetachSucceeded Runtime [];
    }
    "ICorProfilerCallback4" {
        83 REJIT_COMPILATION_STARTED ReJITCompilationStarted ReJit [function, rejit_id, is_safe_to_block];
        84 GET_REJIT_PARAMETERS GetReJITParameters ReJit [module, method_token];
        85 REJIT_COMPILATION_FINISHED ReJITCompilationFinished ReJit [function, rejit_id, hr_status, is_safe_to_block];
        86 REJIT_ERROR ReJITError ReJit [module, method_token, function, hr_status];
        87 MOVED_REFERENCES2 MovedReferences2 Gc [range_count, moved_bytes];
        88 SURVIVING_REFERENCES2 SurvivingReferences2 Gc [range_count, surviving_bytes];
    }
    "ICorProfilerCallback5" {
        89 CONDITIONAL_WEAK_TABLE_ELEMENT_REFERENCES ConditionalWeakTableElementReferences HeapRefs [root_count];
    }
    "ICorProfilerCallback6" {
        90 GET_ASSEMBLY_REFERENCES GetAssemblyReferences Assembly [];
    }
    "ICorProfilerCallback7" {
        91 MODULE_IN_MEMORY_SYMBOLS_UPDATED ModuleInMemorySymbolsUpdated Module [module];
    }
    "ICorProfilerCallback8" {
        92 DYNAMIC_METHOD_JIT_COMPILATION_STARTED DynamicMethodJITCompilationStarted Jit [function, is_safe_to_block, il_header_len];
        93 DYNAMIC_METHOD_JIT_COMPILATION_FINISHED DynamicMethodJITCompilationFinished Jit [function, hr_status, is_safe_to_block];
    }
    "ICorProfilerCallback9" {
        94 DYNAMIC_METHOD_UNLOADED DynamicMethodUnloaded Jit [function];
    }
    "ICorProfilerCallback10" {
        95 EVENT_PIPE_EVENT_DELIVERED EventPipeEventDelivered EventPipe [provider, event_id, event_version, metadata_len, event_data_len, thread, stack_frame_count];
        96 EVENT_PIPE_PROVIDER_CREATED EventPipeProviderCreated EventPipe [provider];
    }
    "ICorProfilerCallback11" {
        97 LOAD_AS_NOTIFICATION_ONLY LoadAsNotificationOnly Runtime [];
    }
}

impl EventKind {
    fn info(self) -> Option<&'static Info> {
        let index = self.0.checked_sub(FIRST_SLOT)?;
        TABLE.get(usize::from(index))
    }

    /// Every event kind this crate knows, in slot order.
    pub fn all() -> impl ExactSizeIterator<Item = EventKind> + Clone {
        TABLE.iter().map(|info| EventKind(info.slot))
    }

    /// The callback's name as `corprof.idl` spells it (`"ExceptionThrown"`), or `None` for a
    /// kind this crate does not know.
    pub fn name(self) -> Option<&'static str> {
        self.info().map(|i| i.name)
    }

    /// The interface that introduced the callback (`"ICorProfilerCallback2"`), or `None` for a
    /// kind this crate does not know.
    pub fn interface(self) -> Option<&'static str> {
        self.info().map(|i| i.interface)
    }

    /// The name of the agent counter of this kind's events dropped because the agent's
    /// buffer was full: `events_dropped:ExceptionThrown` (`events_dropped:event120` for a kind
    /// this crate does not know).
    pub fn dropped_counter(self) -> String {
        match self.name() {
            Some(name) => format!("{DROPPED_COUNTER_PREFIX}{name}"),
            None => format!("{DROPPED_COUNTER_PREFIX}event{}", self.0),
        }
    }

    /// The kind whose dropped events a counter named by [`dropped_counter`](Self::dropped_counter)
    /// counts.
    pub fn of_dropped_counter(counter: &str) -> Option<EventKind> {
        let name = counter.strip_prefix(DROPPED_COUNTER_PREFIX)?;
        EventKind::from_name(name).or_else(|| {
            name.strip_prefix("event")
                .and_then(|k| k.parse().ok())
                .map(EventKind)
        })
    }

    /// The event kind whose callback is called `name` (exact spelling, as in `corprof.idl`).
    pub fn from_name(name: &str) -> Option<EventKind> {
        TABLE
            .iter()
            .find(|i| i.name == name)
            .map(|i| EventKind(i.slot))
    }

    /// The group the callback belongs to; [`EventCategory::Other`] for an unknown kind.
    pub fn category(self) -> EventCategory {
        self.info().map_or(EventCategory::Other, |i| i.category)
    }

    /// What each of the event's `u64` args means, in order (`["object", "class",
    /// "throwing_function"]` for `ExceptionThrown`). Empty for an unknown kind.
    ///
    /// The args are the callback's scalar arguments in order (ids as `u64`, HRESULTs as their
    /// 32-bit value, `BOOL` as 0/1, enums as their value); arrays are summarized and a few
    /// values are looked up by the agent, as `docs/trace-format.md` explains.
    pub fn arg_names(self) -> &'static [&'static str] {
        self.info().map_or(&[], |i| i.args)
    }
}

impl fmt::Debug for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "EventKind({} {name})", self.0),
            None => write!(f, "EventKind({})", self.0),
        }
    }
}

/// The callback's name, or `event 120` for an unknown kind.
impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "event {}", self.0),
        }
    }
}

/// A group of related callbacks: what `clrprof record --events` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventCategory {
    /// Profiler lifetime: `Initialize`, `Shutdown`, attach and detach.
    Runtime,
    /// App domain creation and shutdown.
    AppDomain,
    /// Assembly loads and unloads.
    Assembly,
    /// Module loads, unloads and symbol updates.
    Module,
    /// Class loads and unloads.
    Class,
    /// JIT compilation, inlining, function unloads and dynamic methods.
    Jit,
    /// Thread creation, destruction and naming.
    Thread,
    /// Managed/unmanaged transitions.
    Transition,
    /// Runtime suspension and resumption.
    Suspension,
    /// Garbage collections, allocations, moved and surviving objects, GC handles.
    Gc,
    /// Object and root references reported after a GC (heap walks).
    HeapRefs,
    /// Exception throw, search, unwind and catch.
    Exception,
    /// .NET Framework remoting (never delivered by CoreCLR).
    Remoting,
    /// COM interop vtables (Windows only).
    Com,
    /// ReJIT requests.
    ReJit,
    /// EventPipe events delivered to the profiler.
    EventPipe,
    /// Anything else, including event kinds this crate does not know.
    Other,
}

impl EventCategory {
    /// Every category, including those [`all`](Self::all) leaves out.
    pub const EVERY: [EventCategory; 17] = [
        EventCategory::Runtime,
        EventCategory::AppDomain,
        EventCategory::Assembly,
        EventCategory::Module,
        EventCategory::Class,
        EventCategory::Jit,
        EventCategory::Thread,
        EventCategory::Transition,
        EventCategory::Suspension,
        EventCategory::Gc,
        EventCategory::HeapRefs,
        EventCategory::Exception,
        EventCategory::Remoting,
        EventCategory::Com,
        EventCategory::ReJit,
        EventCategory::EventPipe,
        EventCategory::Other,
    ];

    /// The categories `clrprof record --events` offers, in the order its help lists them:
    /// runtime, appdomain, assembly, module, class, jit, thread, transition, suspension, gc,
    /// heap-refs, exception. The others (remoting, com, rejit, eventpipe, other) are not
    /// delivered to a passive profiler on CoreCLR for Linux.
    pub fn all() -> &'static [EventCategory] {
        &Self::EVERY[..12]
    }

    /// The category's name on the command line (`"heap-refs"`).
    pub fn name(self) -> &'static str {
        match self {
            EventCategory::Runtime => "runtime",
            EventCategory::AppDomain => "appdomain",
            EventCategory::Assembly => "assembly",
            EventCategory::Module => "module",
            EventCategory::Class => "class",
            EventCategory::Jit => "jit",
            EventCategory::Thread => "thread",
            EventCategory::Transition => "transition",
            EventCategory::Suspension => "suspension",
            EventCategory::Gc => "gc",
            EventCategory::HeapRefs => "heap-refs",
            EventCategory::Exception => "exception",
            EventCategory::Remoting => "remoting",
            EventCategory::Com => "com",
            EventCategory::ReJit => "rejit",
            EventCategory::EventPipe => "eventpipe",
            EventCategory::Other => "other",
        }
    }

    /// The category named `name` (any category's [`name`](Self::name), ASCII case ignored).
    pub fn parse(name: &str) -> Option<EventCategory> {
        Self::EVERY
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// The known event kinds in this category, in slot order.
    pub fn events(self) -> impl Iterator<Item = EventKind> + Clone {
        EventKind::all().filter(move |e| e.category() == self)
    }
}

impl fmt::Display for EventCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn table_is_dense_and_in_slot_order() {
        for (i, info) in TABLE.iter().enumerate() {
            assert_eq!(
                usize::from(info.slot),
                i + usize::from(FIRST_SLOT),
                "{}",
                info.name
            );
        }
        assert_eq!(TABLE.len(), 95);
        assert!(
            TABLE.iter().all(|i| i.args.len() <= crate::Event::MAX_ARGS),
            "too many args"
        );
    }

    #[test]
    fn slots_match_corprof_idl() {
        // Spot checks of slots that are easy to verify by hand against corprof.idl.
        assert_eq!(EventKind::INITIALIZE.0, 3);
        assert_eq!(EventKind::SHUTDOWN.0, 4);
        assert_eq!(EventKind::APP_DOMAIN_CREATION_STARTED.0, 5);
        assert_eq!(EventKind::JIT_COMPILATION_STARTED.0, 23);
        assert_eq!(EventKind::EXCEPTION_THROWN.0, 54);
        assert_eq!(EventKind::EXCEPTION_CLR_CATCHER_EXECUTE.0, 71);
        assert_eq!(EventKind::THREAD_NAME_CHANGED.0, 72);
        assert_eq!(EventKind::GARBAGE_COLLECTION_STARTED.0, 73);
        assert_eq!(EventKind::INITIALIZE_FOR_ATTACH.0, 80);
        assert_eq!(EventKind::REJIT_COMPILATION_STARTED.0, 83);
        assert_eq!(EventKind::DYNAMIC_METHOD_UNLOADED.0, 94);
        assert_eq!(EventKind::EVENT_PIPE_EVENT_DELIVERED.0, 95);
        assert_eq!(EventKind::EVENT_PIPE_PROVIDER_CREATED.0, 96);
        assert_eq!(EventKind::LOAD_AS_NOTIFICATION_ONLY.0, 97);
    }

    #[test]
    fn names_categories_and_args() {
        let e = EventKind::EXCEPTION_THROWN;
        assert_eq!(e.name(), Some("ExceptionThrown"));
        assert_eq!(e.interface(), Some("ICorProfilerCallback"));
        assert_eq!(e.category(), EventCategory::Exception);
        assert_eq!(e.arg_names(), ["object", "class", "throwing_function"]);
        assert_eq!(
            EventKind::GARBAGE_COLLECTION_STARTED.arg_names(),
            ["generations_collected_mask", "reason"]
        );
        assert_eq!(
            EventKind::OBJECT_REFERENCES.arg_names(),
            ["object", "class", "ref_count"]
        );
        assert_eq!(
            EventKind::OBJECT_ALLOCATED.arg_names(),
            ["object", "class", "size"]
        );
        assert_eq!(
            EventKind::GARBAGE_COLLECTION_STARTED.interface(),
            Some("ICorProfilerCallback2")
        );
        assert_eq!(
            EventKind::from_name("JITInlining"),
            Some(EventKind::JIT_INLINING)
        );
        assert_eq!(EventKind::from_name("Nope"), None);
        for unknown in [
            EventKind(0),
            EventKind(2),
            EventKind(98),
            EventKind(u16::MAX),
        ] {
            assert_eq!(unknown.name(), None);
            assert_eq!(unknown.category(), EventCategory::Other);
            assert!(unknown.arg_names().is_empty());
        }
        assert_eq!(EventKind(120).to_string(), "event 120");
        assert_eq!(EventKind::SHUTDOWN.to_string(), "Shutdown");
        assert_eq!(
            format!("{:?}", EventKind::SHUTDOWN),
            "EventKind(4 Shutdown)"
        );
    }

    #[test]
    fn categories_parse_and_list() {
        assert_eq!(EventCategory::parse("jit"), Some(EventCategory::Jit));
        assert_eq!(EventCategory::parse("GC"), Some(EventCategory::Gc));
        assert_eq!(
            EventCategory::parse("heap-refs"),
            Some(EventCategory::HeapRefs)
        );
        assert_eq!(EventCategory::parse("heap_refs"), None);
        let names: Vec<&str> = EventCategory::all().iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "runtime",
                "appdomain",
                "assembly",
                "module",
                "class",
                "jit",
                "thread",
                "transition",
                "suspension",
                "gc",
                "heap-refs",
                "exception"
            ]
        );
        for c in EventCategory::EVERY {
            assert_eq!(EventCategory::parse(c.name()), Some(c));
            assert_eq!(c.to_string(), c.name());
        }
        // Every selectable category has at least one event.
        for c in EventCategory::all() {
            assert!(c.events().next().is_some(), "{c} has no events");
        }
        assert!(EventCategory::Other.events().next().is_none());
        assert_eq!(
            EventKind::all()
                .filter(|e| e.category() == EventCategory::Jit)
                .count(),
            10
        );
    }

    const BEGIN: &str = "<!-- BEGIN GENERATED EVENT TABLE";
    const END: &str = "<!-- END GENERATED EVENT TABLE -->";

    /// The markdown table of event kinds that `docs/trace-format.md` repeats.
    fn markdown_table() -> String {
        let mut out = String::from("| slot | callback | interface | category | args |\n");
        out.push_str("|---|---|---|---|---|\n");
        for info in TABLE {
            let args = if info.args.is_empty() {
                "(none)".to_string()
            } else {
                info.args
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!(
                "| {} | `{}` | {} | {} | {} |\n",
                info.slot,
                info.name,
                info.interface,
                info.category.name(),
                args
            ));
        }
        out
    }

    /// `doc` with the text between the markers replaced by `table`, or `None` if the markers
    /// are missing.
    fn splice(doc: &str, table: &str) -> Option<String> {
        let begin = doc.find(BEGIN)?;
        let begin_end = begin + doc[begin..].find("-->")? + 3;
        let end = begin_end + doc[begin_end..].find(END)?;
        Some(format!(
            "{}\n\n{}\n{}",
            &doc[..begin_end],
            table,
            &doc[end..]
        ))
    }

    #[test]
    fn every_callback_reads_its_args_by_name_in_table_order() {
        use super::callbacks::{Callback, ExceptionThrown};
        let e = crate::Event::new(5, 7, EventKind::EXCEPTION_THROWN, &[10, 20, 30]);
        assert_eq!(
            ExceptionThrown::of(&e),
            Some(ExceptionThrown {
                object: 10,
                class: 20,
                throwing_function: 30
            })
        );
        assert_eq!(
            super::callbacks::JITInlining::of(&e),
            None,
            "another callback's event"
        );
        for info in TABLE {
            let kind = EventKind(info.slot);
            let args: Vec<u64> = (1..=info.args.len() as u64).collect();
            let c = Callback::of(&crate::Event::new(0, 0, kind, &args))
                .unwrap_or_else(|| panic!("{kind:?} has no view"));
            assert_eq!(c.kind(), kind);
            assert_eq!(c.args(), args, "{kind:?}");
            // An older agent's event with fewer args reads the missing ones as 0.
            let short = Callback::of(&crate::Event::new(0, 0, kind, &[])).unwrap();
            assert!(short.args().iter().all(|&a| a == 0), "{kind:?}");
        }
        assert_eq!(
            Callback::of(&crate::Event::new(0, 0, EventKind(999), &[1])),
            None
        );
    }

    #[test]
    fn docs_event_table_is_current() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/trace-format.md");
        let doc = std::fs::read_to_string(&path).expect("read docs/trace-format.md");
        let expected = splice(&doc, &markdown_table()).unwrap_or_else(|| {
            panic!("docs/trace-format.md lacks the `{BEGIN} ... -->` and `{END}` markers")
        });
        if std::env::var_os("CLRPROF_BLESS").is_some_and(|v| v == "1") {
            if expected != doc {
                std::fs::write(&path, &expected).expect("write docs/trace-format.md");
            }
            return;
        }
        assert!(
            expected == doc,
            "the event table in docs/trace-format.md is out of date; run \
             `CLRPROF_BLESS=1 cargo test -p clrprof-trace` to regenerate it"
        );
    }
}
