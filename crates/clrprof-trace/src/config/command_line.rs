//! The settings as command-line values (the `clap` feature, for the CLI; the agent never
//! builds it): each value is offered under its configuration name, with the help `clrprof
//! record --help` shows.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use super::{AllocMode, CpuClockChoice, Mode};

impl ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        Mode::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Mode::Sample => {
                "Sample where the CPU is spent (--rate samples per second of each thread's CPU \
                 time) and where every thread is (--wall-rate per second): cheap, statistical \
                 times"
            }
            Mode::Trace => {
                "Count every call through enter/leave hooks (exact calls and call paths; sampled \
                 times)"
            }
            Mode::Count => {
                "Sample mode, plus exact calls per function and per call site from counters \
                 added to the IL of the program's methods (--include to count framework \
                 assemblies too)"
            }
            Mode::None => "No CPU profiling: only the events chosen with --events",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for AllocMode {
    /// Every method but `off`, which is leaving `--alloc` out.
    fn value_variants<'a>() -> &'a [Self] {
        &[AllocMode::Sampled, AllocMode::All, AllocMode::Ticks]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            AllocMode::Off => return None,
            AllocMode::Sampled => {
                "A random sample picked by bytes; counts and bytes are scaled-up estimates"
            }
            AllocMode::All => "Every allocation: exact counts and bytes",
            AllocMode::Ticks => {
                "The runtime's allocation ticks (one per ~100 KB allocated): bytes per type and \
                 stack, estimated, with a bias; no object counts. The default"
            }
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for CpuClockChoice {
    fn value_variants<'a>() -> &'a [Self] {
        CpuClockChoice::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            CpuClockChoice::Perf => "A perf task-clock event per thread",
            CpuClockChoice::Timer => "A POSIX timer on each thread's CPU-time clock",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_offers_the_configuration_names() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_str(m.name(), false), Ok(*m));
        }
        let offered: Vec<String> = AllocMode::value_variants()
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(offered, ["sampled", "all", "ticks"]);
        for a in AllocMode::value_variants() {
            assert_eq!(AllocMode::from_str(a.name(), false), Ok(*a));
        }
        assert!(AllocMode::from_str("off", false).is_err());
        assert!(AllocMode::from_str("some", false).is_err());
        assert_eq!(
            CpuClockChoice::from_str("timer", false),
            Ok(CpuClockChoice::Timer)
        );
    }
}
