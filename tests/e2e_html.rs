//! The HTML report of real traces, opened in a real browser (Debian's Chromium, headless,
//! network blocked): no console error and no request, the hot method on screen, a click that
//! zooms the flame graph, search and sorting, the timeline with the program's induced GCs.
//! And the speedscope export opened in speedscope's own app. Screenshots are kept in
//! `<target dir>/test-artifacts/`.

use clrprof_e2e::*;
use serde_json::Value;

fn html(rec: &Recording, name: &str) -> std::path::PathBuf {
    let path = artifacts_dir().join(format!("{name}.html"));
    rec.report(&["--format", "html", "-o", path.to_str().unwrap()])
        .assert_success();
    eprintln!(
        "{name}: trace {} bytes, page {} bytes",
        std::fs::metadata(&rec.trace).unwrap().len(),
        std::fs::metadata(&path).unwrap().len()
    );
    path
}

fn assert_clean(facts: &Value) {
    eprintln!("what the browser saw: {facts}");
    assert_eq!(
        facts["errors"],
        serde_json::json!([]),
        "console errors: {facts:#}"
    );
    assert_eq!(
        facts["requests"],
        serde_json::json!([]),
        "requests left the page: {facts:#}"
    );
}

#[test]
fn the_html_report_of_a_cpu_profile_explores_in_a_browser() {
    let rec = record(&compile("Hot"), &[], &["--mode", "sample"]);
    rec.output.assert_success();
    let page = html(&rec, "report-hot");
    // The page is named for the program the host ran.
    let source = std::fs::read_to_string(&page).unwrap();
    assert!(
        source.contains("<title>Hot.dll: clrprof report</title>"),
        "{}",
        &source[..source.len().min(400)]
    );
    let hot = "Hot.Spin(long)";
    let shot = artifacts_dir().join("report-hot.png");
    let facts = check_in_browser("report", &page, &shot, hot);
    assert_clean(&facts);
    assert!(
        facts["load_ms"].as_u64().unwrap() < 2000,
        "opens in under 2 s: {facts:#}"
    );
    assert_eq!(facts["hot_in_table"], true, "{facts:#}");
    let before = facts["hot_flame_width"].as_f64().unwrap();
    assert!(before > 100.0, "Spin is a wide frame: {facts:#}");
    assert_eq!(facts["zoomed"], hot, "a click zooms into the frame");
    let after = facts["hot_width_after_zoom"].as_f64().unwrap();
    assert!(
        after > before && after > 1000.0,
        "zoomed, it spans the graph: {facts:#}"
    );
    assert_eq!(facts["zoomed_after_reset"], Value::Null);
    assert!(
        facts["search"].as_str().unwrap().starts_with("matched"),
        "{facts:#}"
    );
    assert_eq!(facts["sorted_by"], "total");
    assert!(facts["timeline_height"].as_u64().unwrap() > 40, "{facts:#}");
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a screenshot"
    );
}

#[test]
fn the_timeline_shows_the_induced_gcs_and_the_runtime_views() {
    let rec = record(
        &compile("Timeline"),
        &[],
        &["--mode", "sample", "--events", "all", "--alloc", "all"],
    );
    rec.output.assert_success();
    let json = rec.report_json();
    let gcs = json["gc"]["gcs"].as_array().expect("gc.gcs").len() as u64;
    let induced = json["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["reason"] == "induced")
        .count();
    assert_eq!(induced, 2, "the program induces two collections");
    let page = html(&rec, "report-timeline");
    let shot = artifacts_dir().join("report-timeline.png");
    let facts = check_in_browser("report", &page, &shot, "-");
    assert_clean(&facts);
    let tabs: Vec<&str> = facts["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tab in [
        "Flame graph",
        "Timeline",
        "Memory",
        "Exceptions",
        "JIT",
        "Native calls",
    ] {
        assert!(tabs.contains(&tab), "{tab} in {tabs:?}");
    }
    let metrics = facts["metrics"].as_array().unwrap();
    for m in [
        "CPU time",
        "wall time",
        "allocated bytes",
        "allocated objects",
    ] {
        assert!(metrics.contains(&Value::from(m)), "{m} in {metrics:?}");
    }
    let memory = facts["memory_headings"].as_array().unwrap();
    assert!(
        memory[0]
            .as_str()
            .unwrap()
            .starts_with(&format!("Garbage collections: {gcs} ")),
        "{memory:?}"
    );
    assert!(
        memory
            .iter()
            .any(|h| h.as_str().unwrap().starts_with("Allocations: ")),
        "{memory:?}"
    );
    let marks = &facts["timeline_marks"];
    assert_eq!(marks["gc"].as_u64(), Some(gcs), "every GC drawn: {facts:#}");
    assert_eq!(
        marks["exception"].as_u64(),
        Some(7),
        "7 exceptions: {facts:#}"
    );
    assert!(marks["native"].as_u64().unwrap() > 0, "{facts:#}");
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("TimelineException"));
}

#[test]
fn the_speedscope_export_opens_in_speedscope() {
    let rec = record(&compile("Hot"), &[], &["--mode", "sample"]);
    rec.output.assert_success();
    let file = artifacts_dir().join("hot.speedscope.json");
    rec.report(&["--format", "speedscope", "-o", file.to_str().unwrap()])
        .assert_success();
    let shot = artifacts_dir().join("speedscope-hot.png");
    let facts = check_in_browser("speedscope", &file, &shot, "Hot.Spin(long)");
    assert_eq!(facts["errors"], serde_json::json!([]), "{facts:#}");
    assert_eq!(facts["requests"], serde_json::json!([]), "{facts:#}");
    assert_eq!(facts["hot_shown"], true, "{facts:#}");
}
