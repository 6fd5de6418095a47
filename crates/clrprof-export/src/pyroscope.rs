//! Pyroscope's push API: one period as a `push.v1.PushRequest`, one series per profile type
//! (labels `__name__`, as Pyroscope's .NET profiler names them, `service_name`, then the
//! user's labels), each with one gzip'd pprof profile holding all the type's value types.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;

use clrprof_pprof as pprof;
use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::period::{PeriodProfiles, ProfileType, TypeProfile};
use crate::resource::Resource;

/// `push.v1.PushRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    /// One series per profile type.
    #[prost(message, repeated, tag = "1")]
    pub series: Vec<RawProfileSeries>,
}

/// `push.v1.RawProfileSeries`: a profile and the labels that name its series.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawProfileSeries {
    /// The series' labels.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
    /// The profiles.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<RawSample>,
}

/// `types.v1.LabelPair`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LabelPair {
    /// The label's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `push.v1.RawSample`: one pprof profile, gzip'd.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawSample {
    /// The gzip'd pprof bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub raw_profile: Vec<u8>,
    /// A unique id (a UUID).
    #[prost(string, tag = "2")]
    pub id: String,
}

/// The pprof profile of one type of one period (not compressed).
pub fn pprof_profile(period: &PeriodProfiles, profile_type: ProfileType) -> pprof::Profile {
    let samples = period.profile(profile_type);
    let mut b = PprofBuilder::default();
    let sample_type = profile_type
        .value_types()
        .iter()
        .map(|v| b.value_type(v.name, v.unit))
        .collect();
    let sample = samples
        .stacks()
        .map(|s| pprof::Sample {
            // pprof's stacks are leaf first.
            location_id: s
                .frames
                .iter()
                .rev()
                .map(|&f| b.location(period, f))
                .collect(),
            value: s.values.clone(),
            label: Vec::new(),
        })
        .collect();
    let (period_type, every) = period_of(&mut b, samples);
    let comment = period
        .counters()
        .map(|(name, value)| b.string(&format!("{name}={value}")))
        .collect();
    let mut profile = pprof::Profile {
        sample_type,
        sample,
        time_nanos: i64::try_from(period.start_unix_nano()).unwrap_or(i64::MAX),
        duration_nanos: i64::try_from(period.duration_nano()).unwrap_or(i64::MAX),
        period_type,
        period: every,
        comment,
        ..Default::default()
    };
    b.tables.fill(&mut profile);
    profile
}

fn period_of(b: &mut PprofBuilder, samples: &TypeProfile) -> (Option<pprof::ValueType>, i64) {
    match samples.period() {
        Some(p) => (
            Some(b.value_type(p.value_type.name, p.value_type.unit)),
            p.every,
        ),
        None => (None, 0),
    }
}

/// The profile's tables, with a function per name and source file and a location per frame.
#[derive(Default)]
struct PprofBuilder {
    tables: pprof::Tables,
    function_index: HashMap<(i64, i64), u64>,
    location_index: HashMap<u32, u64>,
}

impl PprofBuilder {
    fn string(&mut self, s: &str) -> i64 {
        self.tables.string(s)
    }

    fn value_type(&mut self, name: &str, unit: &str) -> pprof::ValueType {
        self.tables.value_type(name, unit)
    }

    fn location(&mut self, period: &PeriodProfiles, frame_id: u32) -> u64 {
        if let Some(&id) = self.location_index.get(&frame_id) {
            return id;
        }
        let frame = &period.frames()[frame_id as usize];
        let mapping_id = self.tables.mapping(&frame.module);
        let name = self.string(&frame.function);
        let filename = frame.file.as_deref().map_or(0, |f| self.string(f));
        let function_id = match self.function_index.get(&(name, filename)) {
            Some(&id) => id,
            None => {
                let id = self.tables.add_function(name, filename);
                self.function_index.insert((name, filename), id);
                id
            }
        };
        let line = frame.line.map_or(0, i64::from);
        let id = self.tables.add_location(function_id, line, mapping_id);
        self.location_index.insert(frame_id, id);
        id
    }
}

/// gzip of `bytes`.
pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder
        .write_all(bytes)
        .expect("writing into a Vec cannot fail");
    encoder.finish().expect("writing into a Vec cannot fail")
}

/// A random UUID (version 4), from the standard library's randomly seeded hasher.
fn uuid_v4() -> String {
    let mut bytes = [0u8; 16];
    for half in bytes.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The push request for one period of one process.
pub fn request(period: &PeriodProfiles, resource: &Resource) -> PushRequest {
    let series = period
        .present()
        .map(|(profile_type, _)| {
            let mut labels = vec![
                LabelPair {
                    name: "__name__".into(),
                    value: profile_type.pyroscope_name().into(),
                },
                LabelPair {
                    name: "service_name".into(),
                    value: resource.service_name.clone(),
                },
            ];
            labels.extend(resource.labels.iter().map(|(k, v)| LabelPair {
                name: k.clone(),
                value: v.clone(),
            }));
            RawProfileSeries {
                labels,
                samples: vec![RawSample {
                    raw_profile: gzip(&pprof_profile(period, profile_type).encode_to_vec()),
                    id: uuid_v4(),
                }],
            }
        })
        .collect();
    PushRequest { series }
}

/// The request's protobuf bytes.
pub fn encode(period: &PeriodProfiles, resource: &Resource) -> Vec<u8> {
    request(period, resource).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::period::Frame;

    fn resource() -> Resource {
        Resource {
            service_name: "shop".into(),
            service_version: None,
            host_name: "h".into(),
            process_pid: 1,
            executable_name: "dotnet".into(),
            runtime_name: ".NET".into(),
            runtime_version: "8.0.4".into(),
            container_id: None,
            labels: vec![("region".into(), "eu".into())],
        }
    }

    #[test]
    fn the_period_s_counters_are_comments() {
        let mut p = PeriodProfiles::new(5, 7, 16);
        p.add(ProfileType::Cpu, &[Frame::new("Main", "App.dll")], &[1])
            .unwrap();
        let plain = pprof_profile(&p, ProfileType::Cpu);
        assert!(plain.comment.is_empty());
        p.set_counter("clrprof.periods_dropped", 2);
        let profile = pprof_profile(&p, ProfileType::Cpu);
        let comments: Vec<&str> = profile
            .comment
            .iter()
            .map(|&i| profile.string_table[i as usize].as_str())
            .collect();
        assert_eq!(comments, ["clrprof.periods_dropped=2"]);
    }

    #[test]
    fn one_series_per_type_with_a_gzipped_pprof() {
        let mut p = PeriodProfiles::new(5, 7, 16);
        let main = Frame::new("Main", "App.dll");
        let work = Frame::new("Work", "App.dll").at("Work.cs", 3);
        p.add(ProfileType::Cpu, &[main.clone(), work.clone()], &[20])
            .unwrap();
        p.add(ProfileType::Lock, &[main.clone(), work], &[900, 2])
            .unwrap();
        p.add(ProfileType::Lock, &[main], &[100, 1]).unwrap();
        let decoded = PushRequest::decode(&encode(&p, &resource())[..]).unwrap();
        assert_eq!(decoded.series.len(), 2);
        let label_text = |s: &RawProfileSeries| {
            s.labels
                .iter()
                .map(|l| format!("{}={}", l.name, l.value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            label_text(&decoded.series[0]),
            ["__name__=process_cpu", "service_name=shop", "region=eu"]
        );
        assert_eq!(label_text(&decoded.series[1])[0], "__name__=lock");
        let raw = &decoded.series[1].samples[0];
        assert_eq!(raw.id.len(), 36);
        assert_ne!(raw.id, decoded.series[0].samples[0].id);
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(&raw.raw_profile[..])
            .read_to_end(&mut bytes)
            .unwrap();
        let lock = pprof::Profile::decode(&bytes[..]).unwrap();
        let s = |i: i64| lock.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = lock
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(types, [("delay", "nanoseconds"), ("contentions", "count")]);
        assert_eq!((lock.time_nanos, lock.duration_nanos), (5, 7));
        let stacks: Vec<(Vec<&str>, Vec<i64>)> = lock
            .sample
            .iter()
            .map(|sample| {
                let names = sample
                    .location_id
                    .iter()
                    .map(|&l| {
                        let loc = &lock.location[l as usize - 1];
                        s(lock.function[loc.line[0].function_id as usize - 1].name)
                    })
                    .collect();
                (names, sample.value.clone())
            })
            .collect();
        assert_eq!(
            stacks,
            [
                (vec!["Work", "Main"], vec![900, 2]),
                (vec!["Main"], vec![100, 1])
            ]
        );
        assert_eq!(lock.mapping.len(), 1);
        assert_eq!(s(lock.mapping[0].filename), "App.dll");
        let work_location = &lock.location[lock.sample[0].location_id[0] as usize - 1];
        assert_eq!(work_location.line[0].line, 3);
    }
}
