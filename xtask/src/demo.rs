//! `cargo xtask demo`: the README's main job, end to end, on the bundled example program.
//!
//! Installs what it needs (the runtimes and `mcs`, not the tests' tools), builds clrprof in
//! release, compiles `examples/demo/Demo.cs`, records it (CPU samples plus GC, exception, JIT and thread events),
//! writes the HTML report (its path printed first), prints the text report, and writes a flame
//! graph and a speedscope profile to `target/demo/`.

use std::process::Command;

use anyhow::{Context, Result};

use crate::util::{build_release, catch_panic, run as run_cmd, shown, workspace_root};

pub fn run() -> Result<()> {
    crate::setup::run_for_demo()?;
    let root = workspace_root();
    println!("demo: building clrprof (release)");
    let clrprof = build_release(&["clrprof-cli", "clrprof-agent"])?.join("clrprof");

    let source = root.join("examples").join("demo").join("Demo.cs");
    println!("demo: compiling {}", shown(&source));
    let program = catch_panic("compiling the demo program", || {
        clrprof_e2e::compile_file(&source)
    })?;

    let out = clrprof_e2e::target_dir().join("demo");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let trace = out.join("demo.clrprof");
    let flamegraph = out.join("flamegraph.svg");
    let speedscope = out.join("demo.speedscope.json");
    let html = out.join("report.html");

    println!(
        "demo: recording `dotnet Demo.dll` (CPU samples at 1 kHz; GC, exception, JIT and thread events)\n"
    );
    let mut record = Command::new(&clrprof);
    record
        .args(["record", "--events", "gc,exception,jit,thread", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&program.dotnet.muxer)
        .arg(&program.dll)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
    run_cmd(record)?;

    let mut page = Command::new(&clrprof);
    page.arg("report")
        .arg(&trace)
        .args(["--format", "html", "-o"])
        .arg(&html);
    run_cmd(page)?;
    println!(
        "\ndemo: HTML report: {}  (open it in a browser)",
        html.display()
    );

    println!("\ndemo: clrprof report {} --top 15\n", shown(&trace));
    let mut report = Command::new(&clrprof);
    report.arg("report").arg(&trace).args(["--top", "15"]);
    run_cmd(report)?;

    for (format, path) in [("flamegraph", &flamegraph), ("speedscope", &speedscope)] {
        let mut export = Command::new(&clrprof);
        export
            .arg("report")
            .arg(&trace)
            .args(["--format", format, "-o"])
            .arg(path);
        run_cmd(export)?;
    }
    println!("\ndemo: done.");
    println!("  HTML report {}  (open it in a browser)", shown(&html));
    println!("  trace       {}", shown(&trace));
    println!(
        "  flame graph {}  (open it in a browser)",
        shown(&flamegraph)
    );
    println!(
        "  speedscope  {}  (drop it on https://www.speedscope.app)",
        shown(&speedscope)
    );
    println!(
        "  more views: target/release/clrprof report {} --tree, --metric wall, --format json",
        shown(&trace)
    );
    Ok(())
}
