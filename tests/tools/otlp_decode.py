"""Reads OTLP profiles requests with the official generated messages of the OpenTelemetry
protos (PyPI's `opentelemetry-proto`, installed by `cargo xtask setup`), independently of the
Rust code that wrote them, and prints what they hold as one JSON object:

    {"unknown_fields": N,
     "resources": [{"key": "value", ...}, ...],
     "samples": [{"type": T, "unit": U, "frames": [root first], "modules": [...],
                  "value": V}, ...]}

`unknown_fields` counts the fields, anywhere in the messages, that the protos do not define (a
writer of another proto version would leave some). Usage: otlp_decode.py REQUEST...: each file
holds one `ExportProfilesServiceRequest`, protobuf, not compressed.
"""

import json
import sys

from google.protobuf import unknown_fields
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2


def count_unknown(message):
    n = len(unknown_fields.UnknownFieldSet(message))
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.is_repeated:
            n += sum(count_unknown(v) for v in value)
        else:
            n += count_unknown(value)
    return n


def any_value(value, strings):
    kind = value.WhichOneof("value")
    if kind == "string_value_strindex":
        return strings[value.string_value_strindex]
    if kind is None:
        return None
    return str(getattr(value, kind))


def read(request, out):
    d = request.dictionary
    strings = list(d.string_table)
    out["unknown_fields"] += count_unknown(request)
    for rp in request.resource_profiles:
        attributes = {}
        for a in rp.resource.attributes:
            key = a.key or strings[a.key_strindex]
            attributes[key] = any_value(a.value, strings)
        out["resources"].append(attributes)
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                sample_type = strings[p.sample_type.type_strindex]
                unit = strings[p.sample_type.unit_strindex]
                for s in p.samples:
                    stack = d.stack_table[s.stack_index]
                    locations = [d.location_table[i] for i in reversed(stack.location_indices)]
                    frames = [
                        strings[d.function_table[l.lines[0].function_index].name_strindex]
                        for l in locations
                    ]
                    modules = [
                        strings[d.mapping_table[l.mapping_index].filename_strindex]
                        for l in locations
                    ]
                    for v in s.values:
                        out["samples"].append(
                            {
                                "type": sample_type,
                                "unit": unit,
                                "frames": frames,
                                "modules": modules,
                                "value": v,
                            }
                        )


def main():
    out = {"unknown_fields": 0, "resources": [], "samples": []}
    for path in sys.argv[1:]:
        request = profiles_service_pb2.ExportProfilesServiceRequest()
        with open(path, "rb") as f:
            request.ParseFromString(f.read())
        read(request, out)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
