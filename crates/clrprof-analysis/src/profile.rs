//! The profile of a loaded trace (a view of its records): its samples and call trees as a [`Profile`], with the
//! notes and sampling facts a report shows about them.

use clrprof_trace::counters::CounterName;
use std::collections::{BTreeMap, HashMap, HashSet};

use clrprof_trace::config::Mode;
use clrprof_trace::{FrameKind as TraceFrameKind, StackCut, ThreadState};

use crate::builder::ProfileBuilder;
use crate::file_names::file_name;
use crate::model::{
    CallNodeRecord, CallTree, FrameIndex, FrameKind, Profile, ProfileKind, Sample, SampleKind,
    StackIndex,
};
use crate::sampling::{EndedEarly, SamplingInfo, ThreadRate};
use crate::stack_frames::ModelStacks;
use crate::trace::{LoadedTrace, Names, SummedSamples, mode_known_cpu_ns};

/// The CPU profile: samples (both modes) and exact call trees (trace mode).
pub fn of(t: &LoadedTrace) -> Profile {
    let mode = match t.mode() {
        Mode::Trace => ProfileKind::Trace,
        Mode::Count => ProfileKind::Count,
        Mode::Sample | Mode::None => ProfileKind::Sample,
    };
    let mut b = ProfileBuilder::new(mode);
    let names = &t.names;
    let mut model = ModelStacks::new(names, &t.stacks, t.stack_view);
    if let Some(roots) = &t.source_lines {
        model = model.with_lines(roots.clone());
    }

    // Names the program gave its threads; the others are named at the end.
    let thread_name = |tid: u32| -> String { names.name_of_tid(tid) };

    // Sample mode since format 1.2 takes CPU and wall-clock samples apart.
    let split = matches!(mode, ProfileKind::Sample | ProfileKind::Count) && t.sampler.is_some();
    // Summed samples in the order they were first seen, as each sample would come.
    let mut summed: Vec<(&(u32, u32, u8), &SummedSamples)> = t.summed.iter().collect();
    summed.sort_unstable_by_key(|(key, s)| (s.first_ts, **key));
    let each = t.samples.iter().map(|s| {
        let one = SummedSamples {
            count: 1,
            cpu_ns: s.cpu_ns,
            sys_ns: s.sys_ns,
            mode_known_cpu_ns: mode_known_cpu_ns(s),
            wall_ns: s.wall_ns,
            first_ts: s.ts,
            last_ts: s.ts,
        };
        ((s.tid, s.stack, s.state.to_u8()), one)
    });
    let all = each.chain(summed.into_iter().map(|(k, s)| (*k, *s)));
    // CPU the runtime spent on work it did only for the profiler: the profiler's.
    let mut induced_cpu_ns = 0u64;
    for ((tid, stack_id, state), s) in all {
        if state == ThreadState::Cpu.to_u8() && t.induced.contains(&stack_id) {
            induced_cpu_ns = induced_cpu_ns.saturating_add(s.cpu_ns);
            continue;
        }
        let stack = model.stack(&mut b, stack_id);
        let thread = b.thread(tid, &thread_name(tid));
        let kind = match ThreadState::from_u8(state) {
            ThreadState::Cpu => SampleKind::Cpu,
            _ if split => SampleKind::Wall,
            _ => SampleKind::Tick,
        };
        b.add_sample(
            thread,
            Sample {
                time_ns: s.last_ts,
                stack,
                cpu_ns: s.cpu_ns,
                sys_ns: s.sys_ns.min(s.cpu_ns),
                mode_known_cpu_ns: s.mode_known_cpu_ns,
                wall_ns: s.wall_ns,
                kind,
                count: s.count,
                ..Sample::default()
            },
        );
    }

    let mut by_thread: BTreeMap<u32, Vec<CallNodeRecord>> = BTreeMap::new();
    for n in &t.call_tree {
        let frame = model.frame(&mut b, TraceFrameKind::Managed, n.function);
        by_thread.entry(n.tid).or_default().push(CallNodeRecord {
            id: u64::from(n.node),
            parent: (n.parent != 0).then_some(u64::from(n.parent)),
            frame,
            calls: n.calls,
            self_samples: n.self_samples,
            self_cpu_ns: n.self_cpu_ns,
            self_wall_ns: n.self_wall_ns,
        });
    }
    for (tid, records) in by_thread {
        let (tree, dropped) = CallTree::from_records(&records);
        let thread = b.thread(tid, &thread_name(tid));
        b.set_call_tree(thread, tree);
        if dropped > 0 {
            b.note(format!(
                "{dropped} call tree nodes of thread {tid} were inconsistent and dropped"
            ));
        }
    }

    if mode == ProfileKind::Count {
        struct Namer<'n, 't> {
            model: &'n mut ModelStacks<'t>,
            names: &'n Names,
        }
        impl crate::counts::CountNames for Namer<'_, '_> {
            fn function_frame(&mut self, b: &mut ProfileBuilder, function: u64) -> FrameIndex {
                self.model.frame(b, TraceFrameKind::Managed, function)
            }
            fn module_file(&self, module: u64) -> String {
                self.names
                    .modules
                    .get(&module)
                    .map(|m| file_name(&m.path))
                    .unwrap_or_default()
            }
        }
        let mut namer = Namer {
            model: &mut model,
            names,
        };
        let (assemblies, dropped) = crate::counts::add_to_profile(
            &t.counts,
            &mut b,
            &mut namer,
            &mut |b: &mut ProfileBuilder, tid: u32| {
                if tid == 0 {
                    b.thread(0, "[threads the profiler did not see start]")
                } else {
                    b.thread(tid, &thread_name(tid))
                }
            },
        );
        let counted: Vec<String> = assemblies
            .iter()
            .map(|(a, n)| format!("{a} ({n} methods)"))
            .collect();
        b.note(if counted.is_empty() {
            "count mode counted no calls: no method of a counted assembly was compiled (--include names the assemblies to count)".to_string()
        } else {
            format!(
                "calls counted in {}; calls of other assemblies' methods are counted only at the counted methods' call sites",
                counted.join(", ")
            )
        });
        if dropped > 0 {
            b.note(format!(
                "{dropped} call count records named no counted method and were dropped"
            ));
        }
    }

    for (counter, what) in [
        (
            CounterName::CountMethodsFailed,
            "methods of counted assemblies could not get call counters (see the warnings): their calls are not counted",
        ),
        (
            CounterName::SamplesDropped,
            "samples were dropped (the agent's buffer was full or a thread did not answer in time)",
        ),
        (
            CounterName::StacksTruncated,
            "stacks were deeper than the agent records and were cut",
        ),
        (
            CounterName::CallTreeNodesDropped,
            "call paths were not recorded because the call tree node budget was spent (raise it with --max-nodes)",
        ),
        (
            CounterName::CallsUnrecorded,
            "calls were not recorded (node budget or shadow stack limit)",
        ),
    ] {
        let n = t.counter(counter);
        if n > 0 {
            b.note(format!("{n} {what}"));
        }
    }
    if mode == ProfileKind::Trace && !t.events.inlined.is_empty() {
        b.note(format!(
            "{} methods were inlined by the JIT and are counted as part of their callers; record with --no-inline to count every call",
            t.events.inlined.iter().map(|i| &i.callee).collect::<std::collections::BTreeSet<_>>().len()
        ));
    }
    if mode == ProfileKind::Trace
        && let Some(note) = unhooked_generated_note(t)
    {
        b.note(note);
    }
    if !t.ended_cleanly() {
        b.note("the program ended without shutting the profiler down (crash or kill): data after the agent's last flush is missing");
    }

    let mut p = b.build();
    t.describe_program(&mut p);
    if t.session.is_some()
        && let Some(config) = &t.config
    {
        p.sample_interval_ns = 1_000_000_000 / u64::from(config.rate_hz.max(1));
    }
    p.samples_dropped = t.counter(CounterName::SamplesDropped);
    p.ended = t
        .recording_end
        .as_ref()
        .map(|r| crate::ending::program_end(r.exit_code, r.signal));
    let pid = p.pid;
    crate::threads::mark_service_threads(&mut p, pid);
    if let Some(info) = t.sampler.as_ref().filter(|_| mode == ProfileKind::Sample) {
        let mut sampling = summarize_sampling(
            &p,
            (&info.cpu_clock, info.cpu_rate_hz, info.wall_rate_hz),
            |name| t.counter(name),
            &t.clocks,
        );
        sampling.induced_cpu_ns = induced_cpu_ns;
        p.sampling = Some(sampling);
    }
    t.start_stacks(&mut p);
    p
}

/// Trace mode: the methods generated at run time (dynamic methods, IL stubs) that the
/// agent saw compiled but that are in no call tree. The runtime calls no enter/leave hooks
/// for them, so their time is their callers' t time: say so, and name them.
fn unhooked_generated_note(t: &LoadedTrace) -> Option<String> {
    let in_trees: HashSet<u64> = t.call_tree.iter().map(|n| n.function).collect();
    let mut unhooked: Vec<String> = t
        .names
        .functions
        .keys()
        .filter(|&&id| t.names.is_generated(id) && !in_trees.contains(&id))
        .map(|&id| t.names.function(id))
        .collect();
    if unhooked.is_empty() {
        return None;
    }
    unhooked.sort();
    const SHOWN: usize = 10;
    let more = unhooked.len().saturating_sub(SHOWN);
    let mut list = unhooked[..unhooked.len().min(SHOWN)].join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    Some(format!(
        "{} methods generated at run time ran without enter/leave hooks (the runtime calls none for them): their calls are not counted and their time is in their callers' t time; sample mode names them. They are: {list}",
        unhooked.len()
    ))
}

/// The sampling facts of `profile`, given the trace's `SamplerInfo` fields and a counter
/// reader.
fn summarize_sampling(
    profile: &Profile,
    (cpu_clock, cpu_rate_hz, wall_rate_hz): (&str, u32, u32),
    counter: impl Fn(CounterName) -> u64,
    clocks: &HashMap<u32, crate::sampling::ClockTally>,
) -> SamplingInfo {
    let mut cpu_samples = 0u64;
    let mut wall_samples = 0u64;
    let mut program_cpu_ns = 0u64;
    let mut rates = Vec::new();
    let mut cut_of: HashMap<StackIndex, Option<usize>> = HashMap::new();
    let mut ended: BTreeMap<usize, u64> = BTreeMap::new();
    let mut samples = 0u64;
    // The CPU of missed samples, and the CPU after a thread's last sample, stand under
    // markers of their own: CPU, but neither a sample taken nor a stack that ended early.
    let markers = [StackCut::Missed, StackCut::Unsampled].map(crate::threads::stack_cut_name);
    let is_missed = |stack: Option<StackIndex>| {
        stack.is_some_and(|s| {
            let frames = profile.stack_frames(s);
            frames.len() == 1 && markers.contains(&profile.frame(frames[0]).name)
        })
    };
    for t in &profile.threads {
        let (mut cpu, mut n) = (0u64, 0u64);
        for s in &t.samples {
            // Every sample record counts, the ones carrying missed CPU too.
            samples += s.count;
            if s.kind == SampleKind::Cpu && is_missed(s.stack) {
                cpu += s.cpu_ns;
                continue;
            }
            match s.kind {
                SampleKind::Cpu => {
                    cpu_samples += s.count;
                    n += s.count;
                    // Saturating: a damaged 1.x trace can hold any value.
                    cpu = cpu.saturating_add(s.cpu_ns);
                }
                SampleKind::Wall => wall_samples += s.count,
                SampleKind::Tick | SampleKind::Alloc => {}
            }
            if let Some(stack) = s.stack {
                let cut = *cut_of.entry(stack).or_insert_with(|| {
                    let root = *profile.stack_frames(stack).first()?;
                    (profile.frame(root).kind == FrameKind::Truncated).then_some(root.index())
                });
                if let Some(frame) = cut {
                    *ended.entry(frame).or_default() += s.count;
                }
            }
        }
        program_cpu_ns = program_cpu_ns.saturating_add(cpu);
        if n > 0 {
            let by_clock = clocks.get(&t.tid).copied().unwrap_or_default();
            rates.push(ThreadRate {
                tid: t.tid,
                name: t.name.clone(),
                cpu_ns: cpu,
                samples: n,
                rate_hz: n as f64 / (cpu as f64 / 1e9).max(1e-9),
                perf_cpu_share: by_clock.perf_cpu_share(),
            });
        }
    }
    rates.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
    rates.truncate(3);
    // Records that carry the CPU of missed samples on a thread's stacks are CPU samples
    // in the trace, not samples taken.
    let cpu_samples = cpu_samples.saturating_sub(counter(CounterName::MissedCarriers));
    let mut ended_early_by_reason: Vec<EndedEarly> = ended
        .iter()
        .map(|(&frame, &n)| EndedEarly {
            reason: profile.frames[frame].name.clone(),
            samples: n,
        })
        .collect();
    ended_early_by_reason.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.reason.cmp(&b.reason)));
    let all_clocks = clocks
        .values()
        .fold(crate::sampling::ClockTally::default(), |a, b| a.merged(b));
    SamplingInfo {
        cpu_clock: cpu_clock.to_owned(),
        by_clock: all_clocks,
        clock_upgrades: counter(CounterName::ClockUpgrades),
        clock_downgrades: counter(CounterName::ClockDowngrades),
        timer_blind_stretches: counter(CounterName::TimerBlindStretches),
        cpu_rate_hz,
        cpu_rate_reached_hz: if program_cpu_ns == 0 {
            0.0
        } else {
            cpu_samples as f64 / (program_cpu_ns as f64 / 1e9)
        },
        busiest_threads: rates,
        wall_rate_hz,
        cpu_samples,
        wall_samples,
        samples_missed: counter(CounterName::SamplesMissed),
        cpu_missed_ns: counter(CounterName::CpuMissedNs),
        cpu_unsampled_ns: counter(CounterName::CpuUnsampledNs),
        missed_carriers: counter(CounterName::MissedCarriers),
        questions: counter(CounterName::SamplerQuestions),
        program_cpu_ns,
        handler_cpu_ns: counter(CounterName::HandlerCpuNs),
        sampler_cpu_ns: counter(CounterName::SamplerCpuNs),
        symbols_cpu_ns: counter(CounterName::SymbolsCpuNs),
        writer_cpu_ns: counter(CounterName::WriterCpuNs),
        agent_cpu_ns: counter(CounterName::AgentCpuNs),
        induced_cpu_ns: 0,
        ended_early: ended.values().sum(),
        samples,
        ended_early_by_reason,
    }
}
