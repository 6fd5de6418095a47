//! The agreement check of `cargo xtask bench`: on every workload, sample mode's flat CPU
//! profile against Linux `perf`'s (Debian's `linux-perf`, which samples in the kernel), as the
//! test `e2e_peer_perf` does on one program (see `tests/harness/peer_perf.rs` for how two flat
//! profiles are compared). Each workload runs [`RUNS_PER_SIDE`] times under `sample-1000` and
//! twice that under `perf record`, every method JIT-compiled and the runtime's perf map written
//! for both (`PEER_ENV`), driven as in the main matrix (the server workload under its HTTP
//! client); each side's profiles are pooled (their shares averaged), and the two perf sides
//! tell how much two such samplings of the same program agree by chance. The target: clrprof
//! agrees with perf at least as well as perf with itself, less 0.03. One run a side was not
//! enough on the thread pool's workloads: on `Server`, five single clrprof runs gave
//! `sched_yield` 9.9% to 28.9% of the CPU (perf: 22.7-26.2%), the pool threads being sampled at
//! the scheduler's tick, so the verdict judged one run's luck rather than a bias.

use anyhow::{Result, anyhow};
use clrprof_e2e::Program;
use clrprof_e2e::peer_perf::{
    self, Flat, PEER_ENV, agreement, flat_of_perf_data, flat_of_trace, largest_differences,
};

use super::configs::Config;
use super::runner::{Tools, record_once};

/// How much less clrprof may agree with perf than perf with itself.
pub const SLACK: f64 = 0.03;

/// Runs of each side whose profiles are pooled: clrprof's, and each of the two perf sides.
pub const RUNS_PER_SIDE: usize = 3;

/// One workload's agreement.
struct Agreement {
    workload: String,
    between_perfs: f64,
    with_perf: f64,
    /// The functions whose shares differ most (function, clrprof, perf).
    largest: Vec<(String, f64, f64)>,
}

impl Agreement {
    fn met(&self) -> bool {
        self.with_perf >= self.between_perfs - SLACK
    }
}

/// The agreement check on one runtime (`runtime` names it), as a Markdown section; a section
/// that says why where perf cannot sample here.
pub(super) fn run(tools: &Tools, programs: &[Program], runtime: &str) -> Result<String> {
    let mut out = format!("## Agreement with perf on {runtime}\n\n");
    if let Err(why) = peer_perf::perf_usable() {
        println!("bench: agreement with perf skipped: {why}");
        out.push_str(&format!("Not measured: {why}.\n\n"));
        return Ok(out);
    }
    out.push_str(&format!(
        "Each workload's flat CPU profile (each function's share of the self CPU time, names \
         normalized, kernel time charged to the user frame that entered the kernel) under \
         `sample-1000` and under Linux `perf record -e task-clock -c 1000000 -g`, every method \
         JIT-compiled and the runtime's perf map written for both; agreement is the histogram \
         intersection of two flat profiles (1: the same). Two perf runs tell how much two \
         samplings of one program agree by chance; the target is clrprof at most {SLACK} below \
         that, on every workload. Whole runs (start-up included); each side is \
         {RUNS_PER_SIDE} runs, interleaved, whose profiles are pooled (each function's share \
         averaged over the runs): clrprof against two perf sides, each of {RUNS_PER_SIDE} \
         runs.\n\n\
         | workload | perf with perf | clrprof with perf | target | largest differences (clrprof, perf) |\n\
         |---|--:|--:|---|---|\n",
    ));
    let mut all_met = true;
    for program in programs {
        // perf itself can fail on a run (perf 6.1 once died of SIGSEGV finishing a recording
        // of the HTTP server): one more try, then the workload is said not measured and the
        // rest of the bench goes on.
        let a = match measure(tools, program).or_else(|_| measure(tools, program)) {
            Ok(a) => a,
            Err(e) => {
                let why = format!("{:#}", e.context(format!("{} with perf", program.name)));
                let why = why.lines().next().unwrap_or_default().replace('|', "\\|");
                println!("bench: agreement {:<10} not measured: {why}", program.name);
                all_met = false;
                out.push_str(&format!(
                    "| `{}` | - | - | not measured | {why} |\n",
                    program.name
                ));
                continue;
            }
        };
        println!(
            "bench: agreement {:<10} perf with perf {:.3}, clrprof with perf {:.3}",
            a.workload, a.between_perfs, a.with_perf
        );
        all_met &= a.met();
        let largest: Vec<String> = a
            .largest
            .iter()
            .map(|(f, ours, theirs)| {
                format!(
                    "`{}` {:.1}% / {:.1}%",
                    f.replace('|', "\\|"),
                    ours * 100.0,
                    theirs * 100.0
                )
            })
            .collect();
        out.push_str(&format!(
            "| `{}` | {:.3} | {:.3} | {} | {} |\n",
            a.workload,
            a.between_perfs,
            a.with_perf,
            if a.met() { "**met**" } else { "**missed**" },
            largest.join("; ")
        ));
    }
    out.push_str(&format!(
        "\nTarget (every workload within {SLACK} of perf with perf): {}\n\n",
        if all_met { "**met**" } else { "**missed**" }
    ));
    Ok(out)
}

/// [`RUNS_PER_SIDE`] clrprof runs of `program` and twice that under perf, interleaved, each
/// side pooled.
fn measure(tools: &Tools, program: &Program) -> Result<Agreement> {
    let perf_run = |n: usize| -> Result<Flat> {
        let data = tools
            .scratch
            .join(format!("{}-{n}.perf.data", program.name));
        record_once(tools, program, Config::Perf1000, &data, PEER_ENV)?;
        let flat = flat_of_perf_data(&data).map_err(|e| anyhow!(e));
        let _ = std::fs::remove_file(&data);
        flat
    };
    let clrprof_run = || -> Result<Flat> {
        let trace = tools.scratch.join(format!("{}-peer.clrprof", program.name));
        record_once(tools, program, Config::Sample1000, &trace, PEER_ENV)?;
        let read = flat_of_trace(&trace).map_err(|e| anyhow!(e));
        let _ = std::fs::remove_file(&trace);
        let (flat, pid) = read?;
        if let Some(pid) = pid {
            peer_perf::remove_perf_maps(pid);
        }
        Ok(flat)
    };
    let (mut side_a, mut side_b, mut side_ours) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS_PER_SIDE {
        side_a.push(perf_run(2 * i + 1)?);
        side_ours.push(clrprof_run()?);
        side_b.push(perf_run(2 * i + 2)?);
    }
    let (perf_a, perf_b, ours) = (pooled(&side_a), pooled(&side_b), pooled(&side_ours));
    let (with_a, with_b) = (agreement(&ours, &perf_a), agreement(&ours, &perf_b));
    let closer = if with_a >= with_b { &perf_a } else { &perf_b };
    Ok(Agreement {
        workload: program.name.clone(),
        between_perfs: agreement(&perf_a, &perf_b),
        with_perf: with_a.max(with_b),
        largest: largest_differences(&ours, closer, 3),
    })
}

/// The profile of several runs: each function's share averaged over them.
fn pooled(runs: &[Flat]) -> Flat {
    let mut out = Flat::new();
    for run in runs {
        for (function, share) in run {
            *out.entry(function.clone()).or_default() += share / runs.len() as f64;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_profiles_average_each_function_and_still_add_up_to_one() {
        let run = |pairs: &[(&str, f64)]| -> Flat {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let p = pooled(&[run(&[("a", 0.5), ("b", 0.5)]), run(&[("a", 1.0)])]);
        assert_eq!(p["a"], 0.75);
        assert_eq!(p["b"], 0.25);
        assert!((p.values().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
