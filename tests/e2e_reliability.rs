#![cfg(unix)]
//! End to end: nothing lost, nothing wrong. Output files are replaced only when complete, a
//! recording cut short (clrprof killed or stopped, a full disk, a file-size limit) leaves a
//! readable trace under a name that says so, and a damaged trace reports only what can be
//! trusted, saying what was left out.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use clrprof_e2e::*;
use clrprof_trace::{BLOCK_HEADER_LEN, BlockHeader, HEADER_LEN, Reader, Record};

const YESTERDAY: &[u8] = b"yesterday's profile, which must survive";

#[test]
fn commands_that_fail_leave_the_existing_file_as_it_was() {
    let dir = temp_dir();
    let out = dir.path().join("out.clrprof");
    std::fs::write(&out, YESTERDAY).unwrap();
    let o = out.to_str().unwrap();

    // A mistyped program name.
    let r = clrprof(&["record", "-o", o, "--", "/nonexistent/dotnet-app"]);
    r.assert_exit_code(1);
    assert!(r.stderr_str().contains("cannot start"), "{}", r.describe());
    // A program the agent cannot profile.
    let r = clrprof(&["record", "-o", o, "--", "/bin/echo", "hi"]);
    r.assert_exit_code(125);
    // A report of something that is not a trace, and a coverage run that cannot start.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "just text\n").unwrap();
    let r = clrprof(&["report", notes.to_str().unwrap(), "-o", o]);
    r.assert_exit_code(1);
    let r = clrprof(&["coverage", "-o", o, "--", "/nonexistent/dotnet-app"]);
    r.assert_exit_code(1);

    assert_eq!(std::fs::read(&out).unwrap(), YESTERDAY);
    assert_eq!(
        files_in(dir.path()),
        ["notes.txt", "out.clrprof"],
        "nothing left behind"
    );
}

#[test]
fn a_complete_recording_replaces_the_file_and_leaves_nothing_else() {
    let program = compile("Hello");
    let dir = temp_dir();
    let out = dir.path().join("out.clrprof");
    std::fs::write(&out, YESTERDAY).unwrap();
    let mut cmd = record_command(&program, &[], &["--mode", "none"], &out);
    let r = run_command(&mut cmd);
    r.assert_success();
    r.assert_stderr_contains(&format!("wrote {}", out.display()));
    r.assert_stderr_contains("the program ended: exit 0");
    assert_eq!(files_in(dir.path()), ["out.clrprof"]);
    let bytes = std::fs::read(&out).unwrap();
    let reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(
        reader.header().major,
        3,
        "record writes checksummed blocks, a section per process"
    );
    let json = report_json(&out);
    assert_eq!(json["session"]["program_end"], "exit 0");
    assert_eq!(json["session"]["integrity_notes"], serde_json::json!([]));
}

/// `clrprof record` of `Attachee` with stdin and stdout piped, and its output lines.
struct Interactive {
    guard: ChildGuard,
    lines: Receiver<String>,
    trace: PathBuf,
    _dir: tempfile::TempDir,
}

impl Interactive {
    fn start(clrprof_args: &[&str]) -> Interactive {
        Self::start_with_env(clrprof_args, &[])
    }

    /// [`Interactive::start`] with more environment variables for clrprof (and the program).
    fn start_with_env(clrprof_args: &[&str], env: &[(&str, &Path)]) -> Interactive {
        let program = compile("Attachee");
        let dir = temp_dir();
        let trace = dir.path().join("t.clrprof");
        std::fs::write(&trace, YESTERDAY).unwrap();
        let mut cmd = record_command(&program, &[], clrprof_args, &trace);
        cmd.envs(env.iter().map(|(k, v)| (*k, *v)));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        let stdout = guard.child_mut().stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut me = Interactive {
            guard,
            lines,
            trace,
            _dir: dir,
        };
        me.expect("ready");
        me
    }

    fn expect(&mut self, line: &str) {
        let got = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("no `{line}` from the program: {e}"));
        assert_eq!(got, line);
    }

    fn send(&mut self, command: &str) {
        let stdin = self.guard.child_mut().stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends `signal` to clrprof alone (not to the program).
    fn signal_clrprof(&mut self, signal: &str) {
        send_signal(signal, self.guard.id());
    }

    /// Sends `signal` to the program alone, as a terminal's Ctrl-C does (to every process of
    /// the foreground group, the program included).
    fn signal_program(&mut self, signal: &str) {
        send_signal(signal, first_child(self.guard.id()));
    }

    /// Waits for clrprof, which must exit with `code`, as the program did alone after
    /// `signal` (it ended as `end` says).
    fn ends_as_alone(&mut self, signal: &str, code: i32, end: &str) -> Output {
        let out = self.guard.wait_with_output(default_timeout());
        assert_eq!(
            out.status.code(),
            Some(code),
            "{signal}: clrprof exits as the program did alone ({end})\n{}",
            out.describe()
        );
        out
    }

    /// The trace's JSON report, which holds the 5 exceptions of `round 5` and the program's
    /// end (`end`).
    fn holds_the_round(&self, signal: &str, end: &str) -> serde_json::Value {
        let json = report_json(&self.trace);
        assert_eq!(json["events"]["ExceptionThrown"], 5, "{signal}");
        assert_eq!(json["session"]["program_end"], end, "{signal}");
        json
    }

    fn partial(&self) -> PathBuf {
        self.trace.with_file_name("t.clrprof.partial")
    }
}

/// The integrity note of a trace's JSON report, which must have exactly one.
#[track_caller]
fn only_integrity_note(json: &serde_json::Value) -> &str {
    let notes = json["session"]["integrity_notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    notes[0].as_str().unwrap()
}

/// Checks that a trace's JSON report says, and only says, that the recording did not finish.
#[track_caller]
fn assert_only_note_is_unfinished(json: &serde_json::Value) {
    let note = only_integrity_note(json);
    assert!(note.starts_with("the recording did not finish"), "{note}");
}

/// The partial trace of an Attachee recording that ran `round 5` before clrprof was stopped:
/// every one of the 5 exceptions is in it, it says the recording did not finish, and the file
/// at the final name is untouched.
fn check_partial(rec: &Interactive) {
    assert_eq!(std::fs::read(&rec.trace).unwrap(), YESTERDAY);
    let partial = rec.partial();
    assert!(partial.exists(), "{} is missing", partial.display());
    let json = report_json(&partial);
    assert_eq!(json["events"]["ExceptionThrown"], 5, "{:#}", json["events"]);
    assert_eq!(json["session"]["program_end"], serde_json::Value::Null);
    assert_only_note_is_unfinished(&json);
    let text = report(&partial, &[]);
    text.assert_success();
    assert!(
        text.stdout_str()
            .contains("WARNING   the recording did not finish"),
        "{}",
        text.stdout_str()
    );
}

#[test]
fn a_killed_record_leaves_a_readable_partial_trace() {
    let mut rec = Interactive::start(&["--mode", "none", "--events", "exception"]);
    rec.send("round 5");
    rec.expect("rounds 5: total 5, caught 5");
    // The agent sends every 10 ms, clrprof seals a block at least every 250 ms.
    std::thread::sleep(Duration::from_millis(1000));
    rec.signal_clrprof("-KILL");
    std::thread::sleep(Duration::from_millis(200));
    check_partial(&rec);
    rec.guard.kill();
}

/// The status `Attachee` ends with, run alone, when `signal` (`-TERM`) is sent to it once it
/// is ready: what a shell would show (`code`, or 128 + the signal) and how a report says it.
fn attachee_alone_under(signal: &str) -> (i32, String) {
    use std::os::unix::process::ExitStatusExt;
    let program = compile("Attachee");
    let mut cmd = program.command();
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut alone = ChildGuard::spawn(&mut cmd);
    let stdout = alone.child_mut().stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    send_signal(signal, alone.id());
    let out = alone.wait_with_output(default_timeout());
    match (out.status.code(), out.status.signal()) {
        (Some(code), _) => (code, format!("exit {code}")),
        (None, Some(sig)) => (128 + sig, clrprof_analysis::ending::program_end(-1, sig)),
        _ => panic!("{}", out.describe()),
    }
}

/// The entries of `dir` that are clrprof's private directories.
fn private_dirs(dir: &Path) -> Vec<String> {
    files_in(dir)
        .into_iter()
        .filter(|n| n.starts_with("clrprof-"))
        .collect()
}

#[test]
fn a_terminated_record_passes_the_signal_on_and_finishes_the_trace() {
    // What `kill`, `timeout`, `docker stop` and service managers send to clrprof alone.
    for signal in ["-TERM", "-HUP", "-INT"] {
        let (code, end) = attachee_alone_under(signal);
        let tmp = temp_dir();
        let mut rec = Interactive::start_with_env(
            &["--mode", "none", "--events", "exception"],
            &[("TMPDIR", tmp.path())],
        );
        assert_eq!(private_dirs(tmp.path()).len(), 1, "{signal}: the socket's");
        rec.send("round 5");
        rec.expect("rounds 5: total 5, caught 5");
        rec.signal_clrprof(signal);
        let out = rec.ends_as_alone(signal, code, &end);
        let err = out.stderr_str();
        let name = clrprof_analysis::ending::program_end(-1, code_of(signal));
        let name = name.trim_start_matches("killed by ");
        assert!(
            err.contains(&format!(
                "clrprof: {name} received: passed on to the program (pid "
            )),
            "{signal}: {err}"
        );
        assert!(
            err.contains(&format!("clrprof: wrote {} (", rec.trace.display()))
                && err.contains(&format!("the program ended: {end}")),
            "{signal}: {err}"
        );
        assert!(!rec.partial().exists(), "{signal}: the trace is complete");
        let json = rec.holds_the_round(signal, &end);
        assert_eq!(json["session"]["integrity_notes"], serde_json::json!([]));
        assert_eq!(
            private_dirs(tmp.path()),
            Vec::<String>::new(),
            "{signal}: nothing left"
        );
    }
}

#[test]
fn a_program_interrupted_right_after_it_acted_keeps_the_record_of_it() {
    // Ctrl-C (and SIGHUP, SIGQUIT) end a .NET program without the runtime's shutdown: what
    // the agent had not yet sent (up to 10 ms of records) was lost, here every exception of
    // the round in most runs. The signal comes as soon as the program has said it is done.
    for signal in ["-INT", "-HUP"] {
        let (code, end) = attachee_alone_under(signal);
        let mut rec = Interactive::start(&["--mode", "none", "--events", "exception"]);
        rec.send("round 5");
        rec.expect("rounds 5: total 5, caught 5");
        rec.signal_program(signal);
        rec.ends_as_alone(signal, code, &end);
        rec.holds_the_round(signal, &end);
    }
}

/// The number of signal `-NAME`.
fn code_of(signal: &str) -> i32 {
    match signal {
        "-HUP" => 1,
        "-INT" => 2,
        "-TERM" => 15,
        other => panic!("{other}"),
    }
}

#[test]
fn a_killed_clrprof_leaves_a_private_directory_the_next_one_removes() {
    let tmp = temp_dir();
    let mut rec = Interactive::start_with_env(
        &["--mode", "none", "--events", "exception"],
        &[("TMPDIR", tmp.path())],
    );
    let left = private_dirs(tmp.path());
    assert_eq!(left.len(), 1, "{left:?}");
    rec.signal_clrprof("-KILL");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(private_dirs(tmp.path()), left, "SIGKILL leaves it");
    rec.send("exit");
    rec.expect("bye: total 0, caught 0");
    // The next clrprof, whatever it does, removes it first.
    let program = compile("Hello");
    let out_dir = temp_dir();
    let mut cmd = record_command(
        &program,
        &[],
        &["--mode", "none"],
        &out_dir.path().join("h.clrprof"),
    );
    cmd.env("TMPDIR", tmp.path());
    run_command(&mut cmd).assert_success();
    assert_eq!(private_dirs(tmp.path()), Vec::<String>::new());
}

/// Runs `script` (sh) with `$CLRPROF`, `$DOTNET` and `$DLL` set, for faults that need a
/// shell: a file-size limit, a small file system.
fn shell(script: &str, program: &Program) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .env("CLRPROF", clrprof_bin())
        .env("DOTNET", &program.dotnet.muxer)
        .env("DLL", &program.dll);
    apply_env(&mut cmd);
    run_command(&mut cmd)
}

/// What a recording cut by a failed write must say and keep: the program's own output and exit
/// code unchanged, the file and the error named, what is missing, and a readable trace.
fn check_write_failure(out: &std::process::Output, program: &Program, error: &str, dir: &Path) {
    let alone = program.run(&[]);
    alone.assert_success();
    out.assert_exit_code(0);
    assert_eq!(
        out.stdout_str(),
        alone.stdout_str(),
        "the program ran unharmed"
    );
    let err = out.stderr_str();
    let partial = dir.join("t.clrprof.partial");
    assert!(
        err.contains(&format!(
            "clrprof: error: cannot write the trace file {}: {error}",
            partial.display()
        )),
        "{err}"
    );
    assert!(err.contains("clrprof:   missing: "), "{err}");
    assert!(
        err.contains(&format!(
            "{} was not replaced",
            dir.join("t.clrprof").display()
        )),
        "{err}"
    );
    assert!(!dir.join("t.clrprof").exists());
}

#[test]
fn a_file_size_limit_keeps_what_was_written_and_the_program_runs_on() {
    let program = compile("Events");
    let dir = temp_dir();
    // .NET 7 and later keep their executable memory in a file mapped twice (W^X) and grow it
    // past any small file-size limit: the runtime itself dies of SIGXFSZ there, profiled or
    // not, unless that is turned off (3.1 ignores the setting).
    let script = format!(
        "ulimit -f 160 && DOTNET_EnableWriteXorExecute=0 exec \"$CLRPROF\" record --events all \
         -o {}/t.clrprof -- \"$DOTNET\" \"$DLL\"",
        dir.path().display()
    );
    let out = shell(&script, &program);
    check_write_failure(&out, &program, "File too large", dir.path());
    let partial = dir.path().join("t.clrprof.partial");
    let len = std::fs::metadata(&partial).unwrap().len();
    assert!(len <= 160 * 1024, "{len} bytes");
    // The file ends with a whole block: it reads with no damage, only unfinished.
    let json = report_json(&partial);
    assert_only_note_is_unfinished(&json);
    assert!(json["session"]["records"].as_u64().unwrap() > 100);
}

#[test]
fn a_full_disk_keeps_what_was_written_and_the_program_runs_on() {
    let program = compile("Events");
    let dir = temp_dir();
    let small = dir.path().join("small");
    let kept = dir.path().join("kept");
    std::fs::create_dir(&small).unwrap();
    std::fs::create_dir(&kept).unwrap();
    // A 160 KiB file system of its own (a tmpfs in a private mount namespace), and what is
    // left on it copied out before the namespace goes.
    let script = format!(
        "unshare --map-root-user --mount sh -c '\
           mount -t tmpfs -o size=160k tmpfs {small} || exit 90; \
           \"$CLRPROF\" record --events all -o {small}/t.clrprof -- \"$DOTNET\" \"$DLL\"; \
           code=$?; cp {small}/* {kept}/; exit $code'",
        small = small.display(),
        kept = kept.display()
    );
    let out = shell(&script, &program);
    assert_ne!(out.status.code(), Some(90), "{}", out.describe());
    check_write_failure(&out, &program, "No space left on device", &small);
    assert_eq!(files_in(&kept), ["t.clrprof.partial"]);
    let json = report_json(&kept.join("t.clrprof.partial"));
    assert!(json["session"]["records"].as_u64().unwrap() > 100);
}

/// The blocks of a trace file: each one's byte range and header.
fn blocks(bytes: &[u8]) -> Vec<(usize, usize, BlockHeader)> {
    let mut out = Vec::new();
    let mut at = HEADER_LEN;
    while at < bytes.len() {
        let h = BlockHeader::parse(&bytes[at..]).unwrap();
        let end = at + BLOCK_HEADER_LEN + h.len as usize;
        out.push((at, end, h));
        at = end;
    }
    out
}

/// The records in a block.
fn records_in(bytes: &[u8], block: (usize, usize)) -> Vec<Record> {
    let mut file = bytes[..HEADER_LEN].to_vec();
    file.extend_from_slice(&bytes[block.0..block.1]);
    // Read alone, the block is missing its predecessors: that is the only error.
    Reader::new(&file[..])
        .unwrap()
        .filter_map(|r| match r {
            Err(clrprof_trace::ReadError::Damaged { len: 0, .. }) => None,
            other => Some(other.unwrap()),
        })
        .collect()
}

/// The samples in a block.
fn samples_in(bytes: &[u8], block: (usize, usize)) -> u64 {
    records_in(bytes, block)
        .iter()
        .filter(|r| matches!(r, Record::Sample(_)))
        .count() as u64
}

/// Total samples in a JSON report (every thread, both kinds).
fn json_samples(json: &serde_json::Value) -> u64 {
    json["sampling"]["samples"].as_u64().unwrap_or_else(|| {
        panic!("no sampling.samples in {:#}", json["sampling"]);
    })
}

#[test]
fn a_flipped_byte_loses_its_block_and_every_figure_says_so() {
    let program = compile("Hot");
    let rec = record(&program, &[], &[]);
    rec.output.assert_success();
    let bytes = std::fs::read(&rec.trace).unwrap();
    let all = blocks(&bytes);
    assert!(all.len() >= 3, "{} blocks", all.len());
    // A block in the middle with samples in it (and not the session's start or how it
    // sampled: without those the report has no sampling facts to compare).
    let (i, &(start, end, header)) = all
        .iter()
        .enumerate()
        .skip(all.len() / 2)
        .find(|(_, b)| {
            let records = records_in(&bytes, (b.0, b.1));
            records.iter().any(|r| matches!(r, Record::Sample(_)))
                && !records
                    .iter()
                    .any(|r| matches!(r, Record::SessionStart(_) | Record::SamplerInfo(_)))
        })
        .unwrap();
    let lost = samples_in(&bytes, (start, end));

    let whole = rec.report_json();
    let mut flipped = bytes.clone();
    flipped[(start + BLOCK_HEADER_LEN + end) / 2] ^= 0x40;
    let damaged_path = rec.dir.path().join("damaged.clrprof");
    std::fs::write(&damaged_path, &flipped).unwrap();
    let damaged = report_json(&damaged_path);
    assert_eq!(json_samples(&damaged), json_samples(&whole) - lost);
    let note = only_integrity_note(&damaged);
    assert!(
        note.starts_with(&format!(
            "1 of {} blocks damaged, skipped: the samples, events and allocations in them ({} records, recorded ",
            all.len(),
            header.records
        )),
        "{note}"
    );

    // Every figure equals that of the same trace without the block: nothing computed from
    // the damaged bytes.
    let mut without = bytes[..start].to_vec();
    without.extend_from_slice(&bytes[end..]);
    let without_path = rec.dir.path().join("without.clrprof");
    std::fs::write(&without_path, &without).unwrap();
    let mut expected = report_json(&without_path);
    let mut got = damaged.clone();
    for json in [&mut expected, &mut got] {
        json["session"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| !k.starts_with("integrity"));
    }
    assert_eq!(got, expected, "block {i}");

    // The text report and the other formats say it too.
    let text = report(&damaged_path, &[]);
    text.assert_success();
    assert!(
        text.stdout_str()
            .contains(&format!("WARNING   1 of {} blocks damaged", all.len())),
        "{}",
        text.stdout_str()
    );
    let folded = report(&damaged_path, &["--format", "folded"]);
    folded.assert_success();
    folded.assert_stderr_contains(&format!("warning: {}: 1 of", damaged_path.display()));
}

#[test]
fn a_cut_trace_reports_everything_before_the_cut() {
    let program = compile("Hot");
    let rec = record(&program, &[], &[]);
    rec.output.assert_success();
    let bytes = std::fs::read(&rec.trace).unwrap();
    let all = blocks(&bytes);
    let whole = rec.report_json();
    // Cut in the middle of a block of the second half, after the one that says how the
    // session sampled: the blocks before it are kept.
    let sampler = all
        .iter()
        .position(|b| {
            records_in(&bytes, (b.0, b.1))
                .iter()
                .any(|r| matches!(r, Record::SamplerInfo(_)))
        })
        .unwrap();
    let cut_block = (all.len() / 2).max(sampler + 1);
    assert!(cut_block < all.len(), "{} blocks", all.len());
    let (start, end, _) = all[cut_block];
    let kept: u64 = all[..cut_block]
        .iter()
        .map(|b| samples_in(&bytes, (b.0, b.1)))
        .sum();
    let cut_path = rec.dir.path().join("cut.clrprof");
    std::fs::write(&cut_path, &bytes[..(start + end) / 2]).unwrap();
    let cut = report_json(&cut_path);
    assert_eq!(json_samples(&cut), kept);
    assert!(json_samples(&cut) < json_samples(&whole));
    let note = only_integrity_note(&cut);
    assert!(
        note.starts_with(&format!(
            "the trace is cut short (truncated trace: block {cut_block} at byte {start} needs"
        )),
        "{note}"
    );
    let text = report(&cut_path, &[]);
    text.assert_success();
    assert!(
        text.stdout_str()
            .contains("the end of the recording is missing (the trace is cut short)"),
        "{}",
        text.stdout_str()
    );
}

#[test]
fn events_all_leaves_heap_references_out_unless_asked_by_name() {
    let program = compile("Events");
    let all = record(&program, &[], &["--mode", "none", "--events", "all"]);
    all.output.assert_success();
    assert!(
        !all.output.stderr_str().contains("warning: `heap-refs`"),
        "{}",
        all.output.describe()
    );
    let json = all.report_json();
    for name in ["ObjectReferences", "RootReferences2"] {
        assert!(json["events"][name].is_null(), "{name}: {}", json["events"]);
    }
    assert_eq!(json["events"]["ExceptionThrown"], 7);
    assert_eq!(json["events"]["GarbageCollectionStarted"], 4);

    let by_name = record(
        &program,
        &[],
        &["--mode", "none", "--events", "all,heap-refs"],
    );
    by_name.output.assert_success();
    assert!(
        by_name
            .output
            .stderr_str()
            .contains("clrprof: warning: `heap-refs` events record every reference"),
        "{}",
        by_name.output.describe()
    );
    let json = by_name.report_json();
    // Every induced collection walks the heap: its roots are reported at each of them.
    assert!(
        json["events"]["RootReferences2"].as_u64().unwrap() >= 4,
        "{}",
        json["events"]
    );
    assert!(json["events"]["ObjectReferences"].as_u64().unwrap() > 0);
}

/// The function rows of the text report's top table.
fn top_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("Self%"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with("..."))
        .collect()
}

#[test]
fn the_text_report_shows_the_top_25_and_says_how_many_more() {
    let program = compile("Hello");
    let rec = record(&program, &[], &["--mode", "trace"]);
    rec.output.assert_success();
    let json = rec.report_json_with(&["--metric", "calls"]);
    let functions = json["functions"].as_array().unwrap().len();
    assert!(functions > 25, "{functions} functions");

    let text = rec.report(&["--metric", "calls"]);
    text.assert_success();
    let out = text.stdout_str();
    assert_eq!(top_rows(&out).len(), 25, "{out}");
    assert!(
        out.contains(&format!(
            "\n... {} more functions not shown (--top 0 shows all)\n",
            functions - 25
        )),
        "{out}"
    );
    // Headings name the metric.
    assert!(out.contains("\nProfile by calls\n"), "{out}");
    assert!(out.contains("Self calls"), "{out}");

    let all = rec.report(&["--metric", "calls", "--top", "0"]);
    all.assert_success();
    let out = all.stdout_str();
    assert_eq!(top_rows(&out).len(), functions, "{out}");
    assert!(!out.contains("more functions not shown"), "{out}");

    let wall = rec.report(&["--metric", "wall", "--top", "3"]);
    wall.assert_success();
    let out = wall.stdout_str();
    assert!(out.contains("\nProfile by wall time\n"), "{out}");
    assert!(out.contains("Self wall"), "{out}");
    assert!(!out.contains("Self CPU"), "{out}");
    assert_eq!(top_rows(&out).len(), 3, "{out}");
}

#[test]
fn a_program_killed_by_a_signal_is_written_the_same_way_everywhere() {
    let program = compile("Crash");
    let rec = record(&program, &[], &["--events", "exception"]);
    rec.output.assert_exit_code(134);
    let end = "killed by signal 6 (SIGABRT)";
    assert!(
        rec.output
            .stderr_str()
            .contains(&format!("; the program ended: {end}\n")),
        "{}",
        rec.output.describe()
    );
    let json = rec.report_json();
    assert_eq!(json["session"]["program_end"], end);
    assert_eq!(json["session"]["signal"], 6);
    let text = rec.report(&[]);
    assert!(
        text.stdout_str().contains(&format!(
            "the program ended: {end}, WITHOUT profiler shutdown"
        )),
        "{}",
        text.stdout_str()
    );

    // Every format that has a place for it.
    let speedscope = rec.report(&["--format", "speedscope"]);
    speedscope.assert_success();
    let doc: serde_json::Value = serde_json::from_slice(&speedscope.stdout).unwrap();
    assert_eq!(doc["name"], format!("Crash.dll: {end}"));
    let chrome = rec.report(&["--format", "chrome"]);
    chrome.assert_success();
    let doc: serde_json::Value = serde_json::from_slice(&chrome.stdout).unwrap();
    assert_eq!(doc["otherData"]["program_end"], end);
    let svg = rec.report(&["--format", "flamegraph", "--metric", "wall"]);
    svg.assert_success();
    svg.assert_stdout_contains(&format!("the program ended: {end}"));
    let pprof = rec.dir.path().join("crash.pb.gz");
    rec.report(&["--format", "pprof", "-o", pprof.to_str().unwrap()])
        .assert_success();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&pprof).unwrap()),
        &mut raw,
    )
    .unwrap();
    let wanted = format!("the program ended: {end}");
    assert!(
        raw.windows(wanted.len()).any(|w| w == wanted.as_bytes()),
        "the pprof comments say how the program ended"
    );

    let exit = record(&program, &["exit", "3"], &["--mode", "none"]);
    assert_eq!(exit.output.status.code(), Some(3));
    assert!(
        exit.output
            .stderr_str()
            .contains("; the program ended: exit 3\n"),
        "{}",
        exit.output.describe()
    );
    assert_eq!(exit.report_json()["session"]["program_end"], "exit 3");
}

#[test]
fn a_closed_pipe_ends_report_quietly_as_other_tools_end() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let program = compile("Hello");
    let rec = record(&program, &[], &["--mode", "trace"]);
    rec.output.assert_success();
    for format in ["text", "json", "chrome"] {
        // A pipe of one page, far smaller than each output, so that `report` is still writing
        // when the reader goes (with the default 64 KiB a short output could fit whole).
        let (mut stdout, writer) = std::io::pipe().unwrap();
        shrink_pipe(&writer);
        let mut cmd = Command::new(clrprof_bin());
        cmd.arg("report")
            .arg(&rec.trace)
            .args(["--format", format, "--top", "0", "--tree", "--pretty"])
            .stdout(writer)
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        drop(cmd); // the parent's copy of the writing end
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout); // `| head -c 16`
        let out = guard.wait_with_output(default_timeout());
        assert_eq!(
            out.status.signal(),
            Some(13),
            "{format}: {}",
            out.describe()
        );
        assert_eq!(out.stderr_str(), "", "{format}");
    }
}

/// Makes a pipe as small as the kernel allows (one page).
fn shrink_pipe(end: &std::io::PipeWriter) {
    use std::os::fd::AsRawFd;
    // SAFETY: F_SETPIPE_SZ on a pipe descriptor this function borrows; no memory is passed.
    let rc = unsafe { libc::fcntl(end.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(
        rc >= 4096,
        "F_SETPIPE_SZ: {}",
        std::io::Error::last_os_error()
    );
}

/// A terminal of `rows` x 200 (a detached tmux session on a server of its own) running
/// `command` in `sh`; returns what the screen shows while it runs (at `at`) and at the end.
fn in_terminal(command: &str, rows: u16, at: Duration) -> (String, String) {
    let server = format!("clrprof-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&server)
            .args(args)
            .output()
            .expect("tmux runs (Debian package tmux; `cargo xtask setup` installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let script = format!("{command}; echo \"[exit $?]\"; sleep 60");
    tmux(&[
        "new-session",
        "-d",
        "-x",
        "200",
        "-y",
        &rows.to_string(),
        "sh",
        "-c",
        &script,
    ]);
    std::thread::sleep(at);
    let during = tmux(&["capture-pane", "-p"]);
    let started = std::time::Instant::now();
    let after = loop {
        let screen = tmux(&["capture-pane", "-p"]);
        if screen.contains("[exit ") || started.elapsed() > Duration::from_secs(120) {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    tmux(&["kill-server"]);
    (during, after)
}

#[test]
fn the_status_line_never_splits_the_programs_lines() {
    let program = compile("Typing");
    let dir = temp_dir();
    let trace = dir.path().join("t.clrprof");
    let mut env = String::new();
    let mut cmd = program.command();
    for (k, v) in cmd.get_envs() {
        if let (k, Some(v)) = (k.to_string_lossy(), v) {
            env.push_str(&format!("{k}='{}' ", v.to_string_lossy()));
        }
    }
    let _ = &mut cmd;
    let command = format!(
        "env {env} {} record --mode none -o {} -- {} {}",
        clrprof_bin().display(),
        trace.display(),
        program.dotnet.muxer.display(),
        program.dll.display()
    );
    let (during, after) = in_terminal(&command, 12, Duration::from_millis(1300));
    let line = "01234567890123456789";
    // While it runs: the bottom row is the status line, the program's rows are its own.
    let rows: Vec<&str> = during.lines().collect();
    assert_eq!(rows.len(), 12, "{during}");
    assert!(
        rows[11].starts_with("recording 00:00:0"),
        "the status line is on the bottom row:\n{during}"
    );
    for row in &rows[..11] {
        assert!(
            !row.contains("recording") || !row.contains('0'),
            "a row mixes the status line and the program's output:\n{during}"
        );
        let digits = row.trim_end();
        assert!(
            digits.is_empty() || line.starts_with(digits),
            "a row of the program's output holds something else: {row:?}\n{during}"
        );
    }
    // At the end: three whole lines, the status row cleared, clrprof's closing line.
    let rows: Vec<&str> = after.lines().map(str::trim_end).collect();
    assert_eq!(rows.iter().filter(|r| **r == line).count(), 3, "{after}");
    assert!(!after.contains("recording 00:"), "{after}");
    assert!(after.contains("[exit 0]"), "{after}");
    assert!(after.contains("the program ended: exit 0"), "{after}");
}

#[test]
fn a_record_killed_at_any_moment_leaves_a_trace_that_reads() {
    let program = compile("Hot");
    // From before the agent connects to the middle of the work (Hot runs about 1.5 s).
    for delay_ms in [30u64, 250, 500, 800, 1200] {
        let dir = temp_dir();
        let trace = dir.path().join("t.clrprof");
        std::fs::write(&trace, YESTERDAY).unwrap();
        let mut cmd = record_command(&program, &[], &["--events", "all"], &trace);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut guard = ChildGuard::spawn(&mut cmd);
        std::thread::sleep(Duration::from_millis(delay_ms));
        send_signal("-KILL", guard.id());
        guard.kill(); // the program, left running
        assert_eq!(
            std::fs::read(&trace).unwrap(),
            YESTERDAY,
            "killed at {delay_ms} ms"
        );
        let partial = dir.path().join("t.clrprof.partial");
        let len = std::fs::metadata(&partial).unwrap().len();
        if len == 0 {
            // Killed before the agent's stream began: nothing was recorded, and the name says
            // the file is partial. The runtime starts well within 800 ms.
            assert!(delay_ms < 800, "nothing recorded in {delay_ms} ms");
            continue;
        }
        let out = report(&partial, &["--format", "json"]);
        out.assert_success();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let notes = json["session"]["integrity_notes"].as_array().unwrap();
        assert_eq!(notes.len(), 1, "killed at {delay_ms} ms: {notes:?}");
        let note = notes[0].as_str().unwrap();
        assert!(
            note.starts_with("the recording did not finish")
                || note.starts_with("the trace is cut short"),
            "killed at {delay_ms} ms: {note}"
        );
        assert_eq!(json["session"]["program_end"], serde_json::Value::Null);
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_is_written() {
    let dir = temp_dir();
    let out = dir.path().join("out.clrprof");
    std::fs::write(&out, YESTERDAY).unwrap();
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["record", "--events", "gc,nope", "-o", o, "--", "/bin/true"],
            1,
            "unknown event category `nope`",
        ),
        (
            &["record", "--rate", "0", "-o", o, "--", "/bin/true"],
            2,
            "--rate",
        ),
        (&["record", "-o", o], 2, "PROGRAM"),
        (&["report", o, "--metric", "bogus", "-o", o], 2, "--metric"),
        (&["report", o, "--top", "many", "-o", o], 2, "--top"),
        (&["report", "-o", o], 1, "which trace?"),
    ];
    for (args, code, says) in cases {
        let r = clrprof(args);
        assert_eq!(r.status.code(), Some(*code), "{args:?}: {}", r.describe());
        assert!(r.stderr_str().contains(says), "{args:?}: {}", r.describe());
        assert!(!r.stderr_str().contains("panicked"), "{args:?}");
    }
    assert_eq!(std::fs::read(&out).unwrap(), YESTERDAY);
    assert_eq!(files_in(dir.path()), ["out.clrprof"]);
}

#[test]
fn sample_stacks_keep_direct_recursion() {
    let program = compile("Recursion");
    let env = [("COMPlus_TieredCompilation", "0")];
    let rec = record_with_env(&program, &[], &[], &env);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "recursion: 20\n");
    let folded = rec.report(&["--format", "folded"]);
    folded.assert_success();
    // Every CPU stack in Spin has Main, 21 frames of Down (20 nested calls below the first),
    // then Spin: one frame per call, never merged.
    let mut spin_weight = 0u64;
    for line in folded.stdout_str().lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        if frames.last() != Some(&"Recursion.Spin()") {
            continue;
        }
        spin_weight += weight.parse::<u64>().unwrap();
        let main = frames
            .iter()
            .position(|f| *f == "Recursion.Main()")
            .unwrap_or_else(|| panic!("no Main in {line}"));
        assert_eq!(
            frames[main + 1..frames.len() - 1],
            ["Recursion.Down(int)"; 21],
            "{line}"
        );
    }
    assert!(spin_weight > 0, "{}", folded.stdout_str());
}
