//! Work the runtime does on the program's threads only because the profiler asked it for
//! events: the profiler's cost, kept out of the program's figures.
//!
//! On .NET 5 and later the runtime's event provider has a managed mirror,
//! `NativeRuntimeEventSource`, created at startup whether or not anyone listens. When an
//! EventPipe session on that provider exists as it is created (the agent's in-process session
//! for `--alloc ticks` or `--contention`, started in `Initialize`), its constructor runs the
//! session's enable command right there: `EventSource.DoCommand` builds the source's whole
//! event manifest by reflection (measured on .NET 8.0.4: about 1 MB allocated, 20-40 ms of
//! CPU, on the main thread, before `Main`). Without a session the constructor does none of it.
//! A stack that passes through `DoCommand` called from that constructor is such work.

use std::collections::{HashMap, HashSet};

use clrprof_trace::{FrameKind, StackDef};

use crate::names::Names;

/// The constructor of the runtime provider's managed mirror (type, method).
const MIRROR_CONSTRUCTOR: (&str, &str) = (
    "System.Diagnostics.Tracing.NativeRuntimeEventSource",
    ".ctor",
);
/// Where an event source carries out a session's enable command.
const ENABLE_COMMAND: (&str, &str) = ("System.Diagnostics.Tracing.EventSource", "DoCommand");

/// What a stack has passed through, root first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Nothing,
    /// The mirror's constructor.
    Constructor,
    /// The enable command, called from the constructor: induced work.
    Induced,
}

/// Which of a trace's stacks are work the profiler induced (see the module's documentation).
pub(crate) fn induced_stacks(names: &Names, defs: &HashMap<u32, StackDef>) -> HashSet<u32> {
    let mut role_of: HashMap<u64, Seen> = HashMap::new();
    let mut role = |function: u64| -> Seen {
        *role_of.entry(function).or_insert_with(|| {
            let Some(f) = names.functions.get(&function) else {
                return Seen::Nothing;
            };
            match (f.type_name.as_str(), f.method_name.as_str()) {
                MIRROR_CONSTRUCTOR => Seen::Constructor,
                ENABLE_COMMAND => Seen::Induced,
                _ => Seen::Nothing,
            }
        })
    };
    let mut seen: HashMap<u32, Seen> = HashMap::with_capacity(defs.len());
    let mut chain: Vec<u32> = Vec::new();
    for &id in defs.keys() {
        // The nodes from `id` up to the first one already known (or the root), then each
        // from the root down.
        chain.clear();
        let mut cur = id;
        let mut above = Seen::Nothing;
        while cur != 0 {
            if let Some(&s) = seen.get(&cur) {
                above = s;
                break;
            }
            let Some(def) = defs.get(&cur) else {
                break;
            };
            chain.push(cur);
            cur = def.parent;
            if chain.len() > defs.len() {
                break; // a cycle in a damaged trace
            }
        }
        for &node in chain.iter().rev() {
            let def = &defs[&node];
            above = match (above, def.frame_kind) {
                (Seen::Induced, _) => Seen::Induced,
                (state, FrameKind::Managed) => match (state, role(def.frame)) {
                    (_, Seen::Constructor) => Seen::Constructor,
                    (Seen::Constructor, Seen::Induced) => Seen::Induced,
                    (state, _) => state,
                },
                (state, _) => state,
            };
            seen.insert(node, above);
        }
    }
    seen.into_iter()
        .filter(|&(_, s)| s == Seen::Induced)
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use clrprof_trace::FunctionDef;

    use super::*;

    fn names(functions: &[(u64, &str, &str)]) -> Names {
        let mut names = Names::default();
        for &(id, class, method) in functions {
            names.functions.insert(
                id,
                FunctionDef {
                    id,
                    type_name: class.into(),
                    method_name: method.into(),
                    ..Default::default()
                },
            );
        }
        names
    }

    fn stacks(nodes: &[(u32, u32, u64)]) -> HashMap<u32, StackDef> {
        nodes
            .iter()
            .map(|&(id, parent, frame)| {
                (
                    id,
                    StackDef {
                        id,
                        parent,
                        frame_kind: FrameKind::Managed,
                        frame,
                        il: Default::default(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_enable_command_under_the_mirrors_constructor_is_induced() {
        let names = names(&[
            (1, "System.StartupHookProvider", "ManagedStartup"),
            (
                2,
                "System.Diagnostics.Tracing.NativeRuntimeEventSource",
                ".ctor",
            ),
            (3, "System.Diagnostics.Tracing.EventSource", "DoCommand"),
            (
                4,
                "System.Diagnostics.Tracing.EventSource",
                "AddEventDescriptor",
            ),
            (5, "App.Program", "Main"),
        ]);
        let defs = stacks(&[
            (1, 0, 1),
            (2, 1, 2),
            (3, 2, 3),
            (4, 3, 4),
            // The constructor's own work before the command is the program's.
            (5, 2, 4),
            // A command the program's own listener sends is the program's.
            (6, 0, 5),
            (7, 6, 3),
            (8, 7, 4),
        ]);
        let induced = induced_stacks(&names, &defs);
        let mut found: Vec<u32> = induced.into_iter().collect();
        found.sort_unstable();
        assert_eq!(found, [3, 4]);
    }
}
