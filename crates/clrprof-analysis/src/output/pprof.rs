//! pprof: a gzip-compressed `perftools.profiles.Profile` protobuf.
//!
//! Sample types are `samples/count`, `cpu/nanoseconds`, `wall/nanoseconds` and, in trace
//! mode, `calls/count` (allocation profiles: `alloc_objects/count` and `alloc_space/bytes`,
//! each sample labelled with its `type` too); the default sample type is the query's metric. Each sample is one
//! distinct stack of one thread (sample mode) or one call path of one thread's call tree
//! (trace mode), labelled with `thread` (its name) and `thread_id`. Functions carry the
//! frame name; a location per function points at a mapping per module.

use std::collections::HashMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::model::{FrameKind, LineIndex, Profile};
use crate::output::pprof_proto as pb;
use crate::query::{Metric, NodeMark, Query};
use crate::tree::{Label, Values};
use crate::{Analysis, Error, ProfileKind, Render};

/// pprof output (gzip-compressed protobuf).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pprof;

impl Render for Pprof {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        write_gzipped(&encode(profile, query)?, out)
    }
}

/// Writes a profile message gzip-compressed, as pprof files are.
pub(crate) fn write_gzipped(message: &pb::Profile, out: &mut dyn Write) -> Result<(), Error> {
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&message.encode_to_vec())?;
    gz.finish()?;
    Ok(())
}

/// A count or weight as pprof's signed value.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The profile's tables, with a function per label and a location per label and line.
struct Tables<'p> {
    profile: &'p Profile,
    tables: pb::Tables,
    function_index: HashMap<Label, u64>,
    location_index: HashMap<(Label, Option<LineIndex>), u64>,
}

impl Tables<'_> {
    fn string(&mut self, s: &str) -> i64 {
        self.tables.string(s)
    }

    /// The location id of a function label.
    fn location(&mut self, label: Label) -> u64 {
        self.location_at(label, None)
    }

    /// The location id of a function label at a source line (if known). A function's
    /// source file is that of the first of its lines seen.
    fn location_at(&mut self, label: Label, line: Option<LineIndex>) -> u64 {
        if let Some(&id) = self.location_index.get(&(label, line)) {
            return id;
        }
        let profile = self.profile;
        let source = line.map(|l| profile.source_line(l));
        let function = match self.function_index.get(&label) {
            Some(&id) => {
                if let Some(source) = source
                    && self
                        .tables
                        .function_mut(id)
                        .is_some_and(|f| f.filename == 0)
                {
                    let file = self.tables.string(&source.file);
                    if let Some(f) = self.tables.function_mut(id) {
                        f.filename = file;
                    }
                }
                id
            }
            None => {
                let name = self.string(&label.name(profile));
                let filename = source.map_or(0, |s| self.tables.string(&s.file));
                let id = self.tables.add_function(name, filename);
                self.function_index.insert(label, id);
                id
            }
        };
        let mapping_id = self.tables.mapping(label.module(profile));
        let source_line = source.map_or(0, |s| i64::from(s.line));
        let id = self.tables.add_location(function, source_line, mapping_id);
        self.location_index.insert((label, line), id);
        id
    }
}

/// The type an allocation frame (`[byte[]]`) names.
fn type_name(frame: &str) -> &str {
    frame
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(frame)
}

/// Builds the pprof message (uncompressed) for `profile` under `query`.
pub fn encode(profile: &Profile, query: &Query) -> Result<pb::Profile, Error> {
    let a = Analysis::new(profile, query, false)?;
    let with_calls = matches!(profile.kind, ProfileKind::Trace | ProfileKind::Count);
    let mut t = Tables {
        profile,
        tables: pb::Tables::default(),
        function_index: HashMap::new(),
        location_index: HashMap::new(),
    };

    // The sample types: (pprof's name, unit, the metric whose values they are).
    let mut types = match profile.kind {
        ProfileKind::Alloc => vec![
            ("alloc_objects", "count", Metric::Objects),
            ("alloc_space", "bytes", Metric::Bytes),
        ],
        ProfileKind::Sample | ProfileKind::Trace | ProfileKind::Count => vec![
            ("samples", "count", Metric::Samples),
            ("cpu", "nanoseconds", Metric::Cpu),
            ("wall", "nanoseconds", Metric::Wall),
        ],
    };
    if with_calls {
        types.push(("calls", "count", Metric::Calls));
    }
    if a.tree.total().mode_known_cpu_ns > 0 {
        types.push(("sys", "nanoseconds", Metric::Sys));
    }
    let sample_type: Vec<pb::ValueType> = types
        .iter()
        .map(|(ty, unit, _)| pb::ValueType {
            r#type: t.string(ty),
            unit: t.string(unit),
        })
        .collect();
    let values = |v: &Values| -> Vec<i64> {
        types
            .iter()
            .map(|&(_, _, metric)| to_i64(v.get(metric)))
            .collect()
    };
    let type_key = t.string("type");

    let thread_key = t.string("thread");
    let tid_key = t.string("thread_id");
    let mut samples = Vec::new();
    for &ti in &a.selection.threads {
        let thread = &profile.threads[ti];
        let name = if thread.name.is_empty() {
            thread.label()
        } else {
            thread.name.clone()
        };
        let labels = vec![
            pb::Label {
                key: thread_key,
                str: t.string(&name),
                ..pb::Label::default()
            },
            pb::Label {
                key: tid_key,
                num: i64::from(thread.tid),
                ..pb::Label::default()
            },
        ];
        if let Some(tree) = &thread.call_tree {
            let marks = a.selection.call_tree_marks(tree);
            for (i, node) in tree.nodes.iter().enumerate() {
                let v = Values::of_call_node(node);
                if marks[i] != NodeMark::Counted || v.is_zero() {
                    continue;
                }
                let mut location_id: Vec<u64> = profile
                    .call_path(tree, i)
                    .into_iter()
                    .map(|f| t.location(Label::Frame(f)))
                    .collect();
                location_id.reverse();
                samples.push(pb::Sample {
                    location_id,
                    value: values(&v),
                    label: labels.clone(),
                });
            }
        } else {
            let stacks = crate::tree::selected_samples_by_stack(thread, &a.selection);
            for (stack, v) in stacks {
                // An allocation's type is its stack's leaf frame, and a label too.
                let mut label = labels.clone();
                if let Some(leaf) = stack.map(|s| profile.frame(profile.stacks[s.index()].frame))
                    && leaf.kind == FrameKind::Type
                {
                    label.push(pb::Label {
                        key: type_key,
                        str: t.string(type_name(&leaf.name)),
                        ..pb::Label::default()
                    });
                }
                let mut location_id: Vec<u64> = match stack {
                    None => vec![t.location(Label::NoStack)],
                    Some(s) => profile
                        .stack_places(s)
                        .into_iter()
                        .map(|(f, line)| t.location_at(Label::Frame(f), line))
                        .collect(),
                };
                location_id.reverse();
                samples.push(pb::Sample {
                    location_id,
                    value: values(&v),
                    label,
                });
            }
        }
    }

    // Count mode: each caller -> callee count as a two-frame sample with only a call count,
    // so that pprof's graph shows the exact calls on its edges.
    if let Some(counts) = a.call_counts() {
        let mut edges: Vec<_> = counts.edges.iter().collect();
        edges.sort();
        for (&(caller, callee), &calls) in edges {
            if a.selection.filter().is_some_and(|f| {
                !profile.frame(caller).name.contains(f) && !profile.frame(callee).name.contains(f)
            }) {
                continue;
            }
            let v = Values {
                calls,
                ..Values::default()
            };
            samples.push(pb::Sample {
                location_id: vec![
                    t.location(Label::Frame(callee)),
                    t.location(Label::Frame(caller)),
                ],
                value: values(&v),
                label: Vec::new(),
            });
        }
    }

    let (period_type, period) = match profile.kind {
        ProfileKind::Alloc => (("alloc_space", "bytes"), 0),
        _ => (("cpu", "nanoseconds"), to_i64(profile.sample_interval_ns)),
    };
    let period_type = pb::ValueType {
        r#type: t.string(period_type.0),
        unit: t.string(period_type.1),
    };
    let default_sample_type = types
        .iter()
        .find(|(_, _, m)| *m == a.metric)
        .map_or(0, |(name, _, _)| t.string(name));
    let what = match profile.kind {
        ProfileKind::Alloc => "allocation".to_string(),
        mode => mode.to_string(),
    };
    let mut comment = vec![t.string(&format!("clrprof {what} profile"))];
    if let Some(f) = a.selection.filter() {
        comment.push(t.string(&format!("filter: stacks with a frame containing \"{f}\"")));
    }
    if let Some(end) = &profile.ended {
        comment.push(t.string(&format!("the program ended: {end}")));
    }
    for note in a.notes() {
        comment.push(t.string(&note));
    }

    let mut message = pb::Profile {
        sample_type,
        sample: samples,
        time_nanos: to_i64(profile.start_unix_ns),
        duration_nanos: to_i64(profile.duration_ns),
        period_type: Some(period_type),
        period,
        comment,
        default_sample_type,
        ..pb::Profile::default()
    };
    t.tables.fill(&mut message);
    Ok(message)
}
