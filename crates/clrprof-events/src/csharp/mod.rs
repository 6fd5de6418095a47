//! Types and signatures spelled as C# spells them, whichever path named them: the SDK from
//! metadata (through [`TypePath`] and [`keyword`]), the CLI from the names the runtime writes
//! into its events ([`runtime_type_name`] for the reflection-style names of
//! `GCAllocationTick` and of the rundown's declaring types, [`il_signature`] for the
//! rundown's method signatures).
//!
//! The conventions (the SDK's `metadata::names` module describes them in full): namespaces
//! kept, nested types joined with `.` (`Demo.Outer.Inner`), generic arguments in angle
//! brackets on the type that declares them (`Demo.Outer<int>.Inner<string>`), the C#
//! keywords for the types that have one (`int`, `nint`, `string`, `object`, ...), arrays in
//! C# order, the outermost first (`int[][,]` for an array of two-dimensional arrays), and
//! `__Canon` as a type argument where shared generic code stands for every reference type.

mod il;
mod runtime;

pub use il::{il_parameters, il_signature, il_type_name};
pub use runtime::{RuntimeType, runtime_type, runtime_type_name};

/// Deepest nesting (enclosing types, type arguments of type arguments, ...) a name is
/// followed to; a deeper one is not named.
pub const MAX_NAME_DEPTH: usize = 48;

/// The full name of the placeholder type of shared generic code.
pub const CANON: &str = "System.__Canon";

/// How a type argument that stands for every reference type is shown: `Two<int, __Canon>`.
pub const CANON_ARG: &str = "__Canon";

/// The C# keyword of a framework type (`System.Int32` is `int`, `System.IntPtr` is `nint`),
/// if it has one.
pub fn keyword(full_name: &str) -> Option<&'static str> {
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

/// A displayed type as a type argument: `System.__Canon` is `__Canon`
/// (`Two<int, __Canon>`), every other name stays.
pub fn type_argument(displayed: String) -> String {
    if displayed == CANON {
        CANON_ARG.to_string()
    } else {
        displayed
    }
}

/// A type's name as metadata spells it, split into its nesting levels, outermost first:
/// `` ["Demo.GOuter`1", "Inner`1"] `` for the type C# calls `Demo.GOuter<T>.Inner<U>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypePath {
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

    /// The path of the nesting levels `outermost_first` (the first with its namespace).
    pub fn new<S: AsRef<str>>(outermost_first: &[S]) -> TypePath {
        TypePath {
            levels: outermost_first
                .iter()
                .map(|s| Self::level(s.as_ref()))
                .collect(),
        }
    }

    /// The total number of generic parameters the names announce.
    pub fn arity(&self) -> usize {
        self.levels.iter().map(|(_, a)| *a as usize).sum()
    }

    /// The display name with `args` (already displayed) as the type arguments, each level
    /// taking as many as its arity announces; when the arities do not add up to the
    /// arguments (names without arity suffixes, or a nested type named without the types that
    /// enclose it), all the arguments go at the end.
    pub fn display(&self, args: &[String]) -> String {
        if args.is_empty()
            && let [(name, 0)] = self.levels.as_slice()
            && let Some(keyword) = keyword(name)
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

/// Appends `<a, b>`.
pub fn push_args(out: &mut String, args: &[String]) {
    out.push('<');
    out.push_str(&args.join(", "));
    out.push('>');
}

/// `[]`, `[,]`, ... for an array of `rank` dimensions.
pub fn rank_suffix(rank: u32) -> String {
    let mut s = String::from("[");
    for _ in 1..rank.max(1) {
        s.push(',');
    }
    s.push(']');
    s
}

/// Splits at the commas that are not inside brackets of any kind.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if !s.trim().is_empty() {
        parts.push(&s[from..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_paths_strip_arity_and_place_arguments() {
        let p = TypePath::new(&["System.Collections.Generic.Dictionary`2"]);
        assert_eq!(p.arity(), 2);
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
        // No arity suffix (not a C#-style name), or too few: arguments at the end.
        let p = TypePath::new(&["Odd"]);
        assert_eq!(p.display(&["int".into()]), "Odd<int>");
        let p = TypePath::new(&["Inner`1"]);
        assert_eq!(
            p.display(&["int".into(), "string".into()]),
            "Inner<int, string>"
        );
        // A backtick without a number is part of the name.
        let p = TypePath::new(&["We`ird"]);
        assert_eq!(p.display(&[]), "We`ird");
        assert_eq!(TypePath::new(&["System.Int32"]).display(&[]), "int");
        assert_eq!(TypePath::new(&["System.Decimal"]).display(&[]), "decimal");
        assert_eq!(TypePath::new(&["System.IntPtr"]).display(&[]), "nint");
        assert_eq!(TypePath::new(&["System.UIntPtr"]).display(&[]), "nuint");
        // Only a top-level System type is a keyword.
        assert_eq!(
            TypePath::new(&["Demo.Outer", "System.Int32"]).display(&[]),
            "Demo.Outer.System.Int32"
        );
    }

    #[test]
    fn keywords_and_type_arguments() {
        assert_eq!(keyword("System.Void"), Some("void"));
        assert_eq!(keyword("System.IntPtr"), Some("nint"));
        assert_eq!(keyword("System.TypedReference"), None);
        assert_eq!(keyword("IntPtr"), None);
        assert_eq!(type_argument("System.__Canon".into()), "__Canon");
        assert_eq!(type_argument("System.__Canon[]".into()), "System.__Canon[]");
        assert_eq!(rank_suffix(1), "[]");
        assert_eq!(rank_suffix(0), "[]");
        assert_eq!(rank_suffix(3), "[,,]");
    }

    #[test]
    fn top_level_commas() {
        assert_eq!(
            split_top_level("a,b<c,d>,e[f,g]"),
            ["a", "b<c,d>", "e[f,g]"]
        );
        assert_eq!(split_top_level(""), Vec::<&str>::new());
        assert_eq!(split_top_level(" "), Vec::<&str>::new());
    }
}
