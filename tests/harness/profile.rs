//! A recording's trace as the analysis library reads it: every sample and its whole stack,
//! for tests that check facts the report's tables sum over.

use clrprof_analysis::StackIndex;
use clrprof_analysis::model::{Profile, ThreadProfile};
use clrprof_analysis::trace::{LoadedTrace, load};

use crate::Recording;

/// The recording's trace and its profile.
pub fn profile_of(rec: &Recording) -> (LoadedTrace, Profile) {
    let trace = load(&rec.trace).expect("the trace loads");
    let profile = clrprof_analysis::profile::of(&trace);
    (trace, profile)
}

/// The profile's thread called `name` (the first, if several are).
#[track_caller]
pub fn thread<'p>(p: &'p Profile, name: &str) -> &'p ThreadProfile {
    p.threads
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = p.threads.iter().map(|t| t.name.as_str()).collect();
            panic!("no thread {name} among {names:?}")
        })
}

/// The names of a sample's frames, root first.
pub fn frame_names(p: &Profile, stack: Option<StackIndex>) -> Vec<String> {
    stack.map_or_else(Vec::new, |s| {
        p.stack_frames(s)
            .into_iter()
            .map(|f| p.frame(f).name.clone())
            .collect()
    })
}

/// The thread names of a JSON list of `name (tid N)` entries (a contention view's waiters or
/// holders), without their thread ids.
pub fn thread_names(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|n| {
            n.as_str()
                .unwrap()
                .split(" (tid")
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Checks that the ticks were read by the agent where the runtime offers in-process EventPipe
/// sessions, else by the CLI, and that every payload was readable; says whether the agent
/// read them.
#[track_caller]
pub fn assert_tick_reader(json: &serde_json::Value) -> bool {
    let counters = &json["counters"];
    let in_process = crate::Dotnet::get().has_in_process_eventpipe();
    assert_eq!(
        counters["allocation_ticks_reader"],
        u64::from(in_process),
        "{counters:#}"
    );
    assert_eq!(counters["allocation_ticks_unreadable"], 0, "{counters:#}");
    in_process
}
