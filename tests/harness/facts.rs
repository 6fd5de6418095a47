//! Facts of the profiling API that differ between the pinned runtimes, for the tests whose
//! exact expectation depends on them. `sdk_eventpipe`'s versions test asks each runtime and
//! checks what it answers against this table.

use crate::dotnet::Dotnet;

/// What a runtime's profiling API answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilingApi {
    /// The highest ICorProfilerInfo it implements (it answers every version up to it).
    pub info_version: u32,
    /// The ICorProfilerCallback versions it asks the profiler for: 2 in `CreateInstance`, then
    /// the highest it knows in `QueryInterface`.
    pub callback_versions_asked: &'static [u32],
}

impl Dotnet {
    /// What this runtime's profiling API answers, as observed: CoreCLR 3.1 implements
    /// ICorProfilerInfo 1..11 and uses ICorProfilerCallback9; .NET 8 implements
    /// ICorProfilerInfo 1..14 (15 came with .NET 9) and uses ICorProfilerCallback11.
    ///
    /// # Panics
    /// For a runtime nobody observed yet, saying how to find out.
    #[track_caller]
    pub fn profiling_api(&self) -> ProfilingApi {
        match self.major_minor() {
            (3, 1) => ProfilingApi {
                info_version: 11,
                callback_versions_asked: &[2, 9],
            },
            (8, 0) => ProfilingApi {
                info_version: 14,
                callback_versions_asked: &[2, 11],
            },
            _ => panic!(
                "no profiling API versions are pinned for .NET {}: run \
                 `cargo test -p clrprof-e2e --test sdk_eventpipe` on it and add what the probe \
                 reports to tests/harness/facts.rs",
                self.version
            ),
        }
    }

    /// Whether the JIT first compiles a method with a loop at tier 0, unoptimized (.NET 7 and
    /// later: `TC_QuickJitForLoops` is on, with on-stack replacement to leave the loop), rather
    /// than optimized at once (earlier runtimes). Tier-0 code inlines nothing.
    pub fn loops_start_at_tier0(&self) -> bool {
        self.major_minor() >= (7, 0)
    }

    /// Whether the runtime's `libcoreclr.so` keeps its symbol table (`.symtab`, which names
    /// its local functions: the garbage collector's, the type loader's): CoreCLR 3.1's does
    /// (27,335 symbols); .NET 8's is stripped as shipped, with only its exports (`.dynsym`,
    /// 328 symbols) and the unwind information of every function (`.eh_frame`).
    ///
    /// # Panics
    /// For a runtime nobody looked at yet.
    #[track_caller]
    pub fn libcoreclr_has_symtab(&self) -> bool {
        match self.major_minor() {
            (3, 1) => true,
            (8, 0) => false,
            _ => panic!(
                "whether .NET {}'s libcoreclr.so has a .symtab is not pinned: look                  (`readelf -S`) and add it to tests/harness/facts.rs",
                self.version
            ),
        }
    }

    /// Whether the runtime offers profilers in-process EventPipe sessions (ICorProfilerInfo12,
    /// .NET 5 and later), so that the agent reads `--alloc ticks` itself, rather than the CLI
    /// over the diagnostics socket.
    #[track_caller]
    pub fn has_in_process_eventpipe(&self) -> bool {
        self.profiling_api().info_version >= 12
    }

    /// The environment setting that makes the runtime open no diagnostics socket while it still
    /// loads profilers, as observed: .NET 8's `DOTNET_EnableDiagnostics_IPC=0` (there
    /// `DOTNET_EnableDiagnostics=0` turns profilers off too); CoreCLR 3.1 knows no `_IPC`
    /// setting and ignores the `DOTNET_` spelling of `EnableDiagnostics`, and its
    /// `COMPlus_EnableDiagnostics=0` closes the socket and still loads profilers.
    ///
    /// # Panics
    /// For a runtime nobody observed yet.
    #[track_caller]
    pub fn no_diagnostics_socket(&self) -> (&'static str, &'static str) {
        match self.major_minor() {
            (3, 1) => ("COMPlus_EnableDiagnostics", "0"),
            (8, 0) => ("DOTNET_EnableDiagnostics_IPC", "0"),
            _ => panic!(
                "which setting closes the diagnostics socket of .NET {} and keeps profilers is \
                 not known: find out and add it to tests/harness/facts.rs",
                self.version
            ),
        }
    }

    /// Whether the runtime still loads profilers with `DOTNET_EnableDiagnostics=0`, as
    /// observed: CoreCLR 3.1 ignores that spelling of the setting; .NET 8 then loads none.
    #[track_caller]
    pub fn loads_profilers_with_dotnet_enable_diagnostics_0(&self) -> bool {
        match self.major_minor() {
            (3, 1) => true,
            (8, 0) => false,
            _ => panic!(
                "whether .NET {} loads profilers with DOTNET_EnableDiagnostics=0 is not known: \
                 find out and add it to tests/harness/facts.rs",
                self.version
            ),
        }
    }

    /// Whether the GC has a pinned object heap (.NET 5 and later), which
    /// `GetGenerationBounds` reports as generation 4 after 0, 1, 2 and the large object heap.
    pub fn has_pinned_object_heap(&self) -> bool {
        self.major_minor() >= (5, 0)
    }
}
