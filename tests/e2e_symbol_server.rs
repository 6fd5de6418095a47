//! End to end: `clrprof report --symbol-server URL` names the functions of a stripped native
//! library from its debug file on a symbol server, keeps the file in its cache, and names them
//! from the cache with the server gone, or `--offline`. Program: tests/programs/NativeSpin.cs,
//! whose CPU time is in two local functions of a stripped library of the tests
//! (tests/programs/NativeSpin.c, built with `cc`, its debug file split off with `objcopy
//! --only-keep-debug`, as .NET 8 ships `libcoreclr.so`). The server is a small HTTP server of
//! the harness on the loopback interface, serving a directory in the layout of the .NET
//! tools' symbol servers.
//!
//! Every other module with unnamed frames in the trace (.NET 8's `libcoreclr.so`, the host)
//! is looked up too, and not found: the test computes those requests from the trace.

use std::collections::BTreeSet;
use std::path::Path;

use clrprof_analysis::file_names::file_name;
use clrprof_analysis::trace::{LoadedTrace, load};
use clrprof_e2e::*;
use clrprof_symbols::{
    SymbolTable, TableSource, build_id_hex, demangle, read_build_id, store_keys,
};

/// What NativeSpin prints with its default rounds.
const DONE: &str = "nativespin: done 400";

/// The library's local functions, where its CPU time goes.
const FUNCTIONS: [&str; 2] = ["spin_mix", "spin_fold"];

/// A recording of NativeSpin on the stripped library, and what it needs to be checked.
struct Spin {
    rec: Recording,
    trace: LoadedTrace,
    lib: &'static NativeLib,
    /// The library's GNU build id, in hexadecimal.
    build_id: String,
}

#[track_caller]
fn record_spin() -> Spin {
    let lib = native_lib("NativeSpin");
    let stripped = SymbolTable::from_path(&lib.stripped(), Path::new("/nonexistent")).unwrap();
    assert_eq!(
        stripped.source(),
        TableSource::Dynsym,
        "the library is stripped"
    );
    let build_id = build_id_hex(
        &read_build_id(&lib.stripped())
            .unwrap()
            .expect("the library has a GNU build id"),
    );
    let dir = lib.stripped_dir.display().to_string();
    let rec = record_with_env(
        &compile("NativeSpin"),
        &[],
        &[],
        &[("LD_LIBRARY_PATH", &dir)],
    );
    rec.output.assert_success();
    rec.output.assert_stdout_contains(DONE);
    let trace = load(&rec.trace).expect("the trace loads");
    Spin {
        rec,
        trace,
        lib,
        build_id,
    }
}

/// Where each of [`FUNCTIONS`] starts in the library (its unstripped build's `.symtab`).
fn starts(lib: &NativeLib) -> Vec<u64> {
    let table = SymbolTable::from_path(&lib.unstripped, Path::new("/nonexistent")).unwrap();
    assert_eq!(table.source(), TableSource::Symtab);
    FUNCTIONS
        .iter()
        .map(|name| {
            table
                .iter()
                .find(|(_, _, n)| demangle(n) == *name)
                .unwrap_or_else(|| panic!("{name} is not in {}", lib.unstripped.display()))
                .0
        })
        .collect()
}

/// The names of `clrprof report TRACE --format folded --metric cpu ARGS`, and its stderr.
#[track_caller]
fn folded(rec: &Recording, args: &[&str]) -> (BTreeSet<String>, String) {
    let mut all = vec!["--format", "folded", "--metric", "cpu"];
    all.extend_from_slice(args);
    let out = rec.report(&all);
    out.assert_success();
    let names = out
        .stdout_str()
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .flat_map(|(stack, _)| stack.split(';'))
        .map(str::to_string)
        .collect();
    (names, out.stderr_str())
}

/// The keys a report asks a symbol server for: both keys of every module of the trace with a
/// frame neither the agent nor the library's debug file names, the debug file's only for the
/// library (whose debug file names more than its exports), each once.
fn expected_requests(t: &LoadedTrace, lib_build_id: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for frame in t.names.natives.values() {
        if !frame.symbol.is_empty() || frame.library.is_empty() || frame.function == 0 {
            continue;
        }
        let Some(module) = t.names.native_modules.get(&frame.module) else {
            continue;
        };
        let Some(id) = hex(&module.build_id) else {
            continue;
        };
        let all = store_keys(&file_name(&module.path), &id);
        let wanted = if module.build_id == lib_build_id {
            &all[..1]
        } else {
            &all[..]
        };
        keys.extend(wanted.iter().map(|k| k.as_path_str()));
    }
    keys
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// `clrprof: symbol server ...` lines of a report's stderr.
fn server_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("clrprof: symbol server"))
        .collect()
}

#[test]
fn a_symbol_server_names_a_stripped_library_then_its_cache_does() {
    let Spin {
        rec,
        trace,
        lib,
        build_id,
    } = record_spin();
    let offsets: Vec<String> = starts(lib)
        .iter()
        .map(|s| format!("{}!+{s:#x}", lib.file_name))
        .collect();

    // Without symbols: the two functions are told apart by their starts.
    let (unnamed, _) = folded(&rec, &[]);
    for (name, offset) in FUNCTIONS.iter().zip(&offsets) {
        assert!(unnamed.contains(offset), "{offset} not in {unnamed:#?}");
        assert!(!unnamed.contains(*name), "{unnamed:#?}");
    }

    // The debug file given directly names them: what the server must give too.
    let debug_file = lib.debug_file.display().to_string();
    let (with_file, _) = folded(&rec, &["--symbols", &debug_file]);
    for name in FUNCTIONS {
        assert!(with_file.contains(name), "{name} not in {with_file:#?}");
    }
    assert!(
        !with_file
            .iter()
            .any(|n| n.starts_with(&format!("{}!+", lib.file_name))),
        "{with_file:#?}"
    );

    // The server holds the debug file under its key, as the .NET tools' servers do.
    let store = temp_dir();
    let key = format!("_.debug/elf-buildid-sym-{build_id}/_.debug");
    let in_store = store.path().join(&key);
    std::fs::create_dir_all(in_store.parent().unwrap()).unwrap();
    std::fs::copy(&lib.debug_file, &in_store).unwrap();
    let server = SymbolServer::serve(store.path());
    let url = server.url();
    let cache = temp_dir();
    let cache_dir = cache.path().display().to_string();
    let from_server = [
        "--symbol-server",
        url.as_str(),
        "--symbol-cache",
        cache_dir.as_str(),
    ];
    let (named, stderr) = folded(&rec, &from_server);
    assert_eq!(named, with_file, "{stderr}");

    // What it was asked: each key once, the library's debug file found, the rest not.
    let expected = expected_requests(&trace, &build_id);
    assert!(expected.contains(&key), "{expected:#?}");
    let asked = server.requests();
    assert_eq!(
        asked.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "{stderr}"
    );
    assert_eq!(asked.len(), expected.len(), "each key once: {asked:#?}");
    let bytes = std::fs::metadata(&lib.debug_file).unwrap().len();
    let mut line = format!(
        "clrprof: symbol server {url}: downloaded {}'s debug file ({:.1} KiB)",
        lib.file_name,
        bytes as f64 / 1024.0
    );
    if expected.len() > 1 {
        line.push_str(&format!("; {} not found", expected.len() - 1));
    }
    assert_eq!(server_lines(&stderr), [line.as_str()], "{stderr}");
    eprintln!("asked {url}: {asked:#?}\n{line}");
    let cached = cache.path().join(&key);
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(&lib.debug_file).unwrap()
    );

    // The server gone, the cache names them: nothing is asked (its "not found" answers are
    // remembered), nothing said about servers, and the header names the cached file.
    drop(server);
    let (named, cached_stderr) = folded(&rec, &from_server);
    assert_eq!(named, with_file, "{cached_stderr}");
    assert!(server_lines(&cached_stderr).is_empty(), "{cached_stderr}");
    let (_, file_stderr) = folded(&rec, &["--symbols", &debug_file]);
    assert_eq!(
        summary(&cached_stderr),
        summary(&file_stderr).replace(&debug_file, &cached.display().to_string()),
        "{cached_stderr}"
    );

    // Offline, without a server: the same.
    let (named, stderr) = folded(&rec, &["--offline", "--symbol-cache", &cache_dir]);
    assert_eq!(named, with_file, "{stderr}");
    assert!(server_lines(&stderr).is_empty(), "{stderr}");

    // The environment variables say the same as the options.
    let out = report_with_env(
        &rec.trace,
        &["--format", "folded", "--metric", "cpu", "--offline"],
        &[("CLRPROF_SYMBOL_CACHE", &cache_dir)],
    );
    out.assert_success();
    for name in FUNCTIONS {
        assert!(out.stdout_str().contains(name), "{}", out.describe());
    }
}

/// The line of a report's stderr that says what the symbol files named.
fn summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("clrprof: ") && l.contains(" named from symbol files"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0].to_string()
}

/// The files under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_server_that_cannot_be_reached_costs_one_line_and_a_bad_one_is_an_error() {
    let Spin { rec, .. } = record_spin();
    let (unnamed, _) = folded(&rec, &[]);
    let url = refusing_url();
    let cache = temp_dir();
    let cache_dir = cache.path().display().to_string();
    let (names, stderr) = folded(
        &rec,
        &[
            "--symbol-server",
            &url,
            "--symbol-cache",
            &cache_dir,
            "--symbol-timeout",
            "5",
        ],
    );
    assert_eq!(names, unnamed, "{stderr}");
    let lines = server_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    eprintln!("{}", lines[0]);
    let prefix = format!("clrprof: symbol server {url}: ");
    assert!(
        lines[0].starts_with(&prefix)
            && lines[0].contains("refused")
            && lines[0].ends_with("; not asked again in this report"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Nothing was kept: the next report asks again.
    assert_eq!(files_under(cache.path()), Vec::<std::path::PathBuf>::new());

    // A server that is not a URL: a clear error before anything is read.
    for bad in ["symbols.example", "ftp://a/b"] {
        let out = rec.report(&["--symbol-server", bad]);
        assert_eq!(out.status.code(), Some(1), "{}", out.describe());
        let stderr = out.stderr_str();
        assert!(
            stderr.contains(bad) && stderr.contains("--symbol-server"),
            "{}",
            out.describe()
        );
        assert!(!stderr.contains("panicked"), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
}
