//! `clrprof`: record .NET programs with the clrprof agent, and report on the traces.
//!
//! This binary only parses the command line, turns it into the options of [`record`],
//! [`report`], [`ps`], [`attach`] and [`env`], and turns errors into clear messages; the work is in `clrprof-trace` (the file
//! format) and `clrprof-analysis` (everything a report shows).
#![forbid(unsafe_code)]

/// `eprintln!` that never panics: a message to a closed or failing standard error (`clrprof
/// record ... 2>&1 | head -c 1`) is dropped, and the command goes on to its own end (a
/// recording keeps the program's exit code).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(unix)]
mod agent_lib;
#[cfg(unix)]
mod alloc_ticks;
#[cfg(unix)]
mod attach;
mod cli;
#[cfg(unix)]
mod contention;
mod coverage;
#[cfg(unix)]
mod descendants;
mod env;
#[cfg(unix)]
mod event_session;
#[cfg(unix)]
mod managed_stacks;
mod overlap;
#[cfg(unix)]
mod private_dir;
mod progress_line;
#[cfg(unix)]
mod ps;
#[cfg(unix)]
mod record;
mod report;
mod safe_file;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
mod status;
mod symbol_server;
#[cfg(unix)]
mod trace_file;

use std::process::ExitCode;

use clap::Parser;
use clrprof_analysis::{Format, Query};

use cli::{Cli, Command, FormatArg};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        // A reader that stopped early (`clrprof report t | head`) is not an error: clrprof
        // ends quietly, as other Unix tools do.
        Err(e) if is_broken_pipe(&e) => closed_pipe(),
        Err(e) => {
            for line in error_lines(&e) {
                say!("{line}");
            }
            ExitCode::from(1)
        }
    }
}

/// The lines that tell an error: `clrprof: error: ...`, then each cause that says something
/// not said yet (`because: ...`); a cause whose message an outer one already holds (as
/// `"{path}: {cause}"` does) is not said twice.
fn error_lines(e: &anyhow::Error) -> Vec<String> {
    let mut said = e.to_string();
    let mut lines = vec![format!("clrprof: error: {said}")];
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if text.is_empty() || said.contains(&text) {
            continue;
        }
        lines.push(format!("clrprof:   because: {text}"));
        said.push('\n');
        said.push_str(&text);
    }
    lines
}

/// Ends the process as a Unix tool whose output pipe closed ends: killed by SIGPIPE (the
/// Rust runtime ignores the signal, so that the write fails instead), which a shell reports
/// as status 141.
#[cfg(unix)]
fn closed_pipe() -> ExitCode {
    let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    ExitCode::from(128 + 13)
}

#[cfg(not(unix))]
fn closed_pipe() -> ExitCode {
    ExitCode::SUCCESS
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        #[cfg(not(unix))]
        Command::Record(_) => anyhow::bail!(
            "`clrprof record` talks to the agent over a Unix socket and is available on Linux; here, \
             run the program with CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={}, \
             CORECLR_PROFILER_PATH=<agent> and CLRPROF_OUTPUT=<trace file>, then `clrprof report`",
            clrprof_trace::protocol::AGENT_CLSID
        ),
        #[cfg(unix)]
        Command::Record(a) => {
            let agent = agent_lib::locate(a.agent.as_deref())?;
            if let Some(endpoint) = &a.export {
                let settings = env::settings(endpoint, &a.export_options)?;
                return match a.output {
                    None => record::export::run(&settings, &agent, &a.command),
                    Some(output) => {
                        record::export::record_beside(settings, output, agent, a.command)
                    }
                };
            }
            if let Some(flag) = a.export_options.first_given() {
                anyhow::bail!("{flag} is a setting of export mode: use it with --export URL");
            }
            if a.mode != clrprof_trace::config::Mode::Count
                && !(a.include.is_empty() && a.exclude.is_empty())
            {
                anyhow::bail!(
                    "--include and --exclude choose the assemblies count mode counts: use them with --mode count"
                );
            }
            let base = clrprof_trace::config::AgentConfig {
                count_include: coverage::assembly_names(&a.include)?,
                count_exclude: coverage::assembly_names(&a.exclude)?,
                async_chains: !a.no_async,
                ..Default::default()
            };
            let opts = record::RecordOptions {
                events: record::EventChoice::parse(&a.events)?,
                base,
                rate: a.rate,
                wall_rate: a.wall_rate,
                cpu_clock: a.cpu_clock,
                inline: !a.no_inline,
                max_nodes: a.max_nodes,
                alloc: a.alloc,
                alloc_interval: a.alloc_interval,
                contention: a.contention,
                heap_snapshot: a.heap_snapshot,
                buffer_kib: a.buffer_size,
                processes: record::ProcessFilter {
                    no_children: a.no_children,
                    pids: a.pid_filter,
                    names: a.name_filter,
                },
                ..record::RecordOptions::new(
                    a.mode,
                    a.output
                        .unwrap_or_else(|| std::path::PathBuf::from(record::DEFAULT_OUTPUT)),
                    agent,
                    a.command,
                )
            };
            record::record(&opts)
        }
        #[cfg(not(unix))]
        Command::Ps | Command::Attach(_) => anyhow::bail!(
            "`clrprof ps` and `clrprof attach` use the runtime's diagnostics socket and are available on Linux"
        ),
        #[cfg(unix)]
        Command::Ps => {
            ps::ps(&mut std::io::stdout().lock())?;
            Ok(0)
        }
        #[cfg(unix)]
        Command::Attach(a) => {
            if a.stop {
                if let Some(flag) = a.export_options.first_given() {
                    anyhow::bail!("--stop takes no export setting ({flag})");
                }
                return attach::export::stop(a.pid);
            }
            let agent = agent_lib::locate(a.agent.as_deref())?;
            if let Some(endpoint) = &a.export {
                let settings = env::settings(endpoint, &a.export_options)?;
                return attach::export::start(a.pid, &settings, &agent);
            }
            if let Some(flag) = a.export_options.first_given() {
                anyhow::bail!("{flag} is a setting of export mode: use it with --export URL");
            }
            let opts = attach::AttachOptions {
                pid: a.pid,
                duration: a.duration,
                record: record::RecordOptions {
                    events: record::EventChoice::parse(&a.events)?,
                    rate: a.rate,
                    wall_rate: a.wall_rate,
                    // `attach` refuses what needs the allocation callback.
                    alloc: a.alloc,
                    contention: a.contention,
                    ..record::RecordOptions::new(a.mode, a.output, agent, Vec::new())
                },
            };
            attach::attach(&opts)
        }
        #[cfg(unix)]
        Command::Coverage(a) => coverage::coverage(a),
        #[cfg(not(unix))]
        Command::Coverage(_) => {
            anyhow::bail!(
                "`clrprof coverage` talks to the agent over a Unix socket and is available on Linux"
            )
        }
        Command::Env(a) => env::env(&a),
        Command::Report(a) => {
            let opts = report::ReportOptions {
                file: a.file,
                format: match a.format {
                    FormatArg::Text => Format::Text,
                    FormatArg::Json => Format::Json,
                    FormatArg::Folded => Format::Folded,
                    FormatArg::Flamegraph => Format::Flamegraph,
                    FormatArg::Speedscope => Format::Speedscope,
                    FormatArg::Chrome => Format::Chrome,
                    FormatArg::Pprof => Format::Pprof,
                    FormatArg::Html => Format::Html,
                },
                output: a.output,
                view: a.view.view(),
                tree: a.tree,
                pretty: a.pretty,
                alloc: a.alloc,
                contention: a.contention || a.view.contention(),
                lines: a.lines,
                source: a.source,
                source_roots: a.source_root,
                no_async: a.no_async,
                gc: a.gc,
                heap: a.heap,
                snapshot: a.snapshot,
                diff: a.diff,
                symbols: a.symbols,
                servers: symbol_server::ServerOptions {
                    servers: symbol_server::check_servers(&a.symbol_servers)?,
                    cache: a.symbol_cache.or_else(symbol_server::default_dir),
                    offline: a.offline,
                    timeout: std::time::Duration::from_secs(a.symbol_timeout),
                },
                pid: a.pid,
                processes: a.processes,
                all_frames: a.all_frames,
                width: a.width,
                query: Query {
                    metric: a.metric,
                    thread: a.thread,
                    filter: a.filter,
                    top: a.top,
                },
            };
            report::report(&opts)?;
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::IsADirectory, "Is a directory");
        let e = anyhow::Error::new(io)
            .context("t.clrprof: Is a directory")
            .context("reading t.clrprof: Is a directory");
        assert_eq!(
            error_lines(&e),
            ["clrprof: error: reading t.clrprof: Is a directory"]
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(io).context("--symbols");
        assert_eq!(
            error_lines(&e),
            [
                "clrprof: error: --symbols",
                "clrprof:   because: No such file"
            ]
        );
    }
}
