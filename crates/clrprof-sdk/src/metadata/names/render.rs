//! Displaying types as C# spells them: a type's name split into nesting levels
//! ([`TypePath`]), and signature types rendered through one module's metadata
//! ([`SigRenderer`]). The conventions are in the [parent module](super).

use std::sync::Arc;

use clrprof_sys as sys;

use super::super::signature::{CallConv, MethodSig, TypeSig};
use crate::error::{Error, Result};
use crate::ids::Token;

/// The C# keyword of a framework type (`System.IntPtr` is `nint`), if it has one: the one
/// spelling every path that names types uses (`clrprof_events::csharp`).
pub use clrprof_events::csharp::keyword as csharp_keyword;
pub(super) use clrprof_events::csharp::{MAX_NAME_DEPTH, TypePath, push_args, rank_suffix};

pub(super) fn too_deep(context: &'static str) -> Error {
    Error::InvalidData {
        context,
        reason: format!("names nested deeper than {MAX_NAME_DEPTH} levels"),
    }
}

/// Where a signature's type tokens are looked up: one module's metadata.
pub(super) trait TypeScope {
    /// The name of a TypeDef or TypeRef.
    fn type_path(&self, token: Token) -> Result<Arc<TypePath>>;
    /// The signature blob of a TypeSpec.
    fn type_spec(&self, token: Token) -> Result<Vec<u8>>;
    /// The name of a runtime type handle (a ClassID) that a signature the runtime made holds
    /// (`ELEMENT_TYPE_INTERNAL`); `None` where no runtime is at hand.
    fn internal(&self, _handle: u64) -> Option<String> {
        None
    }
}

/// `System.ReadOnlySpan<char>` from the name of a generic type definition
/// (`System.ReadOnlySpan<T>`, as a class name shows it) and the displayed arguments.
pub(super) fn instantiate(definition: &str, args: &[String]) -> String {
    let base = match definition
        .strip_suffix('>')
        .and_then(|d| d.rfind('<').map(|i| &d[..i]))
    {
        Some(base) => base,
        None => definition,
    };
    let mut out = base.to_string();
    push_args(&mut out, args);
    out
}

/// Displays signature types: resolves tokens through a [`TypeScope`] and generic parameters
/// through the (already displayed) type arguments of the class and of the method.
pub(super) struct SigRenderer<'a> {
    pub(super) scope: &'a dyn TypeScope,
    pub(super) class_args: &'a [String],
    pub(super) method_args: &'a [String],
}

impl SigRenderer<'_> {
    pub(super) fn render(&self, t: &TypeSig) -> Result<String> {
        let mut out = String::new();
        self.write(t, 0, &mut out)?;
        Ok(out)
    }

    /// The parameter list `(int, ref string)`; `out_params[i]` marks parameter `i` as `out`.
    pub(super) fn params(&self, sig: &MethodSig, out_params: &[bool]) -> Result<String> {
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

    /// The type arguments of a generic instantiation at `depth`, each rendered on its own.
    fn type_args(&self, args: &[TypeSig], depth: usize) -> Result<Vec<String>> {
        args.iter()
            .map(|a| {
                let mut s = String::new();
                self.write(a, depth + 1, &mut s).map(|()| s)
            })
            .collect()
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
                let args = self.type_args(args, depth)?;
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
            TypeSig::Internal(handle) => match self.scope.internal(*handle) {
                Some(name) => out.push_str(&name),
                None => out.push_str(&format!("<internal {handle:#x}>")),
            },
            TypeSig::InternalGenericInst { generic, args } => {
                let args = self.type_args(args, depth)?;
                match self.scope.internal(*generic) {
                    Some(name) => out.push_str(&instantiate(&name, &args)),
                    None => {
                        out.push_str(&format!("<internal {generic:#x}>"));
                        push_args(out, &args);
                    }
                }
            }
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

pub(super) fn primitive_keyword(t: &TypeSig) -> &'static str {
    let full_name = match t {
        TypeSig::Void => "System.Void",
        TypeSig::Boolean => "System.Boolean",
        TypeSig::Char => "System.Char",
        TypeSig::I1 => "System.SByte",
        TypeSig::U1 => "System.Byte",
        TypeSig::I2 => "System.Int16",
        TypeSig::U2 => "System.UInt16",
        TypeSig::I4 => "System.Int32",
        TypeSig::U4 => "System.UInt32",
        TypeSig::I8 => "System.Int64",
        TypeSig::U8 => "System.UInt64",
        TypeSig::R4 => "System.Single",
        TypeSig::R8 => "System.Double",
        TypeSig::I => "System.IntPtr",
        TypeSig::U => "System.UIntPtr",
        TypeSig::String => "System.String",
        TypeSig::Object => "System.Object",
        TypeSig::TypedByRef => "System.TypedReference",
        _ => return "?",
    };
    csharp_keyword(full_name).unwrap_or(full_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instantiates_a_generic_definitions_name() {
        let args = ["char".to_string()];
        assert_eq!(
            instantiate("System.ReadOnlySpan<T>", &args),
            "System.ReadOnlySpan<char>"
        );
        assert_eq!(instantiate("Plain", &args), "Plain<char>");
    }

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

    /// `f` of a renderer over [`FakeScope`] with these generic arguments.
    fn with_renderer<T>(
        class_args: &[&str],
        method_args: &[&str],
        f: impl FnOnce(&SigRenderer<'_>) -> T,
    ) -> T {
        let class_args: Vec<String> = class_args.iter().map(|s| s.to_string()).collect();
        let method_args: Vec<String> = method_args.iter().map(|s| s.to_string()).collect();
        f(&SigRenderer {
            scope: &FakeScope,
            class_args: &class_args,
            method_args: &method_args,
        })
    }

    fn render(blob: &[u8], class_args: &[&str], method_args: &[&str]) -> String {
        with_renderer(class_args, method_args, |r| {
            r.render(&TypeSig::parse(blob).unwrap()).unwrap()
        })
    }

    fn params(blob: &[u8], class_args: &[&str], method_args: &[&str], outs: &[bool]) -> String {
        with_renderer(class_args, method_args, |r| {
            r.params(&MethodSig::parse(blob).unwrap(), outs).unwrap()
        })
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
}
