//! `clrprof record --export URL ... -- PROGRAM`: runs the program in export mode (continuous
//! profiling) rather than recording a trace. The program gets the variables `clrprof env`
//! prints (the agent, then `CLRPROF_EXPORT_*`), so that it and every .NET process it starts
//! ship a profile of every period to the backend themselves; clrprof only starts it, passes
//! on the signals it receives and returns its exit status.
//!
//! With `-o FILE` ([`record_beside`]) it records a trace as well: an ordinary recording of
//! what export mode gathers (its CPU rate, and the allocation ticks, lock waits and throws of
//! the profiles chosen), whose agent also exports the same records (`also_export`), so that
//! the trace and the exported profiles can be compared sample for sample.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use clrprof_trace::config::{AgentConfig, AllocMode, ExportSettings, Mode};
use clrprof_trace::protocol;

use super::{EventChoice, RecordOptions};

/// Records `command` into `output` with what export mode gathers for `settings`, and exports
/// the same records; returns the program's exit code.
pub(crate) fn record_beside(
    settings: ExportSettings,
    output: PathBuf,
    agent: PathBuf,
    command: Vec<String>,
) -> Result<i32> {
    say!(
        "clrprof: export mode: {}, and a trace of it to {}",
        crate::env::describe(&settings),
        output.display()
    );
    let env = settings.to_env();
    let exported = AgentConfig::for_export(settings);
    let opts = RecordOptions {
        events: EventChoice {
            named: exported.events.clone(),
            all: false,
        },
        rate: exported.rate_hz,
        wall_rate: exported.wall_rate_hz,
        alloc: (exported.alloc != AllocMode::Off).then_some(exported.alloc),
        contention: exported.contention,
        env,
        base: AgentConfig {
            async_chains: exported.async_chains,
            also_export: true,
            ..AgentConfig::default()
        },
        ..RecordOptions::new(Mode::Sample, output, agent, command)
    };
    super::record(&opts)
}

/// Runs `command` in export mode with `settings` and the agent at `agent`; returns the
/// program's exit code (128 + the signal that ended it).
pub(crate) fn run(settings: &ExportSettings, agent: &Path, command: &[String]) -> Result<i32> {
    let (program, args) = super::resolve_program(command)?;
    let agent = agent.display().to_string();
    let mut cmd = Command::new(&program);
    cmd.args(&args)
        .envs(crate::env::variables(settings, &agent))
        .env("CORECLR_PROFILER_PATH_64", &agent)
        // Export mode is what the agent does when no CLI waits for it and no trace is asked.
        .env_remove(protocol::ENV_SESSION)
        .env_remove(protocol::ENV_OUTPUT)
        .env_remove(protocol::ENV_CONFIG);
    say!(
        "clrprof: export mode: {} (no trace is written)",
        crate::env::describe(settings)
    );
    // Ctrl-C reaches the program from the terminal; a signal sent to clrprof alone is passed
    // on, as `record` does.
    let signals = crate::signals::Signals::install()?;
    let mut child = cmd.spawn().map_err(|e| super::explain_spawn(&program, e))?;
    let pid = child.id();
    let status = loop {
        while let Some(received) = signals.next() {
            if !received.from_terminal {
                let _ = crate::signals::send(pid, received.signal);
            }
        }
        if let Some(status) = child.try_wait().context("waiting for the program")? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(super::exit_code(status))
}
