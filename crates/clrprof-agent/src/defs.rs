//! Names: a definition record is written the first time each id is seen.
//!
//! Events and samples carry runtime ids (FunctionID, ClassID, ModuleID...). The first time an
//! id shows up, the agent looks up its name through the SDK's [`Namer`] and writes a
//! definition record; the report resolves ids against them. Lookups happen on normal callback
//! threads and on the sampler thread, never in enter/leave hooks or under a runtime suspension.
//!
//! The namer is also told of every class the runtime loads (`ClassLoadFinished`, asked for in
//! every mode): the canonical classes among them (`Two<int, __Canon>`) are how shared
//! generic code gets its class in its name.
//!
//! # Ids the runtime reuses
//!
//! A FunctionID, ModuleID or ClassID is the address of a runtime structure, which the runtime
//! frees and may hand out again for something else once the thing is gone:
//!
//! - a **dynamic method** (`DynamicMethod`: compiled expressions and regular expressions,
//!   serializers) is collected with its last reference: `DynamicMethodUnloaded`;
//! - a **module** of a collectible assembly (`AssemblyLoadContext` unloaded) goes with it, and
//!   the **functions** defined in it: `ModuleUnloadStarted`;
//! - a **class** of a collectible assembly: `ClassUnloadStarted`.
//!
//! Functions and modules carry their lifetime in the trace: the id written is the runtime's
//! id for its first life and, after the runtime said the thing is gone, the runtime's id with
//! the number of earlier lives above bit [`LIFE_SHIFT`] (runtime ids are user-space addresses,
//! below 2^48). A reused id is defined again under its new trace id, with its new name, and
//! the frames and events of the earlier life keep the earlier name. What is cached under the
//! runtime id (the namer's names, the sampler's code ranges and frames) is dropped at the
//! unload callback. Classes keep their runtime id: their cached names are dropped
//! (`ClassUnloadStarted`) so a reused ClassID is named again, but records written before the
//! reuse and after it share the id.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use clrprof_sdk::{
    AppDomainId, AssemblyId, ClassId, FunctionId, ModuleId, Namer, ProfilerInfo, Token,
};
use clrprof_trace::{
    AppDomainDef, AssemblyDef, ClassDef, FunctionDef, ModuleDef, NativeTargetDef, Record,
};
use rustc_hash::FxHashMap;

use crate::transport::Transport;

/// Where a trace id keeps the number of earlier lives of its runtime id.
pub const LIFE_SHIFT: u32 = 48;
/// The runtime id's bits of a trace id.
pub const RUNTIME_ID_MASK: u64 = (1 << LIFE_SHIFT) - 1;

/// Ends of a runtime id's lives remembered with their time, for naming samples taken before
/// the latest ends but resolved after them.
const ENDS_KEPT: usize = 4;

/// The ended lives of one runtime id.
#[derive(Default, Clone, Copy)]
struct Ended {
    /// How many lives ended.
    count: u64,
    /// `CLOCK_MONOTONIC` of the latest ends, newest last (`count.min(ENDS_KEPT)` of them).
    at: [u64; ENDS_KEPT],
}

/// The lives of the runtime ids of one kind whose thing the runtime said is gone.
#[derive(Default)]
struct Lives {
    /// Whether any id ended yet (until then every trace id is the runtime id, lock-free).
    any: AtomicBool,
    /// Runtime id -> its ended lives.
    ended: Mutex<FxHashMap<usize, Ended>>,
}

impl Lives {
    /// The trace id of `raw`'s current life.
    fn id(&self, raw: usize) -> u64 {
        self.id_at(raw, u64::MAX)
    }

    /// The trace id of the life `raw` had at `CLOCK_MONOTONIC` time `ts` (as far as the
    /// latest [`ENDS_KEPT`] ends tell).
    fn id_at(&self, raw: usize, ts: u64) -> u64 {
        if raw == 0 || !self.any.load(Ordering::Acquire) {
            return raw as u64;
        }
        let Some(e) = lock(&self.ended).get(&raw).copied() else {
            return raw as u64;
        };
        let kept = (e.count as usize).min(ENDS_KEPT);
        let later = e.at[..kept].iter().filter(|&&end| end > ts).count() as u64;
        raw as u64 | (((e.count - later) & LIFE_MASK) << LIFE_SHIFT)
    }

    /// Ends `raw`'s current life at time `ts`; returns its trace id.
    fn end(&self, raw: usize, ts: u64) -> u64 {
        let mut ended = lock(&self.ended);
        self.any.store(true, Ordering::Release);
        let e = ended.entry(raw).or_default();
        let id = raw as u64 | ((e.count & LIFE_MASK) << LIFE_SHIFT);
        let kept = (e.count as usize).min(ENDS_KEPT);
        if kept == ENDS_KEPT {
            e.at.rotate_left(1);
            e.at[ENDS_KEPT - 1] = ts;
        } else {
            e.at[kept] = ts;
        }
        e.count += 1;
        id
    }
}

/// The bits of a life count a trace id holds.
const LIFE_MASK: u64 = (1 << (64 - LIFE_SHIFT)) - 1;

/// The runtime id of a trace id.
pub fn runtime_id(trace_id: u64) -> usize {
    (trace_id & RUNTIME_ID_MASK) as usize
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ids already defined, per kind.
#[derive(Default)]
pub struct Definitions {
    namer: Namer,
    /// Functions defined, by trace id, with their module's runtime id.
    functions: Mutex<FxHashMap<u64, usize>>,
    function_lives: Lives,
    classes: Mutex<HashSet<usize>>,
    /// Modules defined, by trace id.
    modules: Mutex<HashSet<u64>>,
    module_lives: Lives,
    assemblies: Mutex<HashSet<usize>>,
    app_domains: Mutex<HashSet<usize>>,
}

/// Marks `id` as seen; true if it was new.
fn first_time(set: &Mutex<HashSet<usize>>, id: usize) -> bool {
    id != 0 && lock(set).insert(id)
}

/// `mdPinvokeImpl`: the method is implemented in native code through P/Invoke.
const MD_PINVOKE_IMPL: u32 = 0x2000;

impl Definitions {
    /// The namer behind the definitions (its caches are shared).
    pub fn namer(&self) -> &Namer {
        &self.namer
    }

    /// The trace id of `function`'s current life (see the module documentation).
    pub fn function_id(&self, function: FunctionId) -> u64 {
        self.function_lives.id(function.0)
    }

    /// The trace id of the life `function` had at `CLOCK_MONOTONIC` time `ts`.
    pub fn function_id_at(&self, function: FunctionId, ts: u64) -> u64 {
        self.function_lives.id_at(function.0, ts)
    }

    /// The trace id of `module`'s current life.
    pub fn module_id(&self, module: ModuleId) -> u64 {
        self.module_lives.id(module.0)
    }

    /// Whether the life of `function` whose trace id is `id` was its life at `CLOCK_MONOTONIC`
    /// time `ts` and has ended since: code of it captured then is named by that life, even
    /// though its addresses may hold other code now.
    pub fn ended_after(&self, id: u64, ts: u64) -> bool {
        let raw = runtime_id(id);
        self.function_lives.id_at(raw, ts) == id && self.function_lives.id(raw) != id
    }

    /// Whether the life `function` had at `CLOCK_MONOTONIC` time `ts` has ended since (the
    /// runtime said it was gone): [`Definitions::ended_after`] of that life.
    pub fn life_at_ended(&self, function: FunctionId, ts: u64) -> bool {
        self.function_lives.id_at(function.0, ts) != self.function_lives.id(function.0)
    }

    /// Defines a function (and its module) if not done yet; returns its trace id.
    pub fn function(&self, info: &ProfilerInfo, out: &Transport, function: FunctionId) -> u64 {
        let id = self.function_id(function);
        self.define_function(info, out, id);
        id
    }

    /// [`Definitions::function`] for code seen at `CLOCK_MONOTONIC` time `ts` (a sample
    /// resolved later): the life the function had then, which is an earlier one if the
    /// runtime said it was gone since.
    pub fn function_seen_at(
        &self,
        info: &ProfilerInfo,
        out: &Transport,
        function: FunctionId,
        ts: u64,
    ) -> u64 {
        let id = self.function_id_at(function, ts);
        self.define_function(info, out, id);
        id
    }

    /// Defines the function of trace id `id` if not done yet (for paths of trace ids).
    pub fn define_function(&self, info: &ProfilerInfo, out: &Transport, id: u64) {
        let function = FunctionId(runtime_id(id));
        if function.is_null() || lock(&self.functions).contains_key(&id) {
            return;
        }
        if self.function_id(function) != id {
            // An earlier life, first seen after it ended: the runtime would name what
            // replaced it.
            lock(&self.functions).insert(id, 0);
            out.push_record(&Record::FunctionDef(FunctionDef {
                id,
                type_name: "[unloaded]".into(),
                method_name: format!("{function}"),
                ..FunctionDef::default()
            }));
            return;
        }
        // Methods without metadata (dynamic methods, IL stubs) are named from what the
        // runtime tells of them; their token is 0.
        let name = self
            .namer
            .get_function_name(info, function)
            .or_else(|_| self.namer.get_dynamic_function_name(info, function));
        let def = match name {
            Ok(name) => {
                let module = self.module(info, out, name.module);
                if name.token.0 != 0
                    && let Some(target) = self.native_target(info, id, name.module, name.token)
                {
                    out.push_record(&Record::NativeTargetDef(target));
                }
                lock(&self.functions).insert(id, name.module.0);
                FunctionDef {
                    id,
                    class: name.class.as_u64(),
                    module,
                    token: name.token.0,
                    type_name: name.type_name,
                    method_name: name.method_name,
                    signature: name.signature,
                }
            }
            Err(_) => {
                lock(&self.functions).insert(id, 0);
                FunctionDef {
                    id,
                    type_name: "[unknown]".into(),
                    method_name: format!("{function}"),
                    ..FunctionDef::default()
                }
            }
        };
        out.push_record(&Record::FunctionDef(def));
    }

    /// The runtime says `function` is gone (`DynamicMethodUnloaded`) at `CLOCK_MONOTONIC`
    /// time `ts`: its id's next use is a new life. The ended life stays defined (samples of
    /// it may still be written). Returns the trace id of the life that ended.
    pub fn forget_function(&self, function: FunctionId, ts: u64) -> u64 {
        self.namer.forget_function(function);
        self.function_lives.end(function.0, ts)
    }

    /// The runtime says `module` is going (`ModuleUnloadStarted`) at time `ts`: it and the
    /// functions defined in it start new lives at their next use. Returns the runtime ids of
    /// those functions (the sampler drops what it knows of their code).
    pub fn forget_module(&self, module: ModuleId, ts: u64) -> Vec<FunctionId> {
        self.namer.forget_module(module);
        let gone: Vec<FunctionId> = lock(&self.functions)
            .iter()
            .filter(|&(&id, &m)| {
                m == module.0 && m != 0 && self.function_lives.id(runtime_id(id)) == id
            })
            .map(|(&id, _)| FunctionId(runtime_id(id)))
            .collect();
        for &f in &gone {
            self.forget_function(f, ts);
        }
        self.module_lives.end(module.0, ts);
        gone
    }

    /// Where a P/Invoke method goes (`None` for other methods).
    fn native_target(
        &self,
        info: &ProfilerInfo,
        function: u64,
        module: ModuleId,
        method: Token,
    ) -> Option<NativeTargetDef> {
        let import = self.namer.metadata(info, module).ok()??;
        let props = import.get_method_props(method).ok()?;
        if props.attributes & MD_PINVOKE_IMPL == 0 {
            return None;
        }
        let map = import.get_pinvoke_map(method).ok()??;
        Some(NativeTargetDef {
            function,
            library: import
                .get_module_ref_props(map.module_ref)
                .unwrap_or_default(),
            entry_point: map.entry_point,
        })
    }

    /// Defines a class (and its module) if not done yet.
    pub fn class(&self, info: &ProfilerInfo, out: &Transport, class: ClassId) {
        if !first_time(&self.classes, class.0) {
            return;
        }
        let name = self
            .namer
            .get_class_name(info, class)
            .unwrap_or_else(|_| format!("[class {class}]"));
        let (module, token) = info
            .get_class_id_info(class)
            .map(|c| (c.module, c.token))
            .unwrap_or_default();
        let module = self.module(info, out, module);
        out.push_record(&Record::ClassDef(ClassDef {
            id: class.as_u64(),
            module,
            token: token.0,
            name,
        }));
    }

    /// The runtime says `class` is going (`ClassUnloadStarted`): its name is looked up and
    /// defined again if the ClassID comes back.
    pub fn forget_class(&self, class: ClassId) {
        self.namer.forget_class(class);
        lock(&self.classes).remove(&class.0);
    }

    /// Defines a module (and its assembly) if not done yet; returns its trace id.
    pub fn module(&self, info: &ProfilerInfo, out: &Transport, module: ModuleId) -> u64 {
        let id = self.module_id(module);
        if module.is_null() || !lock(&self.modules).insert(id) {
            return id;
        }
        let Ok(m) = info.get_module_info(module) else {
            out.push_record(&Record::ModuleDef(ModuleDef {
                id,
                ..ModuleDef::default()
            }));
            return id;
        };
        // The assembly's name: read when defining the assembly, else asked for here.
        let assembly_name = self
            .define_assembly(info, out, m.assembly)
            .or_else(|| info.get_assembly_info(m.assembly).ok().map(|a| a.name))
            .unwrap_or_default();
        out.push_record(&Record::ModuleDef(ModuleDef {
            id,
            assembly: m.assembly.as_u64(),
            base_address: m.base_address as u64,
            path: m.name,
            assembly_name,
        }));
        id
    }

    /// Defines an assembly (and its app domain) if not done yet.
    pub fn assembly(&self, info: &ProfilerInfo, out: &Transport, assembly: AssemblyId) {
        self.define_assembly(info, out, assembly);
    }

    /// [`Definitions::assembly`], returning the assembly's name if it was defined now.
    fn define_assembly(
        &self,
        info: &ProfilerInfo,
        out: &Transport,
        assembly: AssemblyId,
    ) -> Option<String> {
        if !first_time(&self.assemblies, assembly.0) {
            return None;
        }
        let a = info.get_assembly_info(assembly).ok()?;
        self.app_domain(info, out, a.app_domain);
        out.push_record(&Record::AssemblyDef(AssemblyDef {
            id: assembly.as_u64(),
            app_domain: a.app_domain.as_u64(),
            name: a.name.clone(),
        }));
        Some(a.name)
    }

    /// Defines an app domain if not done yet.
    pub fn app_domain(&self, info: &ProfilerInfo, out: &Transport, app_domain: AppDomainId) {
        if !first_time(&self.app_domains, app_domain.0) {
            return;
        }
        let name = info
            .get_app_domain_info(app_domain)
            .map(|d| d.name)
            .unwrap_or_default();
        out.push_record(&Record::AppDomainDef(AppDomainDef {
            id: app_domain.as_u64(),
            name,
        }));
    }
}
