//! What the export tests (`e2e_export.rs`: what reaches a Collector; `e2e_export_faults.rs`:
//! backends that are down, late or silent) share: the program's command with only the
//! runtime's and clrprof's variables, the Collector's forwarded requests decoded with the
//! official generated messages, and the agent's line at exit.

// Each test binary uses its part.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use clrprof_e2e::{
    ChildGuard, Collector, OutputExt, Ports, Program, agent_lib, clrprof, default_timeout,
    otlp_attributes,
};
use clrprof_trace::protocol::AGENT_CLSID;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

/// How long the forwarded requests may take to arrive after the program ended.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// The OTLP transport a test exports over.
#[derive(Clone, Copy, Debug)]
pub enum Otlp {
    Http,
    Grpc,
}

impl Otlp {
    /// The value of `CLRPROF_EXPORT_PROTOCOL`.
    pub fn protocol(self) -> &'static str {
        match self {
            Otlp::Http => "otlp-http",
            Otlp::Grpc => "otlp-grpc",
        }
    }

    /// The receiver's address among a Collector's `ports`.
    pub fn endpoint(self, ports: Ports) -> String {
        let port = match self {
            Otlp::Http => ports.http,
            Otlp::Grpc => ports.grpc,
        };
        format!("http://127.0.0.1:{port}")
    }
}

/// The program's command with the runtime's profiler variables and `vars`, nothing else of
/// clrprof's.
pub fn exported(program: &Program, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut cmd = program.command();
    cmd.args(args)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", AGENT_CLSID)
        .env("CORECLR_PROFILER_PATH", agent_lib());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd
}

/// Starts `cmd` with its standard output and error piped.
pub fn spawn(cmd: &mut Command) -> ChildGuard {
    ChildGuard::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
}

/// Runs `cmd`, returns its output and process id.
pub fn run(cmd: &mut Command) -> (Output, u32) {
    let mut child = spawn(cmd);
    let pid = child.id();
    (child.wait_with_output(default_timeout()), pid)
}

/// One sample of a forwarded profile: its type's name, frames (root first) and value.
#[derive(Debug, Clone)]
pub struct Sample {
    pub sample_type: String,
    pub frames: Vec<String>,
    pub modules: Vec<String>,
    /// Each frame's source file and line (`("", 0)` for none).
    pub lines: Vec<(String, i64)>,
    pub value: i64,
    /// The profile's integer attributes.
    pub attributes: BTreeMap<String, i64>,
}

/// What the Collector forwarded, readable: every sample of every profile, and the resource
/// attributes of each request.
pub fn read(bodies: &[Vec<u8>]) -> (Vec<Sample>, Vec<BTreeMap<String, String>>) {
    let mut samples = Vec::new();
    let mut resources = Vec::new();
    for body in bodies {
        let request = ExportProfilesServiceRequest::decode(&body[..])
            .expect("the Collector forwards an ExportProfilesServiceRequest");
        let d = request.dictionary.as_ref().expect("a dictionary");
        let s = |i: i32| d.string_table[i as usize].clone();
        for rp in &request.resource_profiles {
            let resource = rp.resource.as_ref().expect("a resource");
            resources.push(
                otlp_attributes(&d.string_table, &resource.attributes)
                    .into_iter()
                    .collect(),
            );
            for sp in &rp.scope_profiles {
                for p in &sp.profiles {
                    let t = p.sample_type.expect("a sample type");
                    let profile_attributes: BTreeMap<String, i64> = p
                        .attribute_indices
                        .iter()
                        .map(|&i| {
                            let a = &d.attribute_table[i as usize];
                            let value = match a.value.as_ref().and_then(|v| v.value.clone()) {
                                Some(Value::IntValue(v)) => v,
                                other => panic!("unexpected attribute value {other:?}"),
                            };
                            (s(a.key_strindex), value)
                        })
                        .collect();
                    for sample in &p.samples {
                        let locations: Vec<_> = d.stack_table[sample.stack_index as usize]
                            .location_indices
                            .iter()
                            .rev()
                            .map(|&l| &d.location_table[l as usize])
                            .collect();
                        let frames = locations
                            .iter()
                            .map(|l| {
                                s(d.function_table[l.lines[0].function_index as usize]
                                    .name_strindex)
                            })
                            .collect();
                        let modules = locations
                            .iter()
                            .map(|l| s(d.mapping_table[l.mapping_index as usize].filename_strindex))
                            .collect();
                        let lines = locations
                            .iter()
                            .map(|l| {
                                let line = &l.lines[0];
                                let function = &d.function_table[line.function_index as usize];
                                (s(function.filename_strindex), line.line)
                            })
                            .collect();
                        assert_eq!(sample.values.len(), 1);
                        samples.push(Sample {
                            sample_type: s(t.type_strindex),
                            frames,
                            modules,
                            lines,
                            value: sample.values[0],
                            attributes: profile_attributes.clone(),
                        });
                    }
                }
            }
        }
    }
    (samples, resources)
}

pub fn total(samples: &[Sample], sample_type: &str, keep: impl Fn(&Sample) -> bool) -> i64 {
    samples
        .iter()
        .filter(|s| s.sample_type == sample_type && keep(s))
        .map(|s| s.value)
        .sum()
}

/// The `sample_type` total of the samples with `function` among their frames.
pub fn total_under(samples: &[Sample], sample_type: &str, function: &str) -> i64 {
    total(samples, sample_type, |s| {
        s.frames.iter().any(|f| f == function)
    })
}

/// `clrprof <clrprof_args> -- <dotnet> <program's dll>`, run to completion.
pub fn clrprof_running(program: &Program, clrprof_args: &[&str]) -> Output {
    let muxer = program.dotnet.muxer.display().to_string();
    let dll = program.dll.display().to_string();
    clrprof(&[clrprof_args, &["--", &muxer, &dll]].concat())
}

/// `clrprof record <clrprof_args>` of `program`, checking that both it and a plain run of the
/// program succeeded and that the program printed what it prints unprofiled.
#[track_caller]
pub fn clrprof_record_unchanged(program: &Program, clrprof_args: &[&str]) -> Output {
    let plain = program.run(&[]);
    plain.assert_success();
    let output = clrprof_running(program, &[&["record"], clrprof_args].concat());
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout, "profiling changed the output");
    output
}

/// Waits until the forwarded requests stop coming (none for a second), then returns them.
pub fn settled(collector: &Collector) -> Vec<Vec<u8>> {
    settled_beyond(collector, 0)
}

/// Waits for more than `received` forwarded requests, then until they stop coming (none for
/// a second), and returns them all. The Collector forwards what it received in its own time:
/// the first new request is not all of them.
pub fn settled_beyond(collector: &Collector, received: usize) -> Vec<Vec<u8>> {
    let mut bodies = collector.forwarded.wait_for(received + 1, FORWARD_TIMEOUT);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = collector.forwarded.wait_for(bodies.len(), FORWARD_TIMEOUT);
        if now.len() == bodies.len() {
            return bodies;
        }
        bodies = now;
    }
}

/// The agent's one line at exit, and its numbers: periods, delivered, dropped, waiting at
/// exit, failed sends.
pub fn exit_line<'a>(stderr: &'a str, endpoint: &str) -> (&'a str, [u64; 5]) {
    let prefix = format!("clrprof: export to {endpoint}: ");
    let line = stderr
        .strip_prefix(&prefix)
        .and_then(|l| l.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(!line.contains('\n'), "{stderr}");
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(5)
        .map(|n| n.parse().unwrap())
        .collect();
    (
        line,
        numbers.try_into().unwrap_or_else(|_| panic!("{stderr}")),
    )
}

/// Waits for the exported `busy` run of Continuous in `child`, which must succeed and print only
/// `done`; returns its standard error and the numbers of the agent's line at exit.
#[track_caller]
pub fn busy_ended(mut child: ChildGuard, endpoint: &str) -> (String, [u64; 5]) {
    let output = child.wait_with_output(default_timeout());
    output.assert_success();
    assert_eq!(output.stdout_str(), "done\n");
    let stderr = output.stderr_str();
    let (_, numbers) = exit_line(&stderr, endpoint);
    (stderr, numbers)
}

pub const MAIN: &str = "Continuous.Program.Main(string[])";
pub const SPIN: &str = "Continuous.Hot.Spin(long)";
pub const ALLOCATE: &str = "Continuous.Allocator.Allocate(int)";
pub const RUN: &str = "Continuous.Thrower.Run(int)";
pub const THROW: &str = "Continuous.Thrower.Throw(int)";
