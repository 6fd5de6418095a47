//! Tests of the symbol servers' client against small HTTP servers on the loopback interface.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_symbols::{StoreKey, SymbolSource, store_keys};

use super::*;

/// What the test server answers for a path.
#[derive(Clone)]
enum Reply {
    File(Vec<u8>),
    Status(u16),
    /// Accepts the request and never answers.
    Silent,
}

/// An HTTP server on 127.0.0.1 that answers from a table (404 for anything else) and logs
/// the paths asked; it stops when dropped.
struct TestServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    fn start(routes: &[(String, Reply)]) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<HashMap<String, Reply>> = Arc::new(routes.iter().cloned().collect());
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (log.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (routes, log, stop) = (routes.clone(), l.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &routes, &log, &stop));
            }
        });
        TestServer {
            addr,
            log,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/symbols", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    routes: &HashMap<String, Reply>,
    log: &Mutex<Vec<String>>,
    stop: &AtomicBool,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let Some(path) = head.split(' ').nth(1) else {
        return;
    };
    let Some(key) = path.strip_prefix("/symbols/") else {
        return;
    };
    log.lock().unwrap().push(key.to_string());
    let (status, body) = match routes.get(key) {
        Some(Reply::File(bytes)) => (200, bytes.clone()),
        Some(Reply::Status(code)) => (*code, Vec::new()),
        Some(Reply::Silent) => {
            let until = Instant::now() + Duration::from_secs(30);
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        None => (404, Vec::new()),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
}

/// A small x86-64 ELF file whose only content is the GNU build id `id`.
fn elf_with_build_id(id: &[u8]) -> Vec<u8> {
    let mut note = Vec::new();
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&(id.len() as u32).to_le_bytes());
    note.extend_from_slice(&3u32.to_le_bytes()); // NT_GNU_BUILD_ID
    note.extend_from_slice(b"GNU\0");
    note.extend_from_slice(id);
    note.resize(note.len().next_multiple_of(8), 0);
    let shstrtab = b"\0.note.gnu.build-id\0.shstrtab\0".to_vec();
    let note_at = 64u64;
    let strtab_at = note_at + note.len() as u64;
    let shoff = (strtab_at + shstrtab.len() as u64).next_multiple_of(8);
    let mut out = vec![0u8; 64];
    out[..4].copy_from_slice(b"\x7fELF");
    out[4] = 2; // 64-bit
    out[5] = 1; // little-endian
    out[6] = 1;
    out[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    out[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    out[20..24].copy_from_slice(&1u32.to_le_bytes());
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    out[52..54].copy_from_slice(&64u16.to_le_bytes());
    out[58..60].copy_from_slice(&64u16.to_le_bytes());
    out[60..62].copy_from_slice(&3u16.to_le_bytes()); // sections
    out[62..64].copy_from_slice(&2u16.to_le_bytes()); // .shstrtab
    out.extend_from_slice(&note);
    out.extend_from_slice(&shstrtab);
    out.resize(shoff as usize, 0);
    let section = |out: &mut Vec<u8>, name: u32, kind: u32, offset: u64, size: u64, align: u64| {
        out.extend_from_slice(&name.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&[0u8; 16]); // flags, address
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&[0u8; 8]); // link, info
        out.extend_from_slice(&align.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // entsize
    };
    section(&mut out, 0, 0, 0, 0, 0);
    section(&mut out, 1, 7, note_at, note.len() as u64, 4); // SHT_NOTE
    section(&mut out, 20, 3, strtab_at, shstrtab.len() as u64, 1); // SHT_STRTAB
    out
}

const ID: [u8; 20] = [0x42; 20];

/// The build id of module `name` in these tests: [`ID`] for `libX.so`, else one of its own
/// (modules of a build id share its debug file's key).
fn id_of(name: &str) -> [u8; 20] {
    let mut id = ID;
    if name != "libX.so" {
        for (i, b) in name.bytes().enumerate() {
            id[i % 20] ^= b;
        }
    }
    id
}

fn keys(name: &str) -> Vec<StoreKey> {
    store_keys(name, &id_of(name))
}

fn options(servers: &[&TestServer], cache: &Path) -> ServerOptions {
    ServerOptions {
        servers: servers.iter().map(|s| s.url()).collect(),
        cache: Some(cache.to_path_buf()),
        offline: false,
        timeout: Duration::from_secs(10),
    }
}

#[test]
fn the_elf_of_the_tests_has_its_build_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.debug");
    std::fs::write(&path, elf_with_build_id(&ID)).unwrap();
    assert_eq!(read_build_id(&path).unwrap(), Some(ID.to_vec()));
}

#[test]
fn a_file_is_downloaded_once_then_read_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let [debug, _] = <[StoreKey; 2]>::try_from(keys("libX.so")).ok().unwrap();
    let file = elf_with_build_id(&ID);
    let server = TestServer::start(&[(debug.as_path_str(), Reply::File(file.clone()))]);
    let mut servers = SymbolServers::new(&options(&[&server], cache.path()));
    let expected = cache
        .path()
        .join("_.debug")
        .join(format!("elf-buildid-sym-{}", "42".repeat(20)))
        .join("_.debug");
    assert_eq!(servers.fetch(&debug), Some(expected.clone()));
    assert_eq!(std::fs::read(&expected).unwrap(), file);
    assert_eq!(server.requests(), [debug.as_path_str()]);
    let url = server.url();
    assert_eq!(
        servers.take_notes(),
        [format!(
            "symbol server {url}: downloaded libX.so's debug file (0.3 KiB)"
        )]
    );
    assert!(servers.take_notes().is_empty(), "each line once");
    // The next report finds it in the cache, with the server gone.
    drop(server);
    let mut servers = SymbolServers::new(&ServerOptions {
        servers: vec![url],
        ..options(&[], cache.path())
    });
    assert_eq!(servers.fetch(&debug), Some(expected.clone()));
    assert!(servers.take_notes().is_empty());
    // And offline, without a server.
    let mut offline = SymbolServers::new(&ServerOptions {
        offline: true,
        ..options(&[], cache.path())
    });
    assert_eq!(offline.fetch(&debug), Some(expected));
}

#[test]
fn not_found_is_remembered_per_server() {
    let cache = tempfile::tempdir().unwrap();
    let a = TestServer::start(&[]);
    let all = keys("liby.so");
    let mut servers = SymbolServers::new(&options(&[&a], cache.path()));
    for key in &all {
        assert_eq!(servers.fetch(key), None);
    }
    let asked: Vec<String> = all.iter().map(StoreKey::as_path_str).collect();
    assert_eq!(a.requests(), asked);
    assert_eq!(
        servers.take_notes(),
        [format!("symbol server {}: 2 not found", a.url())]
    );
    // The next report does not ask it again; a server it has not asked yet is asked.
    let b = TestServer::start(&[]);
    let mut servers = SymbolServers::new(&options(&[&a, &b], cache.path()));
    for key in &all {
        assert_eq!(servers.fetch(key), None);
    }
    assert_eq!(a.requests(), asked);
    assert_eq!(b.requests(), asked);
    // Found later: the server's "not found" is forgotten.
    let file = elf_with_build_id(&id_of("liby.so"));
    let c = TestServer::start(&[(asked[0].clone(), Reply::File(file))]);
    let mut servers = SymbolServers::new(&options(&[&a, &b, &c], cache.path()));
    assert!(servers.fetch(&all[0]).is_some());
    assert!(
        !all[0]
            .path_in(cache.path())
            .with_file_name("_.debug.missing")
            .exists()
    );
}

#[test]
fn a_file_of_another_build_is_never_kept() {
    let cache = tempfile::tempdir().unwrap();
    let debug = keys("libz.so").remove(0);
    let other = TestServer::start(&[(
        debug.as_path_str(),
        Reply::File(elf_with_build_id(&[0x17; 20])),
    )]);
    let text = TestServer::start(&[(debug.as_path_str(), Reply::File(b"<html>".to_vec()))]);
    let right = TestServer::start(&[(
        debug.as_path_str(),
        Reply::File(elf_with_build_id(&id_of("libz.so"))),
    )]);
    let mut servers = SymbolServers::new(&options(&[&other, &text], cache.path()));
    assert_eq!(servers.fetch(&debug), None);
    assert!(!debug.path_in(cache.path()).exists());
    let says = |s: &TestServer| {
        format!(
            "symbol server {}: ignored what it gave for libz.so's debug file: not of the \
             module's build (GNU build id)",
            s.url()
        )
    };
    assert_eq!(servers.take_notes(), [says(&other), says(&text)]);
    // Another server has the right one.
    let mut servers = SymbolServers::new(&options(&[&other, &right], cache.path()));
    assert_eq!(servers.fetch(&debug), Some(debug.path_in(cache.path())));
    let leftovers: Vec<_> = std::fs::read_dir(debug.path_in(cache.path()).parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["_.debug"], "no temporary file left behind");
}

#[test]
fn an_unreachable_server_costs_one_line_and_one_attempt() {
    let cache = tempfile::tempdir().unwrap();
    // A port nobody listens on any more.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}");
    let live = TestServer::start(&[]);
    let mut servers = SymbolServers::new(&ServerOptions {
        servers: vec![url.clone(), live.url()],
        ..options(&[], cache.path())
    });
    for name in ["liba.so", "libb.so", "libc.so"] {
        for key in keys(name) {
            assert_eq!(servers.fetch(&key), None);
        }
    }
    assert_eq!(
        servers.requests, 7,
        "1 to the dead server, 6 to the live one"
    );
    let notes = servers.take_notes();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!("symbol server {url}: "))
            && notes[0].contains("refused")
            && notes[0].ends_with("; not asked again in this report"),
        "{notes:?}"
    );
    assert_eq!(
        notes[1],
        format!("symbol server {}: 6 not found", live.url())
    );
    // Its failure is not remembered: the next report tries it again.
    assert!(cache::missing_at(&keys("liba.so")[0].path_in(cache.path())) == [live.url()]);
}

#[test]
fn a_server_that_does_not_answer_times_out() {
    let cache = tempfile::tempdir().unwrap();
    let debug = keys("libs.so").remove(0);
    let silent = TestServer::start(&[(debug.as_path_str(), Reply::Silent)]);
    let mut servers = SymbolServers::new(&ServerOptions {
        timeout: Duration::from_secs(1),
        ..options(&[&silent], cache.path())
    });
    let started = Instant::now();
    for key in keys("libs.so").iter().chain(&keys("libt.so")) {
        assert_eq!(servers.fetch(key), None);
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(silent.requests(), [debug.as_path_str()]);
    assert_eq!(
        servers.take_notes(),
        [format!(
            "symbol server {}: no answer within 1 s; not asked again in this report",
            silent.url()
        )]
    );
}

#[test]
fn other_answers_are_said_per_file() {
    let cache = tempfile::tempdir().unwrap();
    let debug = keys("libe.so").remove(0);
    let server = TestServer::start(&[(debug.as_path_str(), Reply::Status(500))]);
    let mut servers = SymbolServers::new(&options(&[&server], cache.path()));
    for key in keys("libe.so") {
        assert_eq!(servers.fetch(&key), None);
    }
    assert_eq!(
        servers.take_notes(),
        [format!(
            "symbol server {}: 1 not found; libe.so's debug file: HTTP 500 Internal Server \
             Error",
            server.url()
        )]
    );
    // Asked again next time (only "not found" is remembered).
    let mut servers = SymbolServers::new(&options(&[&server], cache.path()));
    assert_eq!(servers.fetch(&debug), None);
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn offline_never_asks() {
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start(&[]);
    let mut servers = SymbolServers::new(&ServerOptions {
        offline: true,
        ..options(&[&server], cache.path())
    });
    for key in keys("libo.so") {
        assert_eq!(servers.fetch(&key), None);
    }
    assert!(server.requests().is_empty());
    assert!(servers.take_notes().is_empty());
}

#[test]
fn a_report_makes_a_bounded_number_of_requests() {
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start(&[]);
    let mut servers = SymbolServers::new(&options(&[&server], cache.path()));
    let names: Vec<String> = (0..40).map(|i| format!("lib{i:02}.so")).collect();
    for name in &names {
        for key in keys(name) {
            assert_eq!(servers.fetch(&key), None);
        }
    }
    assert_eq!(server.requests().len(), MAX_REQUESTS);
    let not_asked: Vec<&str> = names[MAX_REQUESTS / 2..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        servers.take_notes(),
        [
            format!("symbol server {}: {MAX_REQUESTS} not found", server.url()),
            format!(
                "symbol servers: stopped after {MAX_REQUESTS} requests, the most one report \
                 makes; not looked up: {}",
                not_asked.join(", ")
            )
        ]
    );
}

#[test]
fn without_a_cache_directory_no_server_is_asked() {
    let server = TestServer::start(&[]);
    let mut servers = SymbolServers::new(&ServerOptions {
        cache: None,
        ..options(&[&server], Path::new("/unused"))
    });
    assert_eq!(servers.fetch(&keys("libn.so")[0]), None);
    assert!(server.requests().is_empty());
    let notes = servers.take_notes();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("--symbol-cache"), "{notes:?}");
}

#[test]
fn sizes() {
    assert_eq!(size(300), "0.3 KiB");
    assert_eq!(size(1_048_575), "1024.0 KiB");
    assert_eq!(size(105 << 20), "105.0 MiB");
}

#[test]
fn servers_are_urls() {
    let given =
        |list: &[&str]| check_servers(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        given(&[
            "https://symbols.example/download/",
            "",
            "http://127.0.0.1:8000"
        ])
        .unwrap(),
        ["https://symbols.example/download", "http://127.0.0.1:8000"]
    );
    assert_eq!(
        given(&["HTTP://A/x", "HTTP://A/x/"]).unwrap(),
        ["HTTP://A/x"]
    );
    for bad in [
        "symbols.example",
        "ftp://a/b",
        "http://",
        "https:///x",
        "/srv/symbols",
    ] {
        let err = given(&[bad]).unwrap_err().to_string();
        assert!(
            err.contains(bad) && err.contains("--symbol-server"),
            "{err}"
        );
    }
}
