//! A real browser for the tests: Debian's Chromium, headless, driven by Playwright
//! (`playwright-core` from the npm registry) through `tests/browser/check.mjs`. `cargo xtask
//! setup` installs Chromium (`apt-get install chromium`), Node.js and, into
//! `.deps/browser-<version>/`, the pinned npm packages the checks use.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::paths::{target_dir, workspace_root};
use crate::process::{OutputExt, run_command_timeout};

/// The pinned `playwright-core` release.
pub const PLAYWRIGHT_VERSION: &str = "1.65.1";

/// Where `cargo xtask setup` installs the browser checks' npm packages (`playwright-core` and
/// the `speedscope` app): a directory with a `node_modules/`.
pub fn browser_deps_dir() -> PathBuf {
    workspace_root()
        .join(".deps")
        .join(format!("browser-{PLAYWRIGHT_VERSION}"))
}

/// The browser the checks drive.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Where tests keep what a person may want to look at afterwards (screenshots, reports):
/// `<target dir>/test-artifacts/`.
pub fn artifacts_dir() -> PathBuf {
    let dir = target_dir().join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("cannot create the test artifacts directory");
    dir
}

/// Opens `file` in the browser as `mode` says (`report`: clrprof's HTML report; `speedscope`:
/// a speedscope file in speedscope's own app), acts on it, saves a screenshot to `screenshot`,
/// and returns what `check.mjs` saw.
///
/// # Panics
/// If Node.js, Chromium or the npm packages are missing (with how to install them), or the
/// script fails.
#[track_caller]
pub fn check_in_browser(
    mode: &str,
    file: &Path,
    screenshot: &Path,
    hot: &str,
) -> serde_json::Value {
    let deps = browser_deps_dir();
    assert!(
        deps.join("node_modules").join("playwright-core").is_dir() && Path::new(CHROMIUM).is_file(),
        "{} or {CHROMIUM} is missing: run `cargo xtask setup`",
        deps.display()
    );
    let script = workspace_root()
        .join("tests")
        .join("browser")
        .join("check.mjs");
    // One browser at a time: the tests of a file run in parallel, and two Chromiums starting
    // at once on a small machine measure each other (an opening time of 2 s where one alone
    // takes 0.5-0.7 s).
    static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .arg(mode)
        .arg(file)
        .arg(screenshot)
        .arg(hot)
        .env("CLRPROF_BROWSER_DEPS", &deps)
        .env("CLRPROF_CHROMIUM", CHROMIUM);
    let out = run_command_timeout(&mut cmd, std::time::Duration::from_secs(180));
    out.assert_success();
    let stdout = out.stdout_str();
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "check.mjs printed no JSON ({e}):\n{stdout}\n{}",
            out.stderr_str()
        )
    })
}
