//! `clrprof report`: read a trace and write the report or a viewer's format.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clrprof_analysis::output::{Format, Json, Text};
use clrprof_analysis::runtime::View;
use clrprof_analysis::{Query, report, trace};

/// What to report, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The trace.
    pub file: PathBuf,
    /// Output format.
    pub format: Format,
    /// Output file (stdout if none).
    pub output: Option<PathBuf>,
    /// Only this runtime view (text or JSON).
    pub view: Option<View>,
    /// Text: print the call tree too.
    pub tree: bool,
    /// JSON: pretty-print.
    pub pretty: bool,
    /// Thread, filter, top, metric.
    pub query: Query,
}

/// Writes the report.
pub fn report(opts: &ReportOptions) -> Result<()> {
    if opts.view.is_some() && !matches!(opts.format, Format::Text | Format::Json) {
        bail!(
            "--exceptions, --jit, --loads, --threads, --native and --suspensions are text or json \
             views; the Chrome timeline (--format chrome) shows all of them at once"
        );
    }
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
    if let Some(view) = opts.view {
        match opts.format {
            Format::Json => report::write_view_json(&loaded, view, opts.pretty, &mut out)?,
            _ => report::write_view_text(&loaded, view, &mut out)?,
        }
        out.flush().context("writing the report")?;
        return Ok(());
    }
    match opts.format {
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
        Format::Chrome => report::write_chrome(&loaded, q, &mut out)?,
        other => {
            if !loaded.has_cpu_data() {
                bail!(
                    "{} has no CPU samples or call trees (it was recorded with --mode none); only the text, json and chrome formats apply",
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
