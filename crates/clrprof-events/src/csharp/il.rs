//! Method signatures as the runtime prints them into its rundown (`MethodSignature`, the
//! runtime's `PrettyPrintSigInternalLegacy`), in C#.
//!
//! The format: the calling convention's words (`instance `, `generic `, `vararg `, ...), the
//! return type, two spaces, then the parameter types in parentheses, separated by commas
//! without spaces: `instance int64  (int32,int,value class Memory.Pair)`. A type is one of
//! IL's primitive names (`int32`, `unsigned int8`, `wchar`, `int` for a native integer, `refany`
//! for a typed reference), `class` or `value class` and the type's metadata name (a nested
//! type without its enclosing types) with its type arguments in angle brackets
//! (``class System.Collections.Generic.List`1<class System.String>``), `!N` for the type
//! argument N of the declaring type, `!!N` for the method's, then `[]`, `[,]`, `*` or `&`
//! after the element type. A `...` stands where the fixed arguments of a vararg call end.

use super::{MAX_NAME_DEPTH, TypePath, keyword, split_top_level};

/// The framework type of an IL primitive name.
fn primitive(name: &str) -> Option<&'static str> {
    Some(match name {
        "void" => "System.Void",
        "bool" => "System.Boolean",
        "wchar" | "char" => "System.Char",
        "int8" => "System.SByte",
        "unsigned int8" | "uint8" => "System.Byte",
        "int16" => "System.Int16",
        "unsigned int16" | "uint16" => "System.UInt16",
        "int32" => "System.Int32",
        "unsigned int32" | "uint32" => "System.UInt32",
        "int64" => "System.Int64",
        "unsigned int64" | "uint64" => "System.UInt64",
        "float32" => "System.Single",
        "float64" => "System.Double",
        "int" | "native int" => "System.IntPtr",
        "unsigned int" | "native unsigned int" => "System.UIntPtr",
        "string" => "System.String",
        "object" => "System.Object",
        "refany" | "typedref" => "System.TypedReference",
        _ => return None,
    })
}

/// One type of a rundown signature in C#: `int32` is `int`, `int` (a native integer) is
/// `nint`, `value class Memory.Pair` is `Memory.Pair`, ``class System.Collections.Generic.List`1<class System.String>[]``
/// is `System.Collections.Generic.List<string>[]`, `int64&` is `ref long`. `!N` is the
/// declaring type's argument N from `class_args` (as [`runtime_type`](super::runtime_type)
/// reads them), `!!N` the method's from `method_args`; one they do not have stays `!N`. A type
/// that does not read as one is kept as it is.
pub fn il_type_name(t: &str, class_args: &[String], method_args: &[String]) -> String {
    let t = t.trim();
    type_name(t, class_args, method_args, 0).unwrap_or_else(|| t.to_string())
}

fn type_name(
    t: &str,
    class_args: &[String],
    method_args: &[String],
    depth: usize,
) -> Option<String> {
    if depth > MAX_NAME_DEPTH {
        return None;
    }
    let t = t.trim();
    // What follows the element type, from the end: by-ref, pointers, arrays.
    if let Some(inner) = t.strip_suffix('&') {
        return Some(format!(
            "ref {}",
            type_name(inner, class_args, method_args, depth + 1)?
        ));
    }
    let mut base = t;
    let mut suffixes: Vec<&str> = Vec::new();
    loop {
        if let Some(inner) = base.strip_suffix('*') {
            suffixes.push("*");
            base = inner;
        } else if base.ends_with(']') {
            let open = base.rfind('[')?;
            let bounds = &base[open + 1..base.len() - 1];
            if !bounds
                .chars()
                .all(|c| c == ',' || c == '.' || c.is_ascii_digit())
            {
                return None;
            }
            suffixes.push(&base[open..]);
            base = &base[..open];
        } else {
            break;
        }
    }
    let mut out = element(base.trim(), class_args, method_args, depth)?;
    // `suffixes` holds them from the outermost in (IL writes the innermost first): C# writes
    // arrays of arrays outermost first, and a pointer stays with its element type.
    let mut pending_arrays: Vec<String> = Vec::new();
    for suffix in suffixes.iter().rev() {
        if *suffix == "*" {
            // The run of arrays before a pointer is its element type: in C# order too.
            pending_arrays
                .drain(..)
                .rev()
                .for_each(|a| out.push_str(&a));
            out.push('*');
        } else {
            pending_arrays.push(array_brackets(suffix));
        }
    }
    pending_arrays
        .into_iter()
        .rev()
        .for_each(|a| out.push_str(&a));
    Some(out)
}

/// `[]`, or the C# brackets of IL's `[0...,0...]` (bounds are not shown): `[,]`.
fn array_brackets(il: &str) -> String {
    let inner = &il[1..il.len() - 1];
    if inner.is_empty() {
        "[]".to_string()
    } else {
        let mut s = String::from("[");
        s.extend(std::iter::repeat_n(',', inner.matches(',').count()));
        s.push(']');
        s
    }
}

/// An element type: a primitive, a class or value class with its arguments, or a generic
/// parameter.
fn element(t: &str, class_args: &[String], method_args: &[String], depth: usize) -> Option<String> {
    if let Some(full) = primitive(t) {
        return Some(keyword(full).unwrap_or(full).to_string());
    }
    if let Some(n) = t.strip_prefix("!!") {
        let n: usize = n.parse().ok()?;
        return Some(method_args.get(n).cloned().unwrap_or_else(|| t.to_string()));
    }
    if let Some(n) = t.strip_prefix('!') {
        let n: usize = n.parse().ok()?;
        return Some(class_args.get(n).cloned().unwrap_or_else(|| t.to_string()));
    }
    let named = t
        .strip_prefix("class ")
        .or_else(|| t.strip_prefix("value class "))
        .or_else(|| t.strip_prefix("valuetype "))?
        .trim();
    let (name, args) = match named.find('<') {
        Some(open) => {
            let inner = named[open + 1..].strip_suffix('>')?;
            let args = split_top_level(inner)
                .into_iter()
                .map(|a| type_name(a, class_args, method_args, depth + 1))
                .collect::<Option<Vec<_>>>()?;
            (&named[..open], args)
        }
        None => (named, Vec::new()),
    };
    if name.is_empty() || name.contains(['<', '>', '(', ')', ',', ' ']) {
        return None;
    }
    Some(TypePath::new(&[name]).display(&args))
}

/// The parameter list of a rundown signature in C#: `void  (int32,class System.String)` is
/// `(int, string)`; `class_args` and `method_args` as for [`il_type_name`].
pub fn il_parameters(signature: &str, class_args: &[String], method_args: &[String]) -> String {
    let Some((_, params)) = split_signature(signature) else {
        return String::new();
    };
    let params: Vec<String> = split_top_level(params)
        .into_iter()
        .map(|p| match p.trim() {
            "..." => "__arglist".to_string(),
            p => il_type_name(p, class_args, method_args),
        })
        .collect();
    format!("({})", params.join(", "))
}

/// The signature of method `method` as the SDK names it from metadata: the parameters, and
/// for a conversion operator (`op_Implicit`, `op_Explicit`, which C# overloads by return
/// type) its return type too: `(Money) -> int`.
pub fn il_signature(
    method: &str,
    signature: &str,
    class_args: &[String],
    method_args: &[String],
) -> String {
    let params = il_parameters(signature, class_args, method_args);
    if !matches!(method, "op_Implicit" | "op_Explicit") {
        return params;
    }
    let Some((ret, _)) = split_signature(signature) else {
        return params;
    };
    format!("{params} -> {}", il_type_name(ret, class_args, method_args))
}

/// The return type (after the calling convention's words) and the parameter list (inside
/// the last parentheses) of a signature.
fn split_signature(signature: &str) -> Option<(&str, &str)> {
    let signature = signature.trim_end();
    let inner_end = signature.len().checked_sub(1)?;
    if !signature.ends_with(')') {
        return None;
    }
    // The parentheses that close the signature (a function pointer's come earlier).
    let mut depth = 0i32;
    let mut open = None;
    for (i, c) in signature.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let open = open?;
    let mut ret = signature[..open].trim();
    loop {
        let before = ret;
        for word in [
            "instance ",
            "explicit ",
            "generic ",
            "unmanaged cdecl ",
            "unmanaged stdcall ",
            "unmanaged thiscall ",
            "unmanaged fastcall ",
            "native vararg ",
            "vararg ",
        ] {
            ret = ret.strip_prefix(word).unwrap_or(ret);
        }
        if ret == before {
            break;
        }
    }
    Some((ret, &signature[open + 1..inner_end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn primitives_get_their_csharp_keywords() {
        for (il, cs) in [
            ("void", "void"),
            ("bool", "bool"),
            ("wchar", "char"),
            ("int8", "sbyte"),
            ("unsigned int8", "byte"),
            ("int16", "short"),
            ("unsigned int16", "ushort"),
            ("int32", "int"),
            ("unsigned int32", "uint"),
            ("int64", "long"),
            ("unsigned int64", "ulong"),
            ("float32", "float"),
            ("float64", "double"),
            ("int", "nint"),
            ("unsigned int", "nuint"),
            ("native int", "nint"),
            ("class System.String", "string"),
            ("class System.Object", "object"),
            ("refany", "System.TypedReference"),
        ] {
            assert_eq!(il_type_name(il, &[], &[]), cs, "{il}");
        }
    }

    #[test]
    fn classes_value_classes_arrays_pointers_and_refs() {
        assert_eq!(
            il_type_name("value class Memory.Pair", &[], &[]),
            "Memory.Pair"
        );
        assert_eq!(il_type_name("valuetype Money", &[], &[]), "Money");
        assert_eq!(
            il_type_name(
                "class System.Collections.Generic.List`1<class System.String>",
                &[],
                &[]
            ),
            "System.Collections.Generic.List<string>"
        );
        assert_eq!(
            il_type_name(
                "class System.Collections.Generic.Dictionary`2<int32,class System.Collections.Generic.List`1<int>>[]",
                &[],
                &[]
            ),
            "System.Collections.Generic.Dictionary<int, System.Collections.Generic.List<nint>>[]"
        );
        assert_eq!(il_type_name("unsigned int8[]", &[], &[]), "byte[]");
        assert_eq!(il_type_name("int32[0...,0...]", &[], &[]), "int[,]");
        // An array of two-dimensional arrays: IL writes the innermost first, C# the
        // outermost; and a two-dimensional array of arrays.
        assert_eq!(il_type_name("int32[0...,0...][]", &[], &[]), "int[][,]");
        assert_eq!(il_type_name("int32[][0...,0...]", &[], &[]), "int[,][]");
        assert_eq!(il_type_name("int64&", &[], &[]), "ref long");
        assert_eq!(il_type_name("int32*", &[], &[]), "int*");
        assert_eq!(il_type_name("int32*[]", &[], &[]), "int*[]");
        assert_eq!(
            il_type_name("class Inner`1<!0,!1>", &args(&["int", "__Canon"]), &[]),
            "Inner<int, __Canon>"
        );
    }

    #[test]
    fn generic_parameters_are_the_declaring_types_arguments() {
        let class = args(&["int", "__Canon"]);
        assert_eq!(il_type_name("!0", &class, &[]), "int");
        assert_eq!(il_type_name("!1[]", &class, &[]), "__Canon[]");
        assert_eq!(il_type_name("!2", &class, &[]), "!2");
        assert_eq!(il_type_name("!!0", &class, &[]), "!!0");
        assert_eq!(il_type_name("!!0", &class, &args(&["string"])), "string");
        assert_eq!(
            il_parameters("class Inner`1<!0,!1>  (!0,!1)", &class, &[]),
            "(int, __Canon)"
        );
    }

    #[test]
    fn parameter_lists() {
        assert_eq!(il_parameters("void  (int32)", &[], &[]), "(int)");
        assert_eq!(il_parameters("void  ()", &[], &[]), "()");
        assert_eq!(
            il_parameters(
                "int64  (int32,int,value class Memory.Pair,class System.Collections.Generic.List`1<class System.String>)",
                &[],
                &[]
            ),
            "(int, nint, Memory.Pair, System.Collections.Generic.List<string>)"
        );
        assert_eq!(
            il_parameters(
                "instance class System.String  (class System.String,unsigned int8[],int64&)",
                &[],
                &[]
            ),
            "(string, byte[], ref long)"
        );
        assert_eq!(
            il_parameters("class System.String  (unsigned int32,int32)", &[], &[]),
            "(uint, int)"
        );
        assert_eq!(
            il_parameters("vararg void  (int32,...,class System.String)", &[], &[]),
            "(int, __arglist, string)"
        );
        // A function pointer parameter: its own parentheses are inside.
        assert_eq!(
            il_parameters("void  (fnptr void  (int32),int32)", &[], &[]),
            "(fnptr void  (int32), int)"
        );
        assert_eq!(il_parameters("no parameters", &[], &[]), "");
    }

    #[test]
    fn conversion_operators_show_their_return_type() {
        assert_eq!(
            il_signature("op_Implicit", "int32  (value class Money)", &[], &[]),
            "(Money) -> int"
        );
        assert_eq!(
            il_signature(
                "op_Explicit",
                "class System.String  (value class Money)",
                &[],
                &[]
            ),
            "(Money) -> string"
        );
        assert_eq!(
            il_signature(
                "op_Explicit",
                "instance generic int  (value class Money)",
                &[],
                &[]
            ),
            "(Money) -> nint"
        );
        assert_eq!(
            il_signature("Parse", "int32  (class System.String)", &[], &[]),
            "(string)"
        );
    }

    #[test]
    fn what_does_not_read_as_a_type_stays_as_it_is() {
        for odd in [
            "class ",
            "class A<int32",
            "class A<>x",
            "pMT: 0x1234",
            "[module#1, token#02000001]",
            "!x",
            "int32[a]",
            "x]",
        ] {
            assert_eq!(il_type_name(odd, &[], &[]), odd.trim(), "{odd:?}");
        }
        let deep = format!("{}int32{}", "class L`1<".repeat(60), ">".repeat(60));
        assert_eq!(il_type_name(&deep, &[], &[]), deep);
    }
}
