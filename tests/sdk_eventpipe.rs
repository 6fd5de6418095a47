//! The profiling API versions each runtime answers, and the SDK's in-process EventPipe
//! (ICorProfilerInfo12 and ICorProfilerCallback10, .NET 5 and later) inside a real runtime.
//!
//! `probe-eventpipe` (tests/probes/eventpipe) writes which ICorProfilerInfo versions the
//! runtime answers and which ICorProfilerCallback versions it asked for, then makes providers
//! and an event of its own and starts a session with them and the runtime's GC events.
//! `EventPipeProbe.cs` induces 3 gen-2 GCs, lets the probe write its event and stop the
//! session, and induces 2 more GCs that no session sees. On CoreCLR 3.1, which lacks
//! ICorProfilerInfo12, every EventPipe call is the SDK's typed `NotSupported` error.

use clrprof_e2e::{Dotnet, OutputExt, compile, example_lib, probes, run_probe};

/// Event ids of `Microsoft-Windows-DotNETRuntime`: GCStart_V2 and GCEnd_V1.
const GC_START: &str = "id=1 version=2";
const GC_END: &str = "id=2 version=1";

/// The probe's run of `EventPipeProbe.cs`: its `key\tvalue` lines, in order.
fn probe_lines() -> Vec<(String, String)> {
    let program = compile("EventPipeProbe");
    let run = run_probe(
        &mut program.command_with_profiler(probes::EVENTPIPE, &example_lib("probe-eventpipe")),
    );
    assert_eq!(
        run.output.stdout_str(),
        "gcs before stop: 3\nmarker: 1\ngcs after stop: 2\n",
        "{}",
        run.output.describe()
    );
    run.text
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("bad probe line {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// The value of the one line `key`.
#[track_caller]
fn one<'a>(lines: &'a [(String, String)], key: &str) -> &'a str {
    let found: Vec<&str> = lines
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(found.len(), 1, "one `{key}` line expected: {lines:#?}");
    found[0]
}

fn numbers(list: &str) -> Vec<u32> {
    list.split(',').map(|n| n.parse().unwrap()).collect()
}

#[test]
fn each_runtime_answers_its_profiling_api_versions() {
    let lines = probe_lines();
    let api = Dotnet::get().profiling_api();
    assert_eq!(
        one(&lines, "info_version"),
        api.info_version.to_string(),
        "{api:?}"
    );
    // Asked one by one: every version from 1 up to the highest, none above.
    assert_eq!(
        numbers(one(&lines, "info_versions_answered")),
        (1..=api.info_version).collect::<Vec<_>>()
    );
    assert_eq!(
        numbers(one(&lines, "callback_versions_asked")),
        api.callback_versions_asked
    );
}

#[test]
fn in_process_eventpipe_session_delivers_runtime_and_own_events() {
    let lines = probe_lines();
    let info_version = Dotnet::get().profiling_api().info_version;
    let value = |key: &str| one(&lines, key).to_string();

    if info_version < 12 {
        // Every call is refused by the SDK before it reaches a vtable slot the runtime lacks.
        for (key, method, required) in [
            ("create_provider", "EventPipeCreateProvider", 12),
            ("get_provider_info", "EventPipeGetProviderInfo", 12),
            ("define_event", "EventPipeDefineEvent", 12),
            ("start_session", "EventPipeStartSession", 12),
            ("add_provider", "EventPipeAddProviderToSession", 12),
            ("create_provider2", "EventPipeCreateProvider2", 14),
            ("write_event", "EventPipeWriteEvent", 12),
            ("stop_session", "EventPipeStopSession", 12),
        ] {
            assert_eq!(
                value(key),
                format!(
                    "not supported: ICorProfilerInfo{required}::{method} needs {required} has \
                     {info_version}"
                ),
                "{key}"
            );
        }
        let kinds: Vec<&str> = lines.iter().map(|(k, _)| k.as_str()).collect();
        assert!(!kinds.contains(&"event"), "{lines:#?}");
        assert!(!kinds.contains(&"provider2_callback"), "{lines:#?}");
        assert_eq!(value("shutdown"), "panics_caught=0");
        return;
    }

    for key in ["create_provider", "define_event", "start_session"] {
        assert_eq!(value(key), "true", "{key}");
    }
    assert_eq!(value("get_provider_info"), "Clrprof-EventPipe-Probe");
    assert_eq!(value("add_provider"), "ok");
    if info_version >= 14 {
        assert_eq!(value("create_provider2"), "true");
    }
    assert_eq!(value("write_event"), "ok");
    assert_eq!(value("stop_session"), "ok");
    let main = value("main_thread");

    let events: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| k == "event")
        .map(|(i, (_, v))| (i, v.as_str()))
        .collect();
    let position = |key: &str| lines.iter().position(|(k, _)| k == key).unwrap();
    let runtime = |id: &str| -> Vec<&str> {
        events
            .iter()
            .map(|(_, e)| *e)
            .filter(|e| e.starts_with(&format!("provider=Microsoft-Windows-DotNETRuntime {id} ")))
            .collect()
    };
    // The 3 induced gen-2 GCs, each on the main thread that induced it, delivered while it
    // ran: the session is synchronous, and the runtime names the writer as 0 ("the thread you
    // are on") and gives no stack for runtime events. The 2 GCs after the stop are not seen.
    let expected_start = format!(
        "provider=Microsoft-Windows-DotNETRuntime {GC_START} writer=0 current={main} stack=0 \
         after_stop=false depth=2 reason=1"
    );
    assert_eq!(runtime(GC_START), vec![expected_start.as_str(); 3]);
    let expected_end = format!(
        "provider=Microsoft-Windows-DotNETRuntime {GC_END} writer=0 current={main} stack=0 \
         after_stop=false depth=2"
    );
    assert_eq!(runtime(GC_END), vec![expected_end.as_str(); 3]);

    // The probe's own event, with its payload, delivered inside EventPipeWriteEvent.
    let own: Vec<&(usize, &str)> = events
        .iter()
        .filter(|(_, e)| e.starts_with("provider=Clrprof-EventPipe-Probe "))
        .collect();
    assert_eq!(own.len(), 1, "{events:#?}");
    assert_eq!(
        own[0].1,
        format!(
            "provider=Clrprof-EventPipe-Probe id=1 version=0 writer=0 current={main} stack=0 \
             after_stop=false value=7 text=seven"
        )
    );
    assert!(own[0].0 > position("main_thread") && own[0].0 < position("write_event"));

    // Nothing is delivered once the session is stopped.
    let stop = position("stop_session");
    assert!(events.iter().all(|(i, _)| *i < stop), "{lines:#?}");

    // A provider added to the running session before it existed is enabled when it is made,
    // with the session's keywords and level (warning = 3), and disabled when the session stops.
    if info_version >= 14 {
        let calls: Vec<&str> = lines
            .iter()
            .filter(|(k, _)| k == "provider2_callback")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(
            calls,
            [
                "enabled=1 level=3 keywords=0x30",
                "enabled=0 level=3 keywords=0x30"
            ]
        );
    }
    assert_eq!(value("shutdown"), "panics_caught=0");
}
