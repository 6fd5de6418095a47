//! Tests of symbol tables, debug files, demangling and user-given symbol files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use object::elf;

use crate::testelf::*;
use crate::*;

// ---- Tables from synthetic files ----

#[test]
fn among_equal_aliases_the_longer_name_is_kept_as_perf_keeps_it() {
    let local = |name, address| TestSym {
        bind: elf::STB_LOCAL,
        ..func(name, address, 0x40)
    };
    let symbols = [
        local("__memcpy_avx_unaligned_erms", 0x1100),
        local("__memmove_avx_unaligned_erms", 0x1100),
    ];
    let table = read(&build_elf(Some(&symbols), None, Vec::new())).expect("a table");
    assert_eq!(
        name_at(&table, 0x1104),
        Some(("__memmove_avx_unaligned_erms".into(), 4))
    );
}

#[test]
fn lookup_by_address_and_size() {
    let hidden = TestSym {
        bind: elf::STB_LOCAL,
        ..func("hidden_alias", 0x1200, 0x10)
    };
    let weak = TestSym {
        bind: elf::STB_WEAK,
        ..func("open", 0x1300, 0x20)
    };
    let data = TestSym {
        kind: elf::STT_OBJECT,
        ..func("a_variable", 0x1400, 0x100)
    };
    let symbols = [
        func("first", 0x1100, 0x40),
        func("__alias_first", 0x1100, 0x40),
        func("big", 0x1200, 0x10),
        hidden,
        func("__open", 0x1300, 0x20),
        weak,
        data,
        func("asm_no_size", 0x1800, 0),
        func("outer", 0x2000, 0x200),
        func("inner", 0x2010, 0x10),
        func("last_no_size", 0x2f00, 0),
        func("undefined_zero", 0, 0x10),
    ];
    let table = read(&build_elf(Some(&symbols), None, Vec::new())).expect("a table");
    assert_eq!(table.source(), TableSource::Symtab);
    // One name per address: a sized alias with fewer underscores, global before local.
    assert_eq!(table.len(), 7, "{:?}", table.iter().collect::<Vec<_>>());
    let at = |a| name_at(&table, a);
    assert_eq!(at(0x1100), Some(("first".into(), 0)));
    assert_eq!(at(0x113f), Some(("first".into(), 0x3f)));
    assert_eq!(at(0x1140), None, "past its size, before the next");
    assert_eq!(at(0x1205), Some(("big".into(), 5)));
    assert_eq!(at(0x1301), Some(("open".into(), 1)));
    assert_eq!(at(0x1400), None, "data symbols are not functions");
    // Size 0: up to the next symbol.
    assert_eq!(at(0x1fff), Some(("asm_no_size".into(), 0x7ff)));
    // Nested: the inner function, then the outer one again.
    assert_eq!(at(0x2015), Some(("inner".into(), 5)));
    assert_eq!(at(0x2020), Some(("outer".into(), 0x20)));
    // Size 0 and last: up to the end of its section.
    assert_eq!(at(0x2fff), Some(("last_no_size".into(), 0xff)));
    assert_eq!(at(TEXT_END), None);
    assert_eq!(at(0), None);
    assert_eq!(at(0x10ff), None);
    assert_eq!(at(u64::MAX), None);
    // Names are stored once each, 16 bytes per function.
    let names: usize = [
        "first",
        "big",
        "open",
        "asm_no_size",
        "outer",
        "inner",
        "last_no_size",
    ]
    .iter()
    .map(|n| n.len())
    .sum();
    assert_eq!(table.heap_bytes(), 16 * 7 + names);
}

#[test]
fn dynsym_alone_and_merged_with_symtab() {
    let exported = [func("exported", 0x1100, 0x10)];
    let local = [func("local_only", 0x1200, 0x10)];
    let table = read(&build_elf(None, Some(&exported), Vec::new())).unwrap();
    assert_eq!(table.source(), TableSource::Dynsym);
    assert_eq!(name_at(&table, 0x1104), Some(("exported".into(), 4)));
    // A .symtab that lacks an export still names it.
    let table = read(&build_elf(Some(&local), Some(&exported), Vec::new())).unwrap();
    assert_eq!(table.source(), TableSource::Symtab);
    assert_eq!(name_at(&table, 0x1104), Some(("exported".into(), 4)));
    assert_eq!(name_at(&table, 0x1204), Some(("local_only".into(), 4)));
    // No function at all: no table.
    assert!(read(&build_elf(None, None, Vec::new())).is_none());
}

#[test]
fn mini_debug_info() {
    let inner = build_elf(
        Some(&[func("compressed_local", 0x1200, 0x30)]),
        None,
        Vec::new(),
    );
    let mut xz = Vec::new();
    lzma_rs::xz_compress(&mut inner.as_slice(), &mut xz).unwrap();
    let exported = [func("exported", 0x1100, 0x10)];
    let outer = build_elf(
        None,
        Some(&exported),
        vec![Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, xz.clone())],
    );
    let table = read(&outer).unwrap();
    assert_eq!(table.source(), TableSource::MiniDebugInfo);
    assert_eq!(
        name_at(&table, 0x1210),
        Some(("compressed_local".into(), 0x10))
    );
    assert_eq!(name_at(&table, 0x1100), Some(("exported".into(), 0)));
    // Corrupt compressed data: the exports are still there.
    let mut bad = xz;
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    bad.truncate(bad.len() - 8);
    let outer = build_elf(
        None,
        Some(&exported),
        vec![Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, bad)],
    );
    let table = read(&outer).unwrap();
    assert_eq!(table.source(), TableSource::Dynsym);
    assert_eq!(name_at(&table, 0x1210), None);
}

#[test]
fn separate_debug_files() {
    let root = temp_dir("debug");
    let id = [0xab, 0xcd, 0x01, 0x23, 0x45];
    let exported = [func("exported", 0x1100, 0x10)];
    let module = root.join("lib").join("libthing.so");
    std::fs::create_dir_all(module.parent().unwrap()).unwrap();
    std::fs::write(
        &module,
        build_elf(
            None,
            Some(&exported),
            vec![build_id_note(&id), debuglink("libthing.so.dbg")],
        ),
    )
    .unwrap();
    let debug = |name| {
        build_elf(
            Some(&[func(name, 0x1200, 0x30)]),
            None,
            vec![build_id_note(&id)],
        )
    };
    let debug_root = root.join("debug");
    let table = |root: &Path| SymbolTable::from_path(&module, root).unwrap();

    // Nothing installed: the exports only.
    assert_eq!(table(&debug_root).source(), TableSource::Dynsym);

    // Beside the module, as named by .gnu_debuglink.
    let beside = root.join("lib").join(".debug").join("libthing.so.dbg");
    std::fs::create_dir_all(beside.parent().unwrap()).unwrap();
    std::fs::write(&beside, debug("from_debuglink")).unwrap();
    let t = table(&debug_root);
    assert_eq!(t.source(), TableSource::DebugFile);
    assert_eq!(name_at(&t, 0x1201), Some(("from_debuglink".into(), 1)));
    assert_eq!(name_at(&t, 0x1101), Some(("exported".into(), 1)));

    // By build id, which comes first.
    let by_id = debug_root
        .join(".build-id")
        .join("ab")
        .join("cd012345.debug");
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::write(&by_id, debug("from_build_id")).unwrap();
    assert_eq!(
        name_at(&table(&debug_root), 0x1201),
        Some(("from_build_id".into(), 1))
    );

    // Mapped by the caller (as the agent maps it) rather than read through a cache: the same
    // table.
    let maps = std::cell::Cell::new(0);
    let image = std::fs::read(&module).unwrap();
    let mapped = SymbolTable::read_mapping(&image[..], Some(&module), &debug_root, &|file| {
        use std::io::{Read, Seek};
        maps.set(maps.get() + 1);
        let mut bytes = Vec::new();
        (&*file).rewind().ok()?;
        (&*file).read_to_end(&mut bytes).ok()?;
        Some(Box::new(bytes))
    })
    .unwrap();
    assert_eq!(maps.get(), 1);
    assert_eq!(mapped.source(), TableSource::DebugFile);
    assert_eq!(name_at(&mapped, 0x1201), Some(("from_build_id".into(), 1)));
    assert_eq!(name_at(&mapped, 0x1101), Some(("exported".into(), 1)));

    // A debug file of another build is ignored.
    std::fs::write(
        &by_id,
        build_elf(
            Some(&[func("wrong_build", 0x1200, 0x30)]),
            None,
            vec![build_id_note(&[1, 2, 3])],
        ),
    )
    .unwrap();
    std::fs::write(&beside, b"not an ELF file").unwrap();
    assert_eq!(table(&debug_root).source(), TableSource::Dynsym);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn garbage_never_panics() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let inner = build_elf(Some(&[func("compressed", 0x1200, 0x30)]), None, Vec::new());
    let mut xz = Vec::new();
    lzma_rs::xz_compress(&mut inner.as_slice(), &mut xz).unwrap();
    let symbols = [
        func("a", 0x1100, 0x10),
        func("b", 0x1200, 0),
        func("_ZN3WKS7gc_heap10plan_phaseEi", 0x1300, 0x100),
    ];
    let valid = build_elf(
        Some(&symbols),
        Some(&symbols[..1]),
        vec![
            build_id_note(&[1, 2, 3, 4]),
            debuglink("x.debug"),
            Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, xz),
        ],
    );
    // Half of the cases damage only the compressed MiniDebugInfo image.
    let xz_at = valid
        .windows(6)
        .position(|w| w == b"\xfd7zXZ\0")
        .expect("the xz stream");
    let strategy = (
        any::<bool>(),
        proptest::collection::vec((any::<usize>(), any::<u8>()), 0..16),
        any::<usize>(),
        proptest::collection::vec(any::<u64>(), 0..8),
    );
    let config = Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new(config)
        .run(&strategy, |(only_xz, flips, cut, probes)| {
            let mut bytes = valid.clone();
            let (lo, cut) = if only_xz {
                (xz_at, valid.len())
            } else {
                (0, cut % (valid.len() + 1))
            };
            for (at, value) in flips {
                bytes[lo + at % (valid.len() - lo)] = value;
            }
            bytes.truncate(cut);
            if let Some(table) = read(&bytes) {
                for svma in probes.into_iter().chain([0x1100, 0x1305, u64::MAX]) {
                    if let Some((name, _)) = table.lookup(svma) {
                        demangle(name);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

// ---- Demangling ----

#[test]
fn demangles_cpp_rust_and_plain_names() {
    let d = |s: &str| demangle(s.as_bytes());
    assert_eq!(
        d("_ZN3WKS7gc_heap10plan_phaseEi"),
        "WKS::gc_heap::plan_phase"
    );
    assert_eq!(d("_ZN5space3fooEibc"), "space::foo");
    assert_eq!(
        d("_ZNSt6vectorIiSaIiEE9push_backERKi"),
        "std::vector<int, std::allocator<int> >::push_back"
    );
    assert!(
        d("_ZN3WKS7gc_heap10plan_phaseEi.cold").starts_with("WKS::gc_heap::plan_phase"),
        "{}",
        d("_ZN3WKS7gc_heap10plan_phaseEi.cold")
    );
    // Rust, legacy (without its hash) and v0.
    assert_eq!(
        d("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
        "core::ptr::drop_in_place"
    );
    assert_eq!(d("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    // C names, and garbage that only looks mangled, stay as they are.
    assert_eq!(
        d("__memset_avx512_unaligned_erms"),
        "__memset_avx512_unaligned_erms"
    );
    assert_eq!(d("_Z"), "_Z");
    assert_eq!(d("_ZN3fooE_not_really"), "_ZN3fooE_not_really");
    assert_eq!(demangle(b"bad\xffutf8"), "bad\u{fffd}utf8");
    // Very long names are cut.
    let long = format!("_ZN{}{}3fooEv", 2000, "x".repeat(2000));
    let out = d(&long);
    assert!(
        out.len() <= MAX_NAME + '…'.len_utf8() && out.ends_with('…'),
        "{out}"
    );
    let plain = "y".repeat(5000);
    assert!(d(&plain).len() <= MAX_NAME + '…'.len_utf8());
}

// ---- A real module ----

/// libcoreclr.so of the runtime the tests use, if it is installed.
fn libcoreclr() -> Option<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let roots = std::env::var_os("CLRPROF_DOTNET_ROOT")
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace.join(".deps").join("dotnet-3.1.23")]);
    for root in roots {
        for base in [root.join("dotnetcore2").join("bin"), root.clone()] {
            let frameworks = base.join("shared").join("Microsoft.NETCore.App");
            let Ok(dirs) = std::fs::read_dir(&frameworks) else {
                continue;
            };
            for dir in dirs.flatten() {
                let lib = dir.path().join("libcoreclr.so");
                if lib.is_file() {
                    return Some(lib);
                }
            }
        }
    }
    None
}

/// libcoreclr's table and how long reading it took, if libcoreclr is installed.
fn libcoreclr_table() -> Option<(PathBuf, SymbolTable, std::time::Duration)> {
    let Some(path) = libcoreclr() else {
        eprintln!("libcoreclr.so not installed (cargo xtask setup): skipped");
        return None;
    };
    let started = Instant::now();
    let table = SymbolTable::from_path(&path, Path::new(DEBUG_ROOT)).expect("a table");
    Some((path, table, started.elapsed()))
}

#[test]
fn names_the_stubs_of_the_procedure_linkage_table() {
    let Some((_, table, _)) = libcoreclr_table() else {
        return;
    };
    let stubs: Vec<(u64, u64, String)> = table
        .iter()
        .filter(|(_, _, name)| name.ends_with(b"@plt"))
        .map(|(start, len, name)| (start, len, String::from_utf8_lossy(name).into_owned()))
        .collect();
    // libcoreclr calls hundreds of functions of other libraries (libc, libstdc++, ...).
    assert!(stubs.len() >= 100, "{} stubs", stubs.len());
    assert!(
        stubs.iter().any(|(_, _, n)| n == "__tls_get_addr@plt"),
        "{stubs:?}"
    );
    for (start, len, name) in &stubs {
        assert_eq!(*len, 16, "{name}");
        // Anywhere in the stub is the stub (a sample stops at any of its instructions).
        let (found, offset) = table.lookup(start + 6).expect("the stub is named");
        assert_eq!(String::from_utf8_lossy(found), *name);
        assert_eq!(offset, 6);
    }
    // One stub per function: no name twice.
    let mut names: Vec<&String> = stubs.iter().map(|(_, _, n)| n).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), stubs.len());
}

#[test]
fn names_the_garbage_collector_in_libcoreclr() {
    let Some((path, table, took)) = libcoreclr_table() else {
        return;
    };
    eprintln!(
        "{}: {} functions from {:?} in {took:?}, {} KiB",
        path.display(),
        table.len(),
        table.source(),
        table.heap_bytes() / 1024
    );
    assert_eq!(table.source(), TableSource::Symtab);
    for mangled in [
        &b"_ZN3WKS7gc_heap10plan_phaseEi"[..],
        b"_ZN3WKS7gc_heap12mark_phase_1Ei",
    ] {
        let Some((start, len, _)) = table.iter().find(|&(_, _, n)| n == mangled) else {
            assert_ne!(
                mangled, b"_ZN3WKS7gc_heap10plan_phaseEi",
                "plan_phase is there"
            );
            continue;
        };
        let (name, offset) = table.lookup(start + len / 2).expect("inside");
        assert_eq!(name, mangled);
        assert_eq!(offset, len / 2);
    }
    let (start, len, _) = table
        .iter()
        .find(|&(_, _, n)| n == b"_ZN3WKS7gc_heap10plan_phaseEi")
        .unwrap();
    let (name, _) = table.lookup(start + len - 1).unwrap();
    assert_eq!(demangle(name), "WKS::gc_heap::plan_phase");
}

// ---- Symbol files given by the user ----

#[test]
fn build_ids() {
    let with = build_elf(
        Some(&[func("f", 0x1200, 0x10)]),
        None,
        vec![build_id_note(&[0xab, 0xcd, 0x01])],
    );
    assert_eq!(build_id(with.as_slice()), Some(vec![0xab, 0xcd, 0x01]));
    assert_eq!(build_id_hex(&[0xab, 0xcd, 0x01]), "abcd01");
    let without = build_elf(Some(&[func("f", 0x1200, 0x10)]), None, Vec::new());
    assert_eq!(build_id(without.as_slice()), None);
    assert_eq!(build_id(&b"not an ELF file"[..]), None);
    let dir = temp_dir("ids");
    let path = dir.join("x.debug");
    std::fs::write(&path, &with).unwrap();
    assert_eq!(read_build_id(&path).unwrap(), Some(vec![0xab, 0xcd, 0x01]));
    std::fs::write(&path, b"text").unwrap();
    assert_eq!(
        read_build_id(&path).unwrap_err().kind(),
        std::io::ErrorKind::InvalidData
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn symbol_files_are_checked_when_given() {
    let dir = temp_dir("given");
    let missing = dir.join("missing.debug");
    let err = SymbolFiles::open(std::slice::from_ref(&missing)).unwrap_err();
    assert!(matches!(err, SymbolFilesError::Unreadable { .. }), "{err}");
    assert!(err.to_string().starts_with(&missing.display().to_string()));

    let text = dir.join("notes.txt");
    std::fs::write(&text, b"hello").unwrap();
    let err = SymbolFiles::open(std::slice::from_ref(&text)).unwrap_err();
    assert!(matches!(err, SymbolFilesError::NotElf { .. }), "{err}");
    assert!(err.to_string().contains("not an ELF file"), "{err}");

    let anonymous = dir.join("anonymous.so");
    std::fs::write(
        &anonymous,
        build_elf(Some(&[func("f", 0x1200, 0x10)]), None, Vec::new()),
    )
    .unwrap();
    let err = SymbolFiles::open(std::slice::from_ref(&anonymous)).unwrap_err();
    assert!(matches!(err, SymbolFilesError::NoBuildId { .. }), "{err}");
    assert!(err.to_string().contains("no GNU build id"), "{err}");

    // A directory is fine, even an empty one; it just finds nothing.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut files = SymbolFiles::open(std::slice::from_ref(&empty)).unwrap();
    assert!(files.table(&[1, 2, 3], "liba.so").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn symbol_files_are_found_by_build_id() {
    let dir = temp_dir("found");
    let id_a = [0xab, 0xcd, 0x01, 0x23];
    let id_b = [0x12, 0x34, 0x56];
    let id_c = [0x77, 0x88, 0x99];
    let debug = |name, id: &[u8]| {
        build_elf(
            Some(&[func(name, 0x1200, 0x30)]),
            Some(&[func("exported", 0x1100, 0x10)]),
            vec![build_id_note(id)],
        )
    };
    // A file given directly.
    let direct = dir.join("liba.so.debug");
    std::fs::write(&direct, debug("in_a", &id_a)).unwrap();
    // A debug root with the .build-id layout.
    let root = dir.join("root");
    let by_id = root.join(".build-id").join("12").join("3456.debug");
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::write(&by_id, debug("in_b", &id_b)).unwrap();
    // An unpacked package: some file deep down, and a stripped copy (exports only) of the
    // same build that must not win over it.
    let package = dir.join("package");
    let deep = package.join("usr").join("lib").join("libc_.so");
    std::fs::create_dir_all(deep.parent().unwrap()).unwrap();
    std::fs::write(
        package.join("aaa-stripped.so"),
        build_elf(
            None,
            Some(&[func("exported", 0x1100, 0x10)]),
            vec![build_id_note(&id_c)],
        ),
    )
    .unwrap();
    std::fs::write(&deep, debug("in_c", &id_c)).unwrap();
    std::fs::write(package.join("README"), b"not ELF").unwrap();

    let mut files = SymbolFiles::open(&[direct.clone(), root.clone(), package.clone()]).unwrap();
    assert_eq!(
        files.given_files().collect::<Vec<_>>(),
        [(direct.as_path(), &id_a[..])]
    );
    let name = |files: &mut SymbolFiles, id: &[u8], svma| {
        let found = files.table(id, "liba.so")?;
        let (name, _) = found.table.lookup(svma)?;
        Some((
            found.path.clone(),
            String::from_utf8_lossy(name).into_owned(),
        ))
    };
    assert_eq!(
        name(&mut files, &id_a, 0x1210),
        Some((direct.clone(), "in_a".into()))
    );
    assert_eq!(
        name(&mut files, &id_b, 0x1200),
        Some((by_id.clone(), "in_b".into()))
    );
    assert_eq!(
        name(&mut files, &id_c, 0x1201),
        Some((deep.clone(), "in_c".into()))
    );
    assert_eq!(
        name(&mut files, &id_c, 0x1100),
        Some((deep.clone(), "exported".into()))
    );
    assert!(files.table(&[9, 9, 9], "libz.so").is_none());
    assert!(files.table(&[], "libz.so").is_none());
    // The .build-id directory itself works as a root too.
    let mut files = SymbolFiles::open(&[root.join(".build-id")]).unwrap();
    assert_eq!(name(&mut files, &id_b, 0x1200).unwrap().1, "in_b");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Load time, size and lookup cost of libcoreclr's table. Run with
/// `cargo test --release -p clrprof-symbols libcoreclr_table_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn libcoreclr_table_cost() {
    let Some((_, table, took)) = libcoreclr_table() else {
        return;
    };
    let started = Instant::now();
    let mut found = 0;
    let rounds = 100_000u64;
    for i in 0..rounds {
        let svma = 0xa_0000 + (i * 0x9e37) % 0x45_0000;
        found += usize::from(table.lookup(svma).is_some());
    }
    let lookup = started.elapsed() / rounds as u32;
    let started = Instant::now();
    let names: Vec<String> = table
        .iter()
        .take(2000)
        .map(|(_, _, n)| demangle(n))
        .collect();
    let per_name = started.elapsed() / names.len() as u32;
    eprintln!(
        "libcoreclr.so: {} functions in {took:?}, {} KiB ({} KiB of names); \
         lookup {lookup:?} ({found} hits of {rounds}), demangle {per_name:?} per name",
        table.len(),
        table.heap_bytes() / 1024,
        (table.heap_bytes() - 16 * table.len()) / 1024
    );
}
