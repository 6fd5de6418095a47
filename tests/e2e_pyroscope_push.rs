//! Pyroscope's push API as a receiver reads it: the `PushRequest` decoded by its proto, and the
//! pprof inside read by Go's own `go tool pprof` (Go is what `cargo xtask setup` builds the
//! Collector with).

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use clrprof_e2e::{CaptureServer, OutputExt, run_command};
use clrprof_export::pyroscope::PushRequest;
use clrprof_export::{
    ExportConfig, Exporter, Frame, Outcome, PeriodProfiles, ProfileType, Protocol, Resource,
};
use prost::Message;

fn go() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("go"))
            .find(|g| g.is_file())
    });
    on_path.unwrap_or_else(|| PathBuf::from("/usr/local/go/bin/go"))
}

#[test]
fn go_tool_pprof_reads_the_pushed_profiles() {
    let server = CaptureServer::start();
    let main = Frame::new("Shop.Program.Main()", "Shop.dll");
    let handle = Frame::new("Shop.Orders.Handle(Order)", "Shop.dll").at("Orders.cs", 42);
    let enter = Frame::new(
        "System.Threading.Monitor.Enter(object)",
        "System.Private.CoreLib.dll",
    );
    let mut period = PeriodProfiles::new(1_764_230_400_000_000_000, 15_000_000_000, 64);
    period
        .add(
            ProfileType::Lock,
            &[main.clone(), handle.clone(), enter],
            &[650_000_000, 3],
        )
        .unwrap();
    period
        .add(ProfileType::Lock, &[main.clone(), handle], &[50_000_000, 1])
        .unwrap();
    let mut resource = Resource::of_this_process("checkout", ".NET", "8.0.4");
    resource.labels.push(("region".into(), "eu".into()));
    let exporter = Exporter::new(ExportConfig {
        endpoint: server.endpoint(),
        protocol: Protocol::PyroscopePush,
        auth: None,
        tenant: None,
        timeout: Duration::from_secs(10),
    });
    assert_eq!(exporter.export(&period, &resource), Outcome::Accepted);

    let bodies = server.wait_for(1, Duration::from_secs(10));
    let push = PushRequest::decode(&bodies[0][..]).expect("a push.v1.PushRequest");
    assert_eq!(push.series.len(), 1);
    let labels: Vec<(&str, &str)> = push.series[0]
        .labels
        .iter()
        .map(|l| (l.name.as_str(), l.value.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("__name__", "lock"),
            ("service_name", "checkout"),
            ("region", "eu")
        ]
    );
    let raw = &push.series[0].samples[0].raw_profile;
    let mut pprof = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut pprof)
        .expect("gzip'd pprof");

    let dir = clrprof_e2e::temp_dir();
    let file = dir.path().join("lock.pb.gz");
    std::fs::write(&file, raw).unwrap();
    // Go shows the profile's time in the local time zone: UTC, to compare it exactly.
    let out = run_command(
        Command::new(go())
            .args(["tool", "pprof", "-raw"])
            .arg(&file)
            .env("TZ", "UTC"),
    );
    out.assert_success();
    // Go's reading of it, each line's words single-spaced: the samples with both values and
    // their stacks (leaf first), each frame's function, file and line, and its module.
    let text = out.stdout_str();
    let lines: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Duration:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        lines,
        [
            "Duration: 15s",
            "Samples:",
            "delay/nanoseconds contentions/count",
            "650000000 3: 1 2 3",
            "50000000 1: 2 3",
            "Locations",
            "1: 0x0 M=1 System.Threading.Monitor.Enter(object) :0:0 s=0",
            "2: 0x0 M=2 Shop.Orders.Handle(Order) Orders.cs:42:0 s=0",
            "3: 0x0 M=2 Shop.Program.Main() :0:0 s=0",
            "Mappings",
            "1: 0x0/0x0/0x0 System.Private.CoreLib.dll [FN]",
            "2: 0x0/0x0/0x0 Shop.dll [FN]",
        ],
        "{text}"
    );
    assert!(
        text.contains("Time: 2025-11-27 08:00:00 +0000 UTC"),
        "{text}"
    );
    assert!(!pprof.is_empty());
}
