//! The benchmark programs of the main matrix (`bench/programs/`), in report order, and what
//! each stands for (the feature benchmarks' workloads are in [`super::features`]).

use anyhow::{Result, bail};

use super::features::FEATURES;

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// The program's name: `bench/programs/<name>.cs`.
    pub name: &'static str,
    /// What it does, for the report.
    pub what: &'static str,
    /// What drives it.
    pub load: Load,
}

/// What drives a workload's timed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// The program does its own work between the go line and its report.
    Own,
    /// A real HTTP client (`wrk`, one thread, 16 connections on loopback, each waiting
    /// [`HTTP_PACE_MS`] between an answer and its next request) sends requests for `warmup`
    /// seconds before the go line, then for `seconds` more to the port the program is given;
    /// then the bench sends the stop line.
    Http { warmup: u32, seconds: u32 },
}

/// How many seconds the HTTP client runs, in a full run.
pub const HTTP_SECONDS: u32 = 4;

/// How many seconds the HTTP client runs before the go line: a server in production has served
/// for a while, and in its first seconds the runtime is still compiling its request path again
/// at a higher tier, which a measurement of the steady state leaves out (measured over the
/// first 6 s after the go line, medians of 10 interleaved rounds: the tiering thread used 5.5
/// us of CPU per request unprofiled, 6.6 us under sample mode).
pub const HTTP_WARMUP_SECONDS: u32 = 3;

/// What each of the HTTP client's connections waits between an answer and its next request,
/// in milliseconds: about 3,500 requests a second, a third of what the server answers flat
/// out here. A server in production is not saturated; one that is (a closed loop as fast as
/// the client goes) spends its spare CPU spinning for work, and its CPU per request then says
/// more about the client's share of the two cores than about the profiler (measured: 15% from
/// run to run).
pub const HTTP_PACE_MS: u32 = 4;

/// What drives the workload called `name` (its own work for one of no main matrix).
pub fn load_of(name: &str) -> Load {
    WORKLOADS
        .iter()
        .find(|w| w.name == name)
        .map_or(Load::Own, |w| w.load)
}

/// The workloads, in report order.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "Fib",
        what: "recursive Fibonacci: almost nothing but calls",
        load: Load::Own,
    },
    Workload {
        name: "Realistic",
        what: "CSV-like parsing, Dictionary/List, LINQ GroupBy/OrderBy/Select, string \
               formatting, small recursive expression trees",
        load: Load::Own,
    },
    Workload {
        name: "Alloc",
        what: "small objects, arrays, strings and lists: dozens of gen0 collections",
        load: Load::Own,
    },
    Workload {
        name: "Threads",
        what: "4 threads of mixed calls and loops on the machine's cores",
        load: Load::Own,
    },
    Workload {
        name: "Idle",
        what: "a CPU-bound main thread beside 50 threads blocked on an event for the whole \
               work, as a server keeps idle thread-pool threads",
        load: Load::Own,
    },
    Workload {
        name: "Regex",
        what: "a compiled regular expression scanning 200 KB of log lines: time in code \
               generated at run time (a DynamicMethod)",
        load: Load::Own,
    },
    Workload {
        name: "HttpServer",
        what: "a real HTTP/1.1 server on loopback (a listening socket, an asynchronous loop \
               per kept-alive connection on the thread pool, as Kestrel's core), each request \
               parsed and hashed (about 50 us), under load from a real HTTP client (Debian's \
               `wrk`, 16 connections each sending a request 4 ms after its previous answer: \
               about 3,500 requests a second): CPU per request served",
        load: Load::Http {
            warmup: HTTP_WARMUP_SECONDS,
            seconds: HTTP_SECONDS,
        },
    },
    Workload {
        name: "Server",
        what: "bursts of 16 short work items (about 0.2 ms each) on the thread pool every 4 ms: \
               pool threads that keep waking, working briefly and waiting",
        load: Load::Own,
    },
];

/// The startup program.
pub const EMPTY: &str = "Empty";

/// The workloads named (case-insensitive), in report order; all of them for none.
pub fn select(names: &[String]) -> Result<Vec<Workload>> {
    if names.is_empty() {
        return Ok(WORKLOADS.to_vec());
    }
    let mut chosen = Vec::new();
    for name in names {
        let Some(w) = WORKLOADS
            .iter()
            .find(|w| w.name.eq_ignore_ascii_case(name.trim()))
        else {
            let all: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
            if let Some(f) = FEATURES
                .iter()
                .find(|f| f.workload.eq_ignore_ascii_case(name.trim()))
            {
                bail!(
                    "`{}` is the workload of the {} benchmark (`cargo xtask bench {}`), not of \
                     the main matrix; choose from {}",
                    f.workload,
                    f.name,
                    f.flag,
                    all.join(", ")
                );
            }
            bail!("unknown workload `{name}`; choose from {}", all.join(", "));
        };
        if !chosen.contains(w) {
            chosen.push(*w);
        }
    }
    chosen.sort_by_key(|w| WORKLOADS.iter().position(|x| x == w));
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection() {
        let names: Vec<&str> = select(&["threads".into(), "Fib".into()])
            .unwrap()
            .iter()
            .map(|w| w.name)
            .collect();
        assert_eq!(names, vec!["Fib", "Threads"]);
        assert!(select(&["nope".into()]).is_err());
        assert!(select(&["async".into()]).is_err());
        assert_eq!(select(&[]).unwrap().len(), WORKLOADS.len());
    }
}
