//! The agent's configuration, read from environment variables set by `clrprof record`.
//!
//! - `CLRPROF_SESSION`: path of the Unix socket the CLI listens on; the trace is streamed there.
//! - `CLRPROF_OUTPUT`: a file to write the trace to directly (profiling without the CLI).
//! - `CLRPROF_CONFIG`: what to record, an encoded [`AgentConfig`] (`clrprof_trace::config`
//!   documents every key), the same type the CLI builds it from.
//! - `CLRPROF_EXPORT_*`: export mode, without the CLI (neither of the first two set): the
//!   agent ships a profile of every period itself (see `crate::export`); with the CLI, when
//!   the configuration says `also_export=1` (a trace beside the exported profiles).
//!
//! Unknown keys and bad values are reported back to the CLI as warnings, never fatal: the
//! profiled program must run whatever the configuration says.

use std::ops::{Deref, DerefMut};

pub use clrprof_trace::config::{
    AgentConfig, AllocMode, CountLayout, CpuClockChoice, DEFAULT_ALLOC_INTERVAL,
    DEFAULT_WALL_RATE_HZ, ExportSettings, HeapSnapshots, Mode,
};

/// The configuration in force: the settings, the text they were read from, and what was
/// wrong with it.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// What to record.
    pub settings: AgentConfig,
    /// The configuration string as given.
    pub raw: String,
    /// Problems found while reading it (and later, when a setting cannot be honoured), for
    /// the CLI to show.
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads a `CLRPROF_CONFIG` value.
    pub fn parse(raw: &str) -> Config {
        let decoded = AgentConfig::decode(raw);
        Config {
            settings: decoded.config,
            raw: raw.to_string(),
            warnings: decoded.warnings,
        }
    }
}

impl Config {
    /// Export mode's configuration, built from the environment rather than read from text
    /// (its `raw` text is the wire form, which leaves the export settings out).
    pub fn for_export(settings: AgentConfig) -> Config {
        Config {
            raw: settings.encode(),
            settings,
            warnings: Vec::new(),
        }
    }
}

impl Deref for Config {
    type Target = AgentConfig;

    fn deref(&self) -> &AgentConfig {
        &self.settings
    }
}

impl DerefMut for Config {
    fn deref_mut(&mut self) -> &mut AgentConfig {
        &mut self.settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_settings_and_keeps_the_text_and_warnings() {
        let c = Config::parse("mode=count;count_include=App;color=blue");
        assert_eq!(c.mode, Mode::Count);
        assert!(c.mode.samples() && Mode::Sample.samples() && !Mode::Trace.samples());
        assert_eq!(c.count_include, ["App"]);
        assert_eq!(c.raw, "mode=count;count_include=App;color=blue");
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert_eq!(Config::parse("").settings, AgentConfig::default());
    }
}
