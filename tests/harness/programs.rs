//! Facts of the test programs that more than one test asserts, written once beside the
//! comment of the program that states them.

/// Every call `tests/programs/Traced.cs` makes, all threads together, by the name reports
/// give each method (see the program's header).
pub const TRACED_CALLS: &[(&str, u64)] = &[
    ("Program.Main(string[])", 1),
    ("Work.Run(int)", 3),
    ("Work.Step(int)", 6000),
    ("Work.Leaf(int)", 3000),
    ("Work.Short()", 20),
    ("Tail.Caller(long)", 100),
    ("Tail.Callee(long, long)", 100),
    ("Thrower.Catch()", 10),
    ("Thrower.L1()", 10),
    ("Thrower.L2()", 10),
    ("Thrower.L3()", 10),
    ("Thrower.L4()", 10),
    ("Thrower.L5()", 10),
    ("Thrower.After()", 10),
    ("Deep.Start()", 1),
    ("Deep.Recurse(int)", 60_000),
];
