//! Lock contention (`record --contention`): every contended `Monitor.Enter` / `lock` as the
//! runtime reported it, grouped by lock type and waiting site (`report --contention`), and the
//! wait time by stack as a weighted-stack profile that every profile format renders (a flame
//! graph of where threads waited for locks).

use clrprof_trace::counters::CounterName;
use std::collections::{BTreeSet, HashMap};
use std::io::Write;

use clrprof_trace::{Contention, FrameKind};
use serde::Serialize;

use crate::Error;
use crate::builder::ProfileBuilder;
use crate::model::{FrameIndex, Profile, ProfileKind, Sample, SampleKind};
use crate::stack_frames::ModelStacks;
use crate::trace::LoadedTrace;

/// The contended acquisitions of one lock type at one waiting site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockRow {
    /// The lock object's type (`[unknown type]` where the runtime does not tell it).
    pub lock_type: String,
    /// Where the threads waited: the innermost managed frame that is not `Monitor`'s own.
    pub site: String,
    /// Contended acquisitions.
    pub count: u64,
    /// Their waits added up, in nanoseconds.
    pub total_wait_ns: u64,
    /// The longest one.
    pub longest_wait_ns: u64,
    /// Distinct locks (by the runtime's lock id; 0 where it is unknown).
    pub locks: u64,
    /// The threads that waited.
    pub waiters: Vec<String>,
    /// The threads that held the lock when a wait began (empty where unknown).
    pub holders: Vec<String>,
}

/// The contention view: totals, one row per lock type and site (by total wait), and what the
/// runtime did not say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContentionReport {
    /// Contended acquisitions.
    pub count: u64,
    /// Their waits added up, in nanoseconds.
    pub total_wait_ns: u64,
    /// Per lock type and site, by total wait (largest first).
    pub locks: Vec<LockRow>,
    /// Records the agent dropped (its buffer was full) or could not pair.
    pub dropped: u64,
    /// What these figures leave out on this runtime.
    pub notes: Vec<String>,
}

/// Whether the trace has contention records.
pub fn has_contention(t: &LoadedTrace) -> bool {
    !t.contention.is_empty()
}

/// Whether contention was recorded (`record --contention`), even if none happened.
pub fn recorded(t: &LoadedTrace) -> bool {
    t.counters
        .contains_key(clrprof_trace::protocol::CONTENTION_READER_COUNTER.as_str())
        || has_contention(t)
}

/// Where a waiting stack waited: its innermost managed frame outside `Monitor`.
fn wait_site(t: &LoadedTrace, stack: u32) -> String {
    t.stack_path(stack)
        .into_iter()
        .filter(|f| f.0 == FrameKind::Managed)
        .map(|f| t.frame_name(f))
        .find(|name| !name.starts_with("System.Threading.Monitor."))
        .unwrap_or_else(|| "[no managed frame]".into())
}

fn lock_type(t: &LoadedTrace, c: &Contention) -> String {
    match c.class {
        0 if c.flags & Contention::NATIVE != 0 => "[runtime lock]".into(),
        0 => "[unknown type]".into(),
        class => t.names.class(class),
    }
}

/// The contention view.
pub fn report(t: &LoadedTrace) -> ContentionReport {
    type Group = (u64, u64, u64, BTreeSet<u64>, BTreeSet<u32>, BTreeSet<u32>);
    let mut groups: HashMap<(String, String), Group> = HashMap::new();
    let mut sites: HashMap<u32, String> = HashMap::new();
    let (mut count, mut total) = (0u64, 0u64);
    for c in &t.contention {
        let site = sites
            .entry(c.stack)
            .or_insert_with(|| wait_site(t, c.stack))
            .clone();
        let g = groups.entry((lock_type(t, c), site)).or_default();
        g.0 += 1;
        g.1 = g.1.saturating_add(c.duration_ns);
        g.2 = g.2.max(c.duration_ns);
        g.3.insert(c.lock_id);
        g.4.insert(c.tid);
        if c.owner_tid != 0 {
            g.5.insert(c.owner_tid);
        }
        count += 1;
        total = total.saturating_add(c.duration_ns);
    }
    let name = |tid: &u32| {
        let n = t.names.name_of_tid(*tid);
        if n.is_empty() || n == tid.to_string() {
            format!("tid {tid}")
        } else {
            format!("{n} (tid {tid})")
        }
    };
    let mut locks: Vec<LockRow> = groups
        .into_iter()
        .map(
            |((lock_type, site), (n, sum, max, ids, waiters, holders))| LockRow {
                lock_type,
                site,
                count: n,
                total_wait_ns: sum,
                longest_wait_ns: max,
                locks: ids.len() as u64,
                waiters: waiters.iter().map(name).collect(),
                holders: holders.iter().map(name).collect(),
            },
        )
        .collect();
    locks.sort_by(|a, b| {
        (b.total_wait_ns, &a.lock_type, &a.site).cmp(&(a.total_wait_ns, &b.lock_type, &b.site))
    });
    let mut notes = Vec::new();
    if t.contention
        .iter()
        .any(|c| c.flags & Contention::MEASURED != 0)
    {
        notes.push(
            "waits measured between the runtime's ContentionStart and ContentionStop events \
             (this runtime's stop event carries no duration)"
                .to_string(),
        );
    }
    if t.contention
        .iter()
        .any(|c| c.class == 0 && c.flags & Contention::NATIVE == 0)
    {
        notes.push(
            "lock type and holder unknown: this runtime's contention events carry neither \
             (CoreCLR 3.1; .NET 8 names both)"
                .to_string(),
        );
    }
    let dropped = t.counter(CounterName::ContentionDropped);
    let unpaired = t.counter(CounterName::ContentionUnpaired);
    if dropped > 0 {
        notes.push(format!(
            "{dropped} contended acquisitions were dropped (the agent's buffer was full)"
        ));
    }
    if unpaired > 0 {
        notes.push(format!(
            "{unpaired} contention events had no partner (a start without a stop or a stop \
             without a start) and are left out"
        ));
    }
    ContentionReport {
        count,
        total_wait_ns: total,
        locks,
        dropped,
        notes,
    }
}

/// The wait for locks as a weighted-stack profile: per thread, one wall-clock sample per
/// waiting stack and lock type, weighed with the time waited, the lock's type as a
/// `[lock: T]` frame at the leaf. Rendered with the `wall` metric by every profile format.
pub fn profile(t: &LoadedTrace) -> Profile {
    let mut sites: HashMap<(u32, u32, String), (u64, u64, u64)> = HashMap::new();
    for c in &t.contention {
        let e = sites
            .entry((c.tid, t.functions_stack(c.stack), lock_type(t, c)))
            .or_insert((0, c.ts, 0));
        e.0 = e.0.saturating_add(c.duration_ns);
        e.1 = e.1.min(c.ts);
        e.2 += 1;
    }
    let mut sites: Vec<_> = sites.into_iter().collect();
    sites
        .sort_unstable_by(|a, b| (a.0.0, a.1.1, a.0.1, &a.0.2).cmp(&(b.0.0, b.1.1, b.0.1, &b.0.2)));
    let mut b = ProfileBuilder::new(ProfileKind::Sample);
    let mut model = ModelStacks::new(&t.names, &t.stacks, t.stack_view);
    let mut types: HashMap<String, FrameIndex> = HashMap::new();
    for ((tid, stack, lock_type), (wait_ns, first_ns, n)) in sites {
        let name = || format!("[lock: {lock_type}]");
        let sample = Sample {
            time_ns: first_ns,
            kind: SampleKind::Wall,
            wall_ns: wait_ns,
            count: n,
            ..Sample::default()
        };
        let key = lock_type.clone();
        model.add_under_type(&mut b, &t.names, tid, stack, &mut types, key, name, sample);
    }
    t.finish_profile(b)
}

/// Nanoseconds as milliseconds with two decimals.
fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

/// Writes the contention view as text: totals, then one row per lock type and site.
pub fn write_contention_text(
    t: &LoadedTrace,
    top: usize,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if !recorded(t) {
        writeln!(
            out,
            "Nothing to show: the trace has no lock contention (record with --contention)"
        )?;
        return Ok(());
    }
    let r = report(t);
    writeln!(
        out,
        "Lock contention: {} contended acquisitions, {} waited in all",
        r.count,
        ms(r.total_wait_ns)
    )?;
    for note in &r.notes {
        writeln!(out, "note: {note}")?;
    }
    if r.locks.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\n{:>7} {:>12} {:>12}  {:<32} Site",
        "Count", "Total wait", "Longest", "Lock type"
    )?;
    for row in r.locks.iter().take(top) {
        writeln!(
            out,
            "{:>7} {:>12} {:>12}  {:<32} {}",
            row.count,
            ms(row.total_wait_ns),
            ms(row.longest_wait_ns),
            row.lock_type,
            row.site
        )?;
        writeln!(out, "{:>35}waiting: {}", "", row.waiters.join(", "))?;
        if !row.holders.is_empty() {
            writeln!(out, "{:>35}held by: {}", "", row.holders.join(", "))?;
        }
    }
    if r.locks.len() > top {
        writeln!(out, "... {} more (--top 0 shows all)", r.locks.len() - top)?;
    }
    Ok(())
}

/// Writes the contention view as JSON: `session` and `contention` (see docs/report-json.md).
pub fn write_contention_json(
    t: &LoadedTrace,
    pretty: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut doc = serde_json::Map::new();
    doc.insert(
        "session".into(),
        serde_json::to_value(crate::session::session_json(t))?,
    );
    doc.insert("contention".into(), serde_json::to_value(report(t))?);
    crate::output::write_json(&serde_json::Value::Object(doc), pretty, out)
}
