//! Folded stacks: one `root;caller;callee weight` line per distinct stack, the input of
//! Brendan Gregg's `flamegraph.pl` and of inferno.

use std::io::Write;

use crate::model::Profile;
use crate::output::{folded_frame_name, folded_frame_names};
use crate::query::{Metric, Query};
use crate::tree::{Label, MergedTree};
use crate::{Analysis, Error, Render};

/// Folded-stack output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// Start every stack with a frame naming its thread (`name (tid)`).
    pub per_thread: bool,
}

impl Render for Folded {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let (_, lines) = folded_lines(profile, query, self.per_thread)?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

/// The folded lines (without line ends), sorted, each stack's weight in the returned
/// metric; stacks of weight 0 are left out. `;` in a name becomes `:`, and a function whose
/// name another function of the profile has too is marked with its module: `Lib.Util.Run()
/// [A.dll]`.
pub fn folded_lines(
    profile: &Profile,
    query: &Query,
    per_thread: bool,
) -> Result<(Metric, Vec<String>), Error> {
    let (metric, stacks) = folded_stacks(profile, query, per_thread)?;
    let lines = stacks
        .into_iter()
        .map(|(stack, weight)| format!("{stack} {weight}"))
        .collect();
    Ok((metric, lines))
}

/// The folded stacks as `(frames joined by ';', weight)`, sorted by stack.
pub(crate) fn folded_stacks(
    profile: &Profile,
    query: &Query,
    per_thread: bool,
) -> Result<(Metric, Vec<(String, u64)>), Error> {
    let a = Analysis::new(profile, query, per_thread)?;
    let tree: &MergedTree = &a.tree;
    let frame_names = folded_frame_names(profile);
    let mut stacks = Vec::new();
    for (n, node) in tree.nodes.iter().enumerate() {
        let weight = node.self_values.get(a.metric);
        if n == MergedTree::ROOT || weight == 0 {
            continue;
        }
        let mut stack = String::new();
        for (i, p) in tree.path(n).into_iter().enumerate() {
            if i > 0 {
                stack.push(';');
            }
            let label = tree.nodes[p].label;
            let name = match label {
                Label::Frame(f) => frame_names[f.index()].clone(),
                _ => label.name(profile),
            };
            stack.push_str(&folded_frame_name(&name));
        }
        stacks.push((stack, weight));
    }
    stacks.sort_unstable();
    Ok((a.metric, stacks))
}
