//! Lock contention on a real runtime: `tests/programs/Contention.cs` (its facts are documented
//! at its top): 50 contended acquisitions of a `Contention.Ledger` by the thread `waiter` in
//! `Program.Take()`, each while `holder` sleeps 20 ms inside the lock.

use clrprof_e2e::{Dotnet, OutputExt, compile, record};

/// `waited_us N` from the program's stderr: its own measure of the time spent entering the lock.
fn waited_ns(stderr: &[u8]) -> u64 {
    String::from_utf8_lossy(stderr)
        .lines()
        .find_map(|l| l.strip_prefix("waited_us "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .expect("waited_us in the program's stderr")
        * 1000
}

#[test]
fn contended_locks_with_type_site_holder_and_wait() {
    let program = compile("Contention");
    let plain = program.run(&[]);
    plain.assert_success();
    let rec = record(&program, &[], &["--contention"]);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout, plain.stdout,
        "profiling changed the output"
    );
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "entries 100\n");
    let truth = waited_ns(&rec.output.stderr);

    let json = rec.report_json_with(&["--contention"]);
    let c = &json["contention"];
    let counters = &rec.report_json()["counters"];
    if !Dotnet::get().has_in_process_eventpipe() {
        // CoreCLR 3.1: no in-process EventPipe session; the report says what is missing.
        assert_eq!(counters["contention_reader"], 0, "{counters:#}");
        assert_eq!(c["count"], 0, "{c:#}");
        let notes = c["notes"].to_string();
        assert!(notes.contains("not recorded"), "{notes}");
        let text = rec.report(&["--contention"]).assert_success().stdout_str();
        assert!(text.contains("not recorded"), "{text}");
        return;
    }
    assert_eq!(counters["contention_reader"], 1, "{counters:#}");
    assert_eq!(counters["contention_unpaired"], 0, "{counters:#}");
    assert_eq!(counters["contention_dropped"], 0, "{counters:#}");
    assert_eq!(counters["contention_unreadable"], 0, "{counters:#}");
    // Exactly the program's 50 contended entries of the Ledger lock, all at one site, one
    // lock, waited by `waiter`, held by `holder`.
    let rows = c["locks"].as_array().expect("locks[]");
    let ledger: Vec<_> = rows
        .iter()
        .filter(|r| r["lock_type"] == "Contention.Ledger")
        .collect();
    assert_eq!(ledger.len(), 1, "{c:#}");
    let row = ledger[0];
    assert_eq!(row["count"], 50, "{row:#}");
    assert_eq!(row["site"], "Contention.Program.Take()", "{row:#}");
    assert_eq!(row["locks"], 1, "{row:#}");
    let names = |key: &str| -> Vec<String> {
        row[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                n.as_str()
                    .unwrap()
                    .split(" (tid")
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(names("waiters"), ["waiter"], "{row:#}");
    assert_eq!(names("holders"), ["holder"], "{row:#}");
    // The waits add up to what the program measured around its `lock` statements, within
    // 10%; the longest is at least the mean and, on this loaded machine, not bounded closer
    // than the total (a descheduled holder can make one wait much longer than 20 ms).
    let total = row["total_wait_ns"].as_u64().unwrap();
    assert!(
        total.abs_diff(truth) * 10 <= truth,
        "reported {total} ns, the program waited {truth} ns"
    );
    let longest = row["longest_wait_ns"].as_u64().unwrap();
    assert!((total / 50..=total).contains(&longest), "{row:#}");

    // The text view says the same.
    let text = rec.report(&["--contention"]).assert_success().stdout_str();
    assert!(
        text.contains("Lock contention: ") && text.contains("Contention.Ledger"),
        "{text}"
    );
    assert!(text.contains("Contention.Program.Take()"), "{text}");
    assert!(text.contains("held by: holder"), "{text}");

    // The wait by stack through the profile renderers: one folded stack, the lock as its leaf,
    // weighed with the same total.
    let folded = rec
        .report(&["--contention", "--format", "folded"])
        .assert_success()
        .stdout_str();
    let ledger_lines: Vec<&str> = folded
        .lines()
        .filter(|l| l.contains("[lock: Contention.Ledger]"))
        .collect();
    assert_eq!(ledger_lines.len(), 1, "{folded}");
    let (stack, weight) = ledger_lines[0].rsplit_once(' ').unwrap();
    assert!(
        stack.ends_with("Contention.Program.Take();[lock: Contention.Ledger]"),
        "{stack}"
    );
    assert_eq!(weight.parse::<u64>().unwrap(), total);
    let svg = rec
        .report(&["--contention", "--format", "flamegraph"])
        .assert_success()
        .stdout_str();
    assert!(
        svg.contains("Contention.Ledger"),
        "no lock frame in the flame graph"
    );
}
