//! `clrprof`: record .NET programs with the clrprof agent, and report on the traces.
//!
//! This binary only parses the command line, turns it into the options of [`record`] and
//! [`report`], and turns errors into clear messages; the work is in `clrprof-trace` (the file
//! format) and `clrprof-analysis` (everything a report shows).
#![forbid(unsafe_code)]

#[cfg(unix)]
mod agent_lib;
mod cli;
mod coverage;
#[cfg(unix)]
mod record;
mod report;

use std::process::ExitCode;

use clap::Parser;
use clrprof_analysis::{Format, Metric, Query};

#[cfg(unix)]
use cli::ModeArg;
use cli::{Cli, Command, FormatArg, MetricArg};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("clrprof: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("clrprof:   because: {cause}");
            }
            ExitCode::from(1)
        }
    }
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
            let opts = record::RecordOptions {
                mode: match a.mode {
                    ModeArg::Sample => "sample",
                    ModeArg::Trace => "trace",
                    ModeArg::None => "none",
                },
                events: a.events,
                rate: a.rate,
                inline: !a.no_inline,
                max_nodes: a.max_nodes,
                output: a.output,
                agent,
                command: a.command,
                extra_config: String::new(),
                summary: true,
            };
            record::record(&opts)
        }
        #[cfg(unix)]
        Command::Coverage(a) => coverage::coverage(a),
        #[cfg(not(unix))]
        Command::Coverage(_) => {
            anyhow::bail!(
                "`clrprof coverage` talks to the agent over a Unix socket and is available on Linux"
            )
        }
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
                },
                output: a.output,
                tree: a.tree,
                pretty: a.pretty,
                query: Query {
                    metric: a.metric.map(|m| match m {
                        MetricArg::Cpu => Metric::Cpu,
                        MetricArg::Wall => Metric::Wall,
                        MetricArg::Samples => Metric::Samples,
                        MetricArg::Calls => Metric::Calls,
                    }),
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
