//! Names of functions, classes and modules as C# developers read them.
//!
//! [`Namer`] turns runtime ids into display names, e.g. `Demo.Box<int>.Put(int, int)`.
//! The conventions, chosen to read like C# source:
//!
//! - **Types**: `Namespace.Name`. Nested types are joined with `.`, not metadata's `+`
//!   (`Demo.Outer.Inner`). The generic arity suffix (`` `1 ``) is replaced by the arguments:
//!   `System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>`;
//!   the arguments of a nested type's enclosing generic types go on those types
//!   (`Demo.Outer<int>.Inner`). Types are fully qualified except the ones C# has keywords for:
//!   `void bool char sbyte byte short ushort int uint long ulong float double decimal string
//!   object nint nuint`, also as declaring types (`string.Join<int>(...)`, `object..ctor()`).
//!   `System.Nullable<int>` is not shortened to `int?`.
//! - **Arrays** use C# order, the outermost array first: `int[]`, `int[,]`, `string[][]`, and
//!   `int[][,]` for an array of two-dimensional arrays (reflection prints that one
//!   `Int32[,][]`). A rank-1 array that is not zero-based prints `int[*]` (from a signature;
//!   runtime ClassIDs cannot tell it from `int[]`).
//! - **By-ref** parameters print `ref int`, or `out int` when the parameter is marked `[Out]`
//!   only (what C# `out` compiles to), or `in int` for C# `in` (`modreq(InAttribute)`).
//!   Pointers print `int*`, function pointers `delegate*<int, void>`. Custom modifiers and
//!   `pinned` are not shown.
//! - **Generic parameters** print their declared names (`T`, `TKey`), or `!0`/`!!0` when the
//!   metadata has no name for them.
//! - **Shared generic code**: for reference-type arguments the runtime compiles one body,
//!   instantiated over the placeholder `System.__Canon`. Wherever `__Canon` stands for a
//!   type argument, it prints as the name of the generic parameter it stands for: the shared
//!   code of `Box<string>.Put` prints `Demo.Box<T>.Put(T, int)`, because that code runs for
//!   every reference type. `System.__Canon` named on its own prints as is.
//! - **Methods** keep their metadata names (`.ctor`, `.cctor`, `get_Count`, and compiler
//!   generated names such as `<Main>b__0_0` as the compiler emitted them); generic methods get
//!   their type arguments: `Map<int, string>`.
//! - **Modules** print as the file name of their path (`Names.dll`), or the metadata scope
//!   name for modules without a file.
//!
//! All lookups are cached by id; see [`Namer`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use clrprof_sys as sys;

use super::import::MetaDataImport;
use super::signature::{CallConv, MethodSig, TypeSig};
use crate::error::{Error, Result};
use crate::ids::{ClassId, FrameInfo, FunctionId, ModuleId, Token};
use crate::info::ProfilerInfo;

/// The name of a function, in parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionName {
    /// The declaring type, with its type arguments: `Demo.Box<int>`.
    pub type_name: String,
    /// The method name, with its own type arguments: `Put`, `Map<int, string>`, `.ctor`.
    pub method_name: String,
    /// The parameter types in parentheses: `(int, string)`.
    pub signature: String,
    /// The module that defines the method.
    pub module: ModuleId,
    /// The MethodDef token.
    pub token: Token,
    /// The declaring class's ClassID (null when the runtime could not tell, or when named
    /// from a token).
    pub class: ClassId,
}

impl FunctionName {
    /// `type_name.method_name(signature)`: `Demo.Box<int>.Put(int, int)`.
    pub fn full_name(&self) -> String {
        format!("{}.{}{}", self.type_name, self.method_name, self.signature)
    }

    /// `type_name.method_name`, without the parameters.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.type_name, self.method_name)
    }
}

impl fmt::Display for FunctionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}{}",
            self.type_name, self.method_name, self.signature
        )
    }
}

/// The C# keyword of a framework type, if it has one.
pub fn csharp_keyword(full_name: &str) -> Option<&'static str> {
    Some(match full_name {
        "System.Void" => "void",
        "System.Boolean" => "bool",
        "System.Char" => "char",
        "System.SByte" => "sbyte",
        "System.Byte" => "byte",
        "System.Int16" => "short",
        "System.UInt16" => "ushort",
        "System.Int32" => "int",
        "System.UInt32" => "uint",
        "System.Int64" => "long",
        "System.UInt64" => "ulong",
        "System.Single" => "float",
        "System.Double" => "double",
        "System.Decimal" => "decimal",
        "System.String" => "string",
        "System.Object" => "object",
        "System.IntPtr" => "nint",
        "System.UIntPtr" => "nuint",
        _ => return None,
    })
}

/// The full name of the placeholder type of shared generic code.
const CANON: &str = "System.__Canon";

/// Deepest nesting (enclosing types, type arguments of type arguments, TypeSpecs inside
/// signatures) the namer follows before giving up on a name.
const MAX_NAME_DEPTH: usize = 48;

fn too_deep(context: &'static str) -> Error {
    Error::InvalidData {
        context,
        reason: format!("names nested deeper than {MAX_NAME_DEPTH} levels"),
    }
}

/// A type's name as metadata spells it, split into its nesting levels, outermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypePath {
    /// `(name without arity suffix, arity)`; the first level includes the namespace.
    levels: Vec<(String, u32)>,
}

impl TypePath {
    /// Splits `` List`1 `` into `("List", 1)`; names without a numeric suffix keep arity 0.
    fn level(name: &str) -> (String, u32) {
        if let Some((base, arity)) = name.rsplit_once('`')
            && let Ok(n) = arity.parse::<u32>()
        {
            return (base.to_string(), n);
        }
        (name.to_string(), 0)
    }

    pub(crate) fn new<S: AsRef<str>>(outermost_first: &[S]) -> TypePath {
        TypePath {
            levels: outermost_first
                .iter()
                .map(|s| Self::level(s.as_ref()))
                .collect(),
        }
    }

    /// The total number of generic parameters the names announce.
    fn arity(&self) -> usize {
        self.levels.iter().map(|(_, a)| *a as usize).sum()
    }

    /// The display name with `args` (already displayed) as the type arguments.
    pub(crate) fn display(&self, args: &[String]) -> String {
        if args.is_empty()
            && let [(name, 0)] = self.levels.as_slice()
            && let Some(keyword) = csharp_keyword(name)
        {
            return keyword.to_string();
        }
        let mut out = String::new();
        if self.arity() == args.len() {
            let mut next = 0;
            for (i, (name, arity)) in self.levels.iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(name);
                let n = *arity as usize;
                if n > 0 {
                    push_args(&mut out, &args[next..next + n]);
                    next += n;
                }
            }
        } else {
            // Names without (or with wrong) arity suffixes: all arguments at the end.
            for (i, (name, _)) in self.levels.iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(name);
            }
            if !args.is_empty() {
                push_args(&mut out, args);
            }
        }
        out
    }
}

fn push_args(out: &mut String, args: &[String]) {
    out.push('<');
    out.push_str(&args.join(", "));
    out.push('>');
}

/// `[]`, `[,]`, ... for an array of `rank` dimensions.
fn rank_suffix(rank: u32) -> String {
    let mut s = String::from("[");
    for _ in 1..rank.max(1) {
        s.push(',');
    }
    s.push(']');
    s
}

/// Where a signature's type tokens are looked up: one module's metadata.
pub(crate) trait TypeScope {
    /// The name of a TypeDef or TypeRef.
    fn type_path(&self, token: Token) -> Result<Arc<TypePath>>;
    /// The signature blob of a TypeSpec.
    fn type_spec(&self, token: Token) -> Result<Vec<u8>>;
}

/// Displays signature types: resolves tokens through a [`TypeScope`] and generic parameters
/// through the (already displayed) type arguments of the class and of the method.
pub(crate) struct SigRenderer<'a> {
    pub(crate) scope: &'a dyn TypeScope,
    pub(crate) class_args: &'a [String],
    pub(crate) method_args: &'a [String],
}

impl SigRenderer<'_> {
    pub(crate) fn render(&self, t: &TypeSig) -> Result<String> {
        let mut out = String::new();
        self.write(t, 0, &mut out)?;
        Ok(out)
    }

    /// The parameter list `(int, ref string)`; `out_params[i]` marks parameter `i` as `out`.
    pub(crate) fn params(&self, sig: &MethodSig, out_params: &[bool]) -> Result<String> {
        let mut out = String::from("(");
        for (i, p) in sig.params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if sig.sentinel == Some(i) {
                out.push_str("__arglist, ");
            }
            let is_out = out_params.get(i).copied().unwrap_or(false);
            match p.strip_modifiers() {
                TypeSig::ByRef(inner) if is_out => {
                    out.push_str("out ");
                    self.write(inner, 1, &mut out)?;
                }
                _ => self.write(p, 0, &mut out)?,
            }
        }
        if sig.call_conv == CallConv::VarArg && sig.sentinel.is_none() {
            if !sig.params.is_empty() {
                out.push_str(", ");
            }
            out.push_str("__arglist");
        }
        out.push(')');
        Ok(out)
    }

    fn named(&self, token: Token, args: &[String], depth: usize, out: &mut String) -> Result<()> {
        if token.table() == sys::mdtTypeSpec {
            // A TypeSpec standing where a TypeDef/TypeRef is expected: display its type.
            let blob = self.scope.type_spec(token)?;
            let t = TypeSig::parse(&blob)?;
            return self.write(&t, depth + 1, out);
        }
        out.push_str(&self.scope.type_path(token)?.display(args));
        Ok(())
    }

    fn write(&self, t: &TypeSig, depth: usize, out: &mut String) -> Result<()> {
        if depth > MAX_NAME_DEPTH {
            return Err(too_deep("signature type"));
        }
        if t.is_primitive() {
            out.push_str(primitive_keyword(t));
            return Ok(());
        }
        match t {
            TypeSig::Class(token) | TypeSig::ValueType(token) => {
                self.named(*token, &[], depth, out)?
            }
            TypeSig::GenericInst { generic, args, .. } => {
                let args = args
                    .iter()
                    .map(|a| {
                        let mut s = String::new();
                        self.write(a, depth + 1, &mut s).map(|()| s)
                    })
                    .collect::<Result<Vec<_>>>()?;
                self.named(*generic, &args, depth, out)?
            }
            TypeSig::Var(n) => match self.class_args.get(*n as usize) {
                Some(name) => out.push_str(name),
                None => out.push_str(&format!("!{n}")),
            },
            TypeSig::MVar(n) => match self.method_args.get(*n as usize) {
                Some(name) => out.push_str(name),
                None => out.push_str(&format!("!!{n}")),
            },
            TypeSig::SzArray(_) | TypeSig::Array(..) => {
                // C# order: the outermost array's brackets come first.
                let mut suffix = String::new();
                let mut cur = t;
                loop {
                    match cur {
                        TypeSig::SzArray(e) => {
                            suffix.push_str("[]");
                            cur = e;
                        }
                        TypeSig::Array(e, shape) => {
                            if shape.rank == 1 {
                                suffix.push_str("[*]");
                            } else {
                                suffix.push_str(&rank_suffix(shape.rank));
                            }
                            cur = e;
                        }
                        TypeSig::Modified { ty, .. } => cur = ty,
                        _ => break,
                    }
                }
                self.write(cur, depth + 1, out)?;
                out.push_str(&suffix);
            }
            TypeSig::ByRef(inner) => {
                out.push_str("ref ");
                self.write(inner, depth + 1, out)?;
            }
            TypeSig::Ptr(inner) => {
                self.write(inner, depth + 1, out)?;
                out.push('*');
            }
            TypeSig::Pinned(inner) => self.write(inner, depth + 1, out)?,
            TypeSig::Modified {
                required,
                modifier,
                ty,
            } => {
                if *required
                    && let TypeSig::ByRef(inner) = ty.strip_modifiers()
                    && self.is_in_attribute(*modifier)
                {
                    out.push_str("in ");
                    self.write(inner, depth + 1, out)?;
                } else {
                    self.write(ty, depth + 1, out)?;
                }
            }
            TypeSig::FnPtr(m) => {
                out.push_str("delegate*");
                match m.call_conv {
                    CallConv::Default | CallConv::VarArg => {}
                    CallConv::C => out.push_str(" unmanaged[Cdecl]"),
                    CallConv::StdCall => out.push_str(" unmanaged[Stdcall]"),
                    CallConv::ThisCall => out.push_str(" unmanaged[Thiscall]"),
                    CallConv::FastCall => out.push_str(" unmanaged[Fastcall]"),
                    _ => out.push_str(" unmanaged"),
                }
                out.push('<');
                for p in &m.params {
                    self.write(p, depth + 1, out)?;
                    out.push_str(", ");
                }
                self.write(&m.ret, depth + 1, out)?;
                out.push('>');
            }
            TypeSig::Internal(handle) => out.push_str(&format!("<internal {handle:#x}>")),
            _ => out.push('?'),
        }
        Ok(())
    }

    fn is_in_attribute(&self, modifier: Token) -> bool {
        modifier.table() != sys::mdtTypeSpec
            && self
                .scope
                .type_path(modifier)
                .is_ok_and(|p| p.display(&[]) == "System.Runtime.InteropServices.InAttribute")
    }
}

/// Declared generic parameter names of one TypeDef or MethodDef, by sequence.
type GenericNames = Arc<Vec<String>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes and caches display names of functions, classes, modules and metadata tokens.
///
/// One `Namer` is meant to live as long as the profiler (e.g. in the profiler struct) and be
/// shared by every callback thread: all methods take `&self`, the caches are behind mutexes
/// that are never held while calling into the runtime, and `Namer` is `Send + Sync`. Two
/// threads naming the same new id at once may both compute it; the results are equal.
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
struct Scope<'a> {
    namer: &'a Namer,
    module: ModuleId,
    import: &'a MetaDataImport,
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

impl Scope<'_> {
    /// Declared names of the generic parameters of a TypeDef or MethodDef (empty when the
    /// metadata cannot tell).
    fn generic_params(&self, owner: Token) -> Result<Arc<Vec<String>>> {
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
/// arguments: each argument's class name, except that `__Canon` (and a missing argument)
/// shows the parameter's declared name (or `!n`/`!!n` with `marker`).
fn merge_args(declared: &[String], actual: &[String], count: usize, marker: &str) -> Vec<String> {
    (0..count)
        .map(|i| match actual.get(i) {
            Some(a) if a != CANON => a.clone(),
            _ => declared
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
    }

    /// Forgets a class's name, e.g. from `ClassUnloadStarted`.
    pub fn forget_class(&self, class: ClassId) {
        lock(&self.classes).remove(&class);
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

    fn metadata_required(&self, info: &ProfilerInfo, module: ModuleId) -> Result<MetaDataImport> {
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
    /// `int[,]`, `Demo.Outer.Inner`, `Demo.Point`. Shared canonical instantiations show their
    /// parameter names (`System.Collections.Generic.List<T>`).
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
    /// substituted. Uses `GetFunctionInfo2` (without a frame) and `GetClassIDInfo2`.
    pub fn get_function_name(
        &self,
        info: &ProfilerInfo,
        function: FunctionId,
    ) -> Result<FunctionName> {
        if let Some(n) = lock(&self.functions).get(&function) {
            return Ok(n.clone());
        }
        let fi = info.get_function_info2(function, FrameInfo::NULL)?;
        let class_args = if fi.class.is_null() {
            None
        } else {
            let ci = info.get_class_id_info2(fi.class)?;
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
        name.class = fi.class;
        lock(&self.functions).insert(function, name.clone());
        Ok(name)
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

    fn method_name(
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

        let mut method_name = props.name;
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
        let signature = renderer.params(&sig, &out_params)?;
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

fn primitive_keyword(t: &TypeSig) -> &'static str {
    match t {
        TypeSig::Void => "void",
        TypeSig::Boolean => "bool",
        TypeSig::Char => "char",
        TypeSig::I1 => "sbyte",
        TypeSig::U1 => "byte",
        TypeSig::I2 => "short",
        TypeSig::U2 => "ushort",
        TypeSig::I4 => "int",
        TypeSig::U4 => "uint",
        TypeSig::I8 => "long",
        TypeSig::U8 => "ulong",
        TypeSig::R4 => "float",
        TypeSig::R8 => "double",
        TypeSig::I => "nint",
        TypeSig::U => "nuint",
        TypeSig::String => "string",
        TypeSig::Object => "object",
        TypeSig::TypedByRef => "System.TypedReference",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module with a few types, by token.
    struct FakeScope;

    const LIST: Token = Token(0x0100_0001);
    const DICT: Token = Token(0x0100_0002);
    const OUTER_INNER: Token = Token(0x0200_0003);
    const GOUTER_INNER: Token = Token(0x0200_0004);
    const INT32: Token = Token(0x0100_0005);
    const IN_ATTR: Token = Token(0x0100_0006);
    const SPEC: Token = Token(0x1b00_0001);

    impl TypeScope for FakeScope {
        fn type_path(&self, token: Token) -> Result<Arc<TypePath>> {
            let names: &[&str] = match token {
                LIST => &["System.Collections.Generic.List`1"],
                DICT => &["System.Collections.Generic.Dictionary`2"],
                OUTER_INNER => &["Demo.Outer", "Inner"],
                GOUTER_INNER => &["Demo.GOuter`1", "Inner`1"],
                INT32 => &["System.Int32"],
                IN_ATTR => &["System.Runtime.InteropServices.InAttribute"],
                _ => {
                    return Err(Error::InvalidData {
                        context: "fake",
                        reason: format!("{token}"),
                    });
                }
            };
            Ok(Arc::new(TypePath::new(names)))
        }

        fn type_spec(&self, token: Token) -> Result<Vec<u8>> {
            assert_eq!(token, SPEC);
            // List<int>: GENERICINST CLASS TypeRef 1 (encoded 0x05) 1 I4
            Ok(vec![0x15, 0x12, 0x05, 0x01, 0x08])
        }
    }

    fn render(blob: &[u8], class_args: &[&str], method_args: &[&str]) -> String {
        let class_args: Vec<String> = class_args.iter().map(|s| s.to_string()).collect();
        let method_args: Vec<String> = method_args.iter().map(|s| s.to_string()).collect();
        let r = SigRenderer {
            scope: &FakeScope,
            class_args: &class_args,
            method_args: &method_args,
        };
        r.render(&TypeSig::parse(blob).unwrap()).unwrap()
    }

    fn params(blob: &[u8], class_args: &[&str], method_args: &[&str], outs: &[bool]) -> String {
        let class_args: Vec<String> = class_args.iter().map(|s| s.to_string()).collect();
        let method_args: Vec<String> = method_args.iter().map(|s| s.to_string()).collect();
        let r = SigRenderer {
            scope: &FakeScope,
            class_args: &class_args,
            method_args: &method_args,
        };
        r.params(&MethodSig::parse(blob).unwrap(), outs).unwrap()
    }

    #[test]
    fn type_paths_strip_arity_and_place_arguments() {
        let p = TypePath::new(&["System.Collections.Generic.Dictionary`2"]);
        assert_eq!(
            p.display(&["string".into(), "int".into()]),
            "System.Collections.Generic.Dictionary<string, int>"
        );
        let p = TypePath::new(&["Demo.GOuter`1", "Inner`1"]);
        assert_eq!(
            p.display(&["int".into(), "string".into()]),
            "Demo.GOuter<int>.Inner<string>"
        );
        let p = TypePath::new(&["Demo.GOuter`1", "Inner"]);
        assert_eq!(p.display(&["int".into()]), "Demo.GOuter<int>.Inner");
        // No arity suffix (not a C#-style name): arguments at the end.
        let p = TypePath::new(&["Odd"]);
        assert_eq!(p.display(&["int".into()]), "Odd<int>");
        // A backtick without a number is part of the name.
        let p = TypePath::new(&["We`ird"]);
        assert_eq!(p.display(&[]), "We`ird");
        assert_eq!(TypePath::new(&["System.Int32"]).display(&[]), "int");
        assert_eq!(TypePath::new(&["System.Decimal"]).display(&[]), "decimal");
        assert_eq!(TypePath::new(&["System.IntPtr"]).display(&[]), "nint");
        // Only a top-level System type is a keyword.
        assert_eq!(
            TypePath::new(&["Demo.Outer", "System.Int32"]).display(&[]),
            "Demo.Outer.System.Int32"
        );
    }

    #[test]
    fn primitives_use_keywords() {
        assert_eq!(render(&[0x08], &[], &[]), "int");
        assert_eq!(render(&[0x0e], &[], &[]), "string");
        assert_eq!(render(&[0x1c], &[], &[]), "object");
        assert_eq!(render(&[0x02], &[], &[]), "bool");
        assert_eq!(render(&[0x0d], &[], &[]), "double");
        assert_eq!(render(&[0x0b], &[], &[]), "ulong");
        assert_eq!(render(&[0x18], &[], &[]), "nint");
        assert_eq!(render(&[0x19], &[], &[]), "nuint");
        assert_eq!(render(&[0x16], &[], &[]), "System.TypedReference");
        // System.Int32 named through a TypeRef is a keyword too.
        assert_eq!(render(&[0x11, 0x15], &[], &[]), "int");
    }

    #[test]
    fn generic_instantiations() {
        // Dictionary<string, List<int>>
        assert_eq!(
            render(
                &[0x15, 0x12, 0x09, 0x02, 0x0e, 0x15, 0x12, 0x05, 0x01, 0x08],
                &[],
                &[]
            ),
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>"
        );
        // GOuter<T>.Inner<!!0>, with class args [T] and no method args
        assert_eq!(
            render(
                &[0x15, 0x12, 0x10, 0x02, 0x13, 0x00, 0x1e, 0x00],
                &["T"],
                &[]
            ),
            "Demo.GOuter<T>.Inner<!!0>"
        );
        // A TypeSpec where a class token is expected.
        assert_eq!(
            render(&[0x12, 0x06], &[], &[]),
            "System.Collections.Generic.List<int>"
        );
    }

    #[test]
    fn nested_types_use_dots() {
        // OUTER_INNER is TypeDef 3: encoded (3 << 2) | 0 = 0x0c
        assert_eq!(render(&[0x12, 0x0c], &[], &[]), "Demo.Outer.Inner");
    }

    #[test]
    fn arrays_in_csharp_order() {
        assert_eq!(render(&[0x1d, 0x08], &[], &[]), "int[]");
        assert_eq!(render(&[0x1d, 0x1d, 0x0e], &[], &[]), "string[][]");
        assert_eq!(render(&[0x14, 0x08, 0x02, 0x00, 0x00], &[], &[]), "int[,]");
        assert_eq!(render(&[0x14, 0x08, 0x03, 0x00, 0x00], &[], &[]), "int[,,]");
        // An array of two-dimensional arrays: int[][,]
        assert_eq!(
            render(&[0x1d, 0x14, 0x08, 0x02, 0x00, 0x00], &[], &[]),
            "int[][,]"
        );
        // A two-dimensional array of arrays: int[,][]
        assert_eq!(
            render(&[0x14, 0x1d, 0x08, 0x02, 0x00, 0x00], &[], &[]),
            "int[,][]"
        );
        // Rank 1, not zero-based
        assert_eq!(
            render(&[0x14, 0x08, 0x01, 0x00, 0x01, 0x02], &[], &[]),
            "int[*]"
        );
        assert_eq!(render(&[0x1d, 0x1e, 0x00], &[], &["TIn"]), "TIn[]");
    }

    #[test]
    fn refs_pointers_and_modifiers() {
        assert_eq!(render(&[0x10, 0x08], &[], &[]), "ref int");
        assert_eq!(render(&[0x0f, 0x08], &[], &[]), "int*");
        assert_eq!(render(&[0x0f, 0x0f, 0x01], &[], &[]), "void**");
        assert_eq!(render(&[0x1d, 0x0f, 0x08], &[], &[]), "int*[]");
        assert_eq!(render(&[0x45, 0x0e], &[], &[]), "string");
        // modopt(TypeRef 1) int: modifiers are not shown
        assert_eq!(render(&[0x20, 0x05, 0x08], &[], &[]), "int");
        // modreq(InAttribute) ref int: C# `in`
        assert_eq!(render(&[0x1f, 0x19, 0x10, 0x08], &[], &[]), "in int");
        // modreq(other) ref int stays `ref`
        assert_eq!(render(&[0x1f, 0x05, 0x10, 0x08], &[], &[]), "ref int");
        // delegate*<int, string> and an unmanaged cdecl one
        assert_eq!(
            render(&[0x1b, 0x00, 0x01, 0x0e, 0x08], &[], &[]),
            "delegate*<int, string>"
        );
        assert_eq!(
            render(&[0x1b, 0x01, 0x00, 0x01], &[], &[]),
            "delegate* unmanaged[Cdecl]<void>"
        );
    }

    #[test]
    fn generic_parameters_fall_back_to_positions() {
        assert_eq!(render(&[0x13, 0x01], &["T"], &[]), "!1");
        assert_eq!(render(&[0x1e, 0x00], &[], &[]), "!!0");
        assert_eq!(render(&[0x13, 0x00], &["int"], &[]), "int");
    }

    #[test]
    fn parameter_lists() {
        // (!0 item, int count)
        assert_eq!(
            params(&[0x20, 0x02, 0x01, 0x13, 0x00, 0x08], &["int"], &[], &[]),
            "(int, int)"
        );
        assert_eq!(params(&[0x00, 0x00, 0x01], &[], &[], &[]), "()");
        // (ref int, out int)
        assert_eq!(
            params(
                &[0x00, 0x02, 0x01, 0x10, 0x08, 0x10, 0x08],
                &[],
                &[],
                &[false, true]
            ),
            "(ref int, out int)"
        );
        // vararg definition, and a call site with a sentinel
        assert_eq!(
            params(&[0x05, 0x01, 0x01, 0x08], &[], &[], &[]),
            "(int, __arglist)"
        );
        assert_eq!(
            params(&[0x05, 0x02, 0x01, 0x08, 0x41, 0x0e], &[], &[], &[]),
            "(int, __arglist, string)"
        );
    }

    #[test]
    fn canon_arguments_show_declared_names() {
        let declared = vec!["TKey".to_string(), "TValue".to_string()];
        let actual = vec![CANON.to_string(), "int".to_string()];
        assert_eq!(merge_args(&declared, &actual, 2, "!"), ["TKey", "int"]);
        assert_eq!(merge_args(&[], &actual, 2, "!"), ["!0", "int"]);
        assert_eq!(
            merge_args(&declared, &[], 3, "!!"),
            ["TKey", "TValue", "!!2"]
        );
    }

    #[test]
    fn namer_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Namer>();
        check::<MetaDataImport>();
        let n = Namer::new();
        assert!(format!("{n:?}").starts_with("Namer"));
    }

    #[test]
    fn function_name_parts() {
        let f = FunctionName {
            type_name: "Demo.Box<int>".into(),
            method_name: "Put".into(),
            signature: "(int, int)".into(),
            module: ModuleId(1),
            token: Token(0x0600_0001),
            class: ClassId(2),
        };
        assert_eq!(f.full_name(), "Demo.Box<int>.Put(int, int)");
        assert_eq!(f.to_string(), f.full_name());
        assert_eq!(f.qualified_name(), "Demo.Box<int>.Put");
    }
}
