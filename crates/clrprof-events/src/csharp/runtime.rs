//! Type names as the runtime writes them into its events (`TypeHandle::GetName`: reflection's
//! format without assembly names), in C#.
//!
//! The format: the namespace-qualified name of the outermost type, each nested type after a
//! `+`, each with its arity suffix (`` Outer`1+Inner`1 ``); then all the type arguments in
//! one pair of brackets (`[System.Int32,System.String]`, an argument that names its assembly
//! in brackets of its own: `[[System.Int32, System.Private.CoreLib]]`); then, element type
//! first, `*` for a pointer, `&` for a by-ref, and `[]`, `[,]` or `[*]` for an array. A
//! character that would read as one of these is escaped with `\`. `GCAllocationTick` names a
//! nested type by its own name only (``Inner`1[System.Int32,System.String]``): the runtime's
//! name has no enclosing type to show.

use super::{MAX_NAME_DEPTH, TypePath, type_argument};

/// A runtime type name read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeType {
    /// As C# spells it: `System.Collections.Generic.Dictionary<nint, string>`.
    pub name: String,
    /// Its type arguments as C# spells them, in order (of the enclosing types first), with
    /// `__Canon` for the placeholder of shared generic code: what `!0`, `!1`, ... of its
    /// methods' signatures stand for.
    pub type_args: Vec<String>,
}

/// A runtime type name in C#: ``System.Collections.Generic.Dictionary`2[System.IntPtr,System.String]``
/// is `System.Collections.Generic.Dictionary<nint, string>`, `System.Char[,][]` (an array of
/// two-dimensional arrays) is `char[][,]`, ``Demo.Outer`1+Inner`1[System.Int32,System.__Canon]``
/// is `Demo.Outer<int>.Inner<__Canon>`. A name that does not read as one is kept as it is.
pub fn runtime_type_name(name: &str) -> String {
    runtime_type(name).name
}

/// A runtime type name read: its C# spelling and its type arguments (see
/// [`runtime_type_name`]).
pub fn runtime_type(name: &str) -> RuntimeType {
    let name = name.trim();
    let mut p = Parser { s: name, pos: 0 };
    match p.parse(0) {
        Some(parsed) if p.pos == name.len() => RuntimeType {
            name: parsed.display(),
            type_args: parsed.args,
        },
        _ => RuntimeType {
            name: name.to_string(),
            type_args: Vec::new(),
        },
    }
}

/// What follows a type's name and arguments, element type first.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Suffix {
    Pointer,
    ByRef,
    /// `[]`, `[,]`, `[*]`: the brackets as written.
    Array(String),
}

/// A type read: its nesting levels, its arguments (displayed) and its suffixes.
struct Parsed {
    levels: Vec<String>,
    args: Vec<String>,
    suffixes: Vec<Suffix>,
}

impl Parsed {
    fn display(&self) -> String {
        let mut out = TypePath::new(&self.levels).display(&self.args);
        let mut by_ref = false;
        // C# writes arrays of arrays outermost first, reflection innermost first: each run of
        // array brackets is reversed; pointers stay with their element type.
        let mut run: Vec<&str> = Vec::new();
        for suffix in &self.suffixes {
            match suffix {
                Suffix::Array(brackets) => run.push(brackets),
                other => {
                    run.drain(..).rev().for_each(|b| out.push_str(b));
                    match other {
                        Suffix::Pointer => out.push('*'),
                        _ => by_ref = true,
                    }
                }
            }
        }
        run.drain(..).rev().for_each(|b| out.push_str(b));
        if by_ref {
            out.insert_str(0, "ref ");
        }
        out
    }
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let is = self.peek() == Some(c);
        if is {
            self.pos += 1;
        }
        is
    }

    fn parse(&mut self, depth: usize) -> Option<Parsed> {
        if depth > MAX_NAME_DEPTH {
            return None;
        }
        let mut levels = vec![self.segment()?];
        while self.eat(b'+') {
            levels.push(self.segment()?);
        }
        let mut args = Vec::new();
        if self.peek() == Some(b'[') && !self.at_array_brackets() {
            self.pos += 1;
            loop {
                args.push(type_argument(self.argument(depth)?));
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        let mut suffixes = Vec::new();
        loop {
            match self.peek() {
                Some(b'*') => {
                    self.pos += 1;
                    suffixes.push(Suffix::Pointer);
                }
                Some(b'&') => {
                    self.pos += 1;
                    suffixes.push(Suffix::ByRef);
                }
                Some(b'[') if self.at_array_brackets() => {
                    let start = self.pos;
                    self.pos += 1;
                    while matches!(self.peek(), Some(b',' | b'*')) {
                        self.pos += 1;
                    }
                    if !self.eat(b']') {
                        return None;
                    }
                    suffixes.push(Suffix::Array(self.s[start..self.pos].to_string()));
                }
                _ => break,
            }
        }
        Some(Parsed {
            levels,
            args,
            suffixes,
        })
    }

    /// Whether the `[` here opens array brackets (`[]`, `[,]`, `[*]`) rather than type
    /// arguments.
    fn at_array_brackets(&self) -> bool {
        matches!(
            self.s.as_bytes().get(self.pos + 1),
            Some(b']' | b',' | b'*')
        )
    }

    /// One type argument: a type, or a type and its assembly in brackets.
    fn argument(&mut self, depth: usize) -> Option<String> {
        if !self.eat(b'[') {
            return Some(self.parse(depth + 1)?.display());
        }
        let arg = self.parse(depth + 1)?.display();
        // `, Assembly, Version=..., ...`: not shown.
        if self.eat(b',') {
            while self.peek().is_some_and(|c| c != b']') {
                self.pos += 1;
            }
        }
        self.eat(b']').then_some(arg)
    }

    /// One level of a name, unescaped; `None` if empty.
    fn segment(&mut self) -> Option<String> {
        let mut out = String::new();
        while let Some(c) = self.s[self.pos..].chars().next() {
            match c {
                '+' | '[' | ']' | ',' | '*' | '&' => break,
                '\\' => {
                    self.pos += 1;
                    let escaped = self.s[self.pos..].chars().next()?;
                    out.push(escaped);
                    self.pos += escaped.len_utf8();
                }
                _ => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        let out = out.trim().to_string();
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_types_get_their_keywords() {
        assert_eq!(runtime_type_name("System.Int32"), "int");
        assert_eq!(runtime_type_name("System.IntPtr[]"), "nint[]");
        assert_eq!(runtime_type_name("System.UIntPtr"), "nuint");
        assert_eq!(runtime_type_name("System.String[]"), "string[]");
        assert_eq!(runtime_type_name("  System.Object "), "object");
        assert_eq!(runtime_type_name("Memory.Small"), "Memory.Small");
        assert_eq!(
            runtime_type_name("System.TypedReference"),
            "System.TypedReference"
        );
    }

    #[test]
    fn arrays_in_csharp_order() {
        assert_eq!(runtime_type_name("System.Byte[,]"), "byte[,]");
        // An array of two-dimensional arrays, and a two-dimensional array of arrays.
        assert_eq!(runtime_type_name("System.Char[,][]"), "char[][,]");
        assert_eq!(runtime_type_name("System.Char[][,]"), "char[,][]");
        assert_eq!(runtime_type_name("System.Int32[][][,,]"), "int[,,][][]");
        assert_eq!(runtime_type_name("System.Int32[*]"), "int[*]");
        // Pointers stay with their element type; a by-ref reads `ref`.
        assert_eq!(runtime_type_name("System.Int32*[,][]"), "int*[][,]");
        assert_eq!(runtime_type_name("System.Int32[]*"), "int[]*");
        assert_eq!(runtime_type_name("System.Int32&"), "ref int");
    }

    #[test]
    fn generic_arguments_go_on_the_types_that_declare_them() {
        assert_eq!(
            runtime_type_name(
                "System.Collections.Generic.Dictionary`2[System.IntPtr,System.String]"
            ),
            "System.Collections.Generic.Dictionary<nint, string>"
        );
        assert_eq!(
            runtime_type_name("System.Collections.Generic.List`1[System.Int32[]]"),
            "System.Collections.Generic.List<int[]>"
        );
        assert_eq!(
            runtime_type_name(
                "System.Collections.Generic.Dictionary`2[System.String,System.Collections.Generic.List`1[System.Int32]][]"
            ),
            "System.Collections.Generic.Dictionary<string, System.Collections.Generic.List<int>>[]"
        );
        let t = runtime_type("Memory.Outer`1+Inner`1[System.Int32,System.__Canon]");
        assert_eq!(t.name, "Memory.Outer<int>.Inner<__Canon>");
        assert_eq!(t.type_args, ["int", "__Canon"]);
        assert_eq!(runtime_type_name("Demo.Outer+Inner"), "Demo.Outer.Inner");
        // The placeholder of shared code is `__Canon` as an argument, itself alone.
        assert_eq!(
            runtime_type_name(
                "System.Collections.Generic.Dictionary`2[System.__Canon,System.Int32]"
            ),
            "System.Collections.Generic.Dictionary<__Canon, int>"
        );
        assert_eq!(runtime_type_name("System.__Canon"), "System.__Canon");
        // A nested type named without its enclosing types: the arguments at the end.
        assert_eq!(
            runtime_type_name("Inner`1[System.Int32,System.String]"),
            "Inner<int, string>"
        );
        assert_eq!(
            runtime_type("Memory.Program").type_args,
            Vec::<String>::new()
        );
    }

    #[test]
    fn assembly_qualified_arguments_and_escapes() {
        assert_eq!(
            runtime_type_name(
                "System.Collections.Generic.List`1[[System.Int32, System.Private.CoreLib, Version=4.0.0.0, Culture=neutral, PublicKeyToken=7cec85d7bea7798e]]"
            ),
            "System.Collections.Generic.List<int>"
        );
        assert_eq!(
            runtime_type_name(
                "System.Collections.Generic.Dictionary`2[[System.String, System.Private.CoreLib],[Demo.Item, Demo]]"
            ),
            "System.Collections.Generic.Dictionary<string, Demo.Item>"
        );
        assert_eq!(runtime_type_name("Demo.A\\+B+C"), "Demo.A+B.C");
        assert_eq!(
            runtime_type_name("Demo.<>c__DisplayClass0_0"),
            "Demo.<>c__DisplayClass0_0"
        );
    }

    #[test]
    fn what_does_not_read_as_a_name_stays_as_it_is() {
        for odd in [
            "",
            "System.Int32[",
            "List`1[System.Int32",
            "List`1[]x",
            "A[[B]",
            "+",
            "A+",
            "A,B",
            "A\\",
            "A]",
        ] {
            assert_eq!(runtime_type_name(odd), odd.trim(), "{odd:?}");
        }
        // Deeper than names are followed.
        let deep = format!("{}System.Int32{}", "L`1[".repeat(60), "]".repeat(60));
        assert_eq!(runtime_type_name(&deep), deep);
        let fine = format!("{}System.Int32{}", "L`1[".repeat(10), "]".repeat(10));
        assert_eq!(
            runtime_type_name(&fine),
            format!("{}int{}", "L<".repeat(10), ">".repeat(10))
        );
    }
}
