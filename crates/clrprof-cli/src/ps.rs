//! `clrprof ps`: the .NET processes of this user, found through their diagnostics sockets,
//! with what each runtime says about itself (the diagnostics `ProcessInfo` command), and the
//! .NET processes without a socket. A process `attach` cannot attach to says why, in the
//! words `attach` uses ([`cannot_attach`]): diagnostics disabled, a profiler already loaded.

use std::io::Write;

use anyhow::Result;
use clrprof_ipc::{client, discovery, message};

/// One line of `clrprof ps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Process id.
    pub pid: u32,
    /// Runtime version (the name of the directory `libcoreclr.so` was loaded from), OS and
    /// architecture.
    pub runtime: String,
    /// Command line, or why it is unknown.
    pub command_line: String,
}

/// The environment of process `pid`, if we may read it.
fn environ(pid: u32) -> Option<Vec<(String, String)>> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(
        raw.split(|&b| b == 0)
            .filter_map(|var| {
                let var = String::from_utf8_lossy(var);
                let (k, v) = var.split_once('=')?;
                Some((k.to_string(), v.to_string()))
            })
            .collect(),
    )
}

/// The setting in `env` that turns the runtime's diagnostics off, if any: `NAME=0`.
fn diagnostics_off(env: &[(String, String)]) -> Option<String> {
    [
        "DOTNET_EnableDiagnostics",
        "COMPlus_EnableDiagnostics",
        "DOTNET_EnableDiagnostics_IPC",
        "COMPlus_EnableDiagnostics_IPC",
    ]
    .into_iter()
    .find(|name| env.iter().any(|(k, v)| k == name && v.trim() == "0"))
    .map(|name| format!("{name}=0"))
}

/// The parent of process `pid` (field 4 of `/proc/PID/stat`).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Why `clrprof attach` cannot attach to process `pid`, which is alive, if it can be told
/// before trying: its diagnostics are disabled, or a profiler is loaded in it already (a
/// process `clrprof record` runs, for one). `None` if nothing stands in the way, or what
/// does is told by the attempt (no such process, not a .NET process).
pub fn cannot_attach(pid: u32) -> Option<String> {
    if !discovery::is_alive(pid) {
        return None;
    }
    let env = environ(pid).unwrap_or_default();
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    if discovery::socket_path(pid).is_err() {
        let dotnet = discovery::runtime_dir(pid).is_some();
        return match diagnostics_off(&env) {
            Some(setting) => Some(format!(
                "diagnostics are disabled in that process ({setting} in its environment): \
                 the runtime opened no diagnostics socket, so no profiler can attach; start \
                 the program without {}, or record it from its start with `clrprof record`",
                setting.trim_end_matches("=0")
            )),
            None if dotnet => Some(format!(
                "process {pid} runs .NET but has no diagnostics socket where its TMPDIR says \
                 ({}); was it started with another TMPDIR, or was the socket deleted?",
                var("TMPDIR").unwrap_or("/tmp")
            )),
            None => None,
        };
    }
    if var("CORECLR_ENABLE_PROFILING").is_some_and(|v| v.trim() == "1") {
        let library = var("CORECLR_PROFILER_PATH_64")
            .or_else(|| var("CORECLR_PROFILER_PATH"))
            .filter(|p| !p.is_empty() && maps.contains(*p));
        if let Some(library) = library {
            let by = match (var(clrprof_trace::protocol::ENV_SESSION), parent(pid)) {
                (Some(_), Some(ppid)) => format!(
                    "it is being recorded by `clrprof record` (pid {ppid}), whose trace has \
                     everything an attach would see"
                ),
                _ => "it was started with CORECLR_ENABLE_PROFILING=1".to_string(),
            };
            return Some(format!(
                "a profiler is already loaded in that process ({library}), and only one can \
                 be: {by}"
            ));
        }
    }
    None
}

/// The .NET processes of this user.
///
/// The runtime's `ProcessInfo` command gives the command line, OS and architecture; runtimes
/// older than .NET 5 do not know it, and then the command line comes from `/proc`. The
/// version is the name of the directory the runtime was loaded from.
pub fn rows() -> Vec<Row> {
    let mut pids: Vec<u32> = discovery::list().into_iter().map(|p| p.pid).collect();
    // .NET processes without a diagnostics socket are listed too, with the reason.
    pids.extend(
        unreachable_dotnet()
            .filter(|pid| !pids.contains(pid))
            .collect::<Vec<_>>(),
    );
    pids.sort_unstable();
    pids.into_iter()
        .map(|pid| (pid, cannot_attach(pid)))
        .map(|(pid, blocked)| {
            let mut row = row(pid);
            if let Some(why) = blocked {
                row.command_line
                    .push_str(&format!("  [cannot attach: {why}]"));
            }
            row
        })
        .collect()
}

/// This user's processes that load the .NET runtime but have no diagnostics socket.
fn unreachable_dotnet() -> impl Iterator<Item = u32> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(move |&pid| {
            std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| Some(m.uid()) == me)
        })
        .filter(|&pid| {
            discovery::runtime_dir(pid).is_some() && discovery::socket_path(pid).is_err()
        })
}

/// The row of one process.
fn row(pid: u32) -> Row {
    let version = discovery::runtime_dir(pid)
        .and_then(|d| Some(d.file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "?".into());
    let from_proc = || discovery::command_line(pid).unwrap_or_else(|| "?".into());
    if discovery::socket_path(pid).is_err() {
        return Row {
            pid,
            runtime: version,
            command_line: from_proc(),
        };
    }
    match client::process_info(pid) {
        Ok(info) => Row {
            pid,
            runtime: [version, info.os, info.arch]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            command_line: if info.command_line.is_empty() {
                from_proc()
            } else {
                info.command_line
            },
        },
        Err(clrprof_ipc::Error::Refused { hresult })
            if hresult == message::DS_IPC_E_UNKNOWN_COMMAND =>
        {
            Row {
                pid,
                runtime: version,
                command_line: from_proc(),
            }
        }
        Err(e) => Row {
            pid,
            runtime: version,
            command_line: format!("{} (the runtime does not answer: {e})", from_proc()),
        },
    }
}

/// Prints the table.
pub fn ps(out: &mut impl Write) -> Result<()> {
    let rows = rows();
    let width = rows
        .iter()
        .map(|r| r.runtime.len())
        .max()
        .unwrap_or(0)
        .max("RUNTIME".len());
    writeln!(out, "{:>8}  {:<width$}  COMMAND", "PID", "RUNTIME")?;
    for r in &rows {
        writeln!(
            out,
            "{:>8}  {:<width$}  {}",
            r.pid, r.runtime, r.command_line
        )?;
    }
    if rows.is_empty() {
        say!("clrprof: no .NET processes of this user found");
    }
    Ok(())
}
