//! The process's memory map as the sampler asks it: which mapping holds an address (the
//! stack of a thread adopted without its bounds, or whether an address is code at all).
//!
//! Where the kernel answers for one address (`PROCMAP_QUERY`, Linux 6.11 and later), one
//! system call does. Elsewhere `/proc/self/maps` is read whole: it is long in a .NET process
//! (the runtime's double-mapped code) and costs up to a millisecond a read, so one read
//! serves every question about a moment it describes: [`MapSnapshot`] answers for a capture
//! taken before it was read, as a fresh read would, from its own read or from the module map's
//! latest.

use crate::recorder::sys::{self, MapsQuery};
use crate::unwind::MapsLine;

/// A mapping of this process (a line of `/proc/self/maps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub start: usize,
    pub end: usize,
    pub executable: bool,
}

/// Every mapping of the process as one read of `/proc/self/maps` found them, and when; and the
/// open map the kernel is asked one address at a time, where it can be.
#[derive(Default)]
pub struct MapSnapshot {
    /// `CLOCK_MONOTONIC` before the read (0: never read).
    read_at: u64,
    /// By start address.
    mappings: Vec<Mapping>,
    query: MapsQuery,
}

impl MapSnapshot {
    /// The mapping that held `addr` at `ts` (`CLOCK_MONOTONIC`): from the latest read if it
    /// was made after `ts` (what a fresh read would say of that moment), its own or `latest`
    /// (another reader's text of the map and when it was read), else from the kernel now.
    pub fn holding(
        &mut self,
        addr: usize,
        ts: u64,
        latest: Option<(u64, &str)>,
    ) -> Option<Mapping> {
        if self.read_at == 0 || ts > self.read_at {
            match latest.filter(|&(at, _)| at >= ts && at > self.read_at) {
                Some((at, text)) => {
                    self.read_at = at;
                    self.mappings = parse_all(text);
                }
                None => return self.now(addr),
            }
        }
        find(&self.mappings, addr)
    }

    /// The mapping that holds `addr` now: the kernel's answer for that address, or a new read
    /// of the whole map where the kernel cannot answer for one.
    pub fn now(&mut self, addr: usize) -> Option<Mapping> {
        if let Some(answer) = self.ask(addr) {
            return answer;
        }
        self.read_at = sys::monotonic_ns();
        self.mappings = read_mappings();
        find(&self.mappings, addr)
    }

    /// The kernel's answer for `addr` (`None`: it cannot answer one address at a time).
    fn ask(&mut self, addr: usize) -> Option<Option<Mapping>> {
        let found = self.query.mapping(addr)?;
        Some(found.map(|m| Mapping {
            start: m.start,
            end: m.end,
            executable: m.executable,
        }))
    }
}

/// The mapping in `mappings` (sorted by start) that holds `addr`.
fn find(mappings: &[Mapping], addr: usize) -> Option<Mapping> {
    let i = mappings
        .partition_point(|m| m.start <= addr)
        .checked_sub(1)?;
    let m = mappings[i];
    (addr < m.end).then_some(m)
}

/// Every mapping of this process now, by start address (empty if the map cannot be read).
fn read_mappings() -> Vec<Mapping> {
    std::fs::read_to_string("/proc/self/maps").map_or_else(|_| Vec::new(), |t| parse_all(&t))
}

/// Every mapping a text of `/proc/self/maps` lists, by start address.
fn parse_all(text: &str) -> Vec<Mapping> {
    let mut mappings: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
    mappings.sort_unstable_by_key(|m| m.start);
    mappings
}

/// The range and permission of one line of `/proc/self/maps`.
fn parse_line(line: &str) -> Option<Mapping> {
    MapsLine::parse(line).map(|l| Mapping {
        start: l.start,
        end: l.end,
        executable: l.executable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot that reads the whole map, as on a kernel without `PROCMAP_QUERY`.
    fn reading() -> MapSnapshot {
        MapSnapshot {
            query: MapsQuery::unsupported(),
            ..MapSnapshot::default()
        }
    }

    #[test]
    fn finds_the_mapping_of_a_stack_address_with_either_way_of_asking() {
        let local = 0u64;
        let addr = &local as *const u64 as usize;
        let code = finds_the_mapping_of_a_stack_address_with_either_way_of_asking as fn()
            as *const () as usize;
        // A mapping of its own (the heap's end moves as reading the map allocates).
        let block = vec![0u8; 64 << 20];
        let in_block = block.as_ptr() as usize + (32 << 20);
        let m = reading().now(addr).expect("the stack is mapped");
        assert!(m.start <= addr && addr < m.end);
        assert!(!m.executable);
        assert!(reading().now(0).is_none());
        assert!(reading().now(code).unwrap().executable);
        // The kernel's answer for one address is the whole map's, wherever it can answer.
        let mut asking = MapSnapshot::default();
        if asking.ask(addr).is_none() {
            eprintln!("this kernel cannot answer one address at a time: read the map only");
            return;
        }
        for a in [addr, code, in_block, 0, 0x1000, usize::MAX >> 17] {
            assert_eq!(asking.now(a), reading().now(a), "{a:#x}");
        }
        assert_eq!(asking.read_at, 0, "no whole read where the kernel answers");
    }

    #[test]
    fn a_snapshot_answers_for_moments_before_it_and_reads_again_for_later_ones() {
        let local = 0u64;
        let addr = &local as *const u64 as usize;
        let mut snapshot = reading();
        let before = crate::recorder::sys::monotonic_ns();
        let m = snapshot
            .holding(addr, before, None)
            .expect("the stack is mapped");
        let read_at = snapshot.read_at;
        assert!(read_at >= before);
        // A moment before the read: the same read answers.
        assert_eq!(snapshot.holding(addr, before, None), Some(m));
        assert_eq!(snapshot.read_at, read_at);
        // A mapping made since is found by a new read, for a moment after the first.
        let fresh = vec![0u8; 64 << 20];
        let inside = fresh.as_ptr() as usize + (32 << 20);
        let later = crate::recorder::sys::monotonic_ns();
        let found = snapshot
            .holding(inside, later, None)
            .expect("the new mapping is found");
        assert!(snapshot.read_at > read_at);
        assert!(found.start <= inside && inside < found.end);
        // Another reader's text, read after the moment asked about, is taken instead of a
        // read; one read before it is not.
        let text = "1000-2000 rw-p 00000000 00:00 0 \n";
        let moment = snapshot.read_at + 1;
        assert_eq!(
            snapshot.holding(0x1800, moment, Some((moment - 1, text))),
            None
        );
        let newer = snapshot.read_at + 10;
        assert_eq!(
            snapshot.holding(0x1800, newer - 5, Some((newer, text))),
            Some(Mapping {
                start: 0x1000,
                end: 0x2000,
                executable: false
            })
        );
        assert_eq!(snapshot.read_at, newer);
    }

    #[test]
    fn lines_parse_and_garbage_does_not() {
        assert_eq!(
            parse_line("7f00-7f10 r-xp 00000000 08:01 123 /lib/x.so"),
            Some(Mapping {
                start: 0x7f00,
                end: 0x7f10,
                executable: true
            })
        );
        assert_eq!(parse_line("nonsense"), None);
        let ms = [
            Mapping {
                start: 0x1000,
                end: 0x2000,
                executable: false,
            },
            Mapping {
                start: 0x3000,
                end: 0x4000,
                executable: true,
            },
        ];
        assert_eq!(find(&ms, 0x2000), None);
        assert_eq!(find(&ms, 0x3fff), Some(ms[1]));
        assert_eq!(find(&ms, 0xfff), None);
    }
}
