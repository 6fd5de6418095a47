//! The coverage benchmark of `cargo xtask bench`: every CPU workload unprofiled and under
//! `clrprof coverage` (the workload's own assembly, then with the framework's core library
//! too), alternating within each round like the main matrix; the work-time ratio to the
//! unprofiled run of the same round, median and min-max over the rounds.

use anyhow::Result;
use clrprof_e2e::Program;

use super::configs::Config;
use super::runner::{Tools, alternate};
use super::stats::ratio_summary;

const CONFIGS: [Config; 3] = [Config::None, Config::Coverage, Config::CoverageCoreLib];

/// Results of the coverage benchmark on one runtime (`runtime` names it), as a Markdown
/// section.
pub(super) fn run(
    tools: &Tools,
    programs: &[Program],
    rounds: usize,
    runtime: &str,
) -> Result<String> {
    let mut out = format!("## Coverage on {runtime}\n\n");
    out.push_str(
        "Block counting (`clrprof coverage`, a probe at the start of every basic block of the \
         covered methods, see docs/coverage.md) on the CPU workloads: work time relative to the \
         unprofiled run of the same round (median, and min-max over the rounds), and the median \
         wall ratio of the whole run (start, work, exit, writing the coverage).\n\n\
         Configurations:\n\n",
    );
    for c in &CONFIGS[1..] {
        out.push_str(&format!("- `{}`: {}\n", c.name(), c.describe()));
    }
    out.push_str(
        "\n| workload | configuration | median ratio | min-max | median wall ratio |\n\
         |---|---|--:|--:|--:|\n",
    );
    for program in programs {
        let (work, wall) = alternate(tools, program, &CONFIGS, rounds, "coverage")?;
        for (i, config) in CONFIGS.iter().enumerate().skip(1) {
            let (med, lo, hi) = ratio_summary(&work[i], &work[0]);
            let (wall_med, _, _) = ratio_summary(&wall[i], &wall[0]);
            out.push_str(&format!(
                "| `{}` | `{}` | {med:.3}x | {lo:.3}-{hi:.3} | {wall_med:.3}x |\n",
                program.name,
                config.name()
            ));
        }
    }
    out.push('\n');
    Ok(out)
}
