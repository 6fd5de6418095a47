//! The tables a profile's samples refer to, built as samples are added: strings (entry 0 the
//! empty string, each string once), mappings by file name, functions and locations (ids from
//! 1). Both of clrprof's pprof writers (the report's output and Pyroscope's push) build
//! through it; each keeps its own index of the functions and locations it made, since they
//! key them differently.

use std::collections::HashMap;

use crate::{Function, Line, Location, Mapping, Profile, ValueType};

/// A profile's strings, numbered in the order they were first added, the empty string first
/// (index 0), each once: the string table of pprof and of OTLP's profiles alike.
#[derive(Debug, Clone)]
pub struct StringTable {
    strings: Vec<String>,
    index: HashMap<String, usize>,
}

impl Default for StringTable {
    fn default() -> Self {
        StringTable {
            strings: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
}

impl StringTable {
    /// The index of string `s`, added if new (the empty string is 0).
    pub fn index(&mut self, s: &str) -> usize {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len();
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }

    /// The strings, by index.
    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

/// A profile's strings, mappings, functions and locations.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    strings: StringTable,
    mappings: Vec<Mapping>,
    mapping_index: HashMap<String, u64>,
    functions: Vec<Function>,
    locations: Vec<Location>,
}

impl Tables {
    /// The index of string `s`, added if new (the empty string is 0).
    pub fn string(&mut self, s: &str) -> i64 {
        self.strings.index(s) as i64
    }

    /// A value type of `kind` (`cpu`, `alloc_space`, ...) in `unit`.
    pub fn value_type(&mut self, kind: &str, unit: &str) -> ValueType {
        ValueType {
            r#type: self.string(kind),
            unit: self.string(unit),
        }
    }

    /// The id of the mapping of module `file`, added if new; 0 (none) for an empty name.
    pub fn mapping(&mut self, file: &str) -> u64 {
        if file.is_empty() {
            return 0;
        }
        if let Some(&id) = self.mapping_index.get(file) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let filename = self.string(file);
        self.mappings.push(Mapping {
            id,
            filename,
            has_functions: true,
            ..Mapping::default()
        });
        self.mapping_index.insert(file.to_owned(), id);
        id
    }

    /// Adds a function named by string `name`, in source file string `filename` (0: none);
    /// its id.
    pub fn add_function(&mut self, name: i64, filename: i64) -> u64 {
        let id = self.functions.len() as u64 + 1;
        self.functions.push(Function {
            id,
            name,
            system_name: name,
            filename,
            ..Function::default()
        });
        id
    }

    /// The function of id `id` (one [`Self::add_function`] gave).
    pub fn function_mut(&mut self, id: u64) -> Option<&mut Function> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        self.functions.get_mut(i)
    }

    /// Adds a location of function `function_id` at source line `line` (0: unknown) in
    /// mapping `mapping_id` (0: none); its id.
    pub fn add_location(&mut self, function_id: u64, line: i64, mapping_id: u64) -> u64 {
        let id = self.locations.len() as u64 + 1;
        self.locations.push(Location {
            id,
            mapping_id,
            line: vec![Line {
                function_id,
                line,
                ..Line::default()
            }],
            ..Location::default()
        });
        id
    }

    /// Moves the tables into `profile`.
    pub fn fill(self, profile: &mut Profile) {
        profile.mapping = self.mappings;
        profile.location = self.locations;
        profile.function = self.functions;
        profile.string_table = self.strings.into_strings();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_mappings_functions_and_locations_are_numbered_once() {
        let mut t = Tables::default();
        assert_eq!(t.string(""), 0);
        let a = t.string("a");
        assert_eq!((a, t.string("a")), (1, 1));
        assert_eq!(t.mapping(""), 0);
        let m = t.mapping("libfoo.so");
        assert_eq!((m, t.mapping("libfoo.so")), (1, 1));
        let f = t.add_function(a, 0);
        assert_eq!(t.add_function(a, 0), 2, "functions are not merged here");
        t.function_mut(f).unwrap().filename = a;
        let l = t.add_location(f, 7, m);
        let ty = t.value_type("cpu", "nanoseconds");
        let mut p = Profile::default();
        t.fill(&mut p);
        assert_eq!(p.string_table, ["", "a", "libfoo.so", "cpu", "nanoseconds"]);
        assert_eq!((ty.r#type, ty.unit), (3, 4));
        assert_eq!(p.mapping[0].filename, 2);
        assert!(p.mapping[0].has_functions);
        assert_eq!(p.function[0].filename, a);
        assert_eq!(p.location[0].id, l);
        assert_eq!(p.location[0].line[0].line, 7);
        assert_eq!(p.location[0].mapping_id, m);
    }
}
