//! Count mode: exact calls per function and per call site (`CountedMethod` and `CallCounts`
//! records), put into the profile beside its samples.
//!
//! Each thread of a count-mode profile carries [`ThreadCounts`]: how many times each counted
//! function was entered, and how many calls each of their call sites made, the callee being
//! the method the call instruction names (before any virtual dispatch). The views use them
//! where trace mode uses its call trees: the top table's calls are the functions' entries,
//! a call-tree node's calls are those its parent function made to it ([`CallCounts::edge`],
//! the same for every node with that caller and callee: count mode knows callers, not paths),
//! and the call sites are listed with their counts.

use std::collections::{BTreeMap, HashMap};

use clrprof_trace::{CallCounts as CallCountsRecord, CountedMethod};

use crate::builder::ProfileBuilder;
use crate::model::{FrameIndex, FrameKind, Profile};
pub use crate::model::{SiteCalls, ThreadCounts};

/// Count mode's records, as read.
#[derive(Debug, Clone, Default)]
pub struct CountRecords {
    /// The methods with counters.
    pub methods: Vec<CountedMethod>,
    /// What each thread counted in them.
    pub counts: Vec<CallCountsRecord>,
}

/// The counts of several threads summed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Entries per function.
    pub functions: HashMap<FrameIndex, u64>,
    /// Calls per `(caller, callee)`, every call site of the caller naming the callee summed.
    pub edges: HashMap<(FrameIndex, FrameIndex), u64>,
    /// Calls per call site, by caller and IL offset.
    pub sites: Vec<SiteCalls>,
}

impl CallCounts {
    /// The counts of `threads` (indices into [`Profile::threads`]) summed; `None` if none of
    /// them has counts.
    pub fn of_threads(profile: &Profile, threads: &[usize]) -> Option<CallCounts> {
        let mut c = CallCounts::default();
        let mut any = false;
        let mut sites: BTreeMap<(FrameIndex, u32, FrameIndex), u64> = BTreeMap::new();
        for &t in threads {
            let Some(counts) = &profile.threads[t].counts else {
                continue;
            };
            any = true;
            for &(f, n) in &counts.functions {
                let e = c.functions.entry(f).or_default();
                *e = e.saturating_add(n);
            }
            for s in &counts.sites {
                let e = c.edges.entry((s.caller, s.callee)).or_default();
                *e = e.saturating_add(s.calls);
                let e = sites.entry((s.caller, s.il_offset, s.callee)).or_default();
                *e = e.saturating_add(s.calls);
            }
        }
        c.sites = sites
            .into_iter()
            .map(|((caller, il_offset, callee), calls)| SiteCalls {
                caller,
                callee,
                il_offset,
                calls,
            })
            .collect();
        any.then_some(c)
    }

    /// Calls `caller` made to `callee`.
    pub fn edge(&self, caller: FrameIndex, callee: FrameIndex) -> u64 {
        self.edges.get(&(caller, callee)).copied().unwrap_or(0)
    }

    /// Entries of `function`.
    pub fn calls(&self, function: FrameIndex) -> u64 {
        self.functions.get(&function).copied().unwrap_or(0)
    }
}

/// How the profile builder names what the records refer to.
pub(crate) trait CountNames {
    /// The frame of a compiled body (a `FunctionDef`), as the samples name it.
    fn function_frame(&mut self, b: &mut ProfileBuilder, function: u64) -> FrameIndex;
    /// The file name of a module (`App.dll`); empty when unknown.
    fn module_file(&self, module: u64) -> String;
}

/// `Type.Method(args)` as a record spells it.
fn display_name(type_name: &str, method_name: &str, signature: &str) -> String {
    if type_name.is_empty() {
        format!("{method_name}{signature}")
    } else {
        format!("{type_name}.{method_name}{signature}")
    }
}

/// Adds count mode's records to the profile being built: each thread's [`ThreadCounts`].
/// Returns the counted assemblies with their number of counted methods, and the number of
/// `CallCounts` records that named no method (dropped).
pub(crate) fn add_to_profile(
    records: &CountRecords,
    b: &mut ProfileBuilder,
    names: &mut dyn CountNames,
    thread_of: &mut dyn FnMut(&mut ProfileBuilder, u32) -> usize,
) -> (BTreeMap<String, usize>, usize) {
    // The frame of each counted method, and its sites' callees.
    let mut by_id: HashMap<u32, (FrameIndex, Vec<(u32, FrameIndex)>)> = HashMap::new();
    let mut by_token: HashMap<(u64, u32), FrameIndex> = HashMap::new();
    let mut assemblies: BTreeMap<String, usize> = BTreeMap::new();
    for m in &records.methods {
        let module = names.module_file(m.module);
        let frame = if m.function != 0 {
            names.function_frame(b, m.function)
        } else {
            let name = display_name(&m.type_name, &m.method_name, &m.signature);
            b.intern_frame(&name, &module, FrameKind::Managed)
        };
        by_token.insert((m.module, m.token), frame);
        *assemblies.entry(module).or_default() += 1;
        by_id.insert(m.id, (frame, Vec::new()));
    }
    // Callees: a method of the caller's module that was counted is that method's frame; any
    // other is the managed frame of that name the samples have, or a new one.
    let mut named: HashMap<String, FrameIndex> = HashMap::new();
    for (i, f) in b.frames().iter().enumerate() {
        if f.kind == FrameKind::Managed {
            named.entry(f.name.clone()).or_insert(FrameIndex(i as u32));
        }
    }
    for m in &records.methods {
        let module = names.module_file(m.module);
        let sites = m
            .sites
            .iter()
            .map(|s| {
                let counted = (s.callee_token != 0)
                    .then(|| by_token.get(&(m.module, s.callee_token)).copied())
                    .flatten();
                let callee = counted.or_else(|| named.get(&s.callee).copied());
                let callee = callee.unwrap_or_else(|| {
                    let module = if s.callee_token != 0 {
                        module.as_str()
                    } else {
                        ""
                    };
                    let f = b.intern_frame(&s.callee, module, FrameKind::Managed);
                    named.insert(s.callee.clone(), f);
                    f
                });
                (s.il_offset, callee)
            })
            .collect();
        if let Some(e) = by_id.get_mut(&m.id) {
            e.1 = sites;
        }
    }
    let mut dropped = 0;
    let mut per_thread: BTreeMap<u32, (BTreeMap<FrameIndex, u64>, Vec<SiteCalls>)> =
        BTreeMap::new();
    for c in &records.counts {
        let Some((frame, sites)) = by_id.get(&c.method) else {
            dropped += 1;
            continue;
        };
        let t = per_thread.entry(c.tid).or_default();
        let e = t.0.entry(*frame).or_default();
        *e = e.saturating_add(c.calls);
        for (&(il_offset, callee), &calls) in sites.iter().zip(&c.sites) {
            if calls > 0 {
                t.1.push(SiteCalls {
                    caller: *frame,
                    callee,
                    il_offset,
                    calls,
                });
            }
        }
    }
    for (tid, (functions, sites)) in per_thread {
        let thread = thread_of(b, tid);
        b.add_counts(
            thread,
            ThreadCounts {
                functions: functions.into_iter().collect(),
                sites,
            },
        );
    }
    (assemblies, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProfileKind;

    #[test]
    fn threads_sum_into_functions_edges_and_sites() {
        let mut b = ProfileBuilder::new(ProfileKind::Count);
        let main = b.intern_frame("Main()", "A.dll", FrameKind::Managed);
        let fib = b.intern_frame("Fib(int)", "A.dll", FrameKind::Managed);
        for (tid, n) in [(1, 10), (2, 32)] {
            let t = b.thread(tid, "");
            b.add_counts(
                t,
                ThreadCounts {
                    functions: vec![(main, 1), (fib, n)],
                    sites: vec![
                        SiteCalls {
                            caller: main,
                            callee: fib,
                            il_offset: 3,
                            calls: 1,
                        },
                        SiteCalls {
                            caller: fib,
                            callee: fib,
                            il_offset: 9,
                            calls: n / 2,
                        },
                        SiteCalls {
                            caller: fib,
                            callee: fib,
                            il_offset: 17,
                            calls: n / 2 - 1,
                        },
                    ],
                },
            );
        }
        let p = b.build();
        p.validate().unwrap();
        let all = CallCounts::of_threads(&p, &[0, 1]).unwrap();
        assert_eq!(all.calls(fib), 42);
        assert_eq!(all.calls(main), 2);
        assert_eq!(all.edge(main, fib), 2);
        assert_eq!(all.edge(fib, fib), 21 + 19);
        assert_eq!(all.edge(fib, main), 0);
        assert_eq!(all.sites.len(), 3);
        assert_eq!(all.sites[1].calls, 5 + 16);
        let one = CallCounts::of_threads(&p, &[1]).unwrap();
        assert_eq!(one.calls(fib), 32);
    }
}
