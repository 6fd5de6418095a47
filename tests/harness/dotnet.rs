//! Finding the .NET runtime the tests run on.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::paths::workspace_root;

/// The CoreCLR version the project pins and `cargo xtask setup` installs.
pub const PINNED_VERSION: &str = "3.1.23";

/// Environment variable naming a dotnet root to use instead of the one `cargo xtask setup`
/// installs.
pub const ROOT_ENV: &str = "CLRPROF_DOTNET_ROOT";

/// An installed .NET runtime: a dotnet root with the `dotnet` muxer and one
/// `shared/Microsoft.NETCore.App/<version>/` framework.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dotnet {
    /// The dotnet root as given (may contain symlinks).
    pub root: PathBuf,
    /// The `dotnet` muxer, canonicalized.
    pub muxer: PathBuf,
    /// `shared/Microsoft.NETCore.App/<version>/`, canonicalized (the paths the runtime reports).
    pub framework_dir: PathBuf,
    /// The framework version, e.g. `3.1.23`.
    pub version: String,
}

impl Dotnet {
    /// The runtime the tests run on: `$CLRPROF_DOTNET_ROOT` if set, else the pinned runtime
    /// installed by `cargo xtask setup`.
    ///
    /// # Panics
    /// If the runtime is missing, with a message saying how to install it: tests fail rather
    /// than skip when the runtime is not there.
    #[track_caller]
    pub fn get() -> &'static Dotnet {
        static DOTNET: OnceLock<Result<Dotnet, String>> = OnceLock::new();
        match DOTNET.get_or_init(locate) {
            Ok(dotnet) => dotnet,
            Err(msg) => panic!("{msg}"),
        }
    }

    /// A `dotnet` found on PATH (any version), for tests that optionally also run on a newer
    /// runtime. `None` if there is none or it has no `Microsoft.NETCore.App` framework.
    pub fn system() -> Option<&'static Dotnet> {
        static SYSTEM: OnceLock<Option<Dotnet>> = OnceLock::new();
        SYSTEM
            .get_or_init(|| {
                let path = std::env::var_os("PATH")?;
                let muxer = std::env::split_paths(&path)
                    .map(|dir| dir.join(exe("dotnet")))
                    .find(|p| p.is_file())?;
                let muxer = std::fs::canonicalize(muxer).ok()?;
                Dotnet::from_root(muxer.parent()?).ok()
            })
            .as_ref()
    }

    /// Reads a dotnet root: a directory with the `dotnet` muxer and
    /// `shared/Microsoft.NETCore.App/<version>/`, or a `pip install --target` directory of the
    /// `dotnetcore2` wheel. Picks the pinned version if present, else the newest.
    pub fn from_root(root: &Path) -> Result<Dotnet, String> {
        let wheel_bin = root.join("dotnetcore2").join("bin");
        let base = if wheel_bin.is_dir() {
            wheel_bin
        } else {
            root.to_path_buf()
        };
        let muxer = base.join(exe("dotnet"));
        if !muxer.is_file() {
            return Err(format!("no `dotnet` muxer at {}", muxer.display()));
        }
        let frameworks = base.join("shared").join("Microsoft.NETCore.App");
        let versions: Vec<String> = std::fs::read_dir(&frameworks)
            .map_err(|e| format!("cannot read {}: {e}", frameworks.display()))?
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.path().join("System.Private.CoreLib.dll").is_file())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        let version = if versions.iter().any(|v| v == PINNED_VERSION) {
            PINNED_VERSION.to_string()
        } else {
            versions
                .into_iter()
                .max_by_key(|v| version_key(v))
                .ok_or_else(|| format!("no framework in {}", frameworks.display()))?
        };
        let canonical = |p: PathBuf| {
            std::fs::canonicalize(&p).map_err(|e| format!("cannot resolve {}: {e}", p.display()))
        };
        Ok(Dotnet {
            root: root.to_path_buf(),
            muxer: canonical(muxer)?,
            framework_dir: canonical(frameworks.join(&version))?,
            version,
        })
    }

    /// The major and minor version, e.g. `(3, 1)`.
    pub fn major_minor(&self) -> (u32, u32) {
        let key = version_key(&self.version);
        (key[0], key[1])
    }

    /// The target framework moniker: `netcoreapp3.1`, `net6.0`, ...
    pub fn tfm(&self) -> String {
        let (major, minor) = self.major_minor();
        if major >= 5 {
            format!("net{major}.{minor}")
        } else {
            format!("netcoreapp{major}.{minor}")
        }
    }
}

fn locate() -> Result<Dotnet, String> {
    if let Some(root) = std::env::var_os(ROOT_ENV) {
        let root = PathBuf::from(root);
        return Dotnet::from_root(&root).map_err(|e| {
            format!(
                "{ROOT_ENV}={} is not a usable dotnet root: {e}.\n\
                 It must contain the `dotnet` muxer and shared/Microsoft.NETCore.App/<version>/.",
                root.display()
            )
        });
    }
    let root = default_dotnet_root();
    Dotnet::from_root(&root).map_err(|e| {
        format!(
            "the .NET runtime {PINNED_VERSION} the end-to-end tests run on is not installed \
             ({e}).\nRun `cargo xtask setup` in the workspace to install it into {} \
             (or set {ROOT_ENV} to another dotnet root).",
            root.display()
        )
    })
}

/// Where `cargo xtask setup` installs the pinned runtime.
pub fn default_dotnet_root() -> PathBuf {
    workspace_root()
        .join(".deps")
        .join(format!("dotnet-{PINNED_VERSION}"))
}

fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

/// Numeric ordering key for versions like `6.0.11` or `8.0.0-rc.1` (pre-release ignored).
fn version_key(version: &str) -> [u32; 3] {
    let mut key = [0; 3];
    let release = version.split(['-', '+']).next().unwrap_or("");
    for (slot, part) in key.iter_mut().zip(release.split('.')) {
        *slot = part.parse().unwrap_or(0);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ordering() {
        assert!(version_key("3.1.23") > version_key("3.1.9"));
        assert!(version_key("6.0.0") > version_key("3.1.23"));
        assert_eq!(version_key("8.0.0-rc.1.2"), [8, 0, 0]);
    }

    #[test]
    fn missing_root_is_an_error() {
        let dir = crate::temp_dir();
        let err = Dotnet::from_root(dir.path()).unwrap_err();
        assert!(err.contains("no `dotnet` muxer"), "{err}");
    }
}
