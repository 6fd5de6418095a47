//! The configuration's wire form: `version=1;mode=sample;rate=1000;...`, written from and read
//! into [`AgentConfig`] here and nowhere else (see the module above for the keys).

use super::{
    AgentConfig, AllocMode, BUFFER_KIB, CONFIG_VERSION, CountLayout, CpuClockChoice, HeapSnapshots,
    Mode, NativeNames, RATE_HZ,
};
use crate::EventCategory;

/// A decoded configuration and what was wrong with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The configuration: the defaults where the text said nothing usable.
    pub config: AgentConfig,
    /// The version the text says it is (0: written before configurations had versions).
    pub version: u32,
    /// Problems, for the user.
    pub warnings: Vec<String>,
}

impl AgentConfig {
    /// The configuration as the agent reads it: `version=1;mode=sample;rate=1000;...`, every
    /// setting that differs from the default (mode and rate always). An assembly name holding
    /// `,`, `;` or `=` cannot be written; see
    /// [`is_assembly_name`](super::is_assembly_name).
    pub fn encode(&self) -> String {
        let d = AgentConfig::default();
        let mut kv: Vec<(&str, String)> = vec![
            ("version", CONFIG_VERSION.to_string()),
            ("mode", self.mode.name().into()),
            ("rate", self.rate_hz.to_string()),
        ];
        if let Some(hz) = self.wall_rate_hz {
            kv.push(("wall_rate", hz.to_string()));
        }
        if let Some(clock) = self.cpu_clock {
            kv.push(("cpu_clock", clock.name().into()));
        }
        if !self.events.is_empty() {
            let names: Vec<&str> = self.events.iter().map(|c| c.name()).collect();
            kv.push(("events", names.join(",")));
        }
        if self.inline != d.inline {
            kv.push(("inline", u8::from(self.inline).to_string()));
        }
        if self.max_nodes != d.max_nodes {
            kv.push(("max_nodes", self.max_nodes.to_string()));
        }
        if self.buffer_bytes != d.buffer_bytes {
            kv.push(("buffer_kb", (self.buffer_bytes >> 10).to_string()));
        }
        if self.alloc != d.alloc {
            kv.push(("alloc", self.alloc.name().into()));
        }
        if self.alloc_interval != d.alloc_interval {
            kv.push(("alloc_interval", self.alloc_interval.to_string()));
        }
        if self.heap_snapshots != d.heap_snapshots {
            kv.push(("heap_snapshot", self.heap_snapshots.spelling()));
        }
        if self.contention {
            kv.push(("contention", "1".into()));
        }
        if !self.async_chains {
            kv.push(("async", "0".into()));
        }
        if self.coverage {
            kv.push(("coverage", "1".into()));
        }
        if self.handler_floor {
            kv.push(("handler_floor", "1".into()));
        }
        if self.also_export {
            kv.push(("also_export", "1".into()));
        }
        for (key, names) in [
            ("cover_include", &self.cover_include),
            ("cover_exclude", &self.cover_exclude),
            ("count_include", &self.count_include),
            ("count_exclude", &self.count_exclude),
        ] {
            if !names.is_empty() {
                kv.push((key, names.join(",")));
            }
        }
        if self.count_layout != d.count_layout {
            kv.push(("count_layout", self.count_layout.name().into()));
        }
        if self.native_names != d.native_names {
            kv.push(("native_names", self.native_names.name().into()));
        }
        kv.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads a configuration written by [`encode`](Self::encode) (of this or any version) or by
    /// hand. Never fails: see the module's documentation.
    pub fn decode(raw: &str) -> Decoded {
        let mut c = AgentConfig::default();
        let mut version = 0;
        let mut warnings = Vec::new();
        for item in raw.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let value = value.trim();
            match key.trim() {
                "version" => match value.parse::<u32>() {
                    Ok(v) => {
                        version = v;
                        if v > CONFIG_VERSION {
                            warnings.push(format!(
                                "the configuration is of version {v}, from a newer clrprof than this agent (version {CONFIG_VERSION}); settings it does not know are ignored"
                            ));
                        }
                    }
                    Err(_) => warnings.push(format!("bad configuration version `{value}`")),
                },
                "mode" => match Mode::from_name(value) {
                    Some(m) => c.mode = m,
                    None => warnings.push(format!("unknown mode `{value}`, sampling instead")),
                },
                "events" => {
                    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        if name == "all" {
                            c.events = EventCategory::all().to_vec();
                        } else if let Some(cat) = EventCategory::parse(name) {
                            if !c.events.contains(&cat) {
                                c.events.push(cat);
                            }
                        } else {
                            warnings.push(format!("unknown event category `{name}`, ignored"));
                        }
                    }
                }
                "rate" => match value.parse::<u32>() {
                    Ok(hz) if RATE_HZ.contains(&hz) => c.rate_hz = hz,
                    _ => warnings.push(format!(
                        "bad sampling rate `{value}`, using {} Hz",
                        c.rate_hz
                    )),
                },
                "wall_rate" => match value.parse::<u32>() {
                    Ok(hz) if RATE_HZ.contains(&hz) => c.wall_rate_hz = Some(hz),
                    _ => warnings.push(format!("bad wall-clock sampling rate `{value}`, ignored")),
                },
                "inline" => c.inline = value != "0",
                "max_nodes" => match value.parse::<u64>() {
                    Ok(n) if n > 0 => c.max_nodes = n,
                    _ => warnings.push(format!("bad max_nodes `{value}`")),
                },
                "buffer_kb" => match value.parse::<usize>() {
                    Ok(kb) if BUFFER_KIB.contains(&kb) => c.buffer_bytes = kb << 10,
                    _ => warnings.push(format!("bad buffer_kb `{value}`")),
                },
                "alloc" => match AllocMode::from_name(value) {
                    Some(a) => c.alloc = a,
                    None => warnings.push(format!("unknown allocation mode `{value}`, ignored")),
                },
                "alloc_interval" => match value.parse::<u64>() {
                    Ok(n) if (1..=1 << 40).contains(&n) => c.alloc_interval = n,
                    _ => warnings.push(format!(
                        "bad alloc_interval `{value}`, using {} bytes",
                        c.alloc_interval
                    )),
                },
                "heap_snapshot" => match HeapSnapshots::parse(value) {
                    Some(h) => c.heap_snapshots = h,
                    None => warnings.push(format!("bad heap_snapshot `{value}`, no snapshots")),
                },
                "coverage" => c.coverage = value != "0",
                "contention" => c.contention = value != "0",
                "async" => c.async_chains = value != "0",
                "cpu_clock" => match CpuClockChoice::from_name(value) {
                    Some(clock) => c.cpu_clock = Some(clock),
                    None => warnings.push(format!(
                        "unknown CPU clock `{value}` (perf or timer), ignored"
                    )),
                },
                "handler_floor" => c.handler_floor = value != "0",
                "also_export" => c.also_export = value != "0",
                "cover_include" => c.cover_include = names(value),
                "cover_exclude" => c.cover_exclude = names(value),
                "count_include" => c.count_include = names(value),
                "count_exclude" => c.count_exclude = names(value),
                "count_layout" => match CountLayout::from_name(value) {
                    Some(layout) => c.count_layout = layout,
                    None => warnings.push(format!(
                        "unknown count layout `{value}` (thread or shared), ignored"
                    )),
                },
                "native_names" => match NativeNames::from_name(value) {
                    Some(who) => c.native_names = who,
                    None => warnings.push(format!(
                        "unknown native_names `{value}` (agent or reader), ignored"
                    )),
                },
                other => warnings.push(format!("unknown setting `{other}`, ignored")),
            }
        }
        Decoded {
            config: c,
            version,
            warnings,
        }
    }
}

/// A comma-separated list of names.
fn names(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(raw: &str) -> AgentConfig {
        let d = AgentConfig::decode(raw);
        assert!(d.warnings.is_empty(), "{raw}: {:?}", d.warnings);
        d.config
    }

    #[test]
    fn every_setting_survives_encoding() {
        let c = AgentConfig {
            mode: Mode::Count,
            events: vec![EventCategory::Jit, EventCategory::Gc],
            rate_hz: 250,
            wall_rate_hz: Some(50),
            inline: false,
            max_nodes: 10,
            buffer_bytes: 64 << 10,
            alloc: AllocMode::Ticks,
            alloc_interval: 4096,
            heap_snapshots: HeapSnapshots::EveryGc(3),
            contention: true,
            async_chains: false,
            coverage: true,
            cpu_clock: Some(CpuClockChoice::Timer),
            handler_floor: true,
            cover_include: vec!["App".into(), "Lib".into()],
            cover_exclude: vec!["Tests".into()],
            count_include: vec!["System.Private.CoreLib".into()],
            count_exclude: vec!["X".into()],
            count_layout: CountLayout::Shared,
            // Not in the wire form (the environment gives it).
            export: None,
            also_export: true,
            native_names: NativeNames::Reader,
        };
        let text = c.encode();
        assert!(text.starts_with("version=1;mode=count;rate=250;"), "{text}");
        let d = AgentConfig::decode(&text);
        assert_eq!(d.config, c);
        assert_eq!(d.version, CONFIG_VERSION);
        assert!(d.warnings.is_empty());
        for h in [
            HeapSnapshots::Off,
            HeapSnapshots::AtExit,
            HeapSnapshots::EveryGc(1),
            HeapSnapshots::OnSignal,
        ] {
            assert_eq!(HeapSnapshots::parse(&h.spelling()), Some(h));
        }
        let d = AgentConfig::default();
        assert_eq!(d.encode(), "version=1;mode=sample;rate=1000");
        assert_eq!(decode(&d.encode()), d);
    }

    #[test]
    fn reads_what_earlier_clis_wrote() {
        // Before versions: no `version` key.
        let d = AgentConfig::decode("mode=trace;events=jit,gc;rate=250;inline=0;max_nodes=10");
        assert_eq!(d.version, 0);
        assert!(d.warnings.is_empty());
        let c = d.config;
        assert_eq!(c.mode, Mode::Trace);
        assert_eq!(c.events, vec![EventCategory::Jit, EventCategory::Gc]);
        assert_eq!((c.rate_hz, c.inline, c.max_nodes), (250, false, 10));
        assert_eq!(
            decode("events=all").events.len(),
            EventCategory::all().len()
        );
        assert_eq!(
            decode("heap_snapshot=every-gc").heap_snapshots,
            HeapSnapshots::EveryGc(1)
        );
        assert_eq!(
            decode("coverage=1;cover_include=App, Lib").cover_include,
            ["App", "Lib"]
        );
    }

    #[test]
    fn bad_values_and_newer_versions_warn_and_keep_defaults() {
        let d = AgentConfig::decode("mode=fast;rate=0;events=jit,nope;color=blue");
        assert_eq!(d.config.mode, Mode::Sample);
        assert_eq!(d.config.rate_hz, 1000);
        assert_eq!(d.config.events, vec![EventCategory::Jit]);
        assert_eq!(d.warnings.len(), 4, "{:?}", d.warnings);
        let d = AgentConfig::decode("version=2;mode=trace;shiny=1");
        assert_eq!(d.config.mode, Mode::Trace);
        assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
        assert!(d.warnings[0].contains("newer clrprof"));
        assert_eq!(
            AgentConfig::decode("alloc=some;alloc_interval=0;heap_snapshot=0;count_layout=x")
                .warnings
                .len(),
            4
        );
    }
}
