//! The runtime's perf map, which tells the agent what kind each of the runtime's stubs is
//! (precode, interface dispatch, vtable calls, ...: see the agent's `sampler/stubs.rs`).
//!
//! `record` asks every .NET process of its tree for it (`DOTNET_PerfMapEnabled=3`, the map
//! alone, on .NET 8 and later), written into `record`'s private directory where the runtime
//! lets it choose (`DOTNET_PerfMapJitDumpPath`, .NET 5 and later), so that it goes with that
//! directory; a runtime that writes it into its `TMPDIR` instead (with a `perfinfo-PID.map`
//! beside it) has the files of the processes `record` saw removed once they have ended.
//!
//! CoreCLR 3.1 is not asked (it reads `COMPlus_PerfMapEnabled` only, which `record` leaves
//! alone): its perf map can crash the program as it exits. The runtime closes the map at
//! shutdown while other threads may still be writing to it (a method compiled, a stub made),
//! and such a thread reads the freed map (dotnet/coreclr#27072, fixed in .NET 5). Measured
//! here: `HttpServer` under `wrk` on 3.1.23, ended by a segmentation fault in
//! `PerfMap::WriteLine` on a pool thread once in nine runs of the bench. On 3.1 the runtime's
//! stubs are one nameless `[runtime stub]`, unless the user sets `COMPlus_PerfMapEnabled`.
//!
//! A program whose environment already says something of the perf map is left as it is, and
//! its files too.
//! Writing the map costs the runtime a line per compiled method and per block of stubs: not
//! measurable on the tests' programs. Under a file-size limit (`ulimit -f`) the map is not
//! asked for: a runtime whose map grows past the limit dies of `SIGXFSZ` (it does not handle
//! it), and the program must run as it would unprofiled; the runtime's stubs are then one nameless
//! `[runtime stub]`.

use std::path::Path;
use std::process::Command;

/// The settings that turn the runtime's perf map on or off.
const ENABLED: [&str; 2] = ["DOTNET_PerfMapEnabled", "COMPlus_PerfMapEnabled"];

/// Whether `record` asked for the perf maps (and so removes them).
pub(super) struct PerfMaps {
    ours: bool,
}

impl PerfMaps {
    /// Asks the runtime of `cmd` (and of every process it starts) for its perf map in `dir`,
    /// unless the environment already says something of it or files may not grow freely.
    pub(super) fn ask(cmd: &mut Command, dir: &Path) -> PerfMaps {
        if ENABLED.iter().any(|v| std::env::var_os(v).is_some()) || file_size_limited() {
            return PerfMaps { ours: false };
        }
        cmd.env("DOTNET_PerfMapEnabled", "3")
            .env("DOTNET_PerfMapJitDumpPath", dir);
        PerfMaps { ours: true }
    }

    /// Removes the perf map files the runtimes of `pids` wrote outside `record`'s directory
    /// (CoreCLR 3.1's, into `TMPDIR`), if `record` asked for them.
    pub(super) fn remove(&self, pids: impl Iterator<Item = u32>) {
        if !self.ours {
            return;
        }
        let dirs = [std::env::temp_dir(), std::path::PathBuf::from("/tmp")];
        for pid in pids {
            for dir in &dirs {
                for name in [format!("perf-{pid}.map"), format!("perfinfo-{pid}.map")] {
                    let _ = std::fs::remove_file(dir.join(name));
                }
            }
        }
    }
}

/// Whether this process (and so the program it starts) has a file-size limit.
#[cfg(unix)]
fn file_size_limited() -> bool {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    getrlimit(Resource::RLIMIT_FSIZE).is_ok_and(|(soft, _)| soft != RLIM_INFINITY)
}

#[cfg(not(unix))]
fn file_size_limited() -> bool {
    false
}
