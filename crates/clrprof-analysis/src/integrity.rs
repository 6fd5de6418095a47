//! What reading a trace found missing or damaged, and what that means for the figures.
//!
//! A trace cut short (the recording was killed, the disk filled up) or damaged (a flipped
//! byte, a bad disk) is still read: every record that can be trusted is used, and nothing
//! else. In a trace in checksummed blocks (format 2.x) a block that fails its checksum is left
//! out whole, so no figure is computed from damaged bytes; in a trace of format 1.x only
//! records whose fields cannot be right are recognized and left out.

use serde::Serialize;

use clrprof_trace::{BlockStats, ReadError};

use crate::units::count;

/// One damaged stretch of a trace in blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// Where it starts (byte offset in the file).
    pub offset: u64,
    /// Its length in bytes (0: blocks missing from the numbering, no damaged bytes seen).
    pub bytes: u64,
    /// Blocks lost in it, when known.
    pub blocks: Option<u32>,
    /// Records lost, when the damaged block's header was intact.
    pub records: Option<u32>,
    /// When the lost records were recorded (ns since the session's start), when known.
    pub from_ns: Option<u64>,
    /// See `from_ns`.
    pub to_ns: Option<u64>,
}

/// What reading a trace found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Integrity {
    /// Whether the trace is in checksummed blocks (format 2.x): damage is then detected and
    /// left out. Traces of format 1.x have no checksums.
    pub checksummed: bool,
    /// Blocks that passed their checksum.
    pub blocks_good: u32,
    /// Blocks known to be lost.
    pub blocks_lost: u32,
    /// Damaged stretches, in file order.
    pub damaged: Vec<Damage>,
    /// Whether damage ran to the end of the file.
    pub damaged_to_end: bool,
    /// Records that could not be decoded and were left out.
    pub corrupt_records: u64,
    /// The first of them, as the reader described it.
    pub first_corrupt: Option<String>,
    /// Where the file ends inside a record or block, as the reader described it.
    pub cut: Option<String>,
    /// Whether the trace was written by `record` (format 2.x) but has no end of recording:
    /// `clrprof` was stopped before the program ended, or the file was cut between two
    /// blocks.
    pub unfinished: bool,
    /// The latest timestamp of the records read (ns since the session's start): the trace
    /// says nothing about what happened after it when it is cut.
    pub last_ts_ns: u64,
    /// Whether a `clrprof` was still writing the trace when it was read (it held the file's
    /// lock): what is missing at its end has not been written yet.
    pub being_written: bool,
    /// Whether the file holds a trace header and not one record: nothing was recorded (the
    /// recording stopped before the agent sent anything).
    pub header_only: bool,
}

impl Integrity {
    /// Starts the account of a trace; `checksummed` for format 2.x.
    pub fn new(checksummed: bool) -> Self {
        Self {
            checksummed,
            ..Self::default()
        }
    }

    /// Notes a record's timestamp.
    pub fn saw_ts(&mut self, ts: Option<u64>) {
        if let Some(ts) = ts {
            self.last_ts_ns = self.last_ts_ns.max(ts);
        }
    }

    /// Takes in a reading error that does not stop the load; returns the error back if it
    /// does (the input could not be read at all).
    pub fn add(&mut self, error: ReadError) -> Result<(), ReadError> {
        match error {
            ReadError::Corrupt { .. } => {
                self.corrupt_records += 1;
                self.first_corrupt.get_or_insert_with(|| error.to_string());
            }
            ReadError::Damaged {
                offset,
                len,
                blocks,
                records,
                time_range,
            } => {
                self.damaged.push(Damage {
                    offset,
                    bytes: len,
                    blocks,
                    records,
                    from_ns: time_range.map(|r| r.0),
                    to_ns: time_range.map(|r| r.1),
                });
                if blocks.is_none() {
                    self.damaged_to_end = true;
                }
            }
            ReadError::Truncated { .. } | ReadError::BlockTruncated { .. } => {
                self.cut = Some(error.to_string());
            }
            other => return Err(other),
        }
        Ok(())
    }

    /// Takes in the reader's block counts at the end.
    pub fn finish(&mut self, stats: Option<BlockStats>) {
        if let Some(s) = stats {
            self.blocks_good = s.good;
            self.blocks_lost = s.lost;
            self.damaged_to_end |= s.damaged_to_end;
        }
    }

    /// True if nothing was found missing or damaged.
    pub fn is_whole(&self) -> bool {
        !self.being_written
            && !self.header_only
            && self.damaged.is_empty()
            && !self.unfinished
            && !self.damaged_to_end
            && self.corrupt_records == 0
            && self.cut.is_none()
    }

    /// What is missing and what it means for the figures, one sentence each (empty for a
    /// whole trace).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let after = format!("{:.2} s", self.last_ts_ns as f64 / 1e9);
        if self.header_only && !self.being_written {
            out.push(
                "the recording did not finish, and the trace holds only its header: the \
                 recording stopped before the agent sent anything (clrprof was stopped before \
                 the program's runtime started, or the runtime never started): there is no \
                 figure to show"
                    .to_string(),
            );
            return out;
        }
        if let Some(cut) = &self.cut {
            out.push(format!(
                "the trace is cut short ({cut}): nothing after {after} was kept, so every \
                 figure covers the recording up to {after} only"
            ));
        } else if self.being_written && !self.damaged_to_end {
            out.push(format!(
                "the trace is still being written (a clrprof recording is running): it is read \
                 up to its last sealed block, {after} into the recording; how the program ends \
                 is not in it yet"
            ));
        } else if self.unfinished && !self.damaged_to_end {
            out.push(format!(
                "the recording did not finish (clrprof was stopped, or could not write the \
                 rest, before the program ended; or the file was cut between two blocks): \
                 nothing after {after} is in the trace, so every figure covers the recording \
                 up to {after} only"
            ));
        }
        if !self.damaged.is_empty() || self.blocks_lost > 0 {
            let total = self.blocks_good + self.blocks_lost;
            let mut what = format!(
                "{} of {} blocks damaged, skipped",
                count(u64::from(self.blocks_lost)),
                count(u64::from(total))
            );
            if self.damaged_to_end {
                what = format!(
                    "{} blocks damaged, skipped, and the trace is unreadable from byte {} to its end",
                    count(u64::from(self.blocks_lost)),
                    self.damaged.last().map_or(0, |d| d.offset)
                );
            }
            let records: u64 = self
                .damaged
                .iter()
                .filter_map(|d| d.records)
                .map(u64::from)
                .sum();
            let ranges: Vec<String> = self
                .damaged
                .iter()
                .filter_map(|d| Some((d.from_ns?, d.to_ns?)))
                .take(5)
                .map(|(a, b)| format!("{:.2} s to {:.2} s", a as f64 / 1e9, b as f64 / 1e9))
                .collect();
            let mut details = Vec::new();
            // A damaged block header hides how many records its stretch held.
            let all_known = self.damaged.iter().all(|d| d.records.is_some());
            if records > 0 {
                let more = if all_known { "" } else { " or more" };
                details.push(format!("{} records{more}", count(records)));
            }
            if !ranges.is_empty() {
                details.push(format!("recorded {}", ranges.join(", ")));
            }
            let mut lost = String::from("the samples, events and allocations in them");
            if !details.is_empty() {
                lost.push_str(&format!(" ({})", details.join(", ")));
            }
            out.push(format!(
                "{what}: {lost} are missing from every figure below, and a function or type \
                 defined there shows as its id"
            ));
            if self.damaged_to_end {
                out.push(format!(
                    "nothing after {after} could be read, so every figure covers the recording \
                     up to {after} only"
                ));
            }
        }
        if self.corrupt_records > 0 {
            out.push(format!(
                "{} records could not be read and were left out (the first: {}){}",
                count(self.corrupt_records),
                self.first_corrupt.as_deref().unwrap_or("?"),
                if self.checksummed {
                    ""
                } else {
                    "; this trace (format 1.x) has no checksums, so damage elsewhere may go unseen"
                }
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_trace_has_no_notes() {
        let i = Integrity::new(true);
        assert!(i.is_whole());
        assert!(i.notes().is_empty());
    }

    #[test]
    fn damage_and_cut_are_explained() {
        let mut i = Integrity::new(true);
        i.saw_ts(Some(4_200_000_000));
        i.add(ReadError::Damaged {
            offset: 100,
            len: 500,
            blocks: Some(1),
            records: Some(40),
            time_range: Some((1_200_000_000, 1_450_000_000)),
        })
        .unwrap();
        i.add(ReadError::BlockTruncated {
            offset: 9000,
            seq: Some(41),
            needed: 400,
            available: 20,
        })
        .unwrap();
        i.finish(Some(BlockStats {
            good: 40,
            lost: 1,
            damaged_bytes: 500,
            damaged_to_end: false,
        }));
        assert!(!i.is_whole());
        let notes = i.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("nothing after 4.20 s was kept"),
            "{}",
            notes[0]
        );
        assert_eq!(
            notes[1],
            "1 of 41 blocks damaged, skipped: the samples, events and allocations in them (40 \
             records, recorded 1.20 s to 1.45 s) are missing from every figure below, \
             and a function or type defined there shows as its id"
        );
        assert!(i.add(ReadError::Io(std::io::Error::other("gone"))).is_err());
    }
}
