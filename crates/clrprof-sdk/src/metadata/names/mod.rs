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
//! - **Shared generic code**: the runtime compiles generic code once per instantiation over
//!   value types, and once for all the instantiations that differ only in reference-type
//!   arguments, over the placeholder type `System.__Canon`. Such a body is one function and
//!   is named as what it is: `__Canon` stands where a reference-type argument goes.
//!   `Two<int, string>.M` and `Two<int, object>.M` both run `Two<int, __Canon>.M(int,
//!   __Canon)`, a different body from `Two<__Canon, int>.M(__Canon, int)` (`Two<string,
//!   int>`); `Dictionary<string, string>` and `Dictionary<string, object>` share
//!   `System.Collections.Generic.Dictionary<__Canon, __Canon>`; a shared generic method is
//!   `Map<int, __Canon>`. `__Canon` is the runtime's own name for the placeholder, the one
//!   its stack traces, PerfView and dotnet-trace show. Which canonical class a shared body
//!   belongs to is found among the classes the runtime loaded ([`Namer::class_loaded`]);
//!   when the namer was not told about it (a profiler attached after the class was loaded),
//!   the class's type arguments print as the generic parameters' declared names
//!   (`Two<A, B>.M(A, B)`). `System.__Canon` named on its own prints as is.
//! - **Conversion operators** (`op_Implicit`, `op_Explicit`) show their return type after the
//!   parameters: `Money.op_Implicit(Money) -> int`. They are the one kind of C# method that
//!   can be overloaded by return type alone, so without it `implicit operator int(Money)` and
//!   `implicit operator long(Money)` would read the same.
//! - **Methods** keep their metadata names (`.ctor`, `.cctor`, `get_Count`, and compiler
//!   generated names such as `<Main>b__0_0` as the compiler emitted them); generic methods get
//!   their type arguments: `Map<int, string>`.
//! - **Modules** print as the file name of their path (`Names.dll`), or the metadata scope
//!   name for modules without a file.
//!
//! All lookups are cached by id; see [`Namer`]. The parts: `render` displays types and
//! signatures, `namer` makes and caches the names of runtime ids, `shared` finds the class
//! of shared generic code.

use std::fmt;

use crate::ids::{ClassId, ModuleId, Token};

mod callees;
mod namer;
mod render;
mod shared;

pub use callees::CallTarget;
pub use namer::Namer;
pub use render::csharp_keyword;

/// The name of a function, in parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionName {
    /// The declaring type, with its type arguments: `Demo.Box<int>`.
    pub type_name: String,
    /// The method name, with its own type arguments: `Put`, `Map<int, string>`, `.ctor`.
    pub method_name: String,
    /// The parameter types in parentheses: `(int, string)`; for a conversion operator
    /// followed by its return type: `(Money) -> int`.
    pub signature: String,
    /// The module that defines the method.
    pub module: ModuleId,
    /// The MethodDef token.
    pub token: Token,
    /// The declaring class's ClassID: for shared generic code the canonical class
    /// (`Two<int, __Canon>`); null when the runtime could not tell, or when named from a
    /// token.
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

#[cfg(test)]
mod tests {
    use super::*;

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
