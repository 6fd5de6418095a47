//! What kind of runtime stub an address of the runtime's anonymous code is, from the
//! runtime's own perf map.
//!
//! The runtime generates small pieces of code it names nowhere the profiling API reaches:
//! precode (the entry point of a method before and between its compilations), virtual stub
//! dispatch (interface calls: dispatch, resolve and lookup stubs), vtable call stubs, jump
//! stubs. With `DOTNET_PerfMapEnabled` (`COMPlus_` on CoreCLR 3.1) it lists each of them in its
//! perf map as it makes it, a line `ADDRESS SIZE stub<N> KIND<OWNER>` (the address `0x`-prefixed
//! since .NET 5, 16 hexadecimal digits before); `clrprof record` asks for the map, in its own
//! directory where the runtime allows (`PerfMapJitDumpPath`, .NET 5 and later), and removes it
//! at the end. The sampler names each address once (see `frames.rs`), so it reads the lines
//! added since its last look whenever it meets an address of anonymous code it cannot name
//! yet: the runtime lists a stub as it makes it, before anything can run in it. A stub made
//! before the map was asked for (after an `attach`) stays a nameless `[runtime stub]`.

use std::fs::File;
use std::path::PathBuf;

/// How far past its start an address may lie and still be a listed stub's (see
/// [`StubMap::known`]).
const STUB_REACH: usize = 512;
/// How much of the map one read takes, at most.
const READ_CHUNK: usize = 1 << 20;

/// The stubs the runtime's perf map lists, by start address.
#[derive(Default)]
pub struct StubMap {
    /// The map file, once found.
    file: Option<File>,
    /// Where the next read starts.
    offset: u64,
    /// The bytes read and not parsed yet (a line the last read cut), in a buffer kept
    /// between reads.
    pending: Vec<u8>,
    /// (start, end, kind), sorted by start.
    stubs: Vec<(usize, usize, &'static str)>,
}

impl StubMap {
    /// The kind of stub that contains `ip`, reading the map's new lines first if it is not
    /// known yet.
    pub fn kind_at(&mut self, ip: usize) -> Option<&'static str> {
        if let Some(kind) = self.known(ip) {
            return Some(kind);
        }
        self.read_new_lines();
        self.known(ip)
    }

    fn known(&self, ip: usize) -> Option<&'static str> {
        let after = self.stubs.partition_point(|&(start, _, _)| start <= ip);
        let &(start, end, kind) = self.stubs.get(after.checked_sub(1)?)?;
        // The size some runtimes write is too short for some stubs (.NET 8.0.4 gives its
        // interface resolve stubs 0x18 bytes; their code runs on to 0xb3 and more): an address
        // a little past a stub's listed end, with no other stub listed before it, is that
        // stub's.
        (ip < end.max(start.saturating_add(STUB_REACH))).then_some(kind)
    }

    fn read_new_lines(&mut self) {
        use std::io::{Read, Seek, SeekFrom};
        if self.file.is_none() {
            self.file = map_path().and_then(|p| File::open(p).ok());
        }
        let Some(mut file) = self.file.as_ref() else {
            return;
        };
        // Most addresses asked about are no listed stub: the map is read again only once it
        // has grown.
        if file.metadata().is_ok_and(|m| m.len() <= self.offset) {
            return;
        }
        // Read after the cut line the last read left, into the buffer kept between reads (a
        // buffer made anew each time was a fresh mapping of a megabyte to fault in).
        let Ok(n) = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(READ_CHUNK as u64).read_to_end(&mut self.pending))
        else {
            return;
        };
        self.offset += n as u64;
        // .NET 8.0.4 ends some lines with a NUL instead of a newline.
        let complete = memchr::memrchr2(b'\n', 0, &self.pending).map_or(0, |i| i + 1);
        let mut line_start = 0;
        for line_end in memchr::memchr2_iter(b'\n', 0, &self.pending[..complete]) {
            if let Some((start, size, kind)) = parse(&self.pending[line_start..line_end]) {
                self.stubs.push((start, start.saturating_add(size), kind));
            }
            line_start = line_end + 1;
        }
        // The runtime lists most stubs at rising addresses: this sorts runs already in order.
        self.stubs.sort_unstable_by_key(|&(start, _, _)| start);
        self.pending.drain(..complete);
    }
}

/// Where the runtime writes this process's perf map: the directory `PerfMapJitDumpPath`
/// names (.NET 5 and later), else `TMPDIR` or `/tmp` (CoreCLR 3.1 writes into `TMPDIR`, later
/// runtimes into `/tmp`): the first that holds `perf-PID.map`.
fn map_path() -> Option<PathBuf> {
    let name = format!("perf-{}.map", std::process::id());
    let dirs = [
        "DOTNET_PerfMapJitDumpPath",
        "COMPlus_PerfMapJitDumpPath",
        "TMPDIR",
    ]
    .into_iter()
    .filter_map(std::env::var_os)
    .map(PathBuf::from)
    .chain(std::iter::once(PathBuf::from("/tmp")));
    dirs.map(|d| d.join(&name)).find(|p| p.is_file())
}

/// A stub line of the perf map: its start, size and kind; `None` for any other line (most
/// lines are compiled methods: they are passed over on their third field, unread).
fn parse(line: &[u8]) -> Option<(usize, usize, &'static str)> {
    let mut fields = line.splitn(4, |&b| b == b' ');
    let address = fields.next()?;
    let size = fields.next()?;
    if !fields.next()?.starts_with(b"stub<") {
        return None;
    }
    let kind = fields.next()?;
    let address = address.strip_prefix(b"0x").unwrap_or(address);
    Some((hex(address)?, hex(size)?, kind_name(kind)))
}

/// A hexadecimal number.
fn hex(digits: &[u8]) -> Option<usize> {
    usize::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// A readable name for the kind the runtime writes (`GenerateDispatchStub<...>`, ...).
fn kind_name(kind: &[u8]) -> &'static str {
    let at = kind.iter().position(|&b| b == b'<').unwrap_or(kind.len());
    let (what, owner) = (&kind[..at], &kind[at..]);
    match what {
        b"AllocateTemporaryEntryPoints" if owner.starts_with(b"<PRECODE_FIXUP") => {
            "[stub: precode fixup]"
        }
        b"AllocateTemporaryEntryPoints" => "[stub: precode]",
        b"GenerateDispatchStub" | b"GenerateDispatchStubLong" => "[stub: interface dispatch]",
        b"GenerateResolveStub" => "[stub: interface resolve]",
        b"GenerateLookupStub" => "[stub: interface lookup]",
        b"GenerateVTableCallStub" => "[stub: vtable call]",
        b"getNextJumpStub" => "[stub: jump]",
        b"LoadHelperTable" => "[stub: JIT helper]",
        _ => "[stub: other]",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_stub_lines_of_both_runtimes_maps() {
        assert_eq!(
            parse(b"0x7f5e1ebf2250 60 stub<905> AllocateTemporaryEntryPoints<PRECODE_STUB>"),
            Some((0x7f5e_1ebf_2250, 0x60, "[stub: precode]"))
        );
        assert_eq!(
            parse(b"00007F4A12340000 18 stub<3> GenerateResolveStub<GenerateResolveStub>"),
            Some((0x7f4a_1234_0000, 0x18, "[stub: interface resolve]"))
        );
        assert_eq!(
            parse(b"0x7f5e1ea48ae0 a3 int64 [KernelTime] KernelTime::Arith(int64)[QuickJitted]"),
            None
        );
        let mut map = StubMap::default();
        map.stubs.push((0x1000, 0x1060, "[stub: precode]"));
        map.stubs.push((0x3000, 0x3010, "[stub: jump]"));
        assert_eq!(map.known(0x1000), Some("[stub: precode]"));
        assert_eq!(map.known(0x105f), Some("[stub: precode]"));
        assert_eq!(map.known(0x1060 + 0x100), Some("[stub: precode]"));
        assert_eq!(map.known(0x1000 + STUB_REACH), None);
        assert_eq!(map.known(0xfff), None);
        assert_eq!(map.known(0x3008), Some("[stub: jump]"));
        assert_eq!(
            parse(b"0x1000 1g stub<1> GenerateLookupStub<LOOKUP_STUB>"),
            None
        );
        assert_eq!(
            parse(b"0x1000 10 stub<1> AllocateTemporaryEntryPoints<PRECODE_FIXUP>"),
            Some((0x1000, 0x10, "[stub: precode fixup]"))
        );
    }

    #[test]
    fn a_map_read_while_it_grows_keeps_the_line_it_cut() {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("clrprof-stubs-{}.map", std::process::id()));
        let mut out = File::create(&path).unwrap();
        out.write_all(b"0x1000 20 stub<1> GenerateResolveStub<RESOLVE_STUB>\n0x2000 4 [Fo")
            .unwrap();
        let mut map = StubMap {
            file: Some(File::open(&path).unwrap()),
            ..StubMap::default()
        };
        assert_eq!(map.kind_at(0x1004), Some("[stub: interface resolve]"));
        assert_eq!(map.kind_at(0x3004), None);
        // The runtime finishes the method's line and lists a stub, its line ended by a NUL.
        out.write_all(b"o]\n0x3000 10 stub<2> GenerateLookupStub<LOOKUP_STUB>\0")
            .unwrap();
        assert_eq!(map.kind_at(0x3004), Some("[stub: interface lookup]"));
        // A stub listed below those before it is found too.
        out.write_all(b"0x800 10 stub<3> getNextJumpStub<JUMP_STUB>\n")
            .unwrap();
        assert_eq!(map.kind_at(0x804), Some("[stub: jump]"));
        assert_eq!(map.kind_at(0x1004), Some("[stub: interface resolve]"));
        assert!(map.pending.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
