//! Exceptions, followed through the runtime's callbacks from throw to catcher.
//!
//! Each thread keeps the exceptions it is handling, innermost last. `ExceptionThrown` with an
//! object that thread is already handling (in flight, or inside its catch handler) is a
//! rethrow of that exception (`throw;`, or the same object thrown again), not a new one. The
//! search, filter, unwind and finally callbacks belong to the innermost exception in flight;
//! `ExceptionCatcherEnter` names its object, and `ExceptionCatcherLeave` ends the innermost
//! exception that is inside its handler. Exceptions still in flight when the trace ends were
//! not caught while recording. Finished exceptions are folded into groups (type, throwing
//! method, catching method), so memory does not grow with the number of throws.

use std::collections::{BTreeMap, HashMap};

use clrprof_trace::ExceptionInfo;
use serde::Serialize;

use super::timeline::{Span, Subject, Timeline, Track};
use crate::names::Names;

/// How many distinct messages a group keeps.
const MAX_MESSAGES: usize = 10;

#[derive(Debug)]
struct Thrown {
    tid: u32,
    object: u64,
    class: u64,
    thrower: u64,
    message: String,
    stack: Vec<u64>,
    throw_ns: u64,
    catcher: Option<u64>,
    catch_ns: u64,
    in_catch: bool,
    rethrow_sites: Vec<u64>,
    filters: u64,
    finally: Vec<u64>,
    unwound: u64,
}

#[derive(Debug, Default)]
struct Group {
    count: u64,
    messages: Vec<String>,
    stack: Vec<u64>,
    rethrows: u64,
    rethrow_sites: BTreeMap<u64, u64>,
    filters: u64,
    finally: BTreeMap<u64, u64>,
    unwound: u64,
    caught: u64,
    catch_ns_total: u64,
    catch_ns_max: u64,
}

/// Follows exceptions per thread.
#[derive(Debug, Default)]
pub(crate) struct ExceptionBuilder {
    active: HashMap<u32, Vec<Thrown>>,
    pending: HashMap<u32, ExceptionInfo>,
    groups: BTreeMap<(u64, u64, Option<u64>), Group>,
}

impl ExceptionBuilder {
    pub fn info(&mut self, info: ExceptionInfo) {
        self.pending.insert(info.tid, info);
    }

    pub fn thrown(
        &mut self,
        tl: &mut Timeline,
        (tid, ts): (u32, u64),
        object: u64,
        class: u64,
        thrower: u64,
    ) {
        let info = self.pending.remove(&tid).filter(|i| i.object == object);
        let active = self.active.entry(tid).or_default();
        if let Some(pos) = active
            .iter()
            .rposition(|t| t.object == object && object != 0)
        {
            // The same object again: a rethrow. Exceptions above it are over.
            let ended: Vec<Thrown> = active.drain(pos + 1..).collect();
            let t = &mut active[pos];
            t.in_catch = false;
            t.rethrow_sites.push(thrower);
            for e in ended {
                self.fold(e, tl);
            }
            return;
        }
        let (message, stack) = info.map_or_else(Default::default, |i| (i.message, i.stack));
        active.push(Thrown {
            tid,
            object,
            class,
            thrower,
            message,
            stack,
            throw_ns: ts,
            catcher: None,
            catch_ns: 0,
            in_catch: false,
            rethrow_sites: Vec::new(),
            filters: 0,
            finally: Vec::new(),
            unwound: 0,
        });
    }

    fn in_flight(&mut self, tid: u32) -> Option<&mut Thrown> {
        self.active
            .get_mut(&tid)
            .and_then(|a| a.iter_mut().rev().find(|t| !t.in_catch))
    }

    pub fn filter(&mut self, tid: u32) {
        if let Some(t) = self.in_flight(tid) {
            t.filters += 1;
        }
    }

    pub fn finally(&mut self, tid: u32, function: u64) {
        if let Some(t) = self.in_flight(tid) {
            t.finally.push(function);
        }
    }

    pub fn unwind(&mut self, tid: u32) {
        if let Some(t) = self.in_flight(tid) {
            t.unwound += 1;
        }
    }

    pub fn catcher_enter(
        &mut self,
        tl: &mut Timeline,
        (tid, ts): (u32, u64),
        function: u64,
        object: u64,
    ) {
        let Some(active) = self.active.get_mut(&tid) else {
            return;
        };
        let Some(pos) = active
            .iter()
            .rposition(|t| t.object == object)
            .or_else(|| active.iter().rposition(|t| !t.in_catch))
        else {
            return;
        };
        let ended: Vec<Thrown> = active.drain(pos + 1..).collect();
        let t = &mut active[pos];
        t.catcher = Some(function);
        t.catch_ns = ts;
        t.in_catch = true;
        for e in ended {
            self.fold(e, tl);
        }
    }

    pub fn catcher_leave(&mut self, tl: &mut Timeline, tid: u32) {
        let Some(active) = self.active.get_mut(&tid) else {
            return;
        };
        if let Some(pos) = active.iter().rposition(|t| t.in_catch) {
            let ended: Vec<Thrown> = active.drain(pos..).collect();
            for e in ended {
                self.fold(e, tl);
            }
        }
    }

    /// Puts a finished exception on its thread's timeline and into its group.
    fn fold(&mut self, t: Thrown, tl: &mut Timeline) {
        tl.push(Span {
            track: Track::Thread(t.tid),
            category: "exception",
            subject: Subject::Exception(t.class),
            start_ns: t.throw_ns,
            duration_ns: t
                .catcher
                .map_or(0, |_| t.catch_ns.saturating_sub(t.throw_ns)),
        });
        let g = self
            .groups
            .entry((t.class, t.thrower, t.catcher))
            .or_default();
        g.count += 1;
        if g.stack.is_empty() {
            g.stack = t.stack;
        }
        if g.messages.len() < MAX_MESSAGES && !g.messages.contains(&t.message) {
            g.messages.push(t.message);
        }
        g.rethrows += t.rethrow_sites.len() as u64;
        for site in t.rethrow_sites {
            *g.rethrow_sites.entry(site).or_default() += 1;
        }
        g.filters += t.filters;
        for f in t.finally {
            *g.finally.entry(f).or_default() += 1;
        }
        g.unwound += t.unwound;
        if t.catcher.is_some() {
            let d = t.catch_ns.saturating_sub(t.throw_ns);
            g.caught += 1;
            g.catch_ns_total += d;
            g.catch_ns_max = g.catch_ns_max.max(d);
        }
    }

    pub fn finish(mut self, tl: &mut Timeline, names: &Names) -> Vec<ExceptionGroup> {
        let active: Vec<Thrown> = self.active.drain().flat_map(|(_, a)| a).collect();
        for t in active {
            self.fold(t, tl);
        }
        let mut groups: Vec<ExceptionGroup> = self
            .groups
            .into_iter()
            .map(|((class, thrower, catcher), g)| ExceptionGroup {
                exception_type: names.class(class),
                message: g.messages.first().cloned().unwrap_or_default(),
                messages: g.messages,
                throw_function: names.function(thrower),
                throw_module: names.function_module(thrower),
                catch_function: catcher.map(|c| names.function(c)),
                count: g.count,
                rethrows: g.rethrows,
                rethrow_functions: g
                    .rethrow_sites
                    .iter()
                    .map(|(&f, &count)| FunctionCount {
                        function: names.function(f),
                        count,
                    })
                    .collect(),
                filters_run: g.filters,
                finally_blocks: g
                    .finally
                    .iter()
                    .map(|(&f, &count)| FunctionCount {
                        function: names.function(f),
                        count,
                    })
                    .collect(),
                frames_unwound: g.unwound,
                throw_to_catch_ns: g.catch_ns_total,
                max_throw_to_catch_ns: g.catch_ns_max,
                throw_stack: g.stack.iter().map(|&f| names.function(f)).collect(),
            })
            .collect();
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.exception_type.cmp(&b.exception_type))
                .then_with(|| a.throw_function.cmp(&b.throw_function))
        });
        groups
    }
}

/// Exceptions of one type thrown by one method and caught by one method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionGroup {
    /// The exception's class.
    #[serde(rename = "type")]
    pub exception_type: String,
    /// The message of the first one (as stored in the object; empty if it had none).
    pub message: String,
    /// Their distinct messages, at most 10.
    pub messages: Vec<String>,
    /// The method that threw them (the innermost managed frame at the throw).
    pub throw_function: String,
    /// That method's module.
    pub throw_module: String,
    /// The method whose handler finally caught them; `null` if they were not caught while
    /// recording.
    pub catch_function: Option<String>,
    /// How many exceptions (a rethrown exception counts once).
    pub count: u64,
    /// How many times they were rethrown.
    pub rethrows: u64,
    /// Where they were rethrown.
    pub rethrow_functions: Vec<FunctionCount>,
    /// Exception filters run for them.
    pub filters_run: u64,
    /// Finally (and fault) blocks run while unwinding for them, by method.
    pub finally_blocks: Vec<FunctionCount>,
    /// Stack frames unwound (`ExceptionUnwindFunctionEnter`).
    pub frames_unwound: u64,
    /// Time from throw to the catcher's handler, summed over the caught ones.
    pub throw_to_catch_ns: u64,
    /// The longest of those times.
    pub max_throw_to_catch_ns: u64,
    /// The managed stack at the first one's throw, innermost first.
    pub throw_stack: Vec<String>,
}

/// A method and a count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionCount {
    /// The method.
    pub function: String,
    /// How many.
    pub count: u64,
}
