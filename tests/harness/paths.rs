//! Where the workspace and the build output are.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The workspace root (the parent of the `tests` package).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package lives inside the workspace")
        .to_path_buf()
}

/// How the running test binary was built, read from its own location
/// (`<target dir>[/<triple>]/<profile dir>/deps/<test>-<hash>`).
#[derive(Debug)]
pub(crate) struct BuildLayout {
    /// The cargo target directory (`target/`).
    pub target_root: PathBuf,
    /// `target/[<triple>/]<profile dir>`: where cargo puts binaries and cdylibs.
    pub profile_dir: PathBuf,
    /// `--target` the tests were built with, if any.
    pub triple: Option<String>,
    /// Cargo profile name (`dev` for `target/debug`).
    pub profile: String,
}

pub(crate) fn layout() -> &'static BuildLayout {
    static LAYOUT: OnceLock<BuildLayout> = OnceLock::new();
    LAYOUT.get_or_init(|| from_exe().unwrap_or_else(fallback))
}

fn from_exe() -> Option<BuildLayout> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    let profile_dir = deps.parent()?.to_path_buf();
    let profile = match profile_dir.file_name()?.to_str()? {
        "debug" => "dev".to_string(),
        other => other.to_string(),
    };
    let above = profile_dir.parent()?;
    let (target_root, triple) = if above.join("CACHEDIR.TAG").is_file() {
        (above.to_path_buf(), None)
    } else {
        let triple = above.file_name()?.to_str()?.to_string();
        (above.parent()?.to_path_buf(), Some(triple))
    };
    Some(BuildLayout {
        target_root,
        profile_dir,
        triple,
        profile,
    })
}

fn fallback() -> BuildLayout {
    let target_root = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    BuildLayout {
        profile_dir: target_root.join("debug"),
        target_root,
        triple: None,
        profile: "dev".to_string(),
    }
}

/// The cargo target directory the tests were built into.
pub fn target_dir() -> PathBuf {
    layout().target_root.clone()
}
