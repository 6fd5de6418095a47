//! `clrprof ps`: the .NET processes of this user, found through their diagnostics sockets,
//! with what each runtime says about itself (the diagnostics `ProcessInfo` command).

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

/// The .NET processes of this user.
///
/// The runtime's `ProcessInfo` command gives the command line, OS and architecture; runtimes
/// older than .NET 5 do not know it, and then the command line comes from `/proc`. The
/// version is the name of the directory the runtime was loaded from.
pub fn rows() -> Vec<Row> {
    discovery::list()
        .into_iter()
        .map(|p| {
            let version = discovery::runtime_dir(p.pid)
                .and_then(|d| Some(d.file_name()?.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "?".into());
            let from_proc = || discovery::command_line(p.pid).unwrap_or_else(|| "?".into());
            match client::process_info(p.pid) {
                Ok(info) => Row {
                    pid: p.pid,
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
                        pid: p.pid,
                        runtime: version,
                        command_line: from_proc(),
                    }
                }
                Err(e) => Row {
                    pid: p.pid,
                    runtime: version,
                    command_line: format!("{} (the runtime does not answer: {e})", from_proc()),
                },
            }
        })
        .collect()
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
        eprintln!("clrprof: no .NET processes of this user found (none has a diagnostics socket)");
    }
    Ok(())
}
