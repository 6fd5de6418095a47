//! A test profiler that writes the display names the SDK's [`Namer`] computes, one per line,
//! to the file named by `PROBE_OUTPUT` (tab-separated, each distinct line once):
//!
//! - `jit\t<function>` for every JIT-compiled function (`Demo.Box<int>.Put(int, int)`),
//! - `class\t<class>` for every class load, `alloc\t<class>` for every allocated object's class,
//! - `module\t<file name>` for every module load,
//! - for the module `Names.dll`, what its metadata says without a runtime instantiation:
//!   `type\t<type>` and `method\t<method>` for every TypeDef and MethodDef, plus lines that
//!   exercise the rest of `MetaDataImport` (`scope`, `fields`, `const`, `params`, `attr`,
//!   `find`, `nested`, `spec`),
//! - `error\t<where>\t<error>` for anything that failed.
//!
//! Inlining is disabled so that every small method of the test program is JIT-compiled on
//! its own.

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use clrprof_sdk::metadata::signature::parse_field;
use clrprof_sdk::metadata::{Constant, MetaDataImport, MethodSig};
use clrprof_sdk::{
    ClassId, EventMask, FunctionId, HResult, ModuleId, Namer, ObjectId, Profiler, ProfilerInfo,
    Result, Token,
};

/// The module whose metadata is dumped.
const PROGRAM_MODULE: &str = "Names.dll";

struct Output {
    seen: HashSet<String>,
    file: File,
}

#[derive(Default)]
struct NamesProbe {
    info: OnceLock<ProfilerInfo>,
    namer: Namer,
    out: Mutex<Option<Output>>,
}

impl NamesProbe {
    fn emit(&self, line: String) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(out) = out.as_mut()
            && out.seen.insert(line.clone())
        {
            let _ = writeln!(out.file, "{line}");
            let _ = out.file.flush();
        }
    }

    fn emit_result(&self, kind: &str, what: impl std::fmt::Display, r: Result<String>) {
        match r {
            Ok(name) => self.emit(format!("{kind}\t{name}")),
            Err(e) => self.emit(format!("error\t{kind} {what}\t{e}")),
        }
    }

    /// Names every type and method of the program's module from its tokens, and exercises
    /// the other metadata methods on known members.
    fn dump_module(&self, info: &ProfilerInfo, module: ModuleId) -> Result<()> {
        let Some(import) = info.get_module_metadata(module, false)? else {
            self.emit("error\tdump\tno metadata".into());
            return Ok(());
        };
        let scope = import.get_scope_props()?;
        self.emit(format!("scope\t{}", scope.name));
        for spec in import.enum_type_specs()? {
            let name = self.namer.get_type_name(info, module, spec);
            self.emit_result("spec", spec, name);
        }
        for td in import.enum_type_defs()? {
            let type_name = self.namer.get_type_name(info, module, td);
            self.emit_result("type", td, type_name);
            for md in import.enum_methods(td)? {
                let name = self.namer.get_method_name(info, module, md);
                self.emit_result("method", md, name.map(|n| n.full_name()));
            }
        }
        self.dump_members(&import)
    }

    fn dump_members(&self, import: &MetaDataImport) -> Result<()> {
        let find = |name: &str| -> Result<Token> {
            import
                .find_type_def_by_name(name, Token::NIL)?
                .ok_or_else(|| clrprof_sdk::Error::InvalidData {
                    context: "probe",
                    reason: format!("type {name} not found"),
                })
        };
        let program = find("Demo.Program")?;
        let point = find("Demo.Point")?;
        let outer = find("Demo.Outer")?;
        let boxed = find("Demo.Box`1")?;

        // Nested type lookup and its enclosing class.
        if let Some(inner) = import.find_type_def_by_name("Inner", outer)? {
            let enclosing = import.get_nested_class_props(inner)?;
            let enclosing_name = match enclosing {
                Some(t) => import.get_type_def_props(t)?.name,
                None => "none".into(),
            };
            self.emit(format!("nested\tInner in {enclosing_name}"));
        }
        self.emit(format!(
            "nested\tDemo.Outer in {:?}",
            import.get_nested_class_props(outer)?
        ));
        self.emit(format!(
            "find\tDemo.Missing {:?}",
            import.find_type_def_by_name("Demo.Missing", Token::NIL)?
        ));

        // Fields of a struct, with their types.
        let mut fields = Vec::new();
        for fd in import.enum_fields(point)? {
            let props = import.get_field_props(fd)?;
            let ty = parse_field(&props.signature)?;
            fields.push(format!("{}:{ty:?}", props.name));
        }
        self.emit(format!("fields\tDemo.Point {}", fields.join(" ")));

        // A literal field's value.
        for fd in import.enum_fields(program)? {
            let props = import.get_field_props(fd)?;
            if let Some(Constant::I4(v)) = props.constant {
                self.emit(format!("const\t{} = {v}", props.name));
            }
        }

        // Overloads, parameter names, and a method found by name and signature.
        let parses = import.enum_methods_with_name(program, "Parse")?;
        self.emit(format!("find\tParse overloads {}", parses.len()));
        for md in &parses {
            let props = import.get_method_props(*md)?;
            let names: Vec<String> = import
                .method_params(*md)?
                .into_iter()
                .map(|p| format!("{}:{}", p.sequence, p.name))
                .collect();
            let sig = MethodSig::parse(&props.signature)?;
            self.emit(format!(
                "params\t{}/{} {}",
                props.name,
                sig.params.len(),
                names.join(" ")
            ));
            let again = import.find_method(program, "Parse", Some(&props.signature))?;
            if again != Some(*md) {
                self.emit(format!("error\tfind_method\t{again:?} != {md}"));
            }
        }

        // The [Obsolete("use Parse")] blob: prolog 01 00, a SerString (length byte, UTF-8),
        // then the number of named arguments.
        if let Some(old) = import.find_method(program, "Old", None)? {
            let blob = import.get_custom_attribute_by_name(old, "System.ObsoleteAttribute")?;
            let text = blob.as_deref().and_then(|b| {
                let len = usize::from(*b.get(2)?);
                b.get(3..3 + len).map(String::from_utf8_lossy)
            });
            self.emit(format!("attr\tOld {text:?}"));
            let none = import.get_custom_attribute_by_name(
                old,
                "System.Runtime.CompilerServices.CompilerGeneratedAttribute",
            )?;
            self.emit(format!("attr\tOld compiler-generated {}", none.is_some()));
        }

        // Generic parameters of a type and a method.
        let mut generics = import.generic_param_names(boxed)?;
        if let Some(map) = import.find_method(program, "Map", None)? {
            generics.extend(import.generic_param_names(map)?);
            for gp in import.enum_generic_params(map)? {
                let props = import.get_generic_param_props(gp)?;
                if props.owner != map {
                    self.emit(format!("error\tgeneric owner\t{:?}", props.owner));
                }
            }
        }
        self.emit(format!("generics\t{}", generics.join(" ")));

        Ok(())
    }
}

impl Profiler for NamesProbe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        if let Some(path) = std::env::var_os("PROBE_OUTPUT")
            && let Ok(file) = File::create(path)
        {
            *self.out.lock().unwrap_or_else(|e| e.into_inner()) = Some(Output {
                seen: HashSet::new(),
                file,
            });
        }
        info.set_event_mask(
            EventMask::MONITOR_JIT_COMPILATION
                | EventMask::MONITOR_CLASS_LOADS
                | EventMask::MONITOR_MODULE_LOADS
                | EventMask::MONITOR_OBJECT_ALLOCATED
                | EventMask::ENABLE_OBJECT_ALLOCATED
                | EventMask::DISABLE_INLINING,
        )?;
        let _ = self.info.set(info);
        self.emit("init".into());
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        if !status.is_ok() {
            return Ok(());
        }
        let name = self.namer.get_module_name(info, module);
        let is_program = name.as_deref() == Ok(PROGRAM_MODULE);
        self.emit_result("module", module, name);
        if is_program && let Err(e) = self.dump_module(info, module) {
            self.emit(format!("error\tdump\t{e}"));
        }
        Ok(())
    }

    fn class_load_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        if status.is_ok() {
            // Canonical classes are where the namer finds the class of shared generic code.
            if let Err(e) = self.namer.class_loaded(info, class) {
                self.emit(format!("error\tclass_loaded {class}\t{e}"));
            }
            self.emit_result("class", class, self.namer.get_class_name(info, class));
        }
        Ok(())
    }

    fn object_allocated(&self, _object: ObjectId, class: ClassId) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        self.emit_result("alloc", class, self.namer.get_class_name(info, class));
        Ok(())
    }

    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        if !status.is_ok() {
            return Ok(());
        }
        let name = self.namer.get_function_name(info, function);
        if let Ok(name) = &name {
            match info.get_token_and_metadata_from_function(function) {
                Ok((_, token)) if token == name.token => {}
                Ok((_, token)) => self.emit(format!(
                    "error\ttoken {function}\t{token} != {}",
                    name.token
                )),
                Err(e) => self.emit(format!("error\ttoken {function}\t{e}")),
            }
        }
        self.emit_result("jit", function, name.map(|n| n.full_name()));
        Ok(())
    }
}

clrprof_sdk::export_profiler!(NamesProbe, "{6E0A3C41-8B2D-4F57-9A1E-2C7D5B3F9A60}");
