//! OTLP profiles: one period as an `ExportProfilesServiceRequest` of the proto version
//! v1.10.0 (`opentelemetry.proto.collector.profiles.v1development`), the messages of the
//! `opentelemetry-proto` crate.
//!
//! One `Profile` per value type (OTLP has one sample type per profile since v1.8: allocations
//! make two profiles, bytes and objects, and so do lock waits, time and count). The
//! dictionary's tables are shared by all of them and deduplicated; entry 0 of each is its zero
//! value. A frame is a `Location` with one `Line` (function, source line) and the `Mapping` of
//! its module.

use std::collections::HashMap;
use std::hash::Hash;

use clrprof_pprof::StringTable;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::profiles::v1development as pb;
use opentelemetry_proto::tonic::resource::v1::Resource as PbResource;
use prost::Message;

use crate::period::{Frame, PeriodProfiles, ValueType};
use crate::resource::{AttributeValue, Resource};

/// The version of the OTLP protos the requests follow.
pub const PROTO_VERSION: &str = "1.10.0";

/// The key of the profile attribute that tells how many samples of the profile's type were
/// counted into the `[stacks over the limit]` stack (present only when some were).
pub const OVER_LIMIT_ATTRIBUTE: &str = "clrprof.samples_over_limit";

/// The instrumentation scope's name.
pub const SCOPE_NAME: &str = "clrprof";

/// A table whose entry 0 is the zero value and whose entries are unique.
struct Table<K, V> {
    rows: Vec<V>,
    index: HashMap<K, i32>,
}

impl<K: Hash + Eq, V: Default> Table<K, V> {
    fn new() -> Self {
        Table {
            rows: vec![V::default()],
            index: HashMap::new(),
        }
    }

    fn get_or_insert(&mut self, key: K, make: impl FnOnce() -> V) -> i32 {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = i32::try_from(self.rows.len()).expect("fewer than 2^31 table entries");
        self.rows.push(make());
        self.index.insert(key, i);
        i
    }
}

struct Dictionary {
    strings: StringTable,
    mappings: Table<i32, pb::Mapping>,
    functions: Table<(i32, i32), pb::Function>,
    locations: Table<u32, pb::Location>,
    stacks: Table<Vec<i32>, pb::Stack>,
    attributes: Table<(i32, i64), pb::KeyValueAndUnit>,
}

impl Dictionary {
    fn new() -> Self {
        Dictionary {
            strings: StringTable::default(),
            mappings: Table::new(),
            functions: Table::new(),
            locations: Table::new(),
            stacks: Table::new(),
            attributes: Table::new(),
        }
    }

    fn string(&mut self, s: &str) -> i32 {
        i32::try_from(self.strings.index(s)).expect("fewer than 2^31 strings")
    }

    fn value_type(&mut self, v: ValueType) -> pb::ValueType {
        pb::ValueType {
            type_strindex: self.string(v.name),
            unit_strindex: self.string(v.unit),
        }
    }

    fn location(&mut self, frame_id: u32, frame: &Frame) -> i32 {
        if let Some(&i) = self.locations.index.get(&frame_id) {
            return i;
        }
        let mapping_index = if frame.module.is_empty() {
            0
        } else {
            let name = self.string(&frame.module);
            self.mappings.get_or_insert(name, || pb::Mapping {
                filename_strindex: name,
                ..Default::default()
            })
        };
        let name = self.string(&frame.function);
        let file = frame.file.as_deref().map_or(0, |f| self.string(f));
        let function_index = self.functions.get_or_insert((name, file), || pb::Function {
            name_strindex: name,
            filename_strindex: file,
            ..Default::default()
        });
        let line = pb::Line {
            function_index,
            line: frame.line.map_or(0, i64::from),
            column: 0,
        };
        self.locations.get_or_insert(frame_id, || pb::Location {
            mapping_index,
            lines: vec![line],
            ..Default::default()
        })
    }

    fn int_attribute(&mut self, key: &str, value: i64) -> i32 {
        let key_strindex = self.string(key);
        self.attributes
            .get_or_insert((key_strindex, value), || pb::KeyValueAndUnit {
                key_strindex,
                value: Some(AnyValue {
                    value: Some(any_value::Value::IntValue(value)),
                }),
                unit_strindex: 0,
            })
    }

    fn into_proto(self) -> pb::ProfilesDictionary {
        pb::ProfilesDictionary {
            mapping_table: self.mappings.rows,
            location_table: self.locations.rows,
            function_table: self.functions.rows,
            link_table: vec![pb::Link::default()],
            string_table: self.strings.into_strings(),
            attribute_table: self.attributes.rows,
            stack_table: self.stacks.rows,
        }
    }
}

fn resource_proto(resource: &Resource) -> PbResource {
    PbResource {
        attributes: resource
            .attributes()
            .into_iter()
            .map(|(key, value)| KeyValue {
                key,
                value: Some(AnyValue {
                    value: Some(match value {
                        AttributeValue::Text(s) => any_value::Value::StringValue(s),
                        AttributeValue::Int(i) => any_value::Value::IntValue(i),
                    }),
                }),
                key_strindex: 0,
            })
            .collect(),
        ..Default::default()
    }
}

/// The request for one period of one process.
pub fn request(period: &PeriodProfiles, resource: &Resource) -> ExportProfilesServiceRequest {
    let mut dict = Dictionary::new();
    let mut profiles = Vec::new();
    for (profile_type, samples) in period.present() {
        // The stacks of this type, as stack table indices, once for all its value types.
        let stacks: Vec<(i32, &[i64])> = samples
            .stacks()
            .map(|s| {
                // OTLP's stacks are leaf first.
                let locations: Vec<i32> = s
                    .frames
                    .iter()
                    .rev()
                    .map(|&f| dict.location(f, &period.frames()[f as usize]))
                    .collect();
                let index = dict.stacks.get_or_insert(locations.clone(), || pb::Stack {
                    location_indices: locations,
                });
                (index, s.values.as_slice())
            })
            .collect();
        let mut attribute_indices = match samples.over_limit_samples() {
            0 => Vec::new(),
            n => vec![dict.int_attribute(OVER_LIMIT_ATTRIBUTE, saturating_i64(n))],
        };
        for (name, value) in period.counters() {
            attribute_indices.push(dict.int_attribute(name, saturating_i64(value)));
        }
        let period_type = samples.period().map(|p| dict.value_type(p.value_type));
        let every = samples.period().map_or(0, |p| p.every);
        for (i, value_type) in profile_type.value_types().iter().enumerate() {
            profiles.push(pb::Profile {
                sample_type: Some(dict.value_type(*value_type)),
                samples: stacks
                    .iter()
                    .map(|(stack_index, values)| pb::Sample {
                        stack_index: *stack_index,
                        values: vec![values[i]],
                        ..Default::default()
                    })
                    .collect(),
                time_unix_nano: period.start_unix_nano(),
                duration_nano: period.duration_nano(),
                period_type,
                period: every,
                attribute_indices: attribute_indices.clone(),
                ..Default::default()
            });
        }
    }
    ExportProfilesServiceRequest {
        resource_profiles: vec![pb::ResourceProfiles {
            resource: Some(resource_proto(resource)),
            scope_profiles: vec![pb::ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: SCOPE_NAME.to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dict.into_proto()),
    }
}

/// The request's protobuf bytes.
pub fn encode(period: &PeriodProfiles, resource: &Resource) -> Vec<u8> {
    request(period, resource).encode_to_vec()
}

/// What an OTLP response body says: `None` for a full success, else the rejected count and
/// the message of its `partial_success`.
pub fn partial_success(body: &[u8]) -> Result<Option<(i64, String)>, prost::DecodeError> {
    let response = ExportProfilesServiceResponse::decode(body)?;
    Ok(response.partial_success.and_then(|p| {
        (p.rejected_profiles != 0 || !p.error_message.is_empty())
            .then_some((p.rejected_profiles, p.error_message))
    }))
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::period::ProfileType;

    fn resource() -> Resource {
        Resource {
            service_name: "shop".into(),
            service_version: Some("1.2.3".into()),
            host_name: "host".into(),
            process_pid: 7,
            executable_name: "dotnet".into(),
            runtime_name: ".NET".into(),
            runtime_version: "8.0.4".into(),
            container_id: None,
            labels: vec![("env".into(), "test".into())],
        }
    }

    fn period() -> PeriodProfiles {
        let main = Frame::new("App.Main()", "App.dll").at("Program.cs", 10);
        let work = Frame::new("App.Work()", "App.dll");
        let alloc = Frame::new("System.String.Concat()", "System.Private.CoreLib.dll");
        let mut p = PeriodProfiles::new(1_000, 2_000, 8);
        p.set_period(ProfileType::Cpu, ProfileType::Cpu.period(10_000_000));
        p.add(ProfileType::Cpu, &[main.clone(), work.clone()], &[30])
            .unwrap();
        p.add(ProfileType::Cpu, std::slice::from_ref(&main), &[10])
            .unwrap();
        p.add(ProfileType::Allocations, &[main, work, alloc], &[4096, 3])
            .unwrap();
        p
    }

    fn string(d: &pb::ProfilesDictionary, i: i32) -> &str {
        &d.string_table[i as usize]
    }

    /// The function names of a stack, root first.
    fn names(d: &pb::ProfilesDictionary, stack_index: i32) -> Vec<String> {
        d.stack_table[stack_index as usize]
            .location_indices
            .iter()
            .rev()
            .map(|&l| {
                let f = d.location_table[l as usize].lines[0].function_index;
                string(d, d.function_table[f as usize].name_strindex).to_string()
            })
            .collect()
    }

    #[test]
    fn one_profile_per_value_type_with_shared_deduplicated_tables() {
        let request = request(&period(), &resource());
        let decoded = ExportProfilesServiceRequest::decode(&request.encode_to_vec()[..]).unwrap();
        assert_eq!(decoded, request);
        let d = request.dictionary.as_ref().unwrap();
        let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
        let types: Vec<(&str, &str)> = profiles
            .iter()
            .map(|p| {
                let t = p.sample_type.unwrap();
                (string(d, t.type_strindex), string(d, t.unit_strindex))
            })
            .collect();
        assert_eq!(
            types,
            [
                ("cpu", "nanoseconds"),
                ("alloc_space", "bytes"),
                ("alloc_objects", "count")
            ]
        );
        let cpu = &profiles[0];
        assert_eq!((cpu.time_unix_nano, cpu.duration_nano), (1_000, 2_000));
        assert_eq!(cpu.period, 10_000_000);
        assert_eq!(string(d, cpu.period_type.unwrap().type_strindex), "cpu");
        let cpu_samples: Vec<(Vec<String>, Vec<i64>)> = cpu
            .samples
            .iter()
            .map(|s| (names(d, s.stack_index), s.values.clone()))
            .collect();
        assert_eq!(
            cpu_samples,
            [
                (vec!["App.Main()".into(), "App.Work()".into()], vec![30]),
                (vec!["App.Main()".into()], vec![10]),
            ]
        );
        assert_eq!(profiles[1].samples[0].values, [4096]);
        assert_eq!(profiles[2].samples[0].values, [3]);
        assert_eq!(
            profiles[1].samples[0].stack_index,
            profiles[2].samples[0].stack_index
        );
        assert_eq!(profiles[1].period, 0);
        assert_eq!(profiles[1].period_type, None);

        // Entry 0 of every table is the zero value, and nothing is there twice.
        assert_eq!(d.string_table[0], "");
        assert_eq!(d.mapping_table[0], pb::Mapping::default());
        assert_eq!(d.location_table[0], pb::Location::default());
        assert_eq!(d.function_table[0], pb::Function::default());
        assert_eq!(d.stack_table[0], pb::Stack::default());
        assert_eq!(d.link_table, [pb::Link::default()]);
        assert_eq!(d.attribute_table, [pb::KeyValueAndUnit::default()]);
        let unique = |v: &Vec<String>| {
            let mut s = v.clone();
            s.sort();
            s.dedup();
            s.len() == v.len()
        };
        assert!(unique(&d.string_table));
        assert_eq!(d.mapping_table.len(), 3, "App.dll and CoreLib");
        assert_eq!(d.function_table.len(), 4);
        assert_eq!(d.location_table.len(), 4);
        assert_eq!(d.stack_table.len(), 4);
        // Module as mapping, file and line as line.
        let main_location = &d.location_table[d.stack_table[2].location_indices[0] as usize];
        assert_eq!(
            string(
                d,
                d.mapping_table[main_location.mapping_index as usize].filename_strindex
            ),
            "App.dll"
        );
        assert_eq!(main_location.lines[0].line, 10);
        let main_function = &d.function_table[main_location.lines[0].function_index as usize];
        assert_eq!(string(d, main_function.filename_strindex), "Program.cs");

        // Every resource attribute, in order (which they are is `resource.rs`'s to test).
        let r = request.resource_profiles[0].resource.as_ref().unwrap();
        let keys: Vec<String> = r.attributes.iter().map(|a| a.key.clone()).collect();
        let expected: Vec<String> = resource()
            .attributes()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(keys.len(), 8);
    }

    #[test]
    fn samples_over_the_limit_are_a_stack_and_an_attribute() {
        let mut p = PeriodProfiles::new(0, 1, 1);
        p.add(ProfileType::Exceptions, &[Frame::new("A", "a.dll")], &[1])
            .unwrap();
        p.add(ProfileType::Exceptions, &[Frame::new("B", "a.dll")], &[2])
            .unwrap();
        p.add(ProfileType::Exceptions, &[Frame::new("C", "a.dll")], &[4])
            .unwrap();
        let request = request(&p, &resource());
        let d = request.dictionary.as_ref().unwrap();
        let profile = &request.resource_profiles[0].scope_profiles[0].profiles[0];
        let samples: Vec<(Vec<String>, i64)> = profile
            .samples
            .iter()
            .map(|s| (names(d, s.stack_index), s.values[0]))
            .collect();
        assert_eq!(
            samples,
            [
                (vec!["A".to_string()], 1),
                (vec![crate::period::OVER_LIMIT_FUNCTION.to_string()], 6)
            ]
        );
        let over_limit_location = &d.location_table
            [d.stack_table[profile.samples[1].stack_index as usize].location_indices[0] as usize];
        assert_eq!(over_limit_location.mapping_index, 0, "no module");
        assert_eq!(profile.attribute_indices, [1]);
        let attribute = &d.attribute_table[1];
        assert_eq!(string(d, attribute.key_strindex), OVER_LIMIT_ATTRIBUTE);
        assert_eq!(
            attribute.value.as_ref().unwrap().value,
            Some(any_value::Value::IntValue(2))
        );
    }

    #[test]
    fn the_period_s_counters_ride_on_every_profile() {
        let mut p = PeriodProfiles::new(0, 1, 8);
        p.add(ProfileType::Lock, &[Frame::new("A", "a.dll")], &[5, 1])
            .unwrap();
        p.set_counter("clrprof.periods_dropped", 3);
        p.set_counter("clrprof.nothing_lost", 0);
        let request = request(&p, &resource());
        let d = request.dictionary.as_ref().unwrap();
        let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
        assert_eq!(profiles.len(), 2);
        for profile in profiles {
            assert_eq!(profile.attribute_indices, [1]);
        }
        let attribute = &d.attribute_table[1];
        assert_eq!(string(d, attribute.key_strindex), "clrprof.periods_dropped");
        assert_eq!(
            attribute.value.as_ref().unwrap().value,
            Some(any_value::Value::IntValue(3))
        );
    }

    #[test]
    fn partial_success_is_read_from_the_response() {
        use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesPartialSuccess;
        assert_eq!(partial_success(&[]).unwrap(), None);
        let body = ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: 2,
                error_message: "bad".into(),
            }),
        }
        .encode_to_vec();
        assert_eq!(partial_success(&body).unwrap(), Some((2, "bad".into())));
        assert!(partial_success(&[0xff, 0xff]).is_err());
    }
}
