//! `clrprof env`: the environment variables of export mode (continuous profiling) for one
//! setup, as shell `export` lines, a systemd drop-in, a Docker env file or a Kubernetes `env:`
//! list: the runtime's three (with the agent's path) and clrprof's `CLRPROF_EXPORT_*`.
//!
//! The arguments are checked by the agent's own reading of the variables
//! ([`ExportSettings::from_env`]), so that what this prints is what the agent accepts.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use clrprof_trace::config::ExportSettings;
use clrprof_trace::config::export_env::*;
use clrprof_trace::protocol::AGENT_CLSID;

/// How `clrprof env` writes the variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EnvFormat {
    /// `export NAME='value'` lines for a POSIX shell.
    Shell,
    /// A systemd drop-in: `[Service]` and `Environment="NAME=value"` lines.
    Systemd,
    /// `NAME=value` lines, for `docker run --env-file`.
    Docker,
    /// A Kubernetes container's `env:` list.
    K8s,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The backend's address, e.g. `http://collector:4318` (an OpenTelemetry Collector's
    /// OTLP/HTTP receiver) or `http://pyroscope:4040`.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// What the exported profiles say and where they go.
    #[command(flatten)]
    pub export: ExportOptions,
    /// How to write the variables.
    #[arg(long, value_enum, default_value = "shell")]
    pub format: EnvFormat,
    /// The agent's path where the program runs (default: the agent installed next to clrprof;
    /// give the path inside the container for `docker` and `k8s`).
    #[arg(long, value_name = "PATH", env = "CLRPROF_AGENT")]
    pub agent: Option<PathBuf>,
}

/// Export mode's settings but the endpoint, shared by `clrprof env` and `clrprof record
/// --export`.
#[derive(Debug, Args, Default)]
pub struct ExportOptions {
    /// Export mode: `otlp-http` (OTLP profiles over HTTP, usually port 4318), `otlp-grpc`
    /// (OTLP profiles over gRPC, usually port 4317) or `pyroscope` (Pyroscope's push API;
    /// default otlp-http).
    #[arg(long, value_name = "PROTOCOL")]
    pub protocol: Option<String>,
    /// Export mode: the service's name (`service.name`).
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Export mode: the service's version (`service.version`).
    #[arg(long, value_name = "VERSION")]
    pub service_version: Option<String>,
    /// Export mode: a label for every profile (a resource attribute), `KEY=VALUE`;
    /// repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Export mode: how much time each profile covers: seconds (`15`, `15s`) or milliseconds
    /// (`1500ms`), from 1 s to 1 h (default 15 s).
    #[arg(long, value_name = "PERIOD")]
    pub period: Option<String>,
    /// Export mode: the profiles, comma-separated: cpu, wall, alloc, lock, exceptions, or all
    /// (default cpu,alloc,lock,exceptions).
    #[arg(long, value_name = "LIST")]
    pub profiles: Option<String>,
    /// Export mode: CPU samples per second of a thread's CPU time (default 100).
    #[arg(long, value_name = "HZ")]
    pub cpu_rate: Option<String>,
    /// Export mode: Pyroscope's tenant (`X-Scope-OrgID`).
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// Export mode: where the source files the symbols name are, for the file names of the
    /// profiles' frames: FROM=TO replaces the start FROM of a path by TO (`/build/src=` leaves
    /// paths relative to the build's `src`); repeatable, the first that matches applies.
    #[arg(long = "source-root", value_name = "FROM=TO")]
    pub source_roots: Vec<String>,
}

impl ExportOptions {
    /// The first option given, by its flag (for "needs --export").
    #[cfg_attr(not(unix), allow(dead_code))]
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("--protocol", self.protocol.is_some()),
            ("--service", self.service.is_some()),
            ("--service-version", self.service_version.is_some()),
            ("--label", !self.labels.is_empty()),
            ("--period", self.period.is_some()),
            ("--profiles", self.profiles.is_some()),
            ("--cpu-rate", self.cpu_rate.is_some()),
            ("--tenant", self.tenant.is_some()),
            ("--source-root", !self.source_roots.is_empty()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// Checks the arguments as the agent reads the variables; the settings they give.
pub fn settings(endpoint: &str, o: &ExportOptions) -> Result<ExportSettings> {
    let mut vars: HashMap<&str, String> = HashMap::new();
    vars.insert(ENV_ENDPOINT, endpoint.to_string());
    vars.insert(
        ENV_PROTOCOL,
        o.protocol.clone().unwrap_or_else(|| "otlp-http".into()),
    );
    let service = o.service.as_deref().unwrap_or_default();
    if service.trim().is_empty() {
        bail!("--service needs a name");
    }
    vars.insert(ENV_SERVICE, service.to_string());
    if let Some(v) = &o.service_version {
        vars.insert(ENV_VERSION, v.clone());
    }
    if !o.labels.is_empty() {
        if let Some(bad) = o.labels.iter().find(|l| l.contains(',')) {
            bail!("--label {bad}: a label cannot hold `,`");
        }
        vars.insert(ENV_LABELS, o.labels.join(","));
    }
    if !o.source_roots.is_empty() {
        let separator = clrprof_trace::config::SourceRoots::SEPARATOR;
        if let Some(bad) = o.source_roots.iter().find(|r| r.contains(separator)) {
            bail!("--source-root {bad}: a source root cannot hold `{separator}`");
        }
        vars.insert(
            ENV_SOURCE_ROOTS,
            o.source_roots.join(&separator.to_string()),
        );
    }
    for (name, value) in [
        (ENV_PERIOD, &o.period),
        (ENV_PROFILES, &o.profiles),
        (ENV_CPU_RATE, &o.cpu_rate),
        (ENV_TENANT, &o.tenant),
    ] {
        if let Some(v) = value {
            vars.insert(name, v.clone());
        }
    }
    let names: Vec<String> = vars.keys().map(|k| k.to_string()).collect();
    match ExportSettings::from_env(|name| vars.get(name).cloned(), names, "") {
        Ok(Some(s)) => Ok(s),
        Ok(None) => bail!("no export setting given"),
        Err(e) => bail!("{e}"),
    }
}

/// What export mode with `settings` does, for one line: `every 15 s, checkout sends cpu,
/// alloc profiles to http://collector:4318`.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn describe(settings: &ExportSettings) -> String {
    let profiles: Vec<&str> = settings.profiles.iter().map(|p| p.name()).collect();
    format!(
        "every {} s, {} sends {} profiles to {}",
        settings.period.as_secs_f64(),
        settings.service_name,
        profiles.join(", "),
        settings.endpoint
    )
}

/// Every variable, in order: the runtime's three, then clrprof's.
pub fn variables(settings: &ExportSettings, agent: &str) -> Vec<(String, String)> {
    let mut out = vec![
        ("CORECLR_ENABLE_PROFILING".to_string(), "1".to_string()),
        ("CORECLR_PROFILER".to_string(), AGENT_CLSID.to_string()),
        ("CORECLR_PROFILER_PATH".to_string(), agent.to_string()),
    ];
    out.extend(
        settings
            .to_env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
    );
    out
}

/// The variables as `format` writes them.
pub fn render(vars: &[(String, String)], format: EnvFormat) -> String {
    let mut out = String::new();
    match format {
        EnvFormat::Shell => {
            for (k, v) in vars {
                out += &format!("export {k}='{}'\n", v.replace('\'', r"'\''"));
            }
        }
        EnvFormat::Systemd => {
            out += "[Service]\n";
            for (k, v) in vars {
                let v = v
                    .replace('\\', r"\\")
                    .replace('"', "\\\"")
                    .replace('%', "%%");
                out += &format!("Environment=\"{k}={v}\"\n");
            }
        }
        EnvFormat::Docker => {
            for (k, v) in vars {
                out += &format!("{k}={v}\n");
            }
        }
        EnvFormat::K8s => {
            out += "env:\n";
            for (k, v) in vars {
                // A JSON string is a YAML double-quoted scalar.
                out += &format!(
                    "  - name: {k}\n    value: {}\n",
                    serde_json::Value::String(v.clone())
                );
            }
        }
    }
    out
}

/// Runs `clrprof env`.
pub fn env(args: &EnvArgs) -> Result<i32> {
    let settings = settings(&args.endpoint, &args.export)?;
    if args.format == EnvFormat::Docker
        && variables(&settings, "")
            .iter()
            .any(|(_, v)| v.contains('\n'))
    {
        bail!("a Docker env file cannot hold a value with a line break");
    }
    let agent = match &args.agent {
        Some(path) => path.display().to_string(),
        None => located_agent()?,
    };
    let text = render(&variables(&settings, &agent), args.format);
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
}

#[cfg(unix)]
fn located_agent() -> Result<String> {
    Ok(crate::agent_lib::locate(None)?.display().to_string())
}

#[cfg(not(unix))]
fn located_agent() -> Result<String> {
    bail!("give the agent's path with --agent")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> EnvArgs {
        match crate::cli::Cli::try_parse_from([&["clrprof", "env"], args].concat()) {
            Ok(crate::cli::Cli {
                command: crate::cli::Command::Env(a),
            }) => a,
            other => panic!("{other:?}"),
        }
    }

    fn vars_of(args: &[&str]) -> Vec<(String, String)> {
        variables(
            &{
                let a = parse(args);
                settings(&a.endpoint, &a.export).unwrap()
            },
            "/opt/clrprof/libclrprof_agent.so",
        )
    }

    #[test]
    fn every_format_writes_every_variable() {
        let vars = vars_of(&[
            "--endpoint",
            "http://collector:4318",
            "--service",
            "shop's api",
            "--label",
            "env=prod",
            "--label",
            "zone=b",
            "--period",
            "30s",
            "--profiles",
            "cpu,wall",
        ]);
        assert_eq!(
            render(&vars, EnvFormat::Shell),
            "export CORECLR_ENABLE_PROFILING='1'\n\
             export CORECLR_PROFILER='{897B9E27-A69B-4816-9F74-172E6D96334F}'\n\
             export CORECLR_PROFILER_PATH='/opt/clrprof/libclrprof_agent.so'\n\
             export CLRPROF_EXPORT_ENDPOINT='http://collector:4318'\n\
             export CLRPROF_EXPORT_SERVICE='shop'\\''s api'\n\
             export CLRPROF_EXPORT_LABELS='env=prod,zone=b'\n\
             export CLRPROF_EXPORT_PERIOD='30s'\n\
             export CLRPROF_EXPORT_PROFILES='cpu,wall'\n"
        );
        let systemd = render(&vars, EnvFormat::Systemd);
        assert!(systemd.starts_with("[Service]\nEnvironment=\"CORECLR_ENABLE_PROFILING=1\"\n"));
        assert!(systemd.contains("Environment=\"CLRPROF_EXPORT_SERVICE=shop's api\"\n"));
        let docker = render(&vars, EnvFormat::Docker);
        assert_eq!(docker.lines().count(), 8);
        assert!(docker.contains("\nCLRPROF_EXPORT_LABELS=env=prod,zone=b\n"));
        let k8s = render(&vars, EnvFormat::K8s);
        assert!(k8s.starts_with("env:\n  - name: CORECLR_ENABLE_PROFILING\n    value: \"1\"\n"));
        assert!(k8s.contains("  - name: CLRPROF_EXPORT_SERVICE\n    value: \"shop's api\"\n"));
    }

    #[test]
    fn source_roots_are_one_variable_the_agent_reads() {
        let vars = vars_of(&[
            "--endpoint",
            "http://c:4318",
            "--service",
            "svc",
            "--source-root",
            "/build/src=",
            "--source-root",
            "/ci=/repo",
        ]);
        assert!(
            vars.contains(&(
                "CLRPROF_EXPORT_SOURCE_ROOTS".to_string(),
                "/build/src=;/ci=/repo".to_string()
            )),
            "{vars:?}"
        );
        let err = |rule: &str| {
            let a = parse(&[
                "--endpoint",
                "http://c",
                "--service",
                "s",
                "--source-root",
                rule,
            ]);
            settings(&a.endpoint, &a.export).unwrap_err().to_string()
        };
        assert_eq!(
            err("/build"),
            "CLRPROF_EXPORT_SOURCE_ROOTS=/build: `/build`: a source root is FROM=TO, e.g. \
             /build/src=/home/me/src"
        );
        assert!(err("/a=/b;/c=/d").contains("cannot hold `;`"));
    }

    #[test]
    fn systemd_escapes_what_it_must() {
        let vars = vec![("V".to_string(), r#"a"b\c%d"#.to_string())];
        assert_eq!(
            render(&vars, EnvFormat::Systemd),
            "[Service]\nEnvironment=\"V=a\\\"b\\\\c%%d\"\n"
        );
    }

    #[test]
    fn the_defaults_are_left_out_and_bad_arguments_are_the_agents_errors() {
        let vars = vars_of(&["--endpoint", "http://c:4318", "--service", "svc"]);
        let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "CORECLR_ENABLE_PROFILING",
                "CORECLR_PROFILER",
                "CORECLR_PROFILER_PATH",
                "CLRPROF_EXPORT_ENDPOINT",
                "CLRPROF_EXPORT_SERVICE"
            ]
        );
        let err = |args: &[&str]| {
            let a = parse(args);
            settings(&a.endpoint, &a.export).unwrap_err().to_string()
        };
        assert_eq!(
            err(&[
                "--endpoint",
                "http://c",
                "--service",
                "s",
                "--protocol",
                "otlp-json"
            ]),
            "CLRPROF_EXPORT_PROTOCOL=otlp-json: unknown protocol (otlp-http, otlp-grpc or pyroscope)"
        );
        assert!(err(&["--endpoint", "c:4318", "--service", "s"]).contains("http://"));
        assert!(
            err(&["--endpoint", "http://c", "--service", "s", "--period", "0"])
                .starts_with("CLRPROF_EXPORT_PERIOD=0")
        );
        assert!(
            err(&[
                "--endpoint",
                "http://c",
                "--service",
                "s",
                "--label",
                "a=1,b=2"
            ])
            .contains("cannot hold `,`")
        );
        let pyroscope = vars_of(&[
            "--endpoint",
            "http://p:4040",
            "--service",
            "s",
            "--protocol",
            "pyroscope",
            "--tenant",
            "t1",
            "--cpu-rate",
            "250",
        ]);
        assert!(pyroscope.contains(&("CLRPROF_EXPORT_PROTOCOL".into(), "pyroscope".into())));
        assert!(pyroscope.contains(&("CLRPROF_EXPORT_TENANT".into(), "t1".into())));
        assert!(pyroscope.contains(&("CLRPROF_EXPORT_CPU_RATE".into(), "250".into())));
    }
}
