//! The trace a recording writes.
//!
//! While the program runs, the trace is `NAME.partial` beside its final name, in checksummed
//! blocks (format 2.x) sealed at least every [`SEAL_EVERY`]: a `clrprof` killed at any moment
//! leaves a readable trace that says by its name that it is partial, and the file that was at
//! NAME before is untouched. When the recording is complete the trace is renamed to NAME.
//!
//! A write that fails (disk full, file-size limit) stops the writing but not the recording: the
//! file is cut back to its last whole block, the records that arrive afterwards are counted
//! (what is missing), and the program runs on.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clrprof_trace::{BlockWriter, Header, Record};

use crate::safe_file;

/// The longest time a record waits in memory before it is written out in a sealed block: at
/// most this much of a recording is lost when `clrprof` is killed.
pub(crate) const SEAL_EVERY: Duration = Duration::from_millis(250);

/// What could not be written after a write failed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Lost {
    pub(crate) records: u64,
    pub(crate) samples: u64,
    pub(crate) events: u64,
    /// Time range of the lost records that have a timestamp (ns since the session's start).
    pub(crate) first_ts: Option<u64>,
    pub(crate) last_ts: u64,
}

impl Lost {
    fn add(&mut self, record: &Record) {
        self.records += 1;
        match record {
            Record::Sample(_) => self.samples += 1,
            Record::Event(_) => self.events += 1,
            _ => {}
        }
        if let Some(ts) = record.ts() {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = self.last_ts.max(ts);
        }
    }
}

/// The trace file of one recording.
pub(crate) struct TraceFile {
    /// The name the user gave.
    path: PathBuf,
    /// Where the complete trace goes (the target of a link).
    target: PathBuf,
    /// Where it is written meanwhile.
    partial: PathBuf,
    /// The file until the stream's header arrives.
    file: Option<File>,
    writer: Option<BlockWriter<File>>,
    failure: Option<io::Error>,
    /// Bytes of whole blocks when the writing failed.
    kept_bytes: u64,
    lost: Lost,
    last_seal: Instant,
    finished: bool,
    /// Whether the failure was told to the user.
    announced: bool,
}

impl TraceFile {
    /// Creates `NAME.partial` (or `NAME.2.partial`, ... if that exists) beside `path`; a path
    /// that is not a regular file (`/dev/null`) is written directly.
    pub(crate) fn create(path: &Path) -> Result<TraceFile> {
        let target = safe_file::resolve(path);
        let (partial, file) = if safe_file::is_special(&target) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .with_context(|| format!("cannot open the trace file {}", path.display()))?;
            (target.clone(), file)
        } else {
            create_partial(&target)
                .with_context(|| format!("cannot create the trace file {}", path.display()))?
        };
        Ok(TraceFile {
            path: path.to_path_buf(),
            target,
            partial,
            file: Some(file),
            writer: None,
            failure: None,
            kept_bytes: 0,
            lost: Lost::default(),
            last_seal: Instant::now(),
            finished: false,
            announced: false,
        })
    }

    /// The name the complete trace gets.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The name it has while it is written.
    pub(crate) fn partial_path(&self) -> &Path {
        &self.partial
    }

    /// Whether the stream's header arrived, so that the file is a trace.
    pub(crate) fn started(&self) -> bool {
        self.writer.is_some() || self.failure.is_some()
    }

    /// Writes the file's header: format 2 with the stream's minor version.
    pub(crate) fn start(&mut self, stream: Header) {
        if self.started() {
            return;
        }
        let Some(file) = self.file.take() else { return };
        match BlockWriter::with_minor(file, stream.minor) {
            Ok(w) => self.writer = Some(w),
            Err(e) => self.failure = Some(e),
        }
    }

    /// Writes the header of a trace of a process tree: format 3 (a section per process) with
    /// the minor version of the records (this clrprof's, which its agent streams).
    pub(crate) fn start_sectioned(&mut self, minor: u16) {
        if self.started() {
            return;
        }
        let Some(file) = self.file.take() else { return };
        match BlockWriter::sectioned(file, minor) {
            Ok(w) => self.writer = Some(w),
            Err(e) => self.failure = Some(e),
        }
    }

    /// In a trace of a process tree, makes the records appended next belong to `process`.
    pub(crate) fn section(&mut self, process: u32) {
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = w.section(process)
        {
            self.fail(e);
        }
    }

    /// Appends one record, as the bytes it arrived as.
    pub(crate) fn append(&mut self, raw: &[u8], record: &Record) {
        let result = match self.writer.as_mut() {
            Some(w) => w.write_raw(raw, record.ts()),
            None => {
                self.lost.add(record);
                return;
            }
        };
        if let Err(e) = result {
            self.fail(e);
            self.lost.add(record);
        }
    }

    /// Appends a record of the CLI's own.
    pub(crate) fn write(&mut self, record: &Record) {
        let mut raw = Vec::new();
        record.encode(&mut raw);
        self.append(&raw, record);
    }

    /// Writes the current block out if it waited long enough.
    pub(crate) fn tick(&mut self) {
        if self.last_seal.elapsed() >= SEAL_EVERY {
            self.seal();
        }
    }

    /// Writes the current block out now.
    pub(crate) fn seal(&mut self) {
        self.last_seal = Instant::now();
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = w.seal()
        {
            self.fail(e);
        }
    }

    /// A sentence on a write failure, naming the file, the first time it is asked for after
    /// the failure (to tell the user at once, and only once).
    pub(crate) fn news(&mut self) -> Option<String> {
        if self.announced {
            return None;
        }
        let text = self.failure_text()?;
        self.announced = true;
        Some(text)
    }

    /// Stops writing after an error: cuts the file back to its last whole block.
    fn fail(&mut self, e: io::Error) {
        if let Some(mut w) = self.writer.take() {
            self.kept_bytes = w.sealed_len();
            // Cutting a file needs no space: what stays ends cleanly between two blocks.
            let _ = w.get_mut().set_len(self.kept_bytes);
        }
        self.failure.get_or_insert(e);
    }

    /// Why writing stopped, if it did.
    pub(crate) fn failure(&self) -> Option<&io::Error> {
        self.failure.as_ref()
    }

    /// A sentence on a write failure, naming the file.
    pub(crate) fn failure_text(&self) -> Option<String> {
        self.failure.as_ref().map(|e| {
            format!(
                "cannot write the trace file {}: {e}; the program goes on, and the trace keeps \
                 the {} bytes written before",
                self.partial.display(),
                self.kept_bytes
            )
        })
    }

    /// What arrived but was not written.
    pub(crate) fn lost(&self) -> Lost {
        self.lost
    }

    /// Seals the last block and gives the complete trace its final name.
    pub(crate) fn commit(mut self) -> Result<PathBuf> {
        self.finished = true;
        if let Some(e) = self.failure.take() {
            return Err(e).with_context(|| format!("cannot write {}", self.partial.display()));
        }
        let Some(w) = self.writer.take() else {
            anyhow::bail!("nothing was recorded");
        };
        let file = w
            .finish()
            .with_context(|| format!("cannot write {}", self.partial.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot write {}", self.partial.display()))?;
        if self.partial != self.target {
            std::fs::rename(&self.partial, &self.target).with_context(|| {
                format!(
                    "cannot rename {} to {}",
                    self.partial.display(),
                    self.path.display()
                )
            })?;
        }
        Ok(self.path.clone())
    }

    /// Seals what can be sealed and leaves the trace under its partial name.
    pub(crate) fn keep_partial(mut self) -> PathBuf {
        self.finished = true;
        self.seal();
        if let Some(w) = self.writer.as_mut() {
            let _ = w.flush();
        }
        self.partial.clone()
    }

    /// Removes the partial file: nothing was recorded.
    pub(crate) fn discard(mut self) {
        self.finished = true;
        self.writer = None;
        self.file = None;
        if self.partial != self.target {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

impl Drop for TraceFile {
    /// A recording that ends on an error keeps what it wrote (under the partial name), and
    /// leaves no empty file behind.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if self.started() {
            self.seal();
        } else if self.partial != self.target {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

/// The name of the `n`-th partial trace of `target`: `NAME.partial`, then `NAME.2.partial`...
fn partial_name(target: &Path, n: u32) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let dir = safe_file::parent_dir(target);
    if n == 1 {
        dir.join(format!("{name}.partial"))
    } else {
        dir.join(format!("{name}.{n}.partial"))
    }
}

/// Creates a new file named `target` + `.partial`, or with a number before `.partial` if that
/// name is taken (an earlier recording's partial trace is never overwritten), and locks it
/// for as long as it is written. Refuses if another `clrprof` is writing a partial trace of
/// `target` (holds the lock of one): two recordings would end as one file.
fn create_partial(target: &Path) -> Result<(PathBuf, File)> {
    let writer = |n: u32| {
        let p = partial_name(target, n);
        safe_file::being_written(&p).then_some(p)
    };
    let refuse = |other: PathBuf| {
        anyhow::anyhow!(
            "another clrprof is recording into {} right now (it is writing {}): two recordings \
             cannot share a file; wait for it to end, or give this one another name with -o",
            target.display(),
            other.display()
        )
    };
    for n in 1u32..1000 {
        let candidate = partial_name(target, n);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => {
                // Only a prober holds the new file's lock, for an instant.
                f.lock()
                    .with_context(|| format!("cannot lock {}", candidate.display()))?;
                // Another recording that started at the same instant: both give way.
                let other = (1..n)
                    .chain((n + 1..).take_while(|&m| partial_name(target, m).exists()))
                    .find_map(writer);
                if let Some(other) = other {
                    drop(f);
                    let _ = std::fs::remove_file(&candidate);
                    return Err(refuse(other));
                }
                return Ok((candidate, f));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if let Some(other) = writer(n) {
                    return Err(refuse(other));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    anyhow::bail!(
        "there are 999 partial traces of {} already; remove those you do not need",
        target.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::{Event, EventKind, Reader};

    fn event(ts: u64) -> (Vec<u8>, Record) {
        let r = Record::Event(Event::new(ts, 1, EventKind::SHUTDOWN, &[]));
        let mut raw = Vec::new();
        r.encode(&mut raw);
        (raw, r)
    }

    #[test]
    fn the_trace_gets_its_name_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.clrprof");
        std::fs::write(&path, "yesterday's trace").unwrap();
        let mut t = TraceFile::create(&path).unwrap();
        assert_eq!(t.partial_path(), dir.path().join("app.clrprof.partial"));
        t.start(Header::CURRENT);
        let (raw, r) = event(5);
        t.append(&raw, &r);
        assert_eq!(std::fs::read(&path).unwrap(), b"yesterday's trace");
        t.commit().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let records: Vec<Record> = Reader::new(&bytes[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records, [r]);
        assert!(!dir.path().join("app.clrprof.partial").exists());
    }

    #[test]
    fn a_recording_that_never_started_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.clrprof");
        std::fs::write(&path, "yesterday's trace").unwrap();
        drop(TraceFile::create(&path).unwrap());
        TraceFile::create(&path).unwrap().discard();
        assert_eq!(std::fs::read(&path).unwrap(), b"yesterday's trace");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_second_writer_of_the_same_trace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.clrprof");
        let first = TraceFile::create(&path).unwrap();
        assert!(safe_file::being_written(first.partial_path()));
        let err = TraceFile::create(&path).err().unwrap();
        let text = format!("{err:#}");
        assert!(
            text.contains("another clrprof is recording into")
                && text.contains("app.clrprof.partial"),
            "{text}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "nothing else created"
        );
        drop(first);
        assert!(!safe_file::being_written(
            &dir.path().join("app.clrprof.partial")
        ));
        let again = TraceFile::create(&path).unwrap();
        assert_eq!(again.partial_path(), dir.path().join("app.clrprof.partial"));
    }

    #[test]
    fn a_partial_trace_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.clrprof");
        let mut first = TraceFile::create(&path).unwrap();
        first.start(Header::CURRENT);
        let (raw, r) = event(5);
        first.append(&raw, &r);
        let kept = first.keep_partial();
        assert_eq!(kept, dir.path().join("app.clrprof.partial"));
        let second = TraceFile::create(&path).unwrap();
        assert_eq!(
            second.partial_path(),
            dir.path().join("app.clrprof.2.partial")
        );
        let bytes = std::fs::read(&kept).unwrap();
        assert_eq!(Reader::new(&bytes[..]).unwrap().count(), 1);
    }
}
