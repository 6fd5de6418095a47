//! Symbol files from symbol servers for `clrprof report` (`--symbol-server URL`,
//! `CLRPROF_SYMBOL_SERVER`), kept in a local cache (`--symbol-cache DIR`), or from that cache
//! alone (`--offline`).
//!
//! A server is asked for a module's files by their keys in the layout of the .NET tools'
//! symbol servers (`clrprof_symbols::store`): `GET <server>/<key>`, the debug file's key on
//! every server first, then the library's. The cache is looked into before any server and
//! keeps every file downloaded, so a module's symbols are downloaded once. A file a server
//! gives is kept only if its GNU build id is the module's (and `SymbolFiles` checks it again
//! before use).
//!
//! What may go wrong costs a line per server, never a failed report: a server that cannot be
//! reached, or stops answering within the timeout, is not asked again in the same report; a
//! report makes at most [`MAX_REQUESTS`] requests; a server's "not found" is remembered for a
//! day (`cache.rs`).

mod cache;
mod http;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use clrprof_symbols::{StoreKey, SymbolSource, read_build_id};

pub(crate) use cache::default_dir;
use http::{Answer, Client, Failure};

/// The most requests one report makes, over all servers.
pub(crate) const MAX_REQUESTS: usize = 64;

/// Where symbol files come from besides the paths given with `--symbols`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerOptions {
    /// The servers' URLs, in the order they are asked.
    pub servers: Vec<String>,
    /// The cache directory (`None`: no cache could be found).
    pub cache: Option<PathBuf>,
    /// Never ask a server: files from the cache only.
    pub offline: bool,
    /// How long to wait for a server.
    pub timeout: Duration,
}

impl ServerOptions {
    /// Whether files are looked for in the cache or on servers at all.
    pub(crate) fn used(&self) -> bool {
        self.offline || !self.servers.is_empty()
    }
}

/// Checks the servers given: each an `http://` or `https://` URL with a host (a trailing `/`
/// is dropped); empty entries (of a list with extra spaces) are ignored.
pub(crate) fn check_servers(given: &[String]) -> Result<Vec<String>> {
    let mut servers = Vec::new();
    for url in given.iter().map(|u| u.trim()).filter(|u| !u.is_empty()) {
        let lower = url.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("https://")
            .or_else(|| lower.strip_prefix("http://"));
        let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
        if host.is_none_or(str::is_empty) {
            bail!(
                "--symbol-server {url}: not a symbol server's URL (give http://HOST/PATH or \
                 https://HOST/PATH)"
            );
        }
        let url = url.trim_end_matches('/').to_string();
        if !servers.contains(&url) {
            servers.push(url);
        }
    }
    Ok(servers)
}

/// One server, and what it did in this report.
#[derive(Debug, Default)]
struct Server {
    url: String,
    /// Why it is no longer asked.
    failed: Option<String>,
    /// What it gave: each file and its size.
    downloaded: Vec<(String, u64)>,
    /// Files it does not have.
    not_found: u64,
    /// Files it gave of another build (or not ELF files at all).
    rejected: Vec<String>,
    /// Files it could not give, and why.
    errors: Vec<(String, String)>,
}

impl Server {
    /// One line about what it did, if it was asked anything.
    fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.downloaded.is_empty() {
            let files: Vec<String> = self
                .downloaded
                .iter()
                .map(|(f, bytes)| format!("{f} ({})", size(*bytes)))
                .collect();
            parts.push(format!("downloaded {}", files.join(", ")));
        }
        if self.not_found > 0 {
            parts.push(format!("{} not found", self.not_found));
        }
        if !self.rejected.is_empty() {
            parts.push(format!(
                "ignored what it gave for {}: not of the module's build (GNU build id)",
                self.rejected.join(", ")
            ));
        }
        for (file, why) in &self.errors {
            parts.push(format!("{file}: {why}"));
        }
        if let Some(why) = &self.failed {
            parts.push(format!("{why}; not asked again in this report"));
        }
        (!parts.is_empty()).then(|| format!("symbol server {}: {}", self.url, parts.join("; ")))
    }
}

/// `12.3 MiB`, `4.5 KiB`.
fn size(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    }
}

/// The cache and the servers, as a [`SymbolSource`] of `SymbolFiles`.
#[derive(Debug)]
pub(crate) struct SymbolServers {
    cache: Option<PathBuf>,
    offline: bool,
    timeout: Duration,
    servers: Vec<Server>,
    /// Made on the first request.
    client: Option<ClientCell>,
    /// Requests made so far.
    requests: usize,
    /// Modules not looked up once [`MAX_REQUESTS`] were made.
    not_asked: BTreeSet<String>,
    /// Why the cache cannot be written (then no server is asked).
    cache_failed: Option<String>,
    /// The lines said, so that none is said twice.
    said: BTreeSet<String>,
}

/// The HTTP client, without a `Debug` of its own.
struct ClientCell(Client);

impl std::fmt::Debug for ClientCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

impl SymbolServers {
    pub(crate) fn new(opts: &ServerOptions) -> SymbolServers {
        SymbolServers {
            cache: opts.cache.clone(),
            offline: opts.offline,
            timeout: opts.timeout,
            servers: opts
                .servers
                .iter()
                .map(|url| Server {
                    url: url.clone(),
                    ..Server::default()
                })
                .collect(),
            client: None,
            requests: 0,
            not_asked: BTreeSet::new(),
            cache_failed: None,
            said: BTreeSet::new(),
        }
    }

    /// Asks the servers for `key`, to keep it at `path` in the cache.
    fn download(&mut self, key: &StoreKey, path: &Path) -> Option<PathBuf> {
        let dir = path.parent()?;
        let missing = cache::missing_at(path);
        let mut not_found = Vec::new();
        let mut found = None;
        for i in 0..self.servers.len() {
            if self.cache_failed.is_some() {
                break;
            }
            let server = &self.servers[i];
            if server.failed.is_some() || missing.contains(&server.url) {
                continue;
            }
            if self.requests >= MAX_REQUESTS {
                self.not_asked.insert(key.module.clone());
                break;
            }
            if let Err(e) = std::fs::create_dir_all(dir) {
                self.cache_failed = Some(format!("cannot create {}: {e}", dir.display()));
                break;
            }
            self.requests += 1;
            let url = format!("{}/{}", server.url, key.as_path_str());
            let client = &self
                .client
                .get_or_insert_with(|| ClientCell(Client::new(self.timeout)))
                .0;
            let what = format!("{key} from {}", server.url);
            let mut status = crate::progress_line::Status::new();
            status.show(&format!("asking for {what}"));
            let answer = client.download(&url, dir, &mut |bytes| {
                status.show(&format!("downloading {what}: {}", size(bytes)))
            });
            drop(status);
            let server = &mut self.servers[i];
            match answer {
                Ok(Answer::NotFound) => {
                    server.not_found += 1;
                    not_found.push(server.url.clone());
                }
                Ok(Answer::File(file, bytes)) => {
                    if read_build_id(file.path()).ok().flatten().as_deref()
                        != Some(key.build_id.as_slice())
                    {
                        server.rejected.push(key.to_string());
                        continue;
                    }
                    match file.persist(path) {
                        Ok(_) => {
                            server.downloaded.push((key.to_string(), bytes));
                            found = Some(path.to_path_buf());
                            break;
                        }
                        Err(e) => {
                            self.cache_failed =
                                Some(format!("cannot write {}: {}", path.display(), e.error));
                        }
                    }
                }
                Err(Failure::File(why)) => server.errors.push((key.to_string(), why)),
                Err(Failure::Server(why)) => server.failed = Some(why),
                Err(Failure::Cache(why)) => self.cache_failed = Some(format!("cannot write {why}")),
            }
        }
        if found.is_some() {
            cache::forget_missing(path);
        } else if !not_found.is_empty() {
            cache::note_missing(path, &not_found);
        }
        found
    }
}

impl SymbolSource for SymbolServers {
    fn fetch(&mut self, key: &StoreKey) -> Option<PathBuf> {
        let path = key.path_in(self.cache.as_deref()?);
        if path.is_file() {
            return Some(path);
        }
        if self.offline {
            return None;
        }
        self.download(key, &path)
    }

    /// One line per server that was asked anything (and one for the cache and one for the
    /// limit of requests, if they count), each line once.
    fn take_notes(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.cache.is_none() && !self.offline && !self.servers.is_empty() {
            notes.push(
                "symbol servers not asked: no cache directory to keep their files in (give \
                 --symbol-cache DIR, or set HOME or XDG_CACHE_HOME)"
                    .to_string(),
            );
        }
        if let Some(why) = &self.cache_failed {
            notes.push(format!(
                "symbol cache: {why}; the symbol servers were not asked further"
            ));
        }
        notes.extend(self.servers.iter().filter_map(Server::note));
        if !self.not_asked.is_empty() {
            let modules: Vec<&str> = self.not_asked.iter().map(String::as_str).collect();
            notes.push(format!(
                "symbol servers: stopped after {MAX_REQUESTS} requests, the most one report \
                 makes; not looked up: {}",
                modules.join(", ")
            ));
        }
        notes.retain(|n| self.said.insert(n.clone()));
        notes
    }
}
