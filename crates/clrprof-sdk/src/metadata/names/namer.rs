//! [`Namer`]: display names of runtime ids (functions, classes, modules) and metadata
//! tokens, cached by id.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use clrprof_sys as sys;

use super::super::import::{MetaDataImport, MethodProps};
use super::super::signature::{MethodSig, TypeSig};
use super::FunctionName;
use super::render::{
    MAX_NAME_DEPTH, SigRenderer, TypePath, TypeScope, primitive_keyword, push_args, rank_suffix,
    too_deep,
};
use super::shared::{CANON, CANON_ARG, SharedClasses, lock};
use crate::error::{Error, Result};
use crate::ids::{ClassId, FrameInfo, FunctionId, ModuleId, Token};
use crate::info::ProfilerInfo;

/// Declared generic parameter names of one TypeDef or MethodDef, by sequence.
type GenericNames = Arc<Vec<String>>;

/// Makes and caches display names of functions, classes, modules and metadata tokens.
///
/// One `Namer` is meant to live as long as the profiler (e.g. in the profiler struct) and be
/// shared by every callback thread: all methods take `&self`, the caches are behind mutexes
/// that are never held while calling into the runtime, and `Namer` is `Send + Sync`. Two
/// threads naming the same new id at once may both compute it; the results are equal.
///
/// Shared generic code is named after its canonical class (`Two<int, __Canon>`), which the
/// namer finds among the classes the runtime loaded: call [`Namer::class_loaded`] from
/// `ClassLoadFinished` (see the module documentation for what is shown otherwise).
///
/// The caches are keyed by runtime ids, which the runtime may reuse after an unload: call
/// [`Namer::forget_module`], [`Namer::forget_class`] or [`Namer::forget_function`] from the
/// unload callbacks (`ModuleUnloadStarted`, `ClassUnloadStarted`, `FunctionUnloadStarted`)
/// when the application unloads code (collectible assemblies), or [`Namer::clear`].
#[derive(Default)]
pub struct Namer {
    functions: Mutex<HashMap<FunctionId, FunctionName>>,
    classes: Mutex<HashMap<ClassId, String>>,
    modules: Mutex<HashMap<ModuleId, String>>,
    imports: Mutex<HashMap<ModuleId, Option<MetaDataImport>>>,
    type_paths: Mutex<HashMap<(ModuleId, Token), Arc<TypePath>>>,
    generic_params: Mutex<HashMap<(ModuleId, Token), GenericNames>>,
    shared: SharedClasses,
}

impl fmt::Debug for Namer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Namer")
            .field("functions", &lock(&self.functions).len())
            .field("classes", &lock(&self.classes).len())
            .field("modules", &lock(&self.modules).len())
            .finish_non_exhaustive()
    }
}

/// One module's metadata seen through the namer's caches.
pub(super) struct Scope<'a> {
    pub(super) namer: &'a Namer,
    pub(super) module: ModuleId,
    pub(super) import: &'a MetaDataImport,
}

impl TypeScope for Scope<'_> {
    fn type_path(&self, token: Token) -> Result<Arc<TypePath>> {
        let key = (self.module, token);
        if let Some(p) = lock(&self.namer.type_paths).get(&key) {
            return Ok(p.clone());
        }
        let path = Arc::new(type_path(self.import, token)?);
        lock(&self.namer.type_paths).insert(key, path.clone());
        Ok(path)
    }

    fn type_spec(&self, token: Token) -> Result<Vec<u8>> {
        self.import.get_type_spec_from_token(token)
    }
}

/// A dynamic method's signature (`GetDynamicFunctionInfo`): its class types are runtime type
/// handles (`ELEMENT_TYPE_INTERNAL`), named as classes; tokens, if any, are looked up in the
/// module the runtime attributes the method to.
struct DynamicScope<'a> {
    namer: &'a Namer,
    info: &'a ProfilerInfo,
    module: Option<Scope<'a>>,
}

impl TypeScope for DynamicScope<'_> {
    fn type_path(&self, token: Token) -> Result<Arc<TypePath>> {
        match &self.module {
            Some(scope) => scope.type_path(token),
            None => Err(Error::InvalidData {
                context: "dynamic method signature",
                reason: format!("type token {token} without metadata"),
            }),
        }
    }

    fn type_spec(&self, token: Token) -> Result<Vec<u8>> {
        match &self.module {
            Some(scope) => scope.type_spec(token),
            None => Err(Error::InvalidData {
                context: "dynamic method signature",
                reason: format!("type spec {token} without metadata"),
            }),
        }
    }

    fn internal(&self, handle: u64) -> Option<String> {
        let class = ClassId(usize::try_from(handle).ok()?);
        self.namer.class_name(self.info, class, 1).ok().or_else(|| {
            // A generic type definition (`ReadOnlySpan<T>` of `ReadOnlySpan<char>`): named from
            // its metadata.
            let c = self.info.get_class_id_info(class).ok()?;
            self.namer.get_type_name(self.info, c.module, c.token).ok()
        })
    }
}

impl Scope<'_> {
    /// Declared names of the generic parameters of a TypeDef or MethodDef (empty when the
    /// metadata cannot tell).
    pub(super) fn generic_params(&self, owner: Token) -> Result<Arc<Vec<String>>> {
        let key = (self.module, owner);
        if let Some(p) = lock(&self.namer.generic_params).get(&key) {
            return Ok(p.clone());
        }
        let names = if self.import.is_import2() {
            self.import.generic_param_names(owner)?
        } else {
            Vec::new()
        };
        let names = Arc::new(names);
        lock(&self.namer.generic_params).insert(key, names.clone());
        Ok(names)
    }
}

/// Reads the nesting chain of a TypeDef or TypeRef.
fn type_path(import: &MetaDataImport, token: Token) -> Result<TypePath> {
    let mut names = Vec::new();
    let mut cur = token;
    loop {
        if names.len() > MAX_NAME_DEPTH {
            return Err(too_deep("enclosing types"));
        }
        match cur.table() {
            sys::mdtTypeDef => {
                let props = import.get_type_def_props(cur)?;
                let nested = props.is_nested();
                names.push(props.name);
                match nested
                    .then(|| import.get_nested_class_props(cur))
                    .transpose()?
                {
                    Some(Some(enclosing)) => cur = enclosing,
                    _ => break,
                }
            }
            sys::mdtTypeRef => {
                let props = import.get_type_ref_props(cur)?;
                names.push(props.name);
                let scope = props.resolution_scope;
                if scope.table() == sys::mdtTypeRef && !scope.is_nil() {
                    cur = scope;
                } else {
                    break;
                }
            }
            _ => {
                return Err(Error::InvalidData {
                    context: "type name",
                    reason: format!("{token} is not a TypeDef or TypeRef"),
                });
            }
        }
    }
    names.reverse();
    Ok(TypePath::new(&names))
}

/// The generic arguments to display for `declared` parameters given the runtime's type
/// arguments: each argument's class name (`System.__Canon` shown as `__Canon`); a missing
/// argument shows the parameter's declared name (or `!n`/`!!n` with `marker`).
pub(super) fn merge_args(
    declared: &[String],
    actual: &[String],
    count: usize,
    marker: &str,
) -> Vec<String> {
    (0..count)
        .map(|i| match actual.get(i) {
            Some(a) if a == CANON => CANON_ARG.to_string(),
            Some(a) => a.clone(),
            None => declared
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("{marker}{i}")),
        })
        .collect()
}

impl Namer {
    /// An empty namer.
    pub fn new() -> Namer {
        Namer::default()
    }

    /// Forgets everything cached about a module (its metadata reader and the names of its
    /// functions too), e.g. from `ModuleUnloadStarted`. Class names stay until
    /// [`Namer::forget_class`].
    pub fn forget_module(&self, module: ModuleId) {
        lock(&self.modules).remove(&module);
        lock(&self.imports).remove(&module);
        lock(&self.type_paths).retain(|(m, _), _| *m != module);
        lock(&self.generic_params).retain(|(m, _), _| *m != module);
        lock(&self.functions).retain(|_, f| f.module != module);
        self.shared.forget_module(module);
    }

    /// Forgets a class (its name, the names of its functions, and the class as the canonical
    /// class of shared code), e.g. from `ClassUnloadStarted`.
    pub fn forget_class(&self, class: ClassId) {
        lock(&self.classes).remove(&class);
        lock(&self.functions).retain(|_, f| f.class != class);
        self.shared.forget_class(class);
    }

    /// Forgets a function's name, e.g. from `FunctionUnloadStarted`.
    pub fn forget_function(&self, function: FunctionId) {
        lock(&self.functions).remove(&function);
    }

    /// Forgets everything.
    pub fn clear(&self) {
        lock(&self.functions).clear();
        lock(&self.classes).clear();
        lock(&self.modules).clear();
        lock(&self.imports).clear();
        lock(&self.type_paths).clear();
        lock(&self.generic_params).clear();
        self.shared.clear();
    }

    /// The module's metadata reader, opened once and cached (`None` for modules without
    /// metadata).
    pub fn metadata(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
    ) -> Result<Option<MetaDataImport>> {
        if let Some(i) = lock(&self.imports).get(&module) {
            return Ok(i.clone());
        }
        let import = info.get_module_metadata(module, false)?;
        lock(&self.imports).insert(module, import.clone());
        Ok(import)
    }

    pub(super) fn metadata_required(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
    ) -> Result<MetaDataImport> {
        self.metadata(info, module)?
            .ok_or_else(|| Error::InvalidData {
                context: "module metadata",
                reason: format!("module {module} has no metadata"),
            })
    }

    /// The module's display name: the file name of its path (`Names.dll`,
    /// `System.Private.CoreLib.dll`), or its metadata scope name when it has no file.
    pub fn get_module_name(&self, info: &ProfilerInfo, module: ModuleId) -> Result<String> {
        if let Some(n) = lock(&self.modules).get(&module) {
            return Ok(n.clone());
        }
        let path = info.get_module_info2(module)?.name;
        let file = path
            .rsplit(['/', '\\'])
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let name = match file {
            Some(f) => f,
            None => match self.metadata(info, module)? {
                Some(import) => import.get_scope_props()?.name,
                None => path,
            },
        };
        lock(&self.modules).insert(module, name.clone());
        Ok(name)
    }

    /// The display name of a loaded class: `System.Collections.Generic.List<int>`,
    /// `int[,]`, `Demo.Outer.Inner`, `Demo.Point`. The canonical instantiations the runtime
    /// loads for shared code show `__Canon` (`System.Collections.Generic.List<__Canon>`).
    pub fn get_class_name(&self, info: &ProfilerInfo, class: ClassId) -> Result<String> {
        self.class_name(info, class, 0)
    }

    fn class_name(&self, info: &ProfilerInfo, class: ClassId, depth: usize) -> Result<String> {
        if let Some(n) = lock(&self.classes).get(&class) {
            return Ok(n.clone());
        }
        if depth > MAX_NAME_DEPTH {
            return Err(too_deep("class name"));
        }
        let name = if let Some(array) = info.is_array_class(class)? {
            // Peel nested arrays: the outermost array's brackets come first.
            let mut suffix = rank_suffix(array.rank);
            let mut element = array;
            let mut base = None;
            for _ in 0..MAX_NAME_DEPTH {
                if element.element_class.is_null() {
                    break;
                }
                match info.is_array_class(element.element_class)? {
                    Some(inner) => {
                        suffix.push_str(&rank_suffix(inner.rank));
                        element = inner;
                    }
                    None => {
                        base = Some(self.class_name(info, element.element_class, depth + 1)?);
                        break;
                    }
                }
            }
            let base = match base {
                Some(b) => b,
                None => match TypeSig::from_element_type(element.element_type) {
                    Some(t) => primitive_keyword(&t).to_string(),
                    None => format!("<element type {:#x}>", element.element_type),
                },
            };
            base + &suffix
        } else {
            let ci = info.get_class_id_info2(class)?;
            if ci.token.is_nil() {
                return Err(Error::InvalidData {
                    context: "class name",
                    reason: format!("class {class} has no TypeDef"),
                });
            }
            let import = self.metadata_required(info, ci.module)?;
            let scope = Scope {
                namer: self,
                module: ci.module,
                import: &import,
            };
            let path = scope.type_path(ci.token)?;
            let actual = ci
                .type_args
                .iter()
                .map(|&a| self.class_name(info, a, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            let declared = if ci.type_args.is_empty() {
                Arc::new(Vec::new())
            } else {
                scope.generic_params(ci.token)?
            };
            let args = merge_args(&declared, &actual, actual.len(), "!");
            path.display(&args)
        };
        lock(&self.classes).insert(class, name.clone());
        Ok(name)
    }

    /// The display name of a function: declaring type with its class's type arguments,
    /// method name with its own type arguments, and parameter types with the type arguments
    /// substituted. Uses `GetFunctionInfo2` (without a frame) and `GetClassIDInfo2`; for
    /// shared generic code, whose class `GetFunctionInfo2` does not tell, the canonical class
    /// among those given to [`Namer::class_loaded`] whose method the function is
    /// (`GetFunctionFromTokenAndTypeArgs`).
    pub fn get_function_name(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
    ) -> Result<FunctionName> {
        if let Some(n) = lock(&self.functions).get(&function) {
            return Ok(n.clone());
        }
        let fi = info.get_function_info2(function, FrameInfo::NULL)?;
        let class = if fi.class.is_null() {
            self.shared_class(info, function, fi.module, fi.token, &fi.type_args)?
        } else {
            fi.class
        };
        let class_args = if class.is_null() {
            None
        } else {
            let ci = info.get_class_id_info2(class)?;
            Some(
                ci.type_args
                    .iter()
                    .map(|&a| self.class_name(info, a, 1))
                    .collect::<Result<Vec<_>>>()?,
            )
        };
        let method_args = fi
            .type_args
            .iter()
            .map(|&a| self.class_name(info, a, 1))
            .collect::<Result<Vec<_>>>()?;
        let mut name = self.method_name(
            info,
            fi.module,
            fi.token,
            class_args.as_deref(),
            Some(&method_args),
        )?;
        name.class = class;
        lock(&self.functions).insert(function, name.clone());
        Ok(name)
    }

    /// The name of a method without metadata: a `DynamicMethod` (LCG: compiled expressions,
    /// compiled regular expressions, serializers) or a runtime IL stub, from
    /// `GetDynamicFunctionInfo` (ICorProfilerInfo8). The runtime's own stack traces show them
    /// as `DynamicClass.<name>` and `ILStubClass.<name>`, and so does this: the type name is
    /// `DynamicClass`, or `ILStubClass` for names starting `IL_STUB`; the signature is
    /// rendered from the method's signature blob (class types named through the runtime).
    /// The token is 0 (no metadata), the module the one the runtime attributes the method to.
    /// Not cached: a dynamic method's FunctionID is reused once the method is collected.
    pub fn get_dynamic_function_name(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
    ) -> Result<FunctionName> {
        let dynamic = info.get_dynamic_function_info(function)?;
        let import = if dynamic.module.is_null() {
            None
        } else {
            self.metadata(info, dynamic.module).ok().flatten()
        };
        let scope = DynamicScope {
            namer: self,
            info,
            module: import.as_ref().map(|import| Scope {
                namer: self,
                module: dynamic.module,
                import,
            }),
        };
        let renderer = SigRenderer {
            scope: &scope,
            class_args: &[],
            method_args: &[],
        };
        let signature = MethodSig::parse(&dynamic.signature)
            .ok()
            .and_then(|sig| renderer.params(&sig, &[]).ok())
            .unwrap_or_else(|| "(?)".to_string());
        let type_name = if dynamic.name.starts_with("IL_STUB") {
            "ILStubClass"
        } else {
            "DynamicClass"
        };
        let method_name = if dynamic.name.is_empty() {
            format!("{function}")
        } else {
            dynamic.name
        };
        Ok(FunctionName {
            type_name: type_name.to_string(),
            method_name,
            signature,
            module: dynamic.module,
            token: Token(0),
            class: ClassId::NULL,
        })
    }

    /// The canonical class (`Two<int, __Canon>`) whose method `function`, a body of shared
    /// generic code, is: the loaded canonical instantiation of the method's declaring type for
    /// which the runtime answers `function` (null if none does).
    fn shared_class(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
        module: ModuleId,
        method: Token,
        method_args: &[ClassId],
    ) -> Result<ClassId> {
        let import = self.metadata_required(info, module)?;
        let declaring = import.get_method_props(method)?.class;
        Ok(self
            .shared
            .candidates(module, declaring)
            .into_iter()
            .find(|&class| {
                info.get_function_from_token_and_type_args(module, method, class, method_args)
                    .is_ok_and(|f| f == function)
            })
            .unwrap_or(ClassId::NULL))
    }

    /// Tells the namer about a class the runtime loaded (call it from `ClassLoadFinished`):
    /// canonical instantiations of generic types (`Two<int, __Canon>`, loaded by the runtime
    /// for the shared code of `Two<int, string>`) are where [`Namer::get_function_name`]
    /// finds the class of shared generic code. Costs one `GetClassIDInfo2` for most classes.
    pub fn class_loaded(&self, info: &ProfilerInfo, class: ClassId) -> Result<()> {
        let ci = info.get_class_id_info2(class)?;
        if ci.type_args.is_empty() {
            if self.shared.canon().is_none() && self.is_canon_type(info, ci.module, ci.token)? {
                self.shared.set_canon(class);
            }
        } else if self.any_shared(info, &ci.type_args, 1) {
            self.shared.add(ci.module, ci.token, class);
        }
        Ok(())
    }

    /// Whether any of `args` is `System.__Canon` or a value type instantiated over it
    /// (`KeyValuePair<int, __Canon>`).
    fn any_shared(&self, info: &ProfilerInfo, args: &[ClassId], depth: usize) -> bool {
        depth <= MAX_NAME_DEPTH && args.iter().any(|&arg| self.is_shared_arg(info, arg, depth))
    }

    /// Whether a type argument is `System.__Canon` or a value type instantiated over it. An
    /// argument the runtime says nothing about is not.
    fn is_shared_arg(&self, info: &ProfilerInfo, arg: ClassId, depth: usize) -> bool {
        let canon = self.shared.canon();
        if canon == Some(arg) {
            return true;
        }
        // Arrays are reference types: never the argument of a canonical class.
        if !info.is_array_class(arg).is_ok_and(|a| a.is_none()) {
            return false;
        }
        let Ok(ci) = info.get_class_id_info2(arg) else {
            return false;
        };
        if !ci.type_args.is_empty() {
            return self.any_shared(info, &ci.type_args, depth + 1);
        }
        let is_canon = canon.is_none()
            && self
                .is_canon_type(info, ci.module, ci.token)
                .unwrap_or(false);
        if is_canon {
            self.shared.set_canon(arg);
        }
        is_canon
    }

    /// Whether the TypeDef `token` of `module` is `System.__Canon`.
    fn is_canon_type(&self, info: &ProfilerInfo, module: ModuleId, token: Token) -> Result<bool> {
        if token.is_nil() {
            return Ok(false);
        }
        let import = self.metadata_required(info, module)?;
        let scope = Scope {
            namer: self,
            module,
            import: &import,
        };
        Ok(scope.type_path(token)?.display(&[]) == CANON)
    }

    /// The display name of a MethodDef from its token, without a runtime instantiation:
    /// generic parameters show their declared names (`Demo.Box<T>.Put(T, int)`). Not cached
    /// beyond the type names it uses.
    pub fn get_method_name(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
        method: Token,
    ) -> Result<FunctionName> {
        self.method_name(info, module, method, None, None)
    }

    /// The display name of a TypeDef, TypeRef or TypeSpec of `module`, generic parameters by
    /// their declared names: `Demo.Box<T>`. A TypeSpec has no enclosing type or method to take
    /// parameter names from, so its generic parameters print as `!0`/`!!0` (`Demo.Box<!0>`).
    pub fn get_type_name(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
        token: Token,
    ) -> Result<String> {
        let import = self.metadata_required(info, module)?;
        let scope = Scope {
            namer: self,
            module,
            import: &import,
        };
        if token.table() == sys::mdtTypeSpec {
            let t = TypeSig::parse(&import.get_type_spec_from_token(token)?)?;
            let renderer = SigRenderer {
                scope: &scope,
                class_args: &[],
                method_args: &[],
            };
            return renderer.render(&t);
        }
        let path = scope.type_path(token)?;
        let declared = if token.table() == sys::mdtTypeDef {
            scope.generic_params(token)?
        } else {
            Arc::new(Vec::new())
        };
        let args = merge_args(&declared, &[], declared.len().max(path.arity()), "!");
        Ok(path.display(&args))
    }

    pub(super) fn method_name(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
        method: Token,
        class_args: Option<&[String]>,
        method_args: Option<&[String]>,
    ) -> Result<FunctionName> {
        let import = self.metadata_required(info, module)?;
        let scope = Scope {
            namer: self,
            module,
            import: &import,
        };
        let props = import.get_method_props(method)?;
        let sig = MethodSig::parse(&props.signature)?;

        let path = scope.type_path(props.class)?;
        let class_declared = scope.generic_params(props.class)?;
        let class_count = class_declared.len().max(path.arity());
        let class_shown = merge_args(&class_declared, class_args.unwrap_or(&[]), class_count, "!");

        let method_declared = if sig.generic_param_count > 0 {
            scope.generic_params(method)?
        } else {
            Arc::new(Vec::new())
        };
        let method_shown = merge_args(
            &method_declared,
            method_args.unwrap_or(&[]),
            sig.generic_param_count as usize,
            "!!",
        );

        let mut method_name = props.name.clone();
        if !method_shown.is_empty() {
            push_args(&mut method_name, &method_shown);
        }

        // `out` parameters: by-ref and marked [Out] without [In].
        let mut out_params = vec![false; sig.params.len()];
        if sig
            .params
            .iter()
            .any(|p| matches!(p.strip_modifiers(), TypeSig::ByRef(_)))
        {
            for p in import.method_params(method)? {
                let direction = p.attributes & (sys::pdIn | sys::pdOut);
                if p.sequence >= 1
                    && direction == sys::pdOut
                    && let Some(slot) = out_params.get_mut(p.sequence as usize - 1)
                {
                    *slot = true;
                }
            }
        }
        let renderer = SigRenderer {
            scope: &scope,
            class_args: &class_shown,
            method_args: &method_shown,
        };
        let mut signature = renderer.params(&sig, &out_params)?;
        if is_conversion_operator(&props) {
            signature.push_str(" -> ");
            signature.push_str(&renderer.render(&sig.ret)?);
        }
        Ok(FunctionName {
            type_name: path.display(&class_shown),
            method_name,
            signature,
            module,
            token: method,
            class: ClassId::NULL,
        })
    }
}
/// Whether a method is a conversion operator (`op_Implicit`, `op_Explicit`): the methods C#
/// lets differ only by their return type.
pub(super) fn is_conversion_operator(props: &MethodProps) -> bool {
    props.attributes & sys::mdSpecialName != 0
        && matches!(props.name.as_str(), "op_Implicit" | "op_Explicit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canon_arguments_show_as_canon() {
        let declared = vec!["TKey".to_string(), "TValue".to_string()];
        let actual = vec![CANON.to_string(), "int".to_string()];
        assert_eq!(merge_args(&declared, &actual, 2, "!"), ["__Canon", "int"]);
        assert_eq!(merge_args(&[], &actual, 2, "!"), ["__Canon", "int"]);
        // Arguments the runtime did not give show the declared names, or positions.
        assert_eq!(
            merge_args(&declared, &[], 3, "!!"),
            ["TKey", "TValue", "!!2"]
        );
    }

    fn method(name: &str, attributes: u32) -> MethodProps {
        MethodProps {
            name: name.into(),
            class: Token(0x0200_0002),
            attributes,
            signature: Vec::new(),
            rva: 0,
            impl_flags: 0,
        }
    }

    #[test]
    fn conversion_operators_are_special_names() {
        let special = sys::mdSpecialName | sys::mdStatic | sys::mdPublic;
        assert!(is_conversion_operator(&method("op_Implicit", special)));
        assert!(is_conversion_operator(&method("op_Explicit", special)));
        assert!(!is_conversion_operator(&method("op_Addition", special)));
        assert!(!is_conversion_operator(&method(
            "op_Implicit",
            sys::mdStatic
        )));
    }

    #[test]
    fn namer_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Namer>();
        check::<MetaDataImport>();
        let n = Namer::new();
        assert!(format!("{n:?}").starts_with("Namer"));
    }
}
