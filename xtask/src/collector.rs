//! `cargo xtask setup`'s OpenTelemetry Collector: built with the Collector's builder
//! (`go.opentelemetry.io/collector/cmd/builder`) from the published Go modules the tests name
//! (`clrprof_e2e::COLLECTOR_MODULES`, all at `COLLECTOR_VERSION`), into
//! `.deps/otelcol-<version>/` (staged in `otelcol-<version>.partial/`, renamed once the
//! binary is there; skipped when present). Needs Go 1.26 or later (`go` on PATH or in
//! `/usr/local/go/bin`) and the Go module proxy.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clrprof_e2e::{
    COLLECTOR_BINARY, COLLECTOR_MODULES, COLLECTOR_VERSION, collector_bin, collector_dir,
    describe_command,
};

use crate::util::{find_on_path, is_executable, shown};

/// Where Go's official installer puts it, when it is not on PATH.
const GO_INSTALL_DIR: &str = "/usr/local/go/bin";

pub fn ensure_collector() -> Result<()> {
    let bin = collector_bin();
    if is_executable(&bin) {
        println!(
            "setup: OpenTelemetry Collector {COLLECTOR_VERSION}: already built in {}",
            shown(&bin)
        );
        return Ok(());
    }
    let go = find_go().context(
        "`go` (1.26 or later) is neither on PATH nor in /usr/local/go/bin; it builds the \
         OpenTelemetry Collector the export tests send to",
    )?;
    let dir = collector_dir();
    let staging = dir.with_file_name(format!("otelcol-{COLLECTOR_VERSION}.partial"));
    for stale in [&staging, &dir] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)
                .with_context(|| format!("cannot remove {}", stale.display()))?;
        }
    }
    let tools = staging.join("tools");
    let build = staging.join("build");
    // The builder leaves a temporary directory behind: it goes with the staging.
    let tmp = staging.join("tmp");
    for dir in [&tools, &tmp] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let start = Instant::now();

    // The builder itself, by module path and version, as `go install` fetches it.
    let mut install = Command::new(&go);
    install
        .arg("install")
        .arg(format!(
            "go.opentelemetry.io/collector/cmd/builder@v{COLLECTOR_VERSION}"
        ))
        .env("GOBIN", &tools);
    run(&mut install)?;

    let config = staging.join("builder.yaml");
    std::fs::write(&config, builder_config(&build))
        .with_context(|| format!("cannot write {}", config.display()))?;
    let mut builder = Command::new(tools.join("builder"));
    builder
        .arg(format!("--config={}", config.display()))
        .env("TMPDIR", &tmp);
    // The builder runs `go` from PATH.
    if let Some(go_dir) = go.parent() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![go_dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        builder.env("PATH", std::env::join_paths(dirs)?);
    }
    run(&mut builder)?;

    let built = build.join(COLLECTOR_BINARY);
    if !is_executable(&built) {
        bail!("the builder did not produce {}", built.display());
    }
    std::fs::rename(&built, staging.join(COLLECTOR_BINARY))
        .with_context(|| format!("cannot move {}", built.display()))?;
    // The generated sources and the builder are not needed to run it.
    for done in [&build, &tools, &tmp] {
        std::fs::remove_dir_all(done)
            .with_context(|| format!("cannot remove {}", done.display()))?;
    }
    std::fs::rename(&staging, &dir)
        .with_context(|| format!("cannot rename {} to {}", staging.display(), dir.display()))?;
    println!(
        "setup: OpenTelemetry Collector {COLLECTOR_VERSION}: built in {} in {:.0} s",
        shown(&dir),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The builder's configuration: the components' modules at the one release.
fn builder_config(output: &Path) -> String {
    // Single-quoted: the checkout's path may have spaces or colons ('' is a quote in YAML).
    let mut yaml = format!(
        "dist:\n  name: {COLLECTOR_BINARY}\n  description: OpenTelemetry Collector for clrprof's \
         export tests\n  output_path: '{}'\n",
        output.display().to_string().replace('\'', "''")
    );
    for kind in ["receivers", "exporters"] {
        yaml.push_str(&format!("{kind}:\n"));
        for (_, module) in COLLECTOR_MODULES.iter().filter(|(k, _)| *k == kind) {
            yaml.push_str(&format!("  - gomod: {module} v{COLLECTOR_VERSION}\n"));
        }
    }
    yaml
}

fn find_go() -> Option<PathBuf> {
    find_on_path("go").or_else(|| {
        let go = Path::new(GO_INSTALL_DIR).join("go");
        is_executable(&go).then_some(go)
    })
}

fn run(cmd: &mut Command) -> Result<()> {
    println!("setup: running `{}`", describe_command(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(cmd)))?;
    if !status.success() {
        bail!(
            "`{}` failed ({status}); it needs the Go module proxy (see its output above)",
            describe_command(cmd)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_config_lists_every_module_at_the_release() {
        let yaml = builder_config(Path::new("/a dir/it's"));
        assert!(yaml.contains("  output_path: '/a dir/it''s'\n"));
        assert!(yaml.contains(&format!(
            "receivers:\n  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver \
             v{COLLECTOR_VERSION}\nexporters:\n"
        )));
        assert_eq!(yaml.matches("  - gomod: ").count(), COLLECTOR_MODULES.len());
    }
}
