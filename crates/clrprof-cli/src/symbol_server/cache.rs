//! The local cache of symbol servers: where it is, and which servers recently said they do not
//! have a file.
//!
//! The cache is a symbol store: each file downloaded is kept under its key
//! (`<cache>/_.debug/elf-buildid-sym-<id>/_.debug`), as `dotnet-symbol` keeps its cache, so it
//! can also be given to `report --symbols`. Beside a key's file, `<file>.missing` lists the
//! servers (one URL a line) that answered "not found" for it; for [`MISSING_FOR`] after it was
//! written they are not asked again, so that reports of the same traces do not ask the same
//! questions (most modules of a system are on no .NET symbol server).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a server's "not found" is believed.
pub(super) const MISSING_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// The cache directory when none is given: `$XDG_CACHE_HOME/clrprof/symbols`, else
/// `$HOME/.cache/clrprof/symbols` (`None` without either).
pub(crate) fn default_dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// [`default_dir`] from the values of `XDG_CACHE_HOME` and `HOME` (a relative
/// `XDG_CACHE_HOME` is ignored, as the XDG specification says).
fn dir_from(xdg_cache_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = xdg_cache_home.filter(|p| p.is_absolute()).or_else(|| {
        home.filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(".cache"))
    })?;
    Some(base.join("clrprof").join("symbols"))
}

/// Where the servers that do not have the file at `path` are listed.
fn missing_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".missing");
    path.with_file_name(name)
}

/// The servers that said, less than [`MISSING_FOR`] ago, that they do not have the file of
/// the cache's `path`.
pub(super) fn missing_at(path: &Path) -> Vec<String> {
    let marker = missing_path(path);
    let fresh = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < MISSING_FOR);
    if !fresh {
        return Vec::new();
    }
    std::fs::read_to_string(&marker)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Notes that `servers` do not have the file of the cache's `path` (with those
/// [`missing_at`] still lists). Best effort: a cache that cannot be written only means the
/// question is asked again next time.
pub(super) fn note_missing(path: &Path, servers: &[String]) {
    let mut all = missing_at(path);
    for s in servers {
        if !all.contains(s) {
            all.push(s.clone());
        }
    }
    let marker = missing_path(path);
    let text: String = all.iter().map(|s| format!("{s}\n")).collect();
    if let Some(dir) = marker.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(mut tmp) = tempfile::Builder::new()
            .prefix(".missing-")
            .tempfile_in(dir)
    {
        use std::io::Write as _;
        if tmp.write_all(text.as_bytes()).is_ok() {
            let _ = tmp.persist(&marker);
        }
    }
}

/// Forgets the servers that did not have the file of the cache's `path` (it is there now).
pub(super) fn forget_missing(path: &Path) {
    let _ = std::fs::remove_file(missing_path(path));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_cache_is() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            dir_from(None, home.clone()),
            Some(PathBuf::from("/home/u/.cache/clrprof/symbols"))
        );
        assert_eq!(
            dir_from(Some("/var/cache/u".into()), home.clone()),
            Some(PathBuf::from("/var/cache/u/clrprof/symbols"))
        );
        assert_eq!(
            dir_from(Some("relative".into()), home),
            Some(PathBuf::from("/home/u/.cache/clrprof/symbols"))
        );
        assert_eq!(dir_from(None, Some(PathBuf::new())), None);
        assert_eq!(dir_from(None, None), None);
    }

    #[test]
    fn servers_without_a_file_are_remembered_for_a_day() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir
            .path()
            .join("_.debug")
            .join("elf-buildid-sym-ab")
            .join("_.debug");
        assert!(missing_at(&file).is_empty());
        note_missing(&file, &["http://a".into()]);
        note_missing(&file, &["http://b".into(), "http://a".into()]);
        assert_eq!(missing_at(&file), ["http://a", "http://b"]);
        let marker = file.with_file_name("_.debug.missing");
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap(),
            "http://a\nhttp://b\n"
        );
        // Older than a day: asked again.
        let old = SystemTime::now() - MISSING_FOR - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&marker)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(missing_at(&file).is_empty());
        note_missing(&file, &["http://c".into()]);
        assert_eq!(missing_at(&file), ["http://c"]);
        forget_missing(&file);
        assert!(!marker.exists());
        assert!(missing_at(&file).is_empty());
    }
}
