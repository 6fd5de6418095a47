//! speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`):
//! one "sampled" profile per thread, in nanoseconds, bytes (allocated bytes) or plain
//! counts. A frame is a function; where the profile has source lines, it names the
//! function's source file and the first of its lines the profile has (speedscope shows them
//! with the frame and has no per-line view: `report --lines`, `--source` and pprof's `-list`
//! have that).

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use crate::model::{FrameIndex, Profile, SourceLine, StackIndex};
use crate::query::{Metric, NodeMark, Query};
use crate::tree::{Label, NO_STACK_NAME, Values};
use crate::{Analysis, Error, Render};

/// The schema URL speedscope recognises its files by.
pub const SPEEDSCOPE_SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// speedscope output. In sample mode each thread's profile lists its samples in time
/// order (so speedscope's "time order" view is a timeline); a thread with a call tree
/// (trace mode) lists one sample per call path with that path's self weight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Speedscope;

#[derive(Serialize)]
struct File {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<SampledProfile>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
    /// speedscope shows `file` with the frame: the function's source file where the profile
    /// has its lines, else its module.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// The first line of the function the profile has (1-based), with its source file.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
struct SampledProfile {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

/// Frame table shared by all profiles, filled as frames are first used.
struct Frames<'p> {
    profile: &'p Profile,
    index: HashMap<Label, usize>,
    frames: Vec<Frame>,
    /// Each function's source file and first line, where the profile has lines.
    sources: HashMap<FrameIndex, &'p SourceLine>,
}

/// Each function's source file and the first of its lines in `profile`'s stacks (a function
/// whose lines name several files, inlined code of another file, keeps the lowest line's).
fn first_lines(profile: &Profile) -> HashMap<FrameIndex, &SourceLine> {
    let mut first: HashMap<FrameIndex, &SourceLine> = HashMap::new();
    for node in &profile.stacks {
        let Some(line) = node.line else {
            continue;
        };
        let line = profile.source_line(line);
        first
            .entry(node.frame)
            .and_modify(|known| {
                if line.line < known.line {
                    *known = line;
                }
            })
            .or_insert(line);
    }
    first
}

impl Frames<'_> {
    fn get(&mut self, label: Label) -> usize {
        if let Some(&i) = self.index.get(&label) {
            return i;
        }
        let frame = match label {
            Label::Frame(index) => {
                let f = self.profile.frame(index);
                match self.sources.get(&index) {
                    Some(source) => Frame {
                        name: f.name.clone(),
                        file: Some(source.file.clone()),
                        line: Some(source.line),
                    },
                    None => Frame {
                        name: f.name.clone(),
                        file: (!f.module.is_empty()).then(|| f.module.clone()),
                        line: None,
                    },
                }
            }
            _ => Frame {
                name: NO_STACK_NAME.to_owned(),
                file: None,
                line: None,
            },
        };
        let i = self.frames.len();
        self.frames.push(frame);
        self.index.insert(label, i);
        i
    }

    fn stack(&mut self, stack: Option<StackIndex>) -> Vec<usize> {
        match stack {
            None => vec![self.get(Label::NoStack)],
            Some(s) => self
                .profile
                .stack_frames(s)
                .into_iter()
                .map(|f| self.get(Label::Frame(f)))
                .collect(),
        }
    }
}

impl Render for Speedscope {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let a = Analysis::new(profile, query, false)?;
        let metric = a.metric;
        let unit = match metric {
            Metric::Cpu | Metric::Sys | Metric::Wall => "nanoseconds",
            Metric::Bytes => "bytes",
            _ => "none",
        };
        let mut frames = Frames {
            profile,
            index: HashMap::new(),
            frames: Vec::new(),
            sources: first_lines(profile),
        };
        let mut profiles = Vec::new();
        for &t in &a.selection.threads {
            let thread = &profile.threads[t];
            let mut samples: Vec<Vec<usize>> = Vec::new();
            let mut weights: Vec<u64> = Vec::new();
            if let Some(tree) = &thread.call_tree {
                let marks = a.selection.call_tree_marks(tree);
                for (i, node) in tree.nodes.iter().enumerate() {
                    let w = Values::of_call_node(node).get(metric);
                    if marks[i] != NodeMark::Counted || w == 0 {
                        continue;
                    }
                    let stack = profile
                        .call_path(tree, i)
                        .into_iter()
                        .map(|f| frames.get(Label::Frame(f)))
                        .collect();
                    samples.push(stack);
                    weights.push(w);
                }
            } else {
                let mut ordered: Vec<_> = thread
                    .samples
                    .iter()
                    .filter(|s| a.selection.keeps_stack(s.stack))
                    .collect();
                ordered.sort_by_key(|s| s.time_ns);
                let mut last: Option<Option<StackIndex>> = None;
                for s in ordered {
                    let w = Values::of_sample(s).get(metric);
                    if w == 0 {
                        continue;
                    }
                    if last == Some(s.stack) {
                        // Same stack as the previous sample: one longer sample.
                        if let Some(prev) = weights.last_mut() {
                            *prev = prev.saturating_add(w);
                        }
                        continue;
                    }
                    last = Some(s.stack);
                    samples.push(frames.stack(s.stack));
                    weights.push(w);
                }
            }
            let total = weights.iter().fold(0u64, |acc, w| acc.saturating_add(*w));
            profiles.push(SampledProfile {
                kind: "sampled",
                name: format!("{} ({})", thread.label(), metric.description()),
                unit,
                start_value: 0,
                end_value: total,
                samples,
                weights,
            });
        }
        // Threads with nothing to show only clutter the viewer, unless nothing has anything.
        if profiles.iter().any(|p| p.end_value > 0) {
            profiles.retain(|p| p.end_value > 0);
        }
        let active_profile_index = profiles
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| (p.end_value, std::cmp::Reverse(*i)))
            .map_or(0, |(i, _)| i);
        let file = File {
            schema: SPEEDSCOPE_SCHEMA,
            shared: Shared {
                frames: frames.frames,
            },
            profiles,
            name: {
                let name = if profile.name.is_empty() {
                    format!("clrprof {} profile", profile.kind)
                } else if profile.kind == crate::ProfileKind::Alloc {
                    format!("{}: {}", profile.name, metric.description())
                } else {
                    profile.name.clone()
                };
                match &profile.ended {
                    Some(end) => format!("{name}: {end}"),
                    None => name,
                }
            },
            active_profile_index,
            exporter: super::exporter(),
        };
        serde_json::to_writer(&mut *out, &file)?;
        writeln!(out)?;
        Ok(())
    }
}
