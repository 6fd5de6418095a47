//! Async call chains on a real runtime: `tests/programs/AsyncChain.cs` (its facts are
//! documented at its top).

use clrprof_e2e::{OutputExt, compile, record};

#[test]
fn async_chain_draft() {
    let program = compile("AsyncChain");
    let plain = program.run(&[]);
    plain.assert_success();
    let rec = record(&program, &[], &[]);
    rec.output.assert_success();
    eprintln!("{}", rec.output.stderr_str());
    let folded = rec
        .report(&["--format", "folded"])
        .assert_success()
        .stdout_str();
    for l in folded.lines().filter(|l| l.contains("Work")) {
        eprintln!("{l}");
    }
    eprintln!("{}", rec.report_json()["counters"]);
    panic!("draft");
}
