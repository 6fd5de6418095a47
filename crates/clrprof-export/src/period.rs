//! What one period gathered: per profile type, samples aggregated by stack in a bounded table.

use std::collections::HashMap;
use std::fmt;

/// The stacks each profile type keeps in one period unless told otherwise.
pub const DEFAULT_MAX_STACKS: usize = 4096;

/// The function name of the one stack per type that gathers the samples whose stacks did not
/// fit in the table.
pub const OVER_LIMIT_FUNCTION: &str = "[stacks over the limit]";

/// One frame of a stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function's readable name, e.g. `App.Program.Work(int)`.
    pub function: String,
    /// The file name of the module the function is in, e.g. `App.dll` (empty if unknown).
    pub module: String,
    /// The source file, when the line-level information gives it.
    pub file: Option<String>,
    /// The source line, when the line-level information gives it.
    pub line: Option<u32>,
}

impl Frame {
    /// A frame without source position.
    pub fn new(function: impl Into<String>, module: impl Into<String>) -> Frame {
        Frame {
            function: function.into(),
            module: module.into(),
            file: None,
            line: None,
        }
    }

    /// The same frame at `file`:`line`.
    pub fn at(mut self, file: impl Into<String>, line: u32) -> Frame {
        self.file = Some(file.into());
        self.line = Some(line);
        self
    }
}

/// A measured quantity and its unit, as pprof and OTLP name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueType {
    /// What is measured, e.g. `cpu`.
    pub name: &'static str,
    /// Its unit, e.g. `nanoseconds`.
    pub unit: &'static str,
}

/// The profile types one period gathers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProfileType {
    /// CPU time of the threads, in nanoseconds.
    Cpu,
    /// Wall time of the threads that were busy or blocked, in nanoseconds.
    Wall,
    /// Allocated bytes and objects.
    Allocations,
    /// Lock wait time in nanoseconds and the number of waits.
    Lock,
    /// Exceptions thrown.
    Exceptions,
}

const CPU_VALUES: [ValueType; 1] = [ValueType {
    name: "cpu",
    unit: "nanoseconds",
}];
const WALL_VALUES: [ValueType; 1] = [ValueType {
    name: "wall",
    unit: "nanoseconds",
}];
const ALLOCATION_VALUES: [ValueType; 2] = [
    ValueType {
        name: "alloc_space",
        unit: "bytes",
    },
    ValueType {
        name: "alloc_objects",
        unit: "count",
    },
];
const LOCK_VALUES: [ValueType; 2] = [
    ValueType {
        name: "delay",
        unit: "nanoseconds",
    },
    ValueType {
        name: "contentions",
        unit: "count",
    },
];
const EXCEPTION_VALUES: [ValueType; 1] = [ValueType {
    name: "exceptions",
    unit: "count",
}];

impl ProfileType {
    /// Every type, in the order profiles are encoded.
    pub const ALL: [ProfileType; 5] = [
        ProfileType::Cpu,
        ProfileType::Wall,
        ProfileType::Allocations,
        ProfileType::Lock,
        ProfileType::Exceptions,
    ];

    /// What each value of a sample of this type measures, in order.
    pub fn value_types(self) -> &'static [ValueType] {
        match self {
            ProfileType::Cpu => &CPU_VALUES,
            ProfileType::Wall => &WALL_VALUES,
            ProfileType::Allocations => &ALLOCATION_VALUES,
            ProfileType::Lock => &LOCK_VALUES,
            ProfileType::Exceptions => &EXCEPTION_VALUES,
        }
    }

    /// A sample every `every` units of this type's first value (CPU every 10,000,000
    /// nanoseconds of CPU time: 100 Hz).
    pub fn period(self, every: i64) -> SamplingPeriod {
        SamplingPeriod {
            value_type: self.value_types()[0],
            every,
        }
    }

    /// The name Pyroscope gives the type (its `__name__` label), as its .NET profiler does.
    pub fn pyroscope_name(self) -> &'static str {
        match self {
            ProfileType::Cpu => "process_cpu",
            ProfileType::Wall => "wall",
            ProfileType::Allocations => "memory",
            ProfileType::Lock => "lock",
            ProfileType::Exceptions => "exception",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What is counted between two samples of a type, e.g. `cpu`/`nanoseconds` every 10,000,000.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplingPeriod {
    /// What is counted.
    pub value_type: ValueType,
    /// How much of it passes between two samples.
    pub every: i64,
}

/// A sample that [`PeriodProfiles::add`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The sample has not one value per value type of its profile type.
    WrongValueCount {
        /// The profile type.
        profile_type: ProfileType,
        /// How many values that type has.
        expected: usize,
        /// How many the sample had.
        given: usize,
    },
    /// The stack has no frame.
    EmptyStack,
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::WrongValueCount {
                profile_type,
                expected,
                given,
            } => write!(
                f,
                "a {profile_type:?} sample has {expected} value(s), {given} were given"
            ),
            AddError::EmptyStack => write!(f, "a sample's stack has no frame"),
        }
    }
}

impl std::error::Error for AddError {}

/// One aggregated stack of a profile type: its frames (root first, as indices into
/// [`PeriodProfiles::frames`]) and the sums of its samples' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackValues {
    /// Frame indices, root first.
    pub frames: Vec<u32>,
    /// One sum per value type.
    pub values: Vec<i64>,
}

/// The samples of one profile type in one period.
#[derive(Clone, Debug, Default)]
pub struct TypeProfile {
    stacks: Vec<StackValues>,
    index: HashMap<Vec<u32>, usize>,
    over_limit: Option<StackValues>,
    over_limit_samples: u64,
    samples: u64,
    period: Option<SamplingPeriod>,
}

impl TypeProfile {
    /// The stacks that fitted, in the order they first came, and then the
    /// `[stacks over the limit]` stack if a sample did not fit.
    pub fn stacks(&self) -> impl Iterator<Item = &StackValues> {
        self.stacks.iter().chain(self.over_limit.as_ref())
    }

    /// How many samples were added.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// How many of them had a new stack when the table was full, and were counted into the
    /// `[stacks over the limit]` stack.
    pub fn over_limit_samples(&self) -> u64 {
        self.over_limit_samples
    }

    /// The sampling period, if set.
    pub fn period(&self) -> Option<SamplingPeriod> {
        self.period
    }
}

/// What one period gathered, per profile type.
///
/// Each type keeps at most `max_stacks` distinct stacks (by default [`DEFAULT_MAX_STACKS`]). A
/// sample whose stack is new when its type's table is full is added to one stack per type made
/// of the single frame [`OVER_LIMIT_FUNCTION`], and counted in
/// [`TypeProfile::over_limit_samples`]: nothing is silently lost. Frames are stored once
/// however many stacks share them.
#[derive(Clone, Debug)]
pub struct PeriodProfiles {
    start_unix_nano: u64,
    duration_nano: u64,
    max_stacks: usize,
    frames: Vec<Frame>,
    frame_index: HashMap<Frame, u32>,
    types: [TypeProfile; 5],
    over_limit_frame: Option<u32>,
    counters: Vec<(String, u64)>,
}

impl PeriodProfiles {
    /// An empty period that started at `start_unix_nano` and lasted `duration_nano`, keeping at
    /// most `max_stacks` stacks per type (at least one).
    pub fn new(start_unix_nano: u64, duration_nano: u64, max_stacks: usize) -> PeriodProfiles {
        PeriodProfiles {
            start_unix_nano,
            duration_nano,
            max_stacks: max_stacks.max(1),
            frames: Vec::new(),
            frame_index: HashMap::new(),
            types: Default::default(),
            over_limit_frame: None,
            counters: Vec::new(),
        }
    }

    /// When the period started, in nanoseconds since the Unix epoch.
    pub fn start_unix_nano(&self) -> u64 {
        self.start_unix_nano
    }

    /// How long it lasted, in nanoseconds.
    pub fn duration_nano(&self) -> u64 {
        self.duration_nano
    }

    /// Sets a count of the process that every profile of the period carries (what was lost so
    /// far, e.g. `clrprof.periods_dropped`): OTLP as a profile attribute, pprof as a comment
    /// `name=value`. A count of 0 is not sent.
    pub fn set_counter(&mut self, name: &str, value: u64) {
        match self.counters.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.counters.push((name.to_string(), value)),
        }
    }

    /// The counts every profile carries, in the order they were first set, without zeros.
    pub fn counters(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counters
            .iter()
            .filter(|(_, v)| *v > 0)
            .map(|(n, v)| (n.as_str(), *v))
    }

    /// Sets how long the period lasted (known when it ends), in nanoseconds.
    pub fn set_duration(&mut self, duration_nano: u64) {
        self.duration_nano = duration_nano;
    }

    /// The most stacks a type keeps.
    pub fn max_stacks(&self) -> usize {
        self.max_stacks
    }

    /// Every frame the stacks refer to.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The samples of one type.
    pub fn profile(&self, profile_type: ProfileType) -> &TypeProfile {
        &self.types[profile_type.index()]
    }

    /// The types that have at least one sample, in [`ProfileType::ALL`]'s order.
    pub fn present(&self) -> impl Iterator<Item = (ProfileType, &TypeProfile)> {
        ProfileType::ALL
            .into_iter()
            .map(|t| (t, &self.types[t.index()]))
            .filter(|(_, p)| p.samples > 0)
    }

    /// Whether no sample was added.
    pub fn is_empty(&self) -> bool {
        self.present().next().is_none()
    }

    /// Sets what is counted between two samples of a type.
    pub fn set_period(&mut self, profile_type: ProfileType, period: SamplingPeriod) {
        self.types[profile_type.index()].period = Some(period);
    }

    /// Adds one sample: its stack (frames root first) and one value per value type of its
    /// profile type.
    pub fn add(
        &mut self,
        profile_type: ProfileType,
        stack: &[Frame],
        values: &[i64],
    ) -> Result<(), AddError> {
        let expected = profile_type.value_types().len();
        if values.len() != expected {
            return Err(AddError::WrongValueCount {
                profile_type,
                expected,
                given: values.len(),
            });
        }
        if stack.is_empty() {
            return Err(AddError::EmptyStack);
        }
        let known: Option<Vec<u32>> = stack
            .iter()
            .map(|f| self.frame_index.get(f).copied())
            .collect();
        let table = &self.types[profile_type.index()];
        let existing = known.as_ref().and_then(|k| table.index.get(k).copied());
        let fits = existing.is_some() || table.stacks.len() < self.max_stacks;
        if !fits {
            let frame = match self.over_limit_frame {
                Some(f) => f,
                None => {
                    let f = self.intern(&Frame::new(OVER_LIMIT_FUNCTION, ""));
                    self.over_limit_frame = Some(f);
                    f
                }
            };
            let table = &mut self.types[profile_type.index()];
            let over = table.over_limit.get_or_insert_with(|| StackValues {
                frames: vec![frame],
                values: vec![0; expected],
            });
            accumulate(&mut over.values, values);
            table.over_limit_samples += 1;
            table.samples += 1;
            return Ok(());
        }
        let slot = match existing {
            Some(slot) => slot,
            None => {
                let frames: Vec<u32> = stack.iter().map(|f| self.intern(f)).collect();
                let table = &mut self.types[profile_type.index()];
                table.stacks.push(StackValues {
                    frames: frames.clone(),
                    values: vec![0; expected],
                });
                table.index.insert(frames, table.stacks.len() - 1);
                table.stacks.len() - 1
            }
        };
        let table = &mut self.types[profile_type.index()];
        accumulate(&mut table.stacks[slot].values, values);
        table.samples += 1;
        Ok(())
    }

    fn intern(&mut self, frame: &Frame) -> u32 {
        if let Some(&i) = self.frame_index.get(frame) {
            return i;
        }
        let i = u32::try_from(self.frames.len()).expect("fewer than 2^32 frames in a period");
        self.frames.push(frame.clone());
        self.frame_index.insert(frame.clone(), i);
        i
    }
}

fn accumulate(sums: &mut [i64], values: &[i64]) {
    for (sum, v) in sums.iter_mut().zip(values) {
        *sum = sum.saturating_add(*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::new(*n, "App.dll")).collect()
    }

    #[test]
    fn samples_of_one_stack_are_summed() {
        let mut p = PeriodProfiles::new(0, 1, 10);
        p.add(ProfileType::Cpu, &stack(&["Main", "Work"]), &[10])
            .unwrap();
        p.add(ProfileType::Cpu, &stack(&["Main", "Work"]), &[5])
            .unwrap();
        p.add(ProfileType::Cpu, &stack(&["Main"]), &[1]).unwrap();
        let cpu = p.profile(ProfileType::Cpu);
        let stacks: Vec<_> = cpu.stacks().collect();
        assert_eq!(stacks.len(), 2);
        assert_eq!(stacks[0].values, vec![15]);
        assert_eq!(stacks[1].values, vec![1]);
        assert_eq!(cpu.samples(), 3);
        assert_eq!(p.frames().len(), 2, "Main is stored once");
    }

    #[test]
    fn new_stacks_past_the_bound_go_to_one_counted_stack() {
        let mut p = PeriodProfiles::new(0, 1, 2);
        for (name, v) in [("A", 1), ("B", 2), ("C", 4), ("D", 8), ("A", 16)] {
            p.add(ProfileType::Lock, &stack(&[name]), &[v, 1]).unwrap();
        }
        let lock = p.profile(ProfileType::Lock);
        let stacks: Vec<_> = lock.stacks().collect();
        assert_eq!(stacks.len(), 3);
        assert_eq!(stacks[0].values, vec![17, 2], "A's stack still takes A");
        assert_eq!(stacks[1].values, vec![2, 1]);
        assert_eq!(
            p.frames()[stacks[2].frames[0] as usize].function,
            OVER_LIMIT_FUNCTION
        );
        assert_eq!(stacks[2].values, vec![12, 2]);
        assert_eq!(lock.over_limit_samples(), 2);
        assert_eq!(lock.samples(), 5);
        // Another type has its own table.
        p.add(ProfileType::Cpu, &stack(&["C"]), &[1]).unwrap();
        assert_eq!(p.profile(ProfileType::Cpu).over_limit_samples(), 0);
    }

    #[test]
    fn bad_samples_are_refused() {
        let mut p = PeriodProfiles::new(0, 1, 2);
        assert_eq!(
            p.add(ProfileType::Allocations, &stack(&["A"]), &[1]),
            Err(AddError::WrongValueCount {
                profile_type: ProfileType::Allocations,
                expected: 2,
                given: 1
            })
        );
        assert_eq!(
            p.add(ProfileType::Cpu, &[], &[1]),
            Err(AddError::EmptyStack)
        );
        assert!(p.is_empty());
    }
}
