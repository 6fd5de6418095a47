//! End to end: native functions of a stripped library are told apart in sample mode, and
//! `clrprof report --symbols` names them afterwards exactly as a recording of the unstripped
//! library names them. Program: tests/programs/NativeWork.cs (most of its CPU in libcoreclr's
//! garbage collector).
//!
//! A library without a symbol table still has unwind information for every function (its
//! `.eh_frame` FDEs), so the agent records each native frame it cannot name as the start of
//! its function (`libcoreclr.so!+0x1f2a30`, the function's address in the ELF file) with the
//! module's GNU build id, and a symbol file of the same build names it later. On CoreCLR 3.1,
//! whose `libcoreclr.so` keeps its `.symtab`, the test strips a copy of the runtime's library
//! (`strip --strip-all` keeps the build id) and compares the two recordings, function by
//! function; .NET 8's `libcoreclr.so` is stripped as shipped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use clrprof_analysis::file_names::file_name;
use clrprof_analysis::trace::{LoadedTrace, load};
use clrprof_e2e::*;
use clrprof_symbols::{DEBUG_ROOT, SymbolFiles, SymbolTable, TableSource, build_id_hex, demangle};

const LIB: &str = "libcoreclr.so";

/// What NativeWork prints with its default count.
const DONE: &str = "native: done 127000000";

/// Fewest distinct unnamed libcoreclr functions a recording of NativeWork must show: its GC
/// work goes through dozens (about 100 to 180 were seen on each runtime).
const MIN_FUNCTIONS: usize = 20;

/// Records NativeWork on `dotnet`, checking it ran as it should.
#[track_caller]
fn record_on(dotnet: &'static Dotnet) -> (Recording, LoadedTrace) {
    let rec = record(&dotnet.compile("NativeWork"), &[], &[]);
    rec.output.assert_success();
    rec.output.assert_stdout_contains(DONE);
    let trace = load(&rec.trace).expect("the trace loads");
    (rec, trace)
}

/// One libcoreclr frame of a trace.
#[derive(Debug, Clone)]
struct Frame {
    /// The agent's name (empty if it had none).
    symbol: String,
    /// Where its function starts in the ELF file.
    function: u64,
    /// The name reports show.
    shown: String,
    /// The module's build id.
    build_id: String,
}

/// The native frames of libcoreclr in a trace.
fn coreclr_frames(t: &LoadedTrace) -> Vec<Frame> {
    let mut frames: Vec<Frame> = t
        .names
        .natives
        .values()
        .filter(|n| file_name(&n.library) == LIB)
        .map(|n| Frame {
            symbol: n.symbol.clone(),
            function: n.function,
            shown: t.names.native_frame(n.id).0,
            build_id: t
                .names
                .native_modules
                .get(&n.module)
                .map(|m| m.build_id.clone())
                .unwrap_or_default(),
        })
        .collect();
    frames.sort_by_key(|f| f.function);
    frames
}

/// The shown name of a frame the agent could not name.
fn offset_name(function: u64) -> String {
    format!("{LIB}!+{function:#x}")
}

/// Every libcoreclr frame is named or known by its function's start, never `[libcoreclr.so]`;
/// returns the unnamed ones.
#[track_caller]
fn assert_functions_apart(frames: &[Frame], build_id: &str) -> Vec<Frame> {
    assert!(!frames.is_empty(), "no libcoreclr frame at all");
    for f in frames {
        assert_ne!(
            f.function, 0,
            "a libcoreclr frame without its function: {f:?}"
        );
        assert_eq!(f.build_id, build_id, "{f:?}");
        let expected = if f.symbol.is_empty() {
            offset_name(f.function)
        } else {
            f.symbol.clone()
        };
        assert_eq!(f.shown, expected);
    }
    let unnamed: Vec<Frame> = frames
        .iter()
        .filter(|f| f.symbol.is_empty())
        .cloned()
        .collect();
    let starts: BTreeSet<u64> = unnamed.iter().map(|f| f.function).collect();
    assert_eq!(starts.len(), unnamed.len(), "one frame per function");
    assert!(
        unnamed.len() >= MIN_FUNCTIONS,
        "only {} unnamed libcoreclr functions: {unnamed:#?}",
        unnamed.len()
    );
    unnamed
}

/// A recording of NativeWork on a runtime whose libcoreclr is stripped (`exports` is the
/// table of that library: its exports only).
struct StrippedRecording {
    rec: Recording,
    trace: LoadedTrace,
    /// The frames of libcoreclr without a name.
    unnamed: Vec<Frame>,
    /// The function names of its folded stacks.
    names: BTreeSet<String>,
}

/// Records NativeWork on `dotnet`, whose libcoreclr is stripped, and checks that its functions
/// stay apart: one frame per function start, none inside an export the agent did not name,
/// each its own entry in the folded stacks, never `[libcoreclr.so]`.
#[track_caller]
fn record_stripped(
    dotnet: &'static Dotnet,
    exports: &SymbolTable,
    build_id: &str,
) -> StrippedRecording {
    assert_eq!(exports.source(), TableSource::Dynsym);
    let (rec, trace) = record_on(dotnet);
    let unnamed = assert_functions_apart(&coreclr_frames(&trace), build_id);
    for f in &unnamed {
        assert!(
            exports.lookup(f.function).is_none(),
            "an export the agent did not name: {f:?}"
        );
    }
    let (names, _) = folded(&rec, &[]);
    assert!(!names.contains("[libcoreclr.so]"), "{names:#?}");
    let shown: BTreeSet<String> = names
        .iter()
        .filter(|n| n.starts_with("libcoreclr.so!+"))
        .cloned()
        .collect();
    let expected: BTreeSet<String> = unnamed.iter().map(|f| offset_name(f.function)).collect();
    assert_eq!(shown, expected);
    StrippedRecording {
        rec,
        trace,
        unnamed,
        names,
    }
}

/// The function names of folded stacks (each line `a;b;c N`).
fn folded_names(folded: &str) -> BTreeSet<String> {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .flat_map(|(stack, _)| stack.split(';'))
        .map(str::to_string)
        .collect()
}

/// The names of `clrprof report TRACE --format folded ARGS` with the CPU metric and with the
/// wall-clock one (every sample is one or the other), every frame of every thread, and what
/// it said on stderr.
#[track_caller]
fn folded(rec: &Recording, args: &[&str]) -> (BTreeSet<String>, String) {
    let mut names = BTreeSet::new();
    let mut stderr = String::new();
    for metric in ["cpu", "wall"] {
        let mut all = vec![
            "--format",
            "folded",
            "--metric",
            metric,
            "--all-frames",
            "--thread",
            "all",
        ];
        all.extend_from_slice(args);
        let out = rec.report(&all);
        out.assert_success();
        names.extend(folded_names(&out.stdout_str()));
        stderr = out.stderr_str();
    }
    (names, stderr)
}

/// The function symbols of an ELF file, by demangled name: their start addresses.
fn starts_by_name(table: &SymbolTable) -> HashMap<String, BTreeSet<u64>> {
    let mut by_name: HashMap<String, BTreeSet<u64>> = HashMap::new();
    for (start, _, name) in table.iter() {
        by_name.entry(demangle(name)).or_default().insert(start);
    }
    by_name
}

#[test]
fn stripped_functions_stay_apart_and_symbol_files_name_them() {
    let dotnet = Dotnet::get();
    let original = dotnet.libcoreclr();
    let table = SymbolTable::from_path(&original, Path::new(DEBUG_ROOT)).expect("a table");
    let has_symtab = table.source() == TableSource::Symtab;
    assert_eq!(
        has_symtab,
        dotnet.libcoreclr_has_symtab(),
        "{} has a .symtab: {has_symtab}",
        original.display()
    );
    let build_id = build_id_hex(
        &clrprof_symbols::read_build_id(&original)
            .unwrap()
            .expect("libcoreclr.so has a GNU build id"),
    );
    if has_symtab {
        compare_with_a_stripped_copy(dotnet, &table, &build_id);
    } else {
        stripped_as_shipped(dotnet, &table, &build_id);
    }
}

/// CoreCLR 3.1: a stripped copy of libcoreclr gives offsets, which its unstripped original
/// names as a recording of the original does.
fn compare_with_a_stripped_copy(dotnet: &'static Dotnet, table: &SymbolTable, build_id: &str) {
    let original = dotnet.libcoreclr();
    let stripped = dotnet.with_stripped_libcoreclr();
    let exports =
        SymbolTable::from_path(&stripped.libcoreclr(), Path::new("/nonexistent")).unwrap();

    // Stripped: every frame of libcoreclr is a function, most of them unnamed.
    let StrippedRecording {
        rec,
        mut trace,
        unnamed,
        ..
    } = record_stripped(stripped, &exports, build_id);

    // Named from the original: each by the symbol that starts where its FDE starts. Code
    // that has an FDE but no symbol even in the original keeps its offset, as it does in a
    // recording of the original. (The PLT's stubs are named in both: from `.rela.plt`.)
    let no_symbol: BTreeSet<u64> = unnamed
        .iter()
        .map(|f| f.function)
        .filter(|&start| table.lookup(start).is_none())
        .collect();
    let nameable = unnamed.len() - no_symbol.len();
    assert!(nameable >= MIN_FUNCTIONS, "{no_symbol:#x?}");
    let by_name = starts_by_name(table);
    let mut files = SymbolFiles::open(std::slice::from_ref(&original)).unwrap();
    let naming = clrprof_analysis::native::name_frames(&mut trace, &mut files).clone();
    assert_eq!(naming.named as usize, nameable, "{naming:?}");
    assert_eq!(naming.files.len(), 1, "{naming:?}");
    assert_eq!(naming.files[0].module, LIB);
    assert_eq!(naming.files[0].build_id, build_id);
    assert_eq!(naming.files[0].frames as usize, nameable);
    assert!(naming.unmatched.is_empty(), "{naming:?}");
    let mut by_start: BTreeMap<u64, String> = BTreeMap::new();
    for f in coreclr_frames(&trace)
        .iter()
        .filter(|f| f.symbol.is_empty())
    {
        if no_symbol.contains(&f.function) {
            assert_eq!(f.shown, offset_name(f.function));
        } else {
            let (symbol, offset) = table.lookup(f.function).expect("a symbol");
            assert_eq!(offset, 0, "the FDE starts where the symbol starts: {f:?}");
            assert_eq!(f.shown, demangle(symbol), "{f:?}");
            assert!(
                by_name[&f.shown].contains(&f.function),
                "{} does not start at {:#x}",
                f.shown,
                f.function
            );
        }
        by_start.insert(f.function, f.shown.clone());
    }

    // What the CLI shows with --symbols: the same names; only code without a symbol keeps
    // its offset.
    let path = original.display().to_string();
    let (names, _) = folded(&rec, &["--symbols", &path]);
    let offsets: BTreeSet<String> = names
        .iter()
        .filter(|n| n.starts_with("libcoreclr.so!+"))
        .cloned()
        .collect();
    let expected: BTreeSet<String> = no_symbol.iter().map(|&s| offset_name(s)).collect();
    assert_eq!(offsets, expected);
    for name in by_start.values() {
        assert!(names.contains(name), "{name} not in {names:#?}");
    }
    let text = rec.report(&["--symbols", &path]);
    text.assert_success();
    let header = format!(
        "  symbols   {nameable} native frames named from symbol files ({LIB}: {nameable} from \
         {path}), "
    );
    assert!(text.stdout_str().contains(&header), "{}", text.stdout_str());

    // Unstripped: the agent names the same functions the same way.
    let (_, unstripped) = record_on(dotnet);
    let mut compared = 0;
    for f in coreclr_frames(&unstripped) {
        if f.symbol.is_empty() {
            assert!(
                table.lookup(f.function).is_none(),
                "unnamed, but the .symtab has a symbol there: {f:?}"
            );
            assert_eq!(f.shown, offset_name(f.function));
        } else {
            assert!(
                by_name[&f.shown].contains(&f.function),
                "{} does not start at {:#x}",
                f.shown,
                f.function
            );
        }
        if let Some(name) = by_start.get(&f.function) {
            assert_eq!(*name, f.shown, "the function at {:#x}", f.function);
            compared += 1;
        }
    }
    assert!(
        compared >= 5,
        "only {compared} functions in both recordings: {by_start:#?}"
    );
    eprintln!(
        "stripped libcoreclr: {} functions without a name, {nameable} named from {path} \
         ({} without a symbol there either); {compared} of them seen in the unstripped \
         recording, with the same names",
        unnamed.len(),
        no_symbol.len()
    );
}

/// .NET 8: libcoreclr is stripped as shipped; its functions stay apart, and a symbol file of
/// another build names none of them.
fn stripped_as_shipped(dotnet: &'static Dotnet, exports: &SymbolTable, build_id: &str) {
    let StrippedRecording {
        rec,
        trace,
        unnamed,
        names,
    } = record_stripped(dotnet, exports, build_id);
    eprintln!(
        "libcoreclr as shipped: {} functions without a name, {} named by exports",
        unnamed.len(),
        coreclr_frames(&trace).len() - unnamed.len()
    );

    // CoreCLR 3.1's libcoreclr is another build: it names nothing.
    let other = Dotnet::pinned_runtime("3.1.23").libcoreclr();
    let other_path = other.display().to_string();
    let (names_after, stderr) = folded(&rec, &["--symbols", &other_path]);
    assert_eq!(names_after, names);
    assert!(
        stderr.contains(&format!(
            "clrprof: 0 native frames named from symbol files, {} unnamed; {other_path} \
             matches no module of the trace",
            unnamed.len() + unnamed_elsewhere(&trace)
        )),
        "{stderr}"
    );
}

/// Frames without a name outside libcoreclr (the stripped host: `dotnet`, `libhostfxr.so`).
fn unnamed_elsewhere(t: &LoadedTrace) -> usize {
    t.names
        .natives
        .values()
        .filter(|n| n.symbol.is_empty() && !n.library.is_empty() && file_name(&n.library) != LIB)
        .count()
}

#[test]
fn a_bad_symbols_path_is_a_clear_error() {
    let rec = record(&compile("NativeWork"), &["rounds", "1"], &[]);
    rec.output.assert_success();
    let trace = rec.trace.display().to_string();
    let missing = rec.dir.path().join("no-such.debug");
    for (path, says) in [
        (missing.display().to_string(), "No such file or directory"),
        (trace.clone(), "not an ELF file"),
    ] {
        let out = rec.report(&["--symbols", &path]);
        assert_eq!(out.status.code(), Some(1), "{}", out.describe());
        let stderr = out.stderr_str();
        assert!(
            stderr.contains(&path) && stderr.contains(says) && stderr.contains("--symbols"),
            "{}",
            out.describe()
        );
        assert!(!stderr.contains("panicked"), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
}
