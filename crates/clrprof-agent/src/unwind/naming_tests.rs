//! Naming native addresses with the modules of this process: symbol tables (read with the
//! `clrprof-symbols` crate), and the start of a function from its module's unwind information.

use std::time::Instant;

use clrprof_symbols::TableSource;

use super::ModuleMap;
use crate::recorder::sys;

/// A function of this test binary that nothing exports: only `.symtab` knows it.
#[inline(never)]
fn local_marker_function(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 7
}

#[test]
fn names_libc_functions_like_dladdr() {
    let map = ModuleMap::new();
    for (addr, name) in [
        (libc::getpid as *const () as usize, "getpid"),
        (libc::qsort as *const () as usize, "qsort"),
    ] {
        let dl = sys::native_symbol(addr).expect("dladdr knows libc");
        for offset in [0, 3] {
            let ours = map.symbolize(addr + offset).expect("symbolized");
            assert!(ours.library.contains("libc"), "{ours:?}");
            assert_eq!(ours.offset, offset, "{ours:?}");
            assert!(ours.symbol.ends_with(name), "{ours:?} vs {dl:?}");
            // The same function as dladdr names (perhaps by another alias).
            assert!(
                ours.symbol == dl.symbol || dl.symbol.ends_with(name),
                "{ours:?} vs {dl:?}"
            );
        }
    }
}

#[test]
fn names_a_local_function_of_this_binary() {
    let addr = local_marker_function as *const () as usize;
    assert_eq!(local_marker_function(1), local_marker_function(1));
    let map = ModuleMap::new();
    let table = map
        .symbol_table(addr)
        .expect("the test binary has a symbol table");
    if table.source() == TableSource::Dynsym {
        eprintln!("the test binary was stripped: no local symbols to check");
        return;
    }
    let ours = map.symbolize(addr + 1).expect("a local function");
    assert_eq!(
        ours.symbol,
        "clrprof_agent::unwind::naming_tests::local_marker_function"
    );
    assert_eq!(ours.offset, 1);
    let dl = sys::native_symbol(addr + 1)
        .map(|s| s.symbol)
        .unwrap_or_default();
    assert!(
        !dl.contains("local_marker_function"),
        "dladdr sees exports only: {dl}"
    );
}

#[test]
fn names_the_vdso() {
    let map = ModuleMap::new();
    let Some(&(start, _)) = map
        .native_ranges()
        .iter()
        .find(|&&(lo, _)| map.module_at(lo).is_some_and(|m| m.path == "[vdso]"))
    else {
        return; // no vDSO (some sandboxes)
    };
    let table = map
        .symbol_table(start)
        .expect("the vDSO exports its functions");
    assert!(
        table.iter().any(|(_, _, n)| n.ends_with(b"clock_gettime")),
        "{:?}",
        table
            .iter()
            .map(|(_, _, n)| String::from_utf8_lossy(n))
            .collect::<Vec<_>>()
    );
}

/// Load time and size of the symbol tables of this process's modules (libcoreclr's: the
/// `clrprof-symbols` crate's `libcoreclr_table_cost`).
/// Run with `cargo test --release -p clrprof-agent symbol_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn symbol_cost() {
    let map = ModuleMap::new();
    let mut seen = std::collections::HashSet::new();
    for (lo, _) in map.native_ranges() {
        let Some(module) = map.module_at(lo) else {
            continue;
        };
        if !seen.insert(module.path.to_owned()) {
            continue;
        }
        let started = Instant::now();
        let table = map.symbol_table(lo);
        let took = started.elapsed();
        match table {
            Some(t) => eprintln!(
                "{}: {} functions from {:?} in {took:?}, {} KiB",
                module.path,
                t.len(),
                t.source(),
                t.heap_bytes() / 1024
            ),
            None => eprintln!("{}: no symbols ({took:?})", module.path),
        }
    }
    let memset = map.symbolize(libc::memset as *const () as usize);
    eprintln!("memset: {memset:?}");
}

#[test]
fn locates_functions_with_their_module_and_start() {
    let map = ModuleMap::new();
    let local = local_marker_function as *const () as usize;
    for (addr, name) in [
        (libc::getpid as *const () as usize, "getpid"),
        (libc::qsort as *const () as usize, "qsort"),
        (local, "local_marker_function"),
    ] {
        let bias = map
            .module_at(addr)
            .and_then(|m| m.load_bias)
            .expect("a bias") as u64;
        for offset in [0, 3] {
            let f = map.locate(addr + offset).expect("in a module");
            assert_eq!(f.svma, Some((addr + offset) as u64 - bias), "{f:?}");
            assert!(
                f.build_id.len() >= 16 && f.build_id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{f:?}"
            );
            if f.name.is_none() {
                eprintln!("{name}: no symbol (a stripped binary): {f:?}");
                continue;
            }
            assert!(f.name.as_deref().unwrap().ends_with(name), "{f:?}");
            assert_eq!(f.start, Some(addr as u64 - bias), "{f:?}");
        }
    }
    assert!(map.locate(0x10).is_none());
}

#[test]
fn unwind_information_tells_where_functions_start() {
    // Where a symbol table names a function, its FDE starts where its symbol does: the start
    // the agent records for a function without a symbol is the one a symbol file has.
    let map = ModuleMap::new();
    let local = local_marker_function as *const () as usize;
    let mut checked = 0;
    for addr in [
        libc::getpid as *const () as usize,
        libc::qsort as *const () as usize,
        libc::memcpy as *const () as usize,
        local,
    ] {
        let Some(start) = map.locate(addr).and_then(|f| f.start) else {
            continue;
        };
        for offset in [0, 1, 7] {
            let Some(symbol) = map.symbolize(addr + offset) else {
                continue;
            };
            if symbol.offset != offset {
                continue; // a smaller function sits there
            }
            assert_eq!(
                map.function_start_by_unwind_info(addr + offset),
                Some(start),
                "{symbol:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked}");
    // Outside any function: nothing.
    assert_eq!(map.function_start_by_unwind_info(0x10), None);
}

#[test]
fn a_map_that_leaves_symbols_to_the_reader_gives_starts_alone() {
    // What the CLI names later: the module (path, build id) and the function's start, the
    // same start the symbol table gives, read from the unwind information alone.
    let named = ModuleMap::new();
    let mut left = ModuleMap::new();
    left.leave_symbols_to_reader();
    let mut checked = 0;
    for addr in [
        libc::getpid as *const () as usize,
        libc::qsort as *const () as usize,
        local_marker_function as *const () as usize,
    ] {
        let (Some(by_name), Some(by_start)) = (named.locate(addr + 3), left.locate(addr + 3))
        else {
            panic!("{addr:#x} is in a module");
        };
        assert_eq!(by_start.name, None, "{by_start:?}");
        assert_eq!(
            (&by_start.library, &by_start.build_id, by_start.svma),
            (&by_name.library, &by_name.build_id, by_name.svma)
        );
        if by_name.name.is_some() {
            assert_eq!(by_start.start, by_name.start, "{by_name:?}");
            checked += 1;
        }
        assert!(left.names_ready(addr), "nothing more to read before naming");
    }
    assert!(checked >= 2, "{checked}");
    // A stub of the procedure linkage table is a function of its own, as its `name@plt`
    // symbol is (one FDE covers the whole table).
    let local = local_marker_function as *const () as usize;
    let bias = named
        .module_at(local)
        .and_then(|m| m.load_bias)
        .expect("a bias");
    let stubs: Vec<u64> = named
        .symbol_table(local)
        .expect("the test binary's symbols")
        .iter()
        .filter(|(_, _, name)| name.ends_with(b"@plt"))
        .map(|(start, _, _)| start)
        .take(3)
        .collect();
    for start in &stubs {
        let at = left
            .locate(bias + *start as usize + 5)
            .expect("in the test binary");
        assert_eq!(at.start, Some(*start), "{at:?}");
    }
    eprintln!("{} stubs checked", stubs.len());
}
