//! Names: a definition record is written the first time each id is seen.
//!
//! Events and samples carry bare runtime ids (FunctionID, ClassID, ModuleID...). The first
//! time an id shows up, the agent looks up its name through the SDK's [`Namer`] and writes a
//! definition record; the report resolves ids against them. Lookups happen on normal callback
//! threads and on the sampler thread, never in enter/leave hooks or under a runtime suspension.
//!
//! The namer is also told of every class the runtime loads (`ClassLoadFinished`, asked for in
//! every mode): the canonical classes among them (`Two<int, __Canon>`) are how shared
//! generic code gets its class in its name. `ClassUnloadStarted` drops what it keeps of a
//! class, whose ClassID the runtime can reuse.

use std::collections::HashSet;
use std::sync::Mutex;

use clrprof_sdk::{
    AppDomainId, AssemblyId, ClassId, FunctionId, ModuleId, Namer, ProfilerInfo, Token,
};
use clrprof_trace::{
    AppDomainDef, AssemblyDef, ClassDef, FunctionDef, ModuleDef, NativeTargetDef, Record,
};

use crate::transport::Transport;

/// The ids already defined, per kind.
#[derive(Default)]
pub struct Definitions {
    namer: Namer,
    functions: Mutex<HashSet<usize>>,
    classes: Mutex<HashSet<usize>>,
    modules: Mutex<HashSet<usize>>,
    assemblies: Mutex<HashSet<usize>>,
    app_domains: Mutex<HashSet<usize>>,
}

/// Marks `id` as seen; true if it was new.
fn first_time(set: &Mutex<HashSet<usize>>, id: usize) -> bool {
    id != 0 && set.lock().unwrap_or_else(|e| e.into_inner()).insert(id)
}

/// `mdPinvokeImpl`: the method is implemented in native code through P/Invoke.
const MD_PINVOKE_IMPL: u32 = 0x2000;

impl Definitions {
    /// The namer behind the definitions (its caches are shared).
    pub fn namer(&self) -> &Namer {
        &self.namer
    }

    /// Defines a function (and its module) if not done yet.
    pub fn function(&self, info: &ProfilerInfo, out: &Transport, function: FunctionId) {
        if !first_time(&self.functions, function.0) {
            return;
        }
        let def = match self.namer.get_function_name(info, function) {
            Ok(name) => {
                self.module(info, out, name.module);
                if let Some(target) = self.native_target(info, function, name.module, name.token) {
                    out.push_record(&Record::NativeTargetDef(target));
                }
                FunctionDef {
                    id: function.as_u64(),
                    class: name.class.as_u64(),
                    module: name.module.as_u64(),
                    token: name.token.0,
                    type_name: name.type_name,
                    method_name: name.method_name,
                    signature: name.signature,
                }
            }
            // Methods without metadata (dynamic methods, IL stubs) still get a readable name.
            Err(_) => {
                let dynamic = info.get_dynamic_function_info(function).ok();
                let module = dynamic.as_ref().map(|d| d.module).unwrap_or_default();
                self.module(info, out, module);
                FunctionDef {
                    id: function.as_u64(),
                    module: module.as_u64(),
                    type_name: "[dynamic]".into(),
                    method_name: dynamic
                        .map(|d| d.name)
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| format!("{function}")),
                    ..FunctionDef::default()
                }
            }
        };
        out.push_record(&Record::FunctionDef(def));
    }

    /// Where a P/Invoke method goes (`None` for other methods).
    fn native_target(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
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
            function: function.as_u64(),
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
        self.module(info, out, module);
        out.push_record(&Record::ClassDef(ClassDef {
            id: class.as_u64(),
            module: module.as_u64(),
            token: token.0,
            name,
        }));
    }

    /// Defines a module (and its assembly) if not done yet.
    pub fn module(&self, info: &ProfilerInfo, out: &Transport, module: ModuleId) {
        if !first_time(&self.modules, module.0) {
            return;
        }
        let Ok(m) = info.get_module_info(module) else {
            out.push_record(&Record::ModuleDef(ModuleDef {
                id: module.as_u64(),
                ..ModuleDef::default()
            }));
            return;
        };
        // The assembly's name: read when defining the assembly, else asked for here.
        let assembly_name = self
            .define_assembly(info, out, m.assembly)
            .or_else(|| info.get_assembly_info(m.assembly).ok().map(|a| a.name))
            .unwrap_or_default();
        out.push_record(&Record::ModuleDef(ModuleDef {
            id: module.as_u64(),
            assembly: m.assembly.as_u64(),
            base_address: m.base_address as u64,
            path: m.name,
            assembly_name,
        }));
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
