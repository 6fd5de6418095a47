//! Property tests: any input is read without panicking, the reader and the stream decoder agree,
//! and any record survives encoding.

mod common;

use clrprof_trace::{
    AppDomainDef, AssemblyDef, CallTreeNode, ClassDef, Counter, Event, EventKind, FrameKind,
    FunctionDef, HEADER_LEN, Header, ModuleDef, NativeFrameDef, NativeModuleDef, ReadError, Reader,
    Record, RecordKind, RecordingEnd, Sample, SampleClock, SessionEnd, SessionStart, StackDef,
    ThreadDef, ThreadState,
};
use common::{decode_stream, encode, small_records};
use proptest::prelude::*;

/// What a reader makes of `bytes`: each record or error, NotATrace without its details (the
/// stream decoder may see fewer bytes when it decides).
fn reader_items(bytes: &[u8]) -> Vec<Result<Record, String>> {
    let reader = match Reader::new(bytes) {
        Ok(r) => r,
        Err(e) => return vec![Err(normalize(&e))],
    };
    reader.map(|item| item.map_err(|e| normalize(&e))).collect()
}

fn normalize(e: &ReadError) -> String {
    match e {
        ReadError::NotATrace { .. } => "not a trace".to_string(),
        e => e.to_string(),
    }
}

fn stream_items(bytes: &[u8], chunk: usize) -> Vec<Result<Record, String>> {
    let out = decode_stream(bytes, chunk);
    let mut items: Vec<Result<Record, String>> = out
        .items
        .into_iter()
        .map(|item| {
            item.map_err(|msg| {
                if msg.starts_with("not a clrprof trace") {
                    "not a trace".to_string()
                } else {
                    msg
                }
            })
        })
        .collect();
    if let Err(msg) = out.finish {
        items.push(Err(msg));
    }
    items
}

fn check_agreement(bytes: &[u8], chunk: usize) -> Result<(), TestCaseError> {
    let from_reader = reader_items(bytes);
    let from_stream = stream_items(bytes, chunk);
    if bytes.is_empty() {
        // A reader refuses an empty file; a stream that carried nothing is not an error.
        prop_assert_eq!(from_reader, vec![Err("not a trace".to_string())]);
        prop_assert!(from_stream.is_empty());
    } else if Reader::new(bytes).is_ok_and(|r| r.header().blocked()) {
        // A file in checksummed blocks (a mutated major version can say 2) is a file, not a
        // stream: the decoder refuses it at once, the reader reads its blocks.
        prop_assert_eq!(from_stream.len(), 1);
        prop_assert!(
            from_stream[0]
                .as_ref()
                .is_err_and(|e| e.contains("not a record stream")),
            "{:?}",
            from_stream
        );
    } else {
        prop_assert_eq!(from_reader, from_stream);
    }
    Ok(())
}

fn string() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (
            any::<u32>(),
            string(),
            string(),
            any::<(u16, u16)>(),
            any::<(u64, u64, u64)>(),
            string(),
            string()
        )
            .prop_map(
                |(pid, agent_version, runtime, (iv, cv), (t, m, mh), config, cmd)| {
                    Record::SessionStart(SessionStart {
                        pid,
                        agent_version,
                        runtime,
                        info_version: iv,
                        callback_version: cv,
                        start_unix_ns: t,
                        event_mask: m,
                        event_mask_high: mh,
                        config,
                        command_line: cmd,
                    })
                }
            ),
        (any::<u64>(), string())
            .prop_map(|(ts, reason)| Record::SessionEnd(SessionEnd { ts, reason })),
        any::<(u64, i32, i32, bool, bool)>().prop_map(|(d, e, s, a, c)| {
            Record::RecordingEnd(RecordingEnd {
                duration_ns: d,
                exit_code: e,
                signal: s,
                agent_connected: a,
                clean: c,
            })
        }),
        (any::<u64>(), string(), any::<u64>())
            .prop_map(|(ts, name, value)| Record::Counter(Counter { ts, name, value })),
        (any::<u64>(), string())
            .prop_map(|(id, name)| Record::AppDomainDef(AppDomainDef { id, name })),
        (any::<(u64, u64)>(), string()).prop_map(|((id, app_domain), name)| {
            Record::AssemblyDef(AssemblyDef {
                id,
                app_domain,
                name,
            })
        }),
        (any::<(u64, u64, u64)>(), string(), string()).prop_map(|((id, a, b), path, n)| {
            Record::ModuleDef(ModuleDef {
                id,
                assembly: a,
                base_address: b,
                path,
                assembly_name: n,
            })
        }),
        (any::<(u64, u64, u32)>(), string()).prop_map(|((id, module, token), name)| {
            Record::ClassDef(ClassDef {
                id,
                module,
                token,
                name,
            })
        }),
        (any::<(u64, u64, u64, u32)>(), string(), string(), string()).prop_map(
            |((id, class, module, token), type_name, method_name, signature)| {
                Record::FunctionDef(FunctionDef {
                    id,
                    class,
                    module,
                    token,
                    type_name,
                    method_name,
                    signature,
                })
            }
        ),
        (any::<(u32, u64)>(), string()).prop_map(|((tid, managed_id), name)| {
            Record::ThreadDef(ThreadDef {
                tid,
                managed_id,
                name,
            })
        }),
        (any::<(u64, u64, u64, u64)>(), string(), string()).prop_map(
            |((id, address, module, function), library, symbol)| {
                Record::NativeFrameDef(NativeFrameDef {
                    id,
                    address,
                    library,
                    symbol,
                    module,
                    function,
                })
            }
        ),
        (any::<u64>(), string(), string()).prop_map(|(id, path, build_id)| {
            Record::NativeModuleDef(NativeModuleDef { id, path, build_id })
        }),
        any::<(u32, u32, u8, u64, u32)>().prop_map(|(id, parent, k, frame, il)| {
            Record::StackDef(StackDef {
                id,
                parent,
                frame_kind: FrameKind::from_u8(k),
                frame,
                il: clrprof_trace::IlPosition::from_u32(il),
            })
        }),
        (
            any::<(u64, u32, u16)>(),
            prop::collection::vec(any::<u64>(), 0..=8)
        )
            .prop_map(|((ts, tid, ev), args)| Record::Event(Event::new(
                ts,
                tid,
                EventKind(ev),
                &args
            ))),
        any::<(u64, u32, u32, u64, u64, u8, u64, u8)>().prop_map(
            |(ts, tid, stack, cpu, wall, st, sys, clock)| {
                Record::Sample(Sample {
                    ts,
                    tid,
                    stack,
                    cpu_ns: cpu,
                    wall_ns: wall,
                    state: ThreadState::from_u8(st),
                    sys_ns: sys,
                    clock: SampleClock::from_u8(clock),
                })
            }
        ),
        any::<(u32, u32, u32, u64, u64, u64, u64, u64)>().prop_map(
            |(tid, node, parent, function, calls, s, c, w)| {
                Record::CallTreeNode(CallTreeNode {
                    tid,
                    node,
                    parent,
                    function,
                    calls,
                    self_samples: s,
                    self_cpu_ns: c,
                    self_wall_ns: w,
                })
            }
        ),
        // Kinds this crate does not know (a known kind's payload is decoded as that record).
        (35u16.., prop::collection::vec(any::<u8>(), 0..40))
            .prop_filter("an unknown record kind", |(kind, _)| {
                !RecordKind(*kind).is_known()
            })
            .prop_map(|(kind, payload)| Record::Unknown {
                kind: RecordKind(kind),
                payload,
            }),
    ]
}

/// A change to a valid trace.
#[derive(Debug, Clone)]
enum Mutation {
    Xor(usize, u8),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..).prop_map(|(i, b)| Mutation::Xor(i, b)),
        2 => (any::<usize>(), prop_oneof![Just(0u8), Just(0xff), Just(0x7f), any::<u8>()])
            .prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<usize>(), 1usize..12).prop_map(|(i, n)| Mutation::Remove(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    match m {
        Mutation::Xor(i, b) => bytes[i % len] ^= b,
        Mutation::Set(i, b) => bytes[i % len] = *b,
        Mutation::Insert(i, b) => {
            let at = i % (len + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let at = i % len;
            let end = (at + n).min(len);
            bytes.drain(at..end);
        }
        Mutation::Truncate(i) => bytes.truncate(i % (len + 1)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), chunk in 1usize..64) {
        check_agreement(&bytes, chunk)?;
    }

    #[test]
    fn arbitrary_records_after_a_valid_header_never_panic(
        body in prop::collection::vec(any::<u8>(), 0..2048),
        minor in prop_oneof![Just(0u16), any::<u16>()],
        chunk in 1usize..64,
    ) {
        let mut bytes = Header { major: 1, minor, flags: 0 }.to_bytes().to_vec();
        bytes.extend_from_slice(&body);
        check_agreement(&bytes, chunk)?;
    }

    #[test]
    fn mutated_traces_never_panic(
        mutations in prop::collection::vec(mutation(), 1..6),
        chunk in 1usize..64,
    ) {
        let mut bytes = encode(&small_records());
        for m in &mutations {
            apply(&mut bytes, m);
        }
        check_agreement(&bytes, chunk)?;
    }

    #[test]
    fn mutated_record_bodies_never_panic(
        records in prop::collection::vec(record(), 1..8),
        mutations in prop::collection::vec(mutation(), 1..4),
        chunk in 1usize..64,
    ) {
        let mut body = encode(&records).split_off(HEADER_LEN);
        for m in &mutations {
            apply(&mut body, m);
        }
        let mut bytes = Header::CURRENT.to_bytes().to_vec();
        bytes.extend_from_slice(&body);
        check_agreement(&bytes, chunk)?;
    }

    #[test]
    fn any_records_round_trip(records in prop::collection::vec(record(), 0..16), chunk in 1usize..64) {
        let bytes = encode(&records);
        let back: Vec<Record> = Reader::new(&bytes[..]).unwrap().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&back, &records);
        let out = decode_stream(&bytes, chunk);
        prop_assert_eq!(out.raw, bytes[HEADER_LEN..].to_vec());
        let streamed: Vec<Record> = out.items.into_iter().map(Result::unwrap).collect();
        prop_assert_eq!(streamed, records);
    }

    #[test]
    fn fixed_buffer_encoding_matches(records in prop::collection::vec(record(), 1..4), room in 0usize..200) {
        for r in &records {
            let mut expected = Vec::new();
            r.encode(&mut expected);
            let mut buf = vec![0u8; room];
            match r.encode_into(&mut buf) {
                Some(n) => {
                    prop_assert_eq!(n, expected.len());
                    prop_assert_eq!(&buf[..n], &expected[..]);
                }
                None => prop_assert!(room < expected.len()),
            }
            match r {
                Record::Event(e) => prop_assert_eq!(e.encode_into(&mut buf), r.encode_into(&mut vec![0; room])),
                Record::Sample(s) => prop_assert_eq!(s.encode_into(&mut buf), r.encode_into(&mut vec![0; room])),
                _ => {}
            }
        }
    }
}
