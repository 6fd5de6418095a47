//! A symbol server on the loopback interface for the tests of `report --symbol-server`: it
//! answers `GET /<path>` with the file at that path under its directory (a symbol store's
//! layout, `_.debug/elf-buildid-sym-<id>/_.debug`) and 404 for anything else, logs every path
//! asked, and stops when dropped. One thread per connection, each connection one request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running symbol server.
pub struct SymbolServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SymbolServer {
    /// Serves the files under `root` on 127.0.0.1, on a port of its own.
    ///
    /// # Panics
    /// If no port can be had.
    pub fn serve(root: &Path) -> SymbolServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let root = root.to_path_buf();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (log.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, log) = (root.clone(), l.clone());
                std::thread::spawn(move || answer(stream, &root, &log));
            }
        });
        SymbolServer {
            addr,
            log,
            stop,
            thread: Some(thread),
        }
    }

    /// Its URL, `http://127.0.0.1:PORT/symbols` (every path it serves is under it).
    pub fn url(&self) -> String {
        format!("http://{}/symbols", self.addr)
    }

    /// The keys asked so far (paths under [`Self::url`]), in order.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for SymbolServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A URL that refuses connections: a loopback port that was bound, then released.
pub fn refusing_url() -> String {
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port");
    format!("http://{addr}/symbols")
}

fn answer(mut stream: TcpStream, root: &Path, log: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 << 10 || !matches!(stream.read(&mut byte), Ok(1)) {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split(' ');
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return;
    };
    let Some(key) = path.strip_prefix("/symbols/") else {
        let _ = respond(&mut stream, 404, &[]);
        return;
    };
    log.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(key.to_string());
    let body = (method == "GET")
        .then(|| file_of(root, key))
        .flatten()
        .and_then(|p| std::fs::read(p).ok());
    let _ = match body {
        Some(bytes) => respond(&mut stream, 200, &bytes),
        None => respond(&mut stream, 404, &[]),
    };
}

/// The file of `key` under `root`, if the key is a plain relative path.
fn file_of(root: &Path, key: &str) -> Option<PathBuf> {
    let relative = Path::new(key);
    relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| root.join(relative))
        .filter(|p| p.is_file())
}

fn respond(stream: &mut TcpStream, status: u16, body: &[u8]) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)
}
