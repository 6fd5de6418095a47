//! `clrprof report`: read a trace and write the report or a viewer's format.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clrprof_analysis::output::{Format, Json, Text};
use clrprof_analysis::{Query, memory, report, trace};

/// What to report, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The trace.
    pub file: PathBuf,
    /// Output format.
    pub format: Format,
    /// Output file (stdout if none).
    pub output: Option<PathBuf>,
    /// Text: print the call tree too.
    pub tree: bool,
    /// JSON: pretty-print.
    pub pretty: bool,
    /// Allocations: the text section, or allocation bytes in the profile formats.
    pub alloc: bool,
    /// The GC section of the text report.
    pub gc: bool,
    /// Thread, filter, top, metric.
    pub query: Query,
}

/// Writes the report.
pub fn report(opts: &ReportOptions) -> Result<()> {
    let loaded = trace::load(&opts.file)?;
    let binary = opts.format.is_binary();
    let mut out: Box<dyn Write> = match &opts.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None if binary && std::io::stdout().is_terminal() => {
            bail!("pprof output is binary; write it to a file with -o FILE")
        }
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let q = &opts.query;
    match opts.format {
        Format::Text if opts.alloc || opts.gc => {
            let top = q.top.unwrap_or(memory::TEXT_ROWS);
            if opts.alloc {
                memory::write_alloc_text(&loaded, top, &mut out)?;
            }
            if opts.gc {
                memory::write_gc_text(&loaded, &mut out)?;
            }
        }
        Format::Folded | Format::Flamegraph | Format::Speedscope | Format::Pprof if opts.alloc => {
            if !loaded.has_allocations() {
                bail!(
                    "{} has no allocations; record with --alloc",
                    opts.file.display()
                );
            }
            match opts.format {
                Format::Folded => {
                    for line in loaded.alloc_folded_lines() {
                        writeln!(out, "{line}")?;
                    }
                }
                Format::Flamegraph => loaded.write_alloc_flamegraph(&mut out)?,
                Format::Speedscope => loaded.write_alloc_speedscope(&mut out)?,
                _ => loaded.write_alloc_pprof(&mut out)?,
            }
        }
        Format::Text => {
            let text = Text {
                tree: opts.tree,
                ..Text::default()
            };
            report::write_text(&loaded, q, &text, &mut out)?;
        }
        Format::Json => report::write_json(
            &loaded,
            q,
            &Json {
                pretty: opts.pretty,
                ..Json::default()
            },
            &mut out,
        )?,
        other => {
            if !loaded.has_cpu_data() {
                bail!(
                    "{} has no CPU samples or call trees (it was recorded with --mode none); only the text and json formats apply",
                    opts.file.display()
                );
            }
            other.renderer().render(&loaded.profile(), q, &mut out)?;
        }
    }
    out.flush().context("writing the report")?;
    if let Some(path) = &opts.output {
        eprintln!("clrprof: wrote {}", path.display());
    }
    Ok(())
}
