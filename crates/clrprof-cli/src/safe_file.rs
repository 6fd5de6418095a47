//! Output files that are never left half-written: written beside their final name, renamed
//! into place when complete.
//!
//! A command that fails before [`SafeFile::commit`] leaves the file that was there exactly as
//! it was (the temporary file is removed when the `SafeFile` is dropped). Paths that are not
//! regular files (`/dev/null`, a named pipe, `/dev/stdout`) are written directly: there is
//! nothing to replace there.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Where a file named `path` really goes: the target of a symbolic link (so that the link is
/// kept and its target replaced), else `path` itself.
pub fn resolve(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Whether `path` exists and is something other than a regular file (a device, a pipe), which
/// is written in place.
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Whether a `clrprof` is writing the file at `path` right now: it holds the file's lock (a
/// recording's `NAME.partial`).
pub fn being_written(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// The directory a file at `path` lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The permissions a new file replacing `path` gets: those of the file there, else the usual
/// ones for a new file (`rw-rw-rw-` less the umask; `None`: the platform's default).
fn permissions_for(path: &Path) -> Option<std::fs::Permissions> {
    match std::fs::metadata(path) {
        Ok(m) => Some(m.permissions()),
        Err(_) => new_file_permissions(),
    }
}

#[cfg(unix)]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // The umask applies when the file is created with these.
    Some(std::fs::Permissions::from_mode(0o666))
}

#[cfg(not(unix))]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    None
}

/// A file being written beside its final name.
pub struct SafeFile {
    target: PathBuf,
    shown: PathBuf,
    kind: Kind,
}

enum Kind {
    Temp(tempfile::NamedTempFile),
    Direct(File),
}

impl SafeFile {
    /// Starts writing the file that will be `path`: creates a hidden temporary file in the same
    /// directory (so that the rename cannot cross file systems).
    pub fn create(path: &Path) -> Result<SafeFile> {
        let target = resolve(path);
        let kind = if is_special(&target) {
            Kind::Direct(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .with_context(|| format!("cannot open {}", path.display()))?,
            )
        } else {
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .with_context(|| format!("{} is not a file name", path.display()))?;
            let prefix = format!(".{name}.");
            let mut builder = tempfile::Builder::new();
            builder.prefix(&prefix).suffix(".tmp");
            if let Some(permissions) = permissions_for(&target) {
                builder.permissions(permissions);
            }
            let temp = builder
                .tempfile_in(parent_dir(&target))
                .with_context(|| format!("cannot create {}", path.display()))?;
            Kind::Temp(temp)
        };
        Ok(SafeFile {
            target,
            shown: path.to_path_buf(),
            kind,
        })
    }

    /// The file to write to.
    pub fn file(&mut self) -> &mut File {
        match &mut self.kind {
            Kind::Temp(t) => t.as_file_mut(),
            Kind::Direct(f) => f,
        }
    }

    /// Makes the written file the one at its final name, replacing what was there.
    pub fn commit(self) -> Result<()> {
        let shown = self.shown;
        match self.kind {
            Kind::Temp(mut temp) => {
                temp.flush()
                    .and_then(|()| temp.as_file().sync_all())
                    .with_context(|| format!("cannot write {}", shown.display()))?;
                temp.persist(&self.target)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot replace {}", shown.display()))?;
            }
            Kind::Direct(mut f) => {
                f.flush()
                    .with_context(|| format!("cannot write {}", shown.display()))?;
            }
        }
        Ok(())
    }
}

impl Write for SafeFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

/// Refuses, before any work is done, an output path that [`SafeFile::create`] could never
/// replace: a directory, or a file in a directory that does not exist.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn check_target(path: &Path) -> Result<()> {
    let target = resolve(path);
    if target.is_dir() {
        anyhow::bail!(
            "{} is a directory; -o takes a file name (e.g. {})",
            path.display(),
            path.join("coverage.info").display()
        );
    }
    if !is_special(&target) && !parent_dir(&target).is_dir() {
        anyhow::bail!(
            "cannot write {}: the directory {} does not exist",
            path.display(),
            parent_dir(&target).display()
        );
    }
    Ok(())
}

/// Writes `bytes` to `path` through a [`SafeFile`].
#[cfg_attr(not(unix), allow(dead_code))]
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = SafeFile::create(path)?;
    f.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_appears_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "old").unwrap();
        {
            let mut f = SafeFile::create(&path).unwrap();
            f.write_all(b"new, but never committed").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        let mut f = SafeFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_kept_and_its_target_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        let link = dir.path().join("link.txt");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_in_place() {
        write(Path::new("/dev/null"), b"nothing").unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn an_existing_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
}
