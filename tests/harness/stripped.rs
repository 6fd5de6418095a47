//! A copy of a runtime whose `libcoreclr.so` is stripped, for the tests of native code without
//! symbols: the same runtime, built once, named with and without its symbol table.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::compile::{Fnv64, in_place};
use crate::dotnet::Dotnet;
use crate::paths::layout;
use crate::process::{OutputExt, run_command};

impl Dotnet {
    /// The runtime's `libcoreclr.so`.
    pub fn libcoreclr(&self) -> PathBuf {
        self.framework_dir.join("libcoreclr.so")
    }

    /// A copy of this runtime whose `libcoreclr.so` is stripped (`strip --strip-all`: no
    /// `.symtab`, exports and unwind information kept, and the GNU build id too), as .NET 8
    /// ships its own. Made once, under `<target dir>/e2e-runtimes/`: the `dotnet` muxer is
    /// copied (it finds the runtime from its own location), `libcoreclr.so` is the stripped
    /// copy, everything else links to this runtime's files.
    ///
    /// # Panics
    /// If `strip` (GNU binutils) is missing or the copy cannot be made.
    #[track_caller]
    pub fn with_stripped_libcoreclr(&self) -> &'static Dotnet {
        static MADE: Mutex<Vec<(PathBuf, &'static Dotnet)>> = Mutex::new(Vec::new());
        let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, found)) = made.iter().find(|(from, _)| *from == self.framework_dir) {
            return found;
        }
        let lib = self.libcoreclr();
        let meta = std::fs::metadata(&lib)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", lib.display()));
        let mut hash = Fnv64::new();
        hash.write_str(&self.framework_dir.to_string_lossy());
        hash.write_str(&meta.len().to_string());
        let dir = layout().target_root.join("e2e-runtimes").join(format!(
            "{}-stripped-libcoreclr-{:016x}",
            self.version,
            hash.finish()
        ));
        let framework = |root: &Path| {
            root.join("shared")
                .join("Microsoft.NETCore.App")
                .join(&self.version)
        };
        let marker = framework(&dir).join("libcoreclr.so");
        if !marker.is_file() {
            std::fs::create_dir_all(dir.parent().expect("a parent"))
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
            in_place(&dir, &marker, |tmp| {
                self.make_stripped_copy(tmp, &framework(tmp))
            });
        }
        let copy = Dotnet::from_root(&dir, Some(&self.version))
            .unwrap_or_else(|e| panic!("the stripped copy {} is unusable: {e}", dir.display()));
        let copy: &'static Dotnet = Box::leak(Box::new(copy));
        made.push((self.framework_dir.clone(), copy));
        copy
    }

    fn make_stripped_copy(&self, root: &Path, framework: &Path) -> Result<(), String> {
        let muxer = root.join(self.muxer.file_name().ok_or("the muxer has a name")?);
        std::fs::copy(&self.muxer, &muxer).map_err(|e| format!("cannot copy the muxer: {e}"))?;
        let host = self.muxer.with_file_name("host");
        link(&host, &root.join("host"))?;
        std::fs::create_dir_all(framework)
            .map_err(|e| format!("cannot create {}: {e}", framework.display()))?;
        let entries = std::fs::read_dir(&self.framework_dir)
            .map_err(|e| format!("cannot read {}: {e}", self.framework_dir.display()))?;
        for entry in entries.flatten() {
            if entry.file_name() != "libcoreclr.so" {
                link(&entry.path(), &framework.join(entry.file_name()))?;
            }
        }
        let mut strip = Command::new("strip");
        strip
            .arg("--strip-all")
            .arg("-o")
            .arg(framework.join("libcoreclr.so"))
            .arg(self.libcoreclr());
        let out = run_command(&mut strip);
        if !out.status.success() {
            return Err(format!(
                "`strip --strip-all` (GNU binutils; `cargo xtask setup` installs it) failed\n{}",
                out.describe()
            ));
        }
        Ok(())
    }
}

/// Makes `to` a symbolic link to `from` (a copy where there are none).
fn link(from: &Path, to: &Path) -> Result<(), String> {
    let from = std::fs::canonicalize(from)
        .map_err(|e| format!("cannot resolve {}: {e}", from.display()))?;
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(&from, to);
    #[cfg(not(unix))]
    let made = std::fs::copy(&from, to).map(drop);
    made.map_err(|e| format!("cannot link {} to {}: {e}", to.display(), from.display()))
}
