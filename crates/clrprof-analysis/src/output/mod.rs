//! Output formats. Each format is a type implementing [`Render`]; its fields are the
//! format's own options, while the [`Query`] carries what every format shares (metric,
//! thread, filter, top N).
//!
//! | format | type | what it is for |
//! |---|---|---|
//! | `text` | [`Text`] | the top table and, optionally, an indented call tree |
//! | `json` | [`Json`] | the same data for programs (documented in `docs/report-json.md`) |
//! | `folded` | [`Folded`] | `frame;frame;frame weight` lines for flame graph tools |
//! | `flamegraph` | [`Flamegraph`] | an interactive SVG flame graph |
//! | `speedscope` | [`Speedscope`] | speedscope's JSON file format, one profile per thread |
//! | `chrome` | [`Chrome`] | Chrome trace events: a per-thread timeline (Perfetto, chrome://tracing) |
//! | `pprof` | [`Pprof`] | gzip-compressed `profile.proto` (go tool pprof, Grafana Pyroscope) |
//! | `html` | [`Html`] | one self-contained page: flame graphs, functions, timeline, runtime views |

use std::fmt;
use std::io::Write;
use std::str::FromStr;

use crate::Error;
use crate::model::Profile;
use crate::query::Query;

mod chrome;
pub mod fit;
mod flamegraph;
mod folded;
mod html;
mod json;
mod pprof;
pub mod pprof_proto;
mod speedscope;
mod text;

pub use chrome::Chrome;
pub use flamegraph::Flamegraph;
pub use folded::{Folded, folded_lines};
pub use html::Html;
pub use json::{
    CallTreeJson, CpuReport, FunctionJson, Json, NodeJson, NodeKind, ThreadJson, WeighedFrameJson,
    report as json_report,
};
pub use pprof::{Pprof, encode as pprof_encode};

/// The `exporter` named in the JSON outputs that have one (speedscope, Chrome).
pub(crate) fn exporter() -> String {
    format!("clrprof@{}", env!("CARGO_PKG_VERSION"))
}
pub use speedscope::Speedscope;

/// Writes a value as JSON, indented for people when `pretty`, and a final newline.
pub fn write_json<T: serde::Serialize + ?Sized>(
    value: &T,
    pretty: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if pretty {
        serde_json::to_writer_pretty(&mut *out, value)?;
    } else {
        serde_json::to_writer(&mut *out, value)?;
    }
    writeln!(out)?;
    Ok(())
}
pub use text::{TEXT_TOP, Text};

/// Writes a profile in one output format.
pub trait Render {
    /// Writes `profile`, restricted and weighted as `query` says, to `out`.
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error>;
}

/// The output formats, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// [`Text`].
    Text,
    /// [`Json`].
    Json,
    /// [`Folded`].
    Folded,
    /// [`Flamegraph`].
    Flamegraph,
    /// [`Speedscope`].
    Speedscope,
    /// [`Chrome`].
    Chrome,
    /// [`Pprof`].
    Pprof,
    /// [`Html`].
    Html,
}

impl Format {
    /// Every format, in the order of the table above.
    pub const ALL: [Format; 8] = [
        Format::Text,
        Format::Json,
        Format::Folded,
        Format::Flamegraph,
        Format::Speedscope,
        Format::Chrome,
        Format::Pprof,
        Format::Html,
    ];

    /// The format's name as accepted by [`Format::from_str`].
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Folded => "folded",
            Format::Flamegraph => "flamegraph",
            Format::Speedscope => "speedscope",
            Format::Chrome => "chrome",
            Format::Pprof => "pprof",
            Format::Html => "html",
        }
    }

    /// The usual file name ending for this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Json => "json",
            Format::Folded => "folded",
            Format::Flamegraph => "svg",
            Format::Speedscope => "speedscope.json",
            Format::Chrome => "trace.json",
            Format::Pprof => "pb.gz",
            Format::Html => "html",
        }
    }

    /// Whether the output is binary (not for a terminal).
    pub fn is_binary(self) -> bool {
        self == Format::Pprof
    }

    /// A renderer for this format with its default options.
    pub fn renderer(self) -> Box<dyn Render> {
        match self {
            Format::Text => Box::new(Text::default()),
            Format::Json => Box::new(Json::default()),
            Format::Folded => Box::new(Folded::default()),
            Format::Flamegraph => Box::new(Flamegraph::default()),
            Format::Speedscope => Box::new(Speedscope),
            Format::Chrome => Box::new(Chrome),
            Format::Pprof => Box::new(Pprof),
            Format::Html => Box::new(Html::default()),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Format, Error> {
        let lower = s.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == lower)
            .ok_or_else(|| Error::UnknownFormat(s.to_owned()))
    }
}

/// The name of each frame in folded stacks, by frame index: its display name, followed by
/// its module (`Lib.Util.Run() [A.dll]`) where another frame of the profile has the same
/// name (the same full name in two assemblies). Flame-graph tools know a frame by its name
/// alone and would merge the two; the mark is left out elsewhere to keep names short.
pub(crate) fn folded_frame_names(profile: &Profile) -> Vec<std::borrow::Cow<'_, str>> {
    let mut frames_named: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for f in &profile.frames {
        *frames_named.entry(f.name.as_str()).or_default() += 1;
    }
    profile
        .frames
        .iter()
        .map(|f| {
            if frames_named[f.name.as_str()] > 1 && !f.module.is_empty() {
                std::borrow::Cow::Owned(format!("{} [{}]", f.name, f.module))
            } else {
                std::borrow::Cow::Borrowed(f.name.as_str())
            }
        })
        .collect()
}

/// A frame name made safe for a folded-stack line: `;` separates frames and a line ends
/// the record, so both are replaced.
pub(crate) fn folded_frame_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.contains([';', '\n', '\r']) {
        std::borrow::Cow::Owned(name.replace(';', ":").replace(['\n', '\r'], " "))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}
