//! Flame graph SVG, drawn by inferno from the folded stacks, frames coloured by their
//! category (managed, native, the runtime's VM and GC, the JIT, allocated types), as the HTML
//! report colours them.

use std::io::Write;

use inferno::flamegraph::color::{Color, PaletteMap};

use crate::model::{FrameCategory, Profile};
use crate::output::folded::folded_stacks;
use crate::output::{folded_frame_name, folded_frame_names};
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
        let mut palette = palette(profile);
        if let Some(t) = &query.thread {
            subtitle.push(format!("thread {t}"));
        }
        if let Some(f) = query.filter.as_deref().filter(|f| !f.is_empty()) {
            subtitle.push(format!("stacks containing \"{f}\""));
        }
        if let Some(end) = &profile.ended {
            subtitle.push(format!("the program ended: {end}"));
        }
        subtitle.push(legend(profile));
        options.subtitle = Some(subtitle.join("; "));
        options.palette_map = Some(&mut palette);
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

/// Each frame's colour, by the name the folded stacks give it; threads and `[no managed
/// frames]` are markers.
fn palette(profile: &Profile) -> PaletteMap {
    let mut map = PaletteMap::default();
    let colour = |category: FrameCategory, name: &str| {
        let [r, g, b] = category.colour_for(name);
        Color { r, g, b }
    };
    for (frame, name) in profile.frames.iter().zip(folded_frame_names(profile)) {
        let name = folded_frame_name(&name);
        map.insert(&name, colour(frame.category(), &name));
    }
    for t in &profile.threads {
        let name = t.label();
        map.insert(&name, colour(FrameCategory::Marker, &name));
    }
    let none = crate::tree::NO_STACK_NAME;
    map.insert(none, colour(FrameCategory::Marker, none));
    map
}

/// What the colours mean, for the categories the profile has.
fn legend(profile: &Profile) -> String {
    let words = |c: FrameCategory| match c {
        FrameCategory::Managed => "blue: managed",
        FrameCategory::Generated => "teal: generated at run time",
        FrameCategory::Native => "orange: native",
        FrameCategory::Runtime => "red: runtime (VM, GC)",
        FrameCategory::Jit => "purple: JIT",
        FrameCategory::Type => "green: type allocated",
        FrameCategory::Marker => "grey: thread, stack ended early",
    };
    let present: Vec<&str> = FrameCategory::ALL
        .into_iter()
        .filter(|c| profile.frames.iter().any(|f| f.category() == *c))
        .map(words)
        .collect();
    format!("colours: {}", present.join(", "))
}
