//! Reading the OTLP profiles requests the tests receive, decoded with the official generated
//! messages of `opentelemetry-proto`.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;

/// `attributes` (a resource's) as key and value strings, in order. A key or a string value
/// may be sent inline or by reference to the request dictionary's `strings` (`key_strindex`,
/// `string_value_strindex`: how the Collector forwards them); integers are written out.
///
/// # Panics
/// On a value of any other kind.
pub fn otlp_attributes(strings: &[String], attributes: &[KeyValue]) -> Vec<(String, String)> {
    let string = |i: i32| strings[i as usize].clone();
    attributes
        .iter()
        .map(|a| {
            let key = if a.key.is_empty() {
                string(a.key_strindex)
            } else {
                a.key.clone()
            };
            let value = match a.value.as_ref().and_then(|v| v.value.clone()) {
                Some(Value::StringValue(v)) => v,
                Some(Value::StringValueStrindex(i)) => string(i),
                Some(Value::IntValue(i)) => i.to_string(),
                other => panic!("{key}: unexpected value {other:?}"),
            };
            (key, value)
        })
        .collect()
}
