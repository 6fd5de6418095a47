//! Record kinds.

use std::fmt;

/// The kind of a record: the first `u16` of its header.
///
/// Kinds this crate knows have associated constants; any other value is a kind added by a
/// newer minor version of the format and is read as [`crate::Record::Unknown`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKind(pub u16);

macro_rules! record_kinds {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $text:literal;)*) => {
        impl RecordKind {
            $($(#[$doc])* pub const $name: RecordKind = RecordKind($value);)*

            /// Every kind this version of the format defines, in increasing order.
            pub const KNOWN: &'static [RecordKind] = &[$(RecordKind::$name),*];

            /// The kind's name as the format doc spells it (`"Function"`), or `None` for a kind
            /// this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(RecordKind::$name => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

record_kinds! {
    /// `SessionStart`: written by the agent when it initializes.
    SESSION_START = 1, "SessionStart";
    /// `SessionEnd`: written by the agent at shutdown or detach.
    SESSION_END = 2, "SessionEnd";
    /// `RecordingEnd`: appended by the CLI when the recording ends.
    RECORDING_END = 3, "RecordingEnd";
    /// `Counter`: the cumulative value of a named agent counter.
    COUNTER = 4, "Counter";
    /// `Message`: a diagnostic from the agent for the user.
    MESSAGE = 5, "Message";
    /// `SamplerInfo`: how sample mode sampled (1.2).
    SAMPLER_INFO = 6, "SamplerInfo";
    /// `Section`: the records after it in its block belong to one process (3.5).
    SECTION = 7, "Section";
    /// `Process`: one process of a recorded process tree (1.5).
    PROCESS = 8, "Process";
    /// `ProcessExit`: the exit status a process passed to `exit` (1.5).
    PROCESS_EXIT = 9, "ProcessExit";
    /// `AppDomain` definition.
    APP_DOMAIN = 16, "AppDomain";
    /// `Assembly` definition.
    ASSEMBLY = 17, "Assembly";
    /// `Module` definition.
    MODULE = 18, "Module";
    /// `Class` definition.
    CLASS = 19, "Class";
    /// `Function` definition.
    FUNCTION = 20, "Function";
    /// `Thread` definition.
    THREAD = 21, "Thread";
    /// `NativeFrame` definition.
    NATIVE_FRAME = 22, "NativeFrame";
    /// `Stack` node definition.
    STACK = 23, "Stack";
    /// `ThreadOsName`: the kernel's name of a thread (1.2).
    THREAD_OS_NAME = 24, "ThreadOsName";
    /// `NativeModule` definition: a native module that native frames refer to (1.3).
    NATIVE_MODULE = 25, "NativeModule";
    /// `Event`: one profiler callback.
    EVENT = 32, "Event";
    /// `Sample`: one sampler tick for one thread.
    SAMPLE = 33, "Sample";
    /// `CallTreeNode`: one node of a thread's calling context tree.
    CALL_TREE_NODE = 34, "CallTreeNode";
    /// `ExceptionInfo`: message and throw-site stack of a thrown exception.
    EXCEPTION_INFO = 35, "ExceptionInfo";
    /// `NativeTarget` definition: the library and entry point of a P/Invoke method.
    NATIVE_TARGET = 36, "NativeTarget";
    /// `Allocation`: one recorded (or sampled) object allocation with its stack (1.1).
    ALLOCATION = 40, "Allocation";
    /// `GcGenerations`: the size of each GC generation at a collection's start or end (1.1).
    GC_GENERATIONS = 41, "GcGenerations";
    /// `HeapSnapshot`: a heap snapshot begins (1.1).
    HEAP_SNAPSHOT = 42, "HeapSnapshot";
    /// `HeapObject`: one live object of a heap snapshot and its references (1.1).
    HEAP_OBJECT = 43, "HeapObject";
    /// `HeapRoot`: one root of a heap snapshot (1.1).
    HEAP_ROOT = 44, "HeapRoot";
    /// `HeapSnapshotEnd`: a heap snapshot is complete (1.1).
    HEAP_SNAPSHOT_END = 45, "HeapSnapshotEnd";
    /// `HeapGenerations`: where each GC generation lies when a snapshot's heap is walked (1.1).
    HEAP_GENERATIONS = 46, "HeapGenerations";
    /// `AllocatedByClass`: objects allocated per class since the previous collection (1.1).
    ALLOCATED_BY_CLASS = 47, "AllocatedByClass";
    /// `HeapStatic`: a static field and the object it held in a heap snapshot (1.10).
    HEAP_STATIC = 48, "HeapStatic";
    /// `Contention`: one contended lock acquisition, its wait, stack, lock and holder (1.6).
    CONTENTION = 50, "Contention";
    /// `CoverageMethod`: basic-block hit counts of one instrumented method (format 1.1).
    COVERAGE_METHOD = 60, "CoverageMethod";
    /// `CountedMethod`: a method with call counters and its call sites (format 1.4).
    COUNTED_METHOD = 61, "CountedMethod";
    /// `CallCounts`: one thread's calls of one counted method and at its call sites (1.4).
    CALL_COUNTS = 62, "CallCounts";
}

impl RecordKind {
    /// Whether this crate knows the kind.
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }
}

impl fmt::Debug for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "RecordKind({} {name})", self.0),
            None => write!(f, "RecordKind({})", self.0),
        }
    }
}

/// `Function` for a known kind, `kind 99` otherwise.
impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "kind {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_display() {
        assert_eq!(RecordKind::FUNCTION.name(), Some("Function"));
        assert_eq!(RecordKind(99).name(), None);
        assert_eq!(RecordKind::EVENT.to_string(), "Event");
        assert_eq!(RecordKind(99).to_string(), "kind 99");
        assert_eq!(format!("{:?}", RecordKind::SAMPLE), "RecordKind(33 Sample)");
        assert!(RecordKind::KNOWN.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(RecordKind::KNOWN.len(), 37);
    }
}
