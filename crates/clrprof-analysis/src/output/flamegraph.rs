//! Flame graph SVG, drawn by inferno from the folded stacks.

use std::io::Write;

use crate::model::Profile;
use crate::output::folded::folded_stacks;
use crate::query::Query;
use crate::{Error, Render};

/// Interactive SVG flame graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flamegraph {
    /// Put a frame naming the thread at the bottom of every stack.
    pub per_thread: bool,
    /// Title; by default `<name>: <metric>` (e.g. `MyApp: CPU time`).
    pub title: Option<String>,
    /// Draw an icicle graph (roots at the top) instead.
    pub inverted: bool,
}

impl Render for Flamegraph {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let (metric, stacks) = folded_stacks(profile, query, self.per_thread)?;
        if stacks.is_empty() {
            return Err(Error::NothingToDraw(metric.description()));
        }
        // inferno adds the weights up in a u64; keep the sum far from overflowing by
        // dividing every weight and telling inferno to multiply them back for display.
        let sum: u128 = stacks.iter().map(|(_, w)| u128::from(*w)).sum();
        let limit = u128::from(u64::MAX / 4);
        let divisor = sum.div_ceil(limit).max(1);
        let lines: Vec<String> = stacks
            .iter()
            .map(|(stack, w)| format!("{stack} {}", u128::from(*w) / divisor))
            .collect();
        let mut options = inferno::flamegraph::Options::default();
        options.title = self.title.clone().unwrap_or_else(|| {
            let what = format!("{} ({})", metric.description(), metric.unit());
            if profile.name.is_empty() {
                format!("clrprof: {what}")
            } else {
                format!("{}: {what}", profile.name)
            }
        });
        let mut subtitle = Vec::new();
        if let Some(t) = &query.thread {
            subtitle.push(format!("thread {t}"));
        }
        if let Some(f) = query.filter.as_deref().filter(|f| !f.is_empty()) {
            subtitle.push(format!("stacks containing \"{f}\""));
        }
        if let Some(end) = &profile.ended {
            subtitle.push(format!("the program ended: {end}"));
        }
        if !subtitle.is_empty() {
            options.subtitle = Some(subtitle.join(", "));
        }
        options.count_name = metric.unit().to_owned();
        options.name_type = "Function:".to_owned();
        // Colour by name hash so that the same function keeps its colour between runs.
        options.hash = true;
        options.no_sort = true; // folded_stacks are sorted
        options.factor = divisor as f64;
        if self.inverted {
            options.direction = inferno::flamegraph::Direction::Inverted;
        }
        inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)?;
        Ok(())
    }
}
