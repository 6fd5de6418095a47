//! `clrprof coverage`: run a program with the agent's block probes on, then write the hit
//! counts per method, block and (with symbols) source line.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Output formats of `coverage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CoverageFormatArg {
    /// Per method: blocks with their IL ranges and hits, and line hits.
    Text,
    /// The same, as JSON.
    Json,
    /// lcov tracefile (for `genhtml`); methods with symbols only.
    Lcov,
    /// Cobertura XML.
    Cobertura,
}

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Cover only this assembly (file name without extension); repeatable. Default: every
    /// assembly outside the .NET framework.
    #[arg(long, value_name = "ASSEMBLY")]
    pub include: Vec<String>,
    /// Never cover this assembly; repeatable.
    #[arg(long, value_name = "ASSEMBLY")]
    pub exclude: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: CoverageFormatArg,
    /// Where to write the coverage (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also keep the raw trace (the block counts as recorded) in this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The agent library to load (default: the one installed next to clrprof).
    #[arg(long, value_name = "PATH", env = "CLRPROF_AGENT")]
    pub agent: Option<PathBuf>,
    /// The program and its arguments. A `.dll` is run with `dotnet`.
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

/// The agent settings for a coverage run: block counters, in the assemblies chosen.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn agent_config(
    include: &[String],
    exclude: &[String],
) -> anyhow::Result<clrprof_trace::config::AgentConfig> {
    Ok(clrprof_trace::config::AgentConfig {
        coverage: true,
        cover_include: assembly_names(include)?,
        cover_exclude: assembly_names(exclude)?,
        ..Default::default()
    })
}

/// Runs the program under the agent with coverage on; writes the report. Returns the
/// program's exit code (as `record` does).
#[cfg(unix)]
pub fn coverage(a: CoverageArgs) -> anyhow::Result<i32> {
    use clrprof_analysis::coverage::{CoverageFormat, CoverageReport};

    let agent = crate::agent_lib::locate(a.agent.as_deref())?;
    let base = agent_config(&a.include, &a.exclude)?;
    {
        use crate::overlap::Named;
        let inputs = crate::overlap::command_inputs(&a.command);
        let inputs: Vec<_> = inputs
            .iter()
            .map(|(what, path)| Named::new(what.clone(), path))
            .collect();
        let mut outputs = Vec::new();
        if let Some(o) = &a.output {
            // Refused before the program runs, not after.
            crate::safe_file::check_target(o)?;
            outputs.push(Named::new("-o", o));
        }
        if let Some(t) = &a.trace {
            outputs.push(Named::new("--trace", t));
        }
        crate::overlap::refuse(&outputs, &inputs)?;
    }
    let dir = crate::private_dir::create("clrprof-coverage-")?;
    let trace = a
        .trace
        .clone()
        .unwrap_or_else(|| dir.path().join("coverage.clrprof"));
    let opts = crate::record::RecordOptions {
        inline: false,
        base,
        summary: false,
        ..crate::record::RecordOptions::new(
            clrprof_trace::config::Mode::None,
            trace.clone(),
            agent,
            a.command,
        )
    };
    let outcome = crate::record::run(&opts)?;
    let code = outcome.code;
    let kept = |what: &str| match &a.output {
        Some(path) => say!("clrprof:   {what}; {} was not replaced", path.display()),
        None => say!("clrprof:   {what}; no coverage was written"),
    };
    if !outcome.complete {
        // `record` said why; nothing here is this run's coverage.
        kept("nothing was counted");
        return Ok(if code == 0 { 1 } else { code });
    }
    let loaded = clrprof_analysis::trace::load(&trace)?;
    if !loaded.ended_cleanly() {
        let ended = loaded
            .recording_end
            .as_ref()
            .map(|e| clrprof_analysis::ending::program_end(e.exit_code, e.signal))
            .unwrap_or_else(|| "its end is unknown".into());
        say!(
            "clrprof: error: the program did not shut the runtime down ({ended}), so the agent \
             never wrote its block counts: there is no coverage to report"
        );
        match &a.trace {
            Some(t) => kept(&format!(
                "the trace, with what was recorded, is {}",
                t.display()
            )),
            None => kept("nothing was kept"),
        }
        return Ok(if code == 0 { 1 } else { code });
    }
    let report = CoverageReport::from_trace(&loaded);
    for s in report.without_symbols() {
        let meaning = match a.format {
            CoverageFormatArg::Lcov => format!(
                "lcov has no place for code without source lines, so its {} methods are left out",
                s.methods
            ),
            CoverageFormatArg::Cobertura => {
                "its methods are shown by IL block, without source lines (their rates are block rates)"
                    .to_string()
            }
            CoverageFormatArg::Text | CoverageFormatArg::Json => {
                "its methods are shown by IL block, without source lines".to_string()
            }
        };
        say!(
            "clrprof: warning: no source lines for {}: {}; {meaning}",
            s.assembly,
            s.description
        );
    }
    let text = report.render(match a.format {
        CoverageFormatArg::Text => CoverageFormat::Text,
        CoverageFormatArg::Json => CoverageFormat::Json,
        CoverageFormatArg::Lcov => CoverageFormat::Lcov,
        CoverageFormatArg::Cobertura => CoverageFormat::Cobertura,
    });
    match &a.output {
        Some(path) => crate::safe_file::write(path, text.as_bytes())?,
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A reader that went away takes the coverage with it, not the program's exit code.
            if let Err(e) = stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(anyhow::Error::new(e).context("writing the coverage"));
            }
        }
    }
    let (blocks, covered) = report.block_totals();
    say!(
        "clrprof: {} methods, {covered} of {blocks} blocks entered{}",
        report.methods.len(),
        a.output
            .as_ref()
            .map(|p| format!("; wrote {}", p.display()))
            .unwrap_or_default()
    );
    Ok(code)
}

/// An include or exclude list of coverage or count mode, refusing what is not an assembly
/// name (which the agent's configuration could not carry).
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn assembly_names(names: &[String]) -> anyhow::Result<Vec<String>> {
    match names
        .iter()
        .find(|n| !clrprof_trace::config::is_assembly_name(n))
    {
        Some(bad) => anyhow::bail!("`{bad}` is not an assembly name"),
        None => Ok(names.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_config_lists_assemblies() {
        assert_eq!(
            agent_config(&[], &[]).unwrap().encode(),
            "version=1;mode=sample;rate=1000;coverage=1"
        );
        let c = agent_config(&["App".into(), "Lib".into()], &["Tests".into()]).unwrap();
        assert_eq!(
            (c.cover_include, c.cover_exclude),
            (
                vec!["App".to_string(), "Lib".into()],
                vec!["Tests".to_string()]
            )
        );
        assert!(agent_config(&["a;mode=trace".into()], &[]).is_err());
    }
}
