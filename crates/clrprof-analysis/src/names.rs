//! Every definition in a trace, by id, and the names made from them.

use std::collections::HashMap;

use clrprof_trace::{
    AssemblyDef, ClassDef, FunctionDef, ModuleDef, NativeFrameDef, NativeModuleDef,
    NativeTargetDef, ThreadDef,
};

use crate::file_names::file_name;

/// Every definition in a trace, by id.
#[derive(Debug, Default)]
pub struct Names {
    /// Functions by FunctionID.
    pub functions: HashMap<u64, FunctionDef>,
    /// Classes by ClassID.
    pub classes: HashMap<u64, ClassDef>,
    /// Modules by ModuleID.
    pub modules: HashMap<u64, ModuleDef>,
    /// Assemblies by AssemblyID.
    pub assemblies: HashMap<u64, AssemblyDef>,
    /// Threads by OS thread id (the latest definition wins).
    pub threads: HashMap<u32, ThreadDef>,
    /// Thread names by managed thread id: a name can be set before the thread has an OS
    /// thread (`new Thread { Name = .. }` before `Start`), so names are kept by managed id too.
    pub thread_names: HashMap<u64, String>,
    /// What the kernel calls a thread, by OS thread id (when it differs from the process's
    /// name: the runtime names its own threads there).
    pub thread_os_names: HashMap<u32, String>,
    /// Native frames by id (one per function: see [`Names::add_native`]).
    pub natives: HashMap<u64, NativeFrameDef>,
    /// The first frame id of each native function (library, symbol, and for a frame without
    /// a symbol its function's start).
    native_ids: HashMap<(String, String, u64), u64>,
    /// Later ids of a native function, to its first.
    native_aliases: HashMap<u64, u64>,
    /// Native modules by id (format 1.3).
    pub native_modules: HashMap<u64, NativeModuleDef>,
    /// Names that symbol files gave native frames the agent could not name, by frame id
    /// (see [`crate::native::name_frames`]).
    pub native_names: HashMap<u64, String>,
    /// App domain names by id.
    pub app_domains: HashMap<u64, String>,
    /// Where P/Invoke methods go, by FunctionID.
    pub native_targets: HashMap<u64, NativeTargetDef>,
    /// Distinct compiled bodies that the agent gave the same name (see
    /// [`Names::number_bodies`]): their number among their namesakes, by FunctionID.
    pub body_numbers: HashMap<u64, usize>,
    /// Functions in the order they were first defined.
    pub defined_order: HashMap<u64, usize>,
}

impl Names {
    /// A function's display name, `Type.Method(args)`, or its id in hex. A body that shares
    /// its name with other bodies of its module is numbered: `Two<A, B>.M(A, B) #2`.
    pub fn function(&self, id: u64) -> String {
        let name = match self.functions.get(&id) {
            Some(f) => Self::defined_name(f),
            None if id == 0 => return "[unknown]".into(),
            None => return format!("[function {id:#x}]"),
        };
        match self.body_numbers.get(&id) {
            Some(n) => format!("{name} #{n}"),
            None => name,
        }
    }

    /// `Type.Method(args)` as the definition spells it; the runtime's IL stubs by what they
    /// do: `[IL stub: P/Invoke marshalling](int, ref Timespec)`.
    fn defined_name(f: &FunctionDef) -> String {
        if let Some(kind) = il_stub_kind(f) {
            return format!("[IL stub: {kind}]{}", f.signature);
        }
        if f.type_name.is_empty() {
            format!("{}{}", f.method_name, f.signature)
        } else {
            format!("{}.{}{}", f.type_name, f.method_name, f.signature)
        }
    }

    /// Numbers the functions that are distinct compiled bodies but have the same name:
    /// different FunctionIDs of one loaded module (the same ModuleID) with the same name.
    /// The runtime gives each instantiation of a generic method and each method its own
    /// FunctionID, so such functions are different code that the names do not tell apart
    /// (shared generic code whose instantiation the agent was not told, e.g. after an
    /// attach), and merging them by name would add up unrelated counts. They are numbered
    /// `#1`, `#2`, ... in FunctionID order. Code generated at run time is numbered the same
    /// way, in the order it was first seen: a program that compiles twenty expressions gets
    /// twenty `lambda_method` bodies, which the runtime names alike. Call once all
    /// definitions are read.
    pub fn number_bodies(&mut self) {
        let mut by_name: HashMap<(u64, String), Vec<u64>> = HashMap::new();
        for (&id, f) in &self.functions {
            if f.module != 0 {
                by_name
                    .entry((f.module, Self::defined_name(f)))
                    .or_default()
                    .push(id);
            }
        }
        self.body_numbers.clear();
        for mut ids in by_name.into_values().filter(|ids| ids.len() > 1) {
            if self.is_generated(ids[0]) {
                ids.sort_unstable_by_key(|id| self.defined_order.get(id).copied());
            } else {
                ids.sort_unstable();
            }
            for (i, id) in ids.into_iter().enumerate() {
                self.body_numbers.insert(id, i + 1);
            }
        }
    }

    /// Adds a native frame's definition. A frame of a function defined before under another
    /// id (the same library and symbol, or, without a symbol, the same function start) is that
    /// frame: the agent gives an address in a module it has not read yet a frame of its own,
    /// and defines it once the module is read, so one function can come with several ids.
    pub fn add_native(&mut self, n: NativeFrameDef) {
        let start = if n.symbol.is_empty() { n.function } else { 0 };
        let key = (n.library.clone(), n.symbol.clone(), start);
        match self.native_ids.get(&key) {
            Some(&first) if first != n.id => {
                self.native_aliases.insert(n.id, first);
            }
            _ => {
                self.native_ids.insert(key, n.id);
                self.natives.insert(n.id, n);
            }
        }
    }

    /// The id a native frame is known by: its function's first.
    pub fn native_id(&self, id: u64) -> u64 {
        self.native_aliases.get(&id).copied().unwrap_or(id)
    }

    /// A native frame's name and module: its symbol (the agent's, else one a symbol file
    /// gave), else `library!+0x1f2a30` when the start of the function is known (a stripped
    /// library: the function's address as the module's ELF file numbers it), else `[library]`,
    /// else `[native code]` when not even the library is known.
    pub fn native_frame(&self, id: u64) -> (String, String) {
        let id = self.native_id(id);
        let Some(n) = self.natives.get(&id) else {
            return ("[native code]".to_string(), String::new());
        };
        let module = file_name(&n.library);
        let name = if !n.symbol.is_empty() {
            n.symbol.clone()
        } else if let Some(name) = self.native_names.get(&id) {
            name.clone()
        } else if n.library.is_empty() {
            return ("[native code]".to_string(), String::new());
        } else if n.function != 0 {
            format!("{module}!+{:#x}", n.function)
        } else {
            format!("[{module}]")
        };
        (name, module)
    }

    /// Where a P/Invoke method goes, `library!entry_point` (`libc!abs`), or the method's own
    /// name when the trace does not say (reverse P/Invoke targets).
    pub fn native_target(&self, function: u64) -> String {
        self.native_targets.get(&function).map_or_else(
            || self.function(function),
            |t| format!("{}!{}", t.library, t.entry_point),
        )
    }

    /// Whether a function is code generated at run time: a method without metadata (token 0:
    /// a dynamic method or an IL stub) that the runtime attributes to a module.
    pub fn is_generated(&self, id: u64) -> bool {
        self.functions
            .get(&id)
            .is_some_and(|f| f.token == 0 && f.module != 0)
    }

    /// The file name of a function's module.
    pub fn function_module(&self, id: u64) -> String {
        self.functions
            .get(&id)
            .and_then(|f| self.modules.get(&f.module))
            .map(|m| file_name(&m.path))
            .unwrap_or_default()
    }

    /// A class's display name, or its id in hex.
    pub fn class(&self, id: u64) -> String {
        match self.classes.get(&id) {
            Some(c) => c.name.clone(),
            None if id == 0 => "[unknown]".into(),
            None => format!("[class {id:#x}]"),
        }
    }

    /// The OS thread id of a managed thread, if known.
    pub fn tid_of_managed(&self, managed_id: u64) -> Option<u32> {
        self.threads
            .values()
            .find(|t| t.managed_id == managed_id && managed_id != 0)
            .map(|t| t.tid)
    }

    /// The name of a managed thread (empty if unnamed).
    pub fn name_of_managed(&self, managed_id: u64) -> String {
        self.thread_names
            .get(&managed_id)
            .cloned()
            .unwrap_or_default()
    }

    /// The name of an OS thread (empty if unnamed).
    pub fn name_of_tid(&self, tid: u32) -> String {
        match self.threads.get(&tid) {
            Some(t) if !t.name.is_empty() => t.name.clone(),
            Some(t) => self.name_of_managed(t.managed_id),
            None => String::new(),
        }
    }
}

/// What an IL stub of the runtime does, from the name the runtime gives it (`IL_STUB_PInvoke`,
/// a method of `ILStubClass`, the names of CoreCLR 3.1 to .NET 8): `None` for other methods.
fn il_stub_kind(f: &FunctionDef) -> Option<&'static str> {
    if f.type_name != "ILStubClass" {
        return None;
    }
    let kind = f.method_name.strip_prefix("IL_STUB_")?;
    Some(match kind {
        "PInvoke" => "P/Invoke marshalling",
        "ReversePInvoke" => "reverse P/Invoke marshalling",
        "CLRtoCOM" | "COMtoCLR" => "COM interop",
        "MulticastDelegate_Invoke" => "multicast delegate invoke",
        "SecureDelegate_Invoke" | "WrapperDelegate_Invoke" => "delegate invoke",
        "UnboxingStub" => "unboxing",
        "InstantiatingStub" => "instantiating",
        "Array_Get" | "Array_Set" | "Array_Address" => "array access",
        "StructMarshal" => "struct marshalling",
        "StoreTailCallArgs" | "CallTailCallTarget" => "tail call",
        _ => "other",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtimes_il_stubs_are_named_by_what_they_do() {
        let mut names = Names::default();
        let stub = |id: u64, method: &str, signature: &str| FunctionDef {
            id,
            type_name: "ILStubClass".into(),
            method_name: method.into(),
            signature: signature.into(),
            ..Default::default()
        };
        names
            .functions
            .insert(1, stub(1, "IL_STUB_PInvoke", "(int, ref Timespec)"));
        names
            .functions
            .insert(2, stub(2, "IL_STUB_ReversePInvoke", "(long)"));
        names.functions.insert(3, stub(3, "Helper", "()"));
        assert_eq!(
            names.function(1),
            "[IL stub: P/Invoke marshalling](int, ref Timespec)"
        );
        assert_eq!(
            names.function(2),
            "[IL stub: reverse P/Invoke marshalling](long)"
        );
        assert_eq!(names.function(3), "ILStubClass.Helper()");
    }
}
