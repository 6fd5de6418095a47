//! Continuous profiling: the agent alone ships a profile of every period to a backend.
//!
//! [`ExportSettings`] say where and what; they come from environment variables only
//! ([`ExportSettings::from_env`] reads them, [`ExportSettings::to_env`] writes them, and
//! `clrprof env` prints them), and [`AgentConfig::for_export`] turns them into the agent's
//! whole configuration. Every variable is listed in [`VARIABLES`]; docs/continuous-profiling.md
//! says what each does.

use std::time::Duration;

use super::{AgentConfig, AllocMode, BadSourceRoot, Mode, RATE_HZ, SourceRoots};
use crate::EventCategory;

/// The backend's address, e.g. `http://collector:4318`: setting it turns export mode on.
pub const ENV_ENDPOINT: &str = "CLRPROF_EXPORT_ENDPOINT";
/// `otlp-http` (the default), `otlp-grpc` or `pyroscope`.
pub const ENV_PROTOCOL: &str = "CLRPROF_EXPORT_PROTOCOL";
/// The service's name (`service.name`); `OTEL_SERVICE_NAME` when not set.
pub const ENV_SERVICE: &str = "CLRPROF_EXPORT_SERVICE";
/// The service's version (`service.version`), optional.
pub const ENV_VERSION: &str = "CLRPROF_EXPORT_VERSION";
/// The user's labels, `key=value` pairs separated by `,`.
pub const ENV_LABELS: &str = "CLRPROF_EXPORT_LABELS";
/// The period, in seconds (`15`, `15s`) or milliseconds (`1500ms`).
pub const ENV_PERIOD: &str = "CLRPROF_EXPORT_PERIOD";
/// Which profiles, e.g. `cpu,alloc,lock,exceptions` (the default), `all`.
pub const ENV_PROFILES: &str = "CLRPROF_EXPORT_PROFILES";
/// CPU samples per second of a thread's CPU time.
pub const ENV_CPU_RATE: &str = "CLRPROF_EXPORT_CPU_RATE";
/// A bearer token for the `Authorization` header.
pub const ENV_BEARER_TOKEN: &str = "CLRPROF_EXPORT_BEARER_TOKEN";
/// `user:password` for basic authentication.
pub const ENV_BASIC_AUTH: &str = "CLRPROF_EXPORT_BASIC_AUTH";
/// Pyroscope's tenant (`X-Scope-OrgID`).
pub const ENV_TENANT: &str = "CLRPROF_EXPORT_TENANT";
/// Where the source files the symbols name are, for the file names of exported frames:
/// `FROM=TO` rules separated by `;` (`/build/src=` leaves paths relative to the build's
/// `src`).
pub const ENV_SOURCE_ROOTS: &str = "CLRPROF_EXPORT_SOURCE_ROOTS";
/// The variable `ENV_SERVICE` falls back to.
pub const ENV_OTEL_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

/// Every variable of export mode.
pub const VARIABLES: [&str; 12] = [
    ENV_ENDPOINT,
    ENV_PROTOCOL,
    ENV_SERVICE,
    ENV_VERSION,
    ENV_LABELS,
    ENV_PERIOD,
    ENV_PROFILES,
    ENV_CPU_RATE,
    ENV_BEARER_TOKEN,
    ENV_BASIC_AUTH,
    ENV_TENANT,
    ENV_SOURCE_ROOTS,
];

/// The prefix of export mode's variables: one that is not in [`VARIABLES`] is a mistake.
pub const VARIABLE_PREFIX: &str = "CLRPROF_EXPORT_";

/// The period unless told otherwise.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(15);
/// The periods accepted.
pub const PERIODS: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3600);
/// CPU samples per second of a thread's CPU time unless told otherwise: as cheap as
/// Pyroscope's and Datadog's .NET profilers (a sample every 10 ms of CPU).
pub const DEFAULT_CPU_RATE_HZ: u32 = 100;
/// Each of the agent's two record buffers in export mode: the records are aggregated in
/// process every 10 ms, so a small buffer is enough.
pub const EXPORT_BUFFER_BYTES: usize = 1 << 20;

/// How profiles are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportProtocol {
    /// OTLP profiles over HTTP (protobuf, gzip), `POST <endpoint>/v1development/profiles`.
    OtlpHttp,
    /// OTLP profiles over gRPC (gzip), the profiles service's `Export`.
    OtlpGrpc,
    /// Pyroscope's push API, `POST <endpoint>/push.v1.PusherService/Push`.
    Pyroscope,
}

named_values!(ExportProtocol {
    OtlpHttp => "otlp-http",
    OtlpGrpc => "otlp-grpc",
    Pyroscope => "pyroscope",
});

/// The profiles export mode can ship.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExportProfile {
    /// CPU time.
    Cpu,
    /// Wall time of threads that were busy or blocked.
    Wall,
    /// Allocated bytes (the runtime's allocation ticks).
    Alloc,
    /// Lock wait time and count.
    Lock,
    /// Exceptions thrown.
    Exceptions,
}

named_values!(ExportProfile {
    Cpu => "cpu",
    Wall => "wall",
    Alloc => "alloc",
    Lock => "lock",
    Exceptions => "exceptions",
});

impl ExportProfile {
    /// The profiles shipped unless told otherwise.
    pub const DEFAULT: &'static [ExportProfile] = &[
        ExportProfile::Cpu,
        ExportProfile::Alloc,
        ExportProfile::Lock,
        ExportProfile::Exceptions,
    ];
}

/// Credentials for the backend (their `Debug` leaves the secrets out).
#[derive(Clone, PartialEq, Eq)]
pub enum ExportAuth {
    /// `Authorization: Bearer TOKEN`.
    Bearer(String),
    /// `Authorization: Basic ...` of `user:password`.
    Basic {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
}

impl std::fmt::Debug for ExportAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportAuth::Bearer(_) => write!(f, "Bearer(..)"),
            ExportAuth::Basic { user, .. } => write!(f, "Basic {{ user: {user:?}, .. }}"),
        }
    }
}

/// Where and what export mode ships.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSettings {
    /// The backend's base address (`http://` or `https://`), without the protocol's path.
    pub endpoint: String,
    /// How profiles are sent.
    pub protocol: ExportProtocol,
    /// `service.name`.
    pub service_name: String,
    /// `service.version`.
    pub service_version: Option<String>,
    /// The user's labels, in the order given.
    pub labels: Vec<(String, String)>,
    /// How much time each profile covers.
    pub period: Duration,
    /// The profiles to ship, in [`ExportProfile::ALL`]'s order, without duplicates.
    pub profiles: Vec<ExportProfile>,
    /// Whether `profiles` was chosen by the user (not the default): a chosen profile the
    /// runtime cannot give is worth a message, a default one is not.
    pub profiles_chosen: bool,
    /// CPU samples per second of a thread's CPU time.
    pub cpu_rate_hz: u32,
    /// Credentials, if any.
    pub auth: Option<ExportAuth>,
    /// Pyroscope's tenant.
    pub tenant: Option<String>,
    /// Where the source files of exported frames are (their file names are mapped).
    pub source_roots: SourceRoots,
}

impl ExportSettings {
    /// Settings for `endpoint` with every default: OTLP/HTTP, the default profiles, period
    /// and CPU rate, service `service_name`.
    pub fn new(endpoint: impl Into<String>, service_name: impl Into<String>) -> ExportSettings {
        ExportSettings {
            endpoint: endpoint.into(),
            protocol: ExportProtocol::OtlpHttp,
            service_name: service_name.into(),
            service_version: None,
            labels: Vec::new(),
            period: DEFAULT_PERIOD,
            profiles: ExportProfile::DEFAULT.to_vec(),
            profiles_chosen: false,
            cpu_rate_hz: DEFAULT_CPU_RATE_HZ,
            auth: None,
            tenant: None,
            source_roots: SourceRoots::default(),
        }
    }

    /// Whether `profile` is shipped.
    pub fn wants(&self, profile: ExportProfile) -> bool {
        self.profiles.contains(&profile)
    }

    /// Reads the settings from the environment, through `var` (a variable's value) and
    /// `names` (every variable's name, to find misspelt ones). `Ok(None)` when export mode is
    /// off (no `CLRPROF_EXPORT_*` variable at all); an error, one line, names the variable
    /// that is wrong and why. `default_service` is the service's name when neither
    /// `CLRPROF_EXPORT_SERVICE` nor `OTEL_SERVICE_NAME` is set.
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        names: impl IntoIterator<Item = String>,
        default_service: &str,
    ) -> Result<Option<ExportSettings>, SettingsError> {
        let mut any = false;
        for name in names {
            if name.starts_with(VARIABLE_PREFIX) {
                if !VARIABLES.contains(&name.as_str()) {
                    return Err(SettingsError::UnknownVariable { name });
                }
                any = true;
            }
        }
        if !any {
            return Ok(None);
        }
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let endpoint = get(ENV_ENDPOINT).ok_or(SettingsError::NoEndpoint)?;
        let endpoint = endpoint.trim().trim_end_matches('/').to_string();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(SettingsError::NotHttp { endpoint });
        }
        let service = get(ENV_SERVICE)
            .or_else(|| get(ENV_OTEL_SERVICE_NAME))
            .unwrap_or_else(|| default_service.to_string());
        let mut s = ExportSettings::new(endpoint, service.trim());
        if let Some(p) = get(ENV_PROTOCOL) {
            s.protocol = ExportProtocol::from_name(p.trim())
                .ok_or(SettingsError::UnknownProtocol { value: p })?;
        }
        s.service_version = get(ENV_VERSION).map(|v| v.trim().to_string());
        if let Some(labels) = get(ENV_LABELS) {
            s.labels = parse_labels(&labels).map_err(|reason| SettingsError::Labels {
                value: labels.clone(),
                reason,
            })?;
        }
        if let Some(p) = get(ENV_PERIOD) {
            s.period = parse_period(p.trim()).ok_or(SettingsError::Period { value: p })?;
        }
        if let Some(p) = get(ENV_PROFILES) {
            s.profiles = parse_profiles(&p).map_err(|reason| SettingsError::Profiles {
                value: p.clone(),
                reason,
            })?;
            s.profiles_chosen = true;
        }
        if let Some(r) = get(ENV_CPU_RATE) {
            s.cpu_rate_hz = r
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|hz| RATE_HZ.contains(hz))
                .ok_or(SettingsError::CpuRate { value: r })?;
        }
        match (get(ENV_BEARER_TOKEN), get(ENV_BASIC_AUTH)) {
            (Some(_), Some(_)) => return Err(SettingsError::TwoAuthentications),
            (Some(token), None) => s.auth = Some(ExportAuth::Bearer(token.trim().to_string())),
            (None, Some(basic)) => {
                let (user, password) = basic.split_once(':').ok_or(SettingsError::BasicAuth)?;
                s.auth = Some(ExportAuth::Basic {
                    user: user.to_string(),
                    password: password.to_string(),
                });
            }
            (None, None) => {}
        }
        s.tenant = get(ENV_TENANT).map(|t| t.trim().to_string());
        if let Some(roots) = get(ENV_SOURCE_ROOTS) {
            s.source_roots =
                SourceRoots::parse_list(&roots).map_err(|reason| SettingsError::SourceRoots {
                    value: roots.clone(),
                    reason,
                })?;
        }
        Ok(Some(s))
    }

    /// The variables that give these settings (the defaults left out, the endpoint and the
    /// service always), in [`VARIABLES`]' order.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let d = ExportSettings::new("", "");
        let mut out = vec![(ENV_ENDPOINT, self.endpoint.clone())];
        if self.protocol != d.protocol {
            out.push((ENV_PROTOCOL, self.protocol.name().to_string()));
        }
        out.push((ENV_SERVICE, self.service_name.clone()));
        if let Some(v) = &self.service_version {
            out.push((ENV_VERSION, v.clone()));
        }
        if !self.labels.is_empty() {
            let labels: Vec<String> = self
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            out.push((ENV_LABELS, labels.join(",")));
        }
        if self.period != d.period {
            let ms = self.period.as_millis();
            let text = if ms.is_multiple_of(1000) {
                format!("{}s", ms / 1000)
            } else {
                format!("{ms}ms")
            };
            out.push((ENV_PERIOD, text));
        }
        if self.profiles != d.profiles {
            let names: Vec<&str> = self.profiles.iter().map(|p| p.name()).collect();
            out.push((ENV_PROFILES, names.join(",")));
        }
        if self.cpu_rate_hz != d.cpu_rate_hz {
            out.push((ENV_CPU_RATE, self.cpu_rate_hz.to_string()));
        }
        match &self.auth {
            Some(ExportAuth::Bearer(token)) => out.push((ENV_BEARER_TOKEN, token.clone())),
            Some(ExportAuth::Basic { user, password }) => {
                out.push((ENV_BASIC_AUTH, format!("{user}:{password}")))
            }
            None => {}
        }
        if let Some(t) = &self.tenant {
            out.push((ENV_TENANT, t.clone()));
        }
        if !self.source_roots.is_empty() {
            out.push((ENV_SOURCE_ROOTS, self.source_roots.to_list()));
        }
        out
    }
}

/// Why export mode's variables make no settings: one line that names the variable and says
/// what it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A `CLRPROF_EXPORT_*` variable export mode does not know (misspelt, most often).
    #[error("unknown variable {name}; export mode knows {}", VARIABLES.join(", "))]
    UnknownVariable {
        /// The variable.
        name: String,
    },
    /// Export variables but no endpoint.
    #[error(
        "{ENV_ENDPOINT} is not set (export mode needs the backend's address, e.g. http://collector:4318)"
    )]
    NoEndpoint,
    /// An endpoint that is no HTTP address.
    #[error("{ENV_ENDPOINT}={endpoint}: the address must start with http:// or https://")]
    NotHttp {
        /// The endpoint given.
        endpoint: String,
    },
    /// A protocol export mode does not speak.
    #[error("{ENV_PROTOCOL}={value}: unknown protocol (otlp-http, otlp-grpc or pyroscope)")]
    UnknownProtocol {
        /// The protocol given.
        value: String,
    },
    /// Source root rules that do not parse.
    #[error("{ENV_SOURCE_ROOTS}={value}: {reason}")]
    SourceRoots {
        /// The rules given.
        value: String,
        /// The rule that is wrong.
        reason: BadSourceRoot,
    },
    /// Labels that do not parse.
    #[error("{ENV_LABELS}={value}: {reason}")]
    Labels {
        /// The labels given.
        value: String,
        /// What is wrong with them.
        reason: LabelsError,
    },
    /// A period that does not parse or is out of range.
    #[error(
        "{ENV_PERIOD}={value}: a period is seconds (15, 15s) or milliseconds (1500ms), from 1 s to 1 h"
    )]
    Period {
        /// The period given.
        value: String,
    },
    /// A profile list that does not parse.
    #[error("{ENV_PROFILES}={value}: {reason}")]
    Profiles {
        /// The list given.
        value: String,
        /// What is wrong with it.
        reason: ProfilesError,
    },
    /// A CPU rate that does not parse or is out of range.
    #[error("{ENV_CPU_RATE}={value}: a rate in Hz from {} to {}", RATE_HZ.start(), RATE_HZ.end())]
    CpuRate {
        /// The rate given.
        value: String,
    },
    /// A bearer token and basic authentication both.
    #[error("{ENV_BEARER_TOKEN} and {ENV_BASIC_AUTH} are both set; give one")]
    TwoAuthentications,
    /// Basic authentication without the `:` (its value, a secret, is not repeated).
    #[error("{ENV_BASIC_AUTH}: expected user:password")]
    BasicAuth,
}

/// Why a label list does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelsError {
    /// An item without `=`.
    #[error("`{item}` is not key=value")]
    NotKeyValue {
        /// The item.
        item: String,
    },
    /// An item with an empty key.
    #[error("`{item}` has no key")]
    NoKey {
        /// The item.
        item: String,
    },
    /// A key given twice.
    #[error("the label `{key}` is given twice")]
    Twice {
        /// The key.
        key: String,
    },
}

/// Why a profile list does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilesError {
    /// A name that is no profile.
    #[error("unknown profile `{name}` ({} or all)", profile_names())]
    Unknown {
        /// The name.
        name: String,
    },
    /// An empty list.
    #[error("no profile named")]
    None,
}

/// Every profile's name, for a message.
fn profile_names() -> String {
    let known: Vec<&str> = ExportProfile::ALL.iter().map(|p| p.name()).collect();
    known.join(", ")
}

/// `key=value,key=value`: keys not empty, without `=` or `,`; values without `,`.
pub fn parse_labels(text: &str) -> Result<Vec<(String, String)>, LabelsError> {
    let mut labels: Vec<(String, String)> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| LabelsError::NotKeyValue {
                item: item.to_string(),
            })?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(LabelsError::NoKey {
                item: item.to_string(),
            });
        }
        if labels.iter().any(|(known, _)| known == k) {
            return Err(LabelsError::Twice { key: k.to_string() });
        }
        labels.push((k.to_string(), v.to_string()));
    }
    Ok(labels)
}

/// `15`, `15s` or `1500ms`, within [`PERIODS`].
pub fn parse_period(text: &str) -> Option<Duration> {
    let d = if let Some(ms) = text.strip_suffix("ms") {
        Duration::from_millis(ms.trim().parse().ok()?)
    } else {
        Duration::from_secs(text.strip_suffix('s').unwrap_or(text).trim().parse().ok()?)
    };
    PERIODS.contains(&d).then_some(d)
}

/// `cpu,wall,...` or `all`, into [`ExportProfile::ALL`]'s order.
pub fn parse_profiles(text: &str) -> Result<Vec<ExportProfile>, ProfilesError> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if name == "all" {
            out.extend_from_slice(ExportProfile::ALL);
            continue;
        }
        out.push(
            ExportProfile::from_name(name).ok_or_else(|| ProfilesError::Unknown {
                name: name.to_string(),
            })?,
        );
    }
    if out.is_empty() {
        return Err(ProfilesError::None);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl AgentConfig {
    /// The whole configuration of export mode: sample mode at the export's CPU rate (wall
    /// clock at its default rate, a fifth of it, when the wall profile is asked for, else
    /// once a second), the runtime's allocation ticks for `alloc`, its contention events for
    /// `lock`, exception callbacks for `exceptions`, no async call chains (the profiles hold
    /// the threads' own stacks), small record buffers.
    pub fn for_export(settings: ExportSettings) -> AgentConfig {
        let wants = |p| settings.wants(p);
        let mut c = AgentConfig {
            mode: Mode::Sample,
            rate_hz: settings.cpu_rate_hz,
            buffer_bytes: EXPORT_BUFFER_BYTES,
            async_chains: false,
            ..AgentConfig::default()
        };
        if !wants(ExportProfile::Wall) {
            c.wall_rate_hz = Some(*RATE_HZ.start());
        }
        if wants(ExportProfile::Alloc) {
            c.alloc = AllocMode::Ticks;
        }
        c.contention = wants(ExportProfile::Lock);
        if wants(ExportProfile::Exceptions) {
            c.events.push(EventCategory::Exception);
        }
        c.export = Some(settings);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Option<ExportSettings>, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ExportSettings::from_env(
            |name| map.get(name).cloned(),
            map.keys().cloned().collect::<Vec<_>>(),
            "unknown_service:dotnet",
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn off_without_variables_and_defaults_with_the_endpoint_alone() {
        assert_eq!(read(&[("PATH", "/bin")]), Ok(None));
        let s = read(&[(ENV_ENDPOINT, "http://c:4318/")]).unwrap().unwrap();
        assert_eq!(
            s,
            ExportSettings::new("http://c:4318", "unknown_service:dotnet")
        );
        assert_eq!(s.period, Duration::from_secs(15));
        assert_eq!(
            s.profiles,
            [
                ExportProfile::Cpu,
                ExportProfile::Alloc,
                ExportProfile::Lock,
                ExportProfile::Exceptions
            ]
        );
        let s = read(&[(ENV_ENDPOINT, "http://c"), (ENV_OTEL_SERVICE_NAME, "shop")])
            .unwrap()
            .unwrap();
        assert_eq!(s.service_name, "shop");
    }

    #[test]
    fn every_variable_reads_back_from_what_to_env_writes() {
        let mut s = ExportSettings::new("https://p.example:4040", "shop");
        s.protocol = ExportProtocol::Pyroscope;
        s.service_version = Some("1.2.3".into());
        s.labels = vec![("env".into(), "prod".into()), ("zone".into(), "b".into())];
        s.period = Duration::from_millis(2500);
        s.profiles = vec![ExportProfile::Cpu, ExportProfile::Wall];
        s.profiles_chosen = true;
        s.cpu_rate_hz = 250;
        s.auth = Some(ExportAuth::Basic {
            user: "u".into(),
            password: "p:w".into(),
        });
        s.tenant = Some("t1".into());
        s.source_roots = SourceRoots::parse(&["/build/src=".into(), "/ci=/x".into()]).unwrap();
        let env = s.to_env();
        let names: Vec<&str> = env.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            VARIABLES
                .iter()
                .copied()
                .filter(|v| *v != ENV_BEARER_TOKEN)
                .collect::<Vec<_>>()
        );
        let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(read(&vars).unwrap().unwrap(), s);
        let d = ExportSettings::new("http://c", "svc");
        assert_eq!(
            d.to_env(),
            [
                (ENV_ENDPOINT, "http://c".into()),
                (ENV_SERVICE, "svc".into())
            ]
        );
    }

    #[test]
    fn a_bad_variable_is_one_clear_error() {
        let e = |vars: &[(&str, &str)]| read(vars).unwrap_err();
        assert_eq!(
            e(&[(ENV_ENDPOINT, "http://c"), (ENV_PROTOCOL, "otlp-json")]),
            "CLRPROF_EXPORT_PROTOCOL=otlp-json: unknown protocol (otlp-http, otlp-grpc or pyroscope)"
        );
        assert!(
            e(&[(ENV_PROTOCOL, "pyroscope")]).starts_with("CLRPROF_EXPORT_ENDPOINT is not set")
        );
        assert!(e(&[(ENV_ENDPOINT, "c:4318")]).contains("must start with http://"));
        assert!(
            e(&[(ENV_ENDPOINT, "http://c"), ("CLRPROF_EXPORT_PERIDO", "1")])
                .starts_with("unknown variable CLRPROF_EXPORT_PERIDO")
        );
        for bad in ["0", "0.5", "500ms", "2h", "x"] {
            assert!(
                e(&[(ENV_ENDPOINT, "http://c"), (ENV_PERIOD, bad)])
                    .starts_with("CLRPROF_EXPORT_PERIOD="),
                "{bad}"
            );
        }
        assert!(
            e(&[(ENV_ENDPOINT, "http://c"), (ENV_PROFILES, "cpu,heap")])
                .contains("unknown profile `heap`")
        );
        assert!(e(&[(ENV_ENDPOINT, "http://c"), (ENV_LABELS, "a=1,a=2")]).contains("twice"));
        assert!(
            e(&[(ENV_ENDPOINT, "http://c"), (ENV_LABELS, "novalue")]).contains("not key=value")
        );
        assert!(
            e(&[(ENV_ENDPOINT, "http://c"), (ENV_CPU_RATE, "0")])
                .starts_with("CLRPROF_EXPORT_CPU_RATE=0")
        );
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let bearer = format!("{:?}", ExportAuth::Bearer("s3cret".into()));
        let basic = format!(
            "{:?}",
            ExportAuth::Basic {
                user: "u".into(),
                password: "s3cret".into()
            }
        );
        assert!(!bearer.contains("s3cret") && !basic.contains("s3cret"));
        assert_eq!(basic, r#"Basic { user: "u", .. }"#);
    }

    #[test]
    fn periods_and_profiles_parse() {
        assert_eq!(parse_period("1"), Some(Duration::from_secs(1)));
        assert_eq!(parse_period("15s"), Some(Duration::from_secs(15)));
        assert_eq!(parse_period("1500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_period("3601"), None);
        assert_eq!(parse_profiles("all").unwrap(), ExportProfile::ALL);
        assert_eq!(
            parse_profiles("exceptions, cpu,cpu").unwrap(),
            [ExportProfile::Cpu, ExportProfile::Exceptions]
        );
    }

    #[test]
    fn the_agent_configuration_follows_the_profiles() {
        let mut s = ExportSettings::new("http://c", "svc");
        let c = AgentConfig::for_export(s.clone());
        assert_eq!(c.mode, Mode::Sample);
        assert_eq!(c.rate_hz, 100);
        assert_eq!(c.wall_rate(), 1);
        assert_eq!(c.alloc, AllocMode::Ticks);
        assert!(c.contention && c.wants(EventCategory::Exception) && !c.async_chains);
        s.profiles = vec![ExportProfile::Wall];
        let c = AgentConfig::for_export(s);
        assert_eq!(c.wall_rate(), 20);
        assert_eq!(c.alloc, AllocMode::Off);
        assert!(!c.contention && c.events.is_empty());
    }
}
