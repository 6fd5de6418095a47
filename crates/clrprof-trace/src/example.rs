//! A small trace that has most record kinds, made in code: the seed of the fuzz targets and
//! the input of the tests that cut and damage traces at every byte.

use crate::{
    Allocation, BlockWriter, ClassDef, Counter, Event, EventKind, ExceptionInfo, FrameKind,
    FunctionDef, GcGenerations, IlPosition, Message, MessageLevel, ModuleDef, Record, RecordingEnd,
    Sample, SampleClock, SamplerInfo, SessionEnd, SessionStart, StackDef, ThreadDef, ThreadOsName,
    ThreadState, Writer,
};

/// The records of a short sample-mode session: definitions, two threads with samples of
/// three stacks, an exception, a garbage collection, allocations, counters and the ends.
pub fn records() -> Vec<Record> {
    let mut out = vec![
        Record::SessionStart(SessionStart {
            pid: 4242,
            agent_version: "0.1.0".into(),
            runtime: "CoreCLR 8.0.4".into(),
            info_version: 15,
            callback_version: 11,
            start_unix_ns: 1_700_000_000_000_000_000,
            event_mask: 0x20,
            event_mask_high: 0,
            config: "mode=sample;rate=1000;events=exception,gc".into(),
            command_line: "dotnet app.dll".into(),
        }),
        Record::SamplerInfo(SamplerInfo {
            cpu_clock: "timer".into(),
            cpu_rate_hz: 1000,
            wall_rate_hz: 100,
        }),
        Record::ModuleDef(ModuleDef {
            id: 0x30,
            assembly: 0x31,
            base_address: 0x7f00_0000,
            path: "/app/app.dll".into(),
            assembly_name: "app".into(),
        }),
        Record::ClassDef(ClassDef {
            id: 0x20,
            module: 0x30,
            token: 0x0200_0002,
            name: "App.Program".into(),
        }),
        Record::ThreadDef(ThreadDef {
            tid: 7,
            managed_id: 1,
            name: "main".into(),
        }),
        Record::ThreadOsName(ThreadOsName {
            tid: 8,
            name: ".NET Finalizer".into(),
        }),
    ];
    for (i, name) in ["Main", "Work", "Spin"].into_iter().enumerate() {
        let id = 0x100 + i as u64;
        out.push(Record::FunctionDef(FunctionDef {
            id,
            class: 0x20,
            module: 0x30,
            token: 0x0600_0001 + i as u32,
            type_name: "App.Program".into(),
            method_name: name.into(),
            signature: "()".into(),
        }));
        out.push(Record::StackDef(StackDef {
            id: i as u32 + 1,
            parent: i as u32,
            frame_kind: FrameKind::Managed,
            frame: id,
            il: IlPosition::At(6 * i as u32),
        }));
    }
    for n in 1..=40u64 {
        let ts = n * 1_000_000;
        out.push(Record::Sample(Sample {
            ts,
            tid: if n % 4 == 0 { 8 } else { 7 },
            stack: (n % 3) as u32 + 1,
            cpu_ns: 1_000_000,
            wall_ns: 1_000_000,
            state: if n % 5 == 0 {
                ThreadState::Blocked
            } else {
                ThreadState::Cpu
            },
            sys_ns: if n % 5 == 0 { 0 } else { 250_000 },
            clock: if n % 5 == 0 {
                SampleClock::Unknown
            } else {
                SampleClock::Timer
            },
        }));
        if n == 10 {
            out.push(Record::ExceptionInfo(ExceptionInfo {
                ts,
                tid: 7,
                object: 0x9000,
                message: "boom".into(),
                stack: vec![0x101, 0x100],
                stack_truncated: false,
                stack_il: vec![IlPosition::At(0x0c), IlPosition::At(0x21)],
            }));
            out.push(Record::Event(Event::new(
                ts,
                7,
                EventKind::EXCEPTION_THROWN,
                &[0x9000, 0x20, 0x101],
            )));
        }
        if n == 20 {
            out.push(Record::Event(Event::new(
                ts,
                7,
                EventKind::GARBAGE_COLLECTION_STARTED,
                &[0b1, 1],
            )));
            out.push(Record::GcGenerations(GcGenerations {
                ts,
                phase: 0,
                sizes: vec![1000, 2000, 3000, 0, 0],
            }));
            out.push(Record::Event(Event::new(
                ts + 500,
                7,
                EventKind::GARBAGE_COLLECTION_FINISHED,
                &[],
            )));
        }
        if n % 8 == 0 {
            out.push(Record::Allocation(Allocation {
                ts,
                tid: 7,
                class: 0x20,
                size: 24,
                stack: 2,
                interval: 0,
                flags: 0,
                array_length: 0,
            }));
        }
    }
    out.extend([
        Record::Message(Message {
            ts: 41_000_000,
            level: MessageLevel::Warning,
            text: "a warning".into(),
        }),
        Record::Counter(Counter {
            ts: 41_000_000,
            name: "samples_dropped".into(),
            value: 2,
        }),
        Record::SessionEnd(SessionEnd {
            ts: 42_000_000,
            reason: "shutdown".into(),
        }),
        Record::RecordingEnd(RecordingEnd {
            duration_ns: 43_000_000,
            exit_code: 0,
            signal: 0,
            agent_connected: true,
            clean: true,
        }),
    ]);
    out
}

/// [`records`] as a record stream (format 1.x).
pub fn stream() -> Vec<u8> {
    let mut w = Writer::new(Vec::new()).expect("writing to memory");
    for r in records() {
        w.write(&r).expect("writing to memory");
    }
    w.into_inner()
}

/// [`records`] as a file in checksummed blocks (format 2.x), a block every `per_block`
/// records.
pub fn blocked(per_block: usize) -> Vec<u8> {
    let mut w = BlockWriter::new(Vec::new()).expect("writing to memory");
    for (i, r) in records().iter().enumerate() {
        w.write(r).expect("writing to memory");
        if (i + 1) % per_block.max(1) == 0 {
            w.seal().expect("writing to memory");
        }
    }
    w.finish().expect("writing to memory")
}
