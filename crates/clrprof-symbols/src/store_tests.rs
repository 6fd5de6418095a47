//! Tests of symbol store keys and of the files a [`SymbolSource`] gives.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::testelf::*;
use crate::*;

/// The build id of the examples of the .NET tools' key conventions.
const ID: [u8; 20] = [
    0x18, 0x0a, 0x37, 0x3d, 0x6a, 0xfb, 0xab, 0xf0, 0xeb, 0x1f, 0x09, 0xbe, 0x1b, 0xc4, 0x5b, 0xd7,
    0x96, 0xa7, 0x10, 0x85,
];

fn keys(name: &str, id: &[u8]) -> Vec<String> {
    store_keys(name, id)
        .iter()
        .map(StoreKey::as_path_str)
        .collect()
}

#[test]
fn keys_as_the_dotnet_tools_spell_them() {
    assert_eq!(
        keys("foo.so", &ID),
        [
            "_.debug/elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd796a71085/_.debug",
            "foo.so/elf-buildid-180a373d6afbabf0eb1f09be1bc45bd796a71085/foo.so",
        ]
    );
    let all = store_keys("libcoreclr.so", &ID);
    assert_eq!(all[0].kind, StoreFileKind::DebugFile);
    assert_eq!(all[1].kind, StoreFileKind::Module);
    assert_eq!(all[0].module, "libcoreclr.so");
    assert_eq!(all[0].build_id, ID);
    assert_eq!(all[0].to_string(), "libcoreclr.so's debug file");
    assert_eq!(all[1].to_string(), "libcoreclr.so's library");
    assert_eq!(
        all[1].path_in(Path::new("/cache")),
        Path::new(
            "/cache/libcoreclr.so/elf-buildid-180a373d6afbabf0eb1f09be1bc45bd796a71085/\
             libcoreclr.so"
        )
    );
    // A 16-byte id is padded with zero bytes to 20; the file keeps its own id.
    let short = &ID[..16];
    assert_eq!(
        keys("bar.so", short)[0],
        "_.debug/elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd700000000/_.debug"
    );
    assert_eq!(store_keys("bar.so", short)[0].build_id, short);
    // Ids no store indexes.
    assert!(keys("bar.so", &ID[..15]).is_empty());
    assert!(keys("bar.so", &[ID.as_slice(), &[1]].concat()).is_empty());
    assert!(keys("bar.so", &[]).is_empty());
    // File names: lowercase, percent-encoded; none that could leave the key's directory.
    assert_eq!(
        keys("My Lib+1.so", &ID)[1],
        "my%20lib%2B1.so/elf-buildid-180a373d6afbabf0eb1f09be1bc45bd796a71085/my%20lib%2B1.so"
    );
    assert_eq!(
        keys("a/b", &ID)[1],
        "a%2Fb/elf-buildid-180a373d6afbabf0eb1f09be1bc45bd796a71085/a%2Fb"
    );
    for name in ["", ".", ".."] {
        assert_eq!(keys(name, &ID).len(), 1, "{name:?}");
    }
}

/// A source that holds files by key and records what it was asked.
#[derive(Debug, Default)]
struct FakeStore {
    files: HashMap<String, PathBuf>,
    asked: Rc<RefCell<Vec<String>>>,
}

impl SymbolSource for FakeStore {
    fn fetch(&mut self, key: &StoreKey) -> Option<PathBuf> {
        self.asked.borrow_mut().push(key.as_path_str());
        self.files.get(&key.as_path_str()).cloned()
    }
}

#[test]
fn a_source_gives_what_the_paths_given_do_not_have() {
    let dir = temp_dir("source");
    let other_id = [0x55; 20];
    let debug_file = |name, id: &[u8]| {
        build_elf(
            Some(&[func(name, 0x1200, 0x30)]),
            Some(&[func("exported", 0x1100, 0x10)]),
            vec![build_id_note(id)],
        )
    };
    let stripped = |id: &[u8]| {
        build_elf(
            None,
            Some(&[func("exported", 0x1100, 0x10)]),
            vec![build_id_note(id)],
        )
    };
    let write = |name: &str, bytes: Vec<u8>| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let [debug_key, module_key] = <[String; 2]>::try_from(keys("libx.so", &ID)).unwrap();

    // The debug file first; the library is not asked for once it names more than exports.
    let mut store = FakeStore::default();
    store
        .files
        .insert(debug_key.clone(), write("a.debug", debug_file("in_x", &ID)));
    store
        .files
        .insert(module_key.clone(), write("a.so", stripped(&ID)));
    let asked = store.asked.clone();
    let mut files = SymbolFiles::default();
    files.set_source(Box::new(store));
    let found = files.table(&ID, "libx.so").expect("a table");
    assert_eq!(found.path, dir.join("a.debug"));
    assert_eq!(name_at(&found.table, 0x1210), Some(("in_x".into(), 0x10)));
    // Asked once per build id.
    assert!(files.table(&ID, "libx.so").is_some());
    assert_eq!(*asked.borrow(), std::slice::from_ref(&debug_key));

    // Exports only: the library is asked for too, and the best of them kept.
    let mut store = FakeStore::default();
    store
        .files
        .insert(module_key.clone(), write("b.so", stripped(&ID)));
    let asked = store.asked.clone();
    let mut files = SymbolFiles::default();
    files.set_source(Box::new(store));
    let found = files.table(&ID, "libx.so").expect("exports");
    assert_eq!(found.table.source(), TableSource::Dynsym);
    assert_eq!(*asked.borrow(), [debug_key.clone(), module_key.clone()]);

    // A file of another build under the key is never used.
    let mut store = FakeStore::default();
    store.files.insert(
        debug_key.clone(),
        write("c.debug", debug_file("in_other", &other_id)),
    );
    store
        .files
        .insert(module_key.clone(), write("c.txt", b"not ELF".to_vec()));
    let mut files = SymbolFiles::default();
    files.set_source(Box::new(store));
    assert!(files.table(&ID, "libx.so").is_none());

    // The paths given come first: the source is not asked for a module they name.
    let given = write("given.debug", debug_file("given", &ID));
    let store = FakeStore::default();
    let asked = store.asked.clone();
    let mut files = SymbolFiles::open(std::slice::from_ref(&given)).unwrap();
    files.set_source(Box::new(store));
    assert_eq!(files.table(&ID, "libx.so").unwrap().path, given);
    assert!(asked.borrow().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
