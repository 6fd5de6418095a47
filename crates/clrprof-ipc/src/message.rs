//! The bytes of the diagnostics IPC protocol: message headers, strings, the commands clrprof
//! sends and the replies it reads. Pure encoding and decoding, no I/O.
//!
//! Every message starts with a 20-byte little-endian header: the magic `DOTNET_IPC_V1\0`, a
//! u16 total size (header included), a command set, a command id and a reserved u16. Strings
//! are a u32 count of UTF-16 units including the terminating NUL, then the units (a count of 0
//! is an absent string). The runtime answers each command with one reply: `0xFF/0x00` (OK,
//! with a command-specific payload) or `0xFF/0xFF` followed by an HRESULT.

use clrprof_events::bytes::{Reader, utf16_lossy};
/// The little-endian values at an offset of a payload.
pub use clrprof_events::bytes::{u32_at, u64_at};

use crate::Error;

/// The magic every message starts with.
pub const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
/// Size of the header.
pub const HEADER_LEN: usize = 20;

/// EventPipe commands.
pub const SET_EVENTPIPE: u8 = 0x02;
/// `StopTracing`.
pub const EVENTPIPE_STOP: u8 = 0x01;
/// `CollectTracing`.
pub const EVENTPIPE_COLLECT: u8 = 0x02;
/// Profiler commands.
pub const SET_PROFILER: u8 = 0x03;
/// `AttachProfiler`.
pub const PROFILER_ATTACH: u8 = 0x01;
/// Process commands.
pub const SET_PROCESS: u8 = 0x04;
/// `ProcessInfo`.
pub const PROCESS_INFO: u8 = 0x00;
/// Replies.
pub const SET_SERVER: u8 = 0xFF;
/// An OK reply.
pub const SERVER_OK: u8 = 0x00;
/// An error reply (payload: HRESULT).
pub const SERVER_ERROR: u8 = 0xFF;

/// `CORPROF_E_PROFILER_ALREADY_ACTIVE`: a profiler is already loaded (or still detaching).
pub const CORPROF_E_PROFILER_ALREADY_ACTIVE: u32 = 0x8013_136A;
/// `CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER`: the runtime refuses this after an attach.
pub const CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER: u32 = 0x8013_136F;
/// `CORPROF_E_RUNTIME_UNINITIALIZED`: the runtime is not far enough in its startup.
pub const CORPROF_E_RUNTIME_UNINITIALIZED: u32 = 0x8013_1371;
/// `CORPROF_E_PROFILER_NOT_ATTACHABLE`.
pub const CORPROF_E_PROFILER_NOT_ATTACHABLE: u32 = 0x8013_1368;
/// `CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC`.
pub const CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC: u32 = 0x8013_1373;
/// The diagnostics server does not know the command (`DS_IPC_E_UNKNOWN_COMMAND`); .NET Core
/// 3.1 answers this to `ProcessInfo`, which came with .NET 5.
pub const DS_IPC_E_UNKNOWN_COMMAND: u32 = 0x8013_1385;

/// A whole message: header and `payload`.
pub fn message(set: u8, id: u8, payload: &[u8]) -> Result<Vec<u8>, Error> {
    let size = u16::try_from(HEADER_LEN + payload.len())
        .map_err(|_| Error::Protocol(format!("a {}-byte command is too long", payload.len())))?;
    let mut msg = Vec::with_capacity(usize::from(size));
    msg.extend_from_slice(MAGIC);
    msg.extend_from_slice(&size.to_le_bytes());
    msg.push(set);
    msg.push(id);
    msg.extend_from_slice(&0u16.to_le_bytes());
    msg.extend_from_slice(payload);
    Ok(msg)
}

/// Appends an IPC string: UTF-16 units with a terminating NUL, or a zero count when empty.
pub fn put_string(buf: &mut Vec<u8>, s: &str) {
    if s.is_empty() {
        buf.extend_from_slice(&0u32.to_le_bytes());
        return;
    }
    let units: Vec<u16> = s.encode_utf16().chain(std::iter::once(0)).collect();
    buf.extend_from_slice(&(units.len() as u32).to_le_bytes());
    for unit in units {
        buf.extend_from_slice(&unit.to_le_bytes());
    }
}

/// A GUID in the layout the runtime reads (Data1 u32 LE, Data2 u16 LE, Data3 u16 LE, Data4).
pub fn guid_bytes(text: &str) -> Result<[u8; 16], Error> {
    let bad = || Error::Protocol(format!("`{text}` is not a GUID"));
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text);
    let parts: Vec<&str> = inner.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, n)| p.len() != n) {
        return Err(bad());
    }
    let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad());
    let mut out = [0u8; 16];
    out[0..4].copy_from_slice(&(hex(parts[0])? as u32).to_le_bytes());
    out[4..6].copy_from_slice(&(hex(parts[1])? as u16).to_le_bytes());
    out[6..8].copy_from_slice(&(hex(parts[2])? as u16).to_le_bytes());
    out[8..10].copy_from_slice(&(hex(parts[3])? as u16).to_be_bytes());
    out[10..16].copy_from_slice(&hex(parts[4])?.to_be_bytes()[2..]);
    Ok(out)
}

/// One EventPipe provider to enable.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Provider name.
    pub name: &'static str,
    /// Keyword mask.
    pub keywords: u64,
    /// Verbosity level.
    pub level: u32,
}

/// `CollectTracing`: a streaming nettrace session with `providers` and a circular buffer of
/// `buffer_mb` megabytes.
pub fn collect_tracing(buffer_mb: u32, providers: &[Provider]) -> Result<Vec<u8>, Error> {
    /// nettrace, the format `dotnet-trace` asks for.
    const FORMAT_NETTRACE: u32 = 1;
    let mut payload = Vec::new();
    payload.extend_from_slice(&buffer_mb.to_le_bytes());
    payload.extend_from_slice(&FORMAT_NETTRACE.to_le_bytes());
    payload.extend_from_slice(&(providers.len() as u32).to_le_bytes());
    for p in providers {
        payload.extend_from_slice(&p.keywords.to_le_bytes());
        payload.extend_from_slice(&p.level.to_le_bytes());
        put_string(&mut payload, p.name);
        put_string(&mut payload, "");
    }
    message(SET_EVENTPIPE, EVENTPIPE_COLLECT, &payload)
}

/// `StopTracing` of EventPipe session `session`.
pub fn stop_tracing(session: u64) -> Result<Vec<u8>, Error> {
    message(SET_EVENTPIPE, EVENTPIPE_STOP, &session.to_le_bytes())
}

/// `ProcessInfo` (no payload).
pub fn process_info() -> Result<Vec<u8>, Error> {
    message(SET_PROCESS, PROCESS_INFO, &[])
}

/// `AttachProfiler`: load the profiler `clsid` from `path`, waiting at most `timeout_ms` for
/// it to initialize; `client_data` is handed to its `InitializeForAttach`.
pub fn attach_profiler(
    timeout_ms: u32,
    clsid: &str,
    path: &str,
    client_data: &[u8],
) -> Result<Vec<u8>, Error> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&timeout_ms.to_le_bytes());
    payload.extend_from_slice(&guid_bytes(clsid)?);
    put_string(&mut payload, path);
    let len = u32::try_from(client_data.len())
        .map_err(|_| Error::Protocol("client data too long".into()))?;
    payload.extend_from_slice(&len.to_le_bytes());
    payload.extend_from_slice(client_data);
    message(SET_PROFILER, PROFILER_ATTACH, &payload)
}

/// A reply header: its total size, checked; returns the payload length.
pub fn reply_payload_len(header: &[u8; HEADER_LEN]) -> Result<usize, Error> {
    if &header[..14] != MAGIC {
        return Err(Error::Protocol(format!(
            "reply does not start with the DOTNET_IPC_V1 magic: {header:02x?}"
        )));
    }
    let size = usize::from(u16::from_le_bytes([header[14], header[15]]));
    size.checked_sub(HEADER_LEN).ok_or_else(|| {
        Error::Protocol(format!(
            "reply header announces {size} bytes, less than the header itself"
        ))
    })
}

/// The payload of an OK reply, or the runtime's refusal.
pub fn check_reply(header: &[u8; HEADER_LEN], payload: Vec<u8>) -> Result<Vec<u8>, Error> {
    match (header[16], header[17]) {
        (SET_SERVER, SERVER_OK) => Ok(payload),
        (SET_SERVER, SERVER_ERROR) => Err(Error::Refused {
            hresult: u32_at(&payload, 0).unwrap_or(0),
        }),
        (set, id) => Err(Error::Protocol(format!(
            "unexpected reply command {set:#04x}/{id:#04x}"
        ))),
    }
}

/// Reads an IPC string at `*offset`, moving past it.
fn read_string(payload: &[u8], offset: &mut usize) -> Option<String> {
    let mut r = Reader::at(payload, *offset);
    let count = r.u32()? as usize;
    let bytes = r.bytes(count.checked_mul(2)?)?;
    *offset = r.position();
    // The string ends at its NUL, if it has one.
    let len = bytes
        .chunks_exact(2)
        .position(|unit| unit == [0, 0])
        .map_or(bytes.len(), |units| units * 2);
    Some(utf16_lossy(&bytes[..len]))
}

/// What `ProcessInfo` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// The process id, as the process itself sees it (differs inside a container).
    pub pid: u64,
    /// The runtime instance's cookie.
    pub runtime_cookie: [u8; 16],
    /// The command line.
    pub command_line: String,
    /// Operating system.
    pub os: String,
    /// Processor architecture.
    pub arch: String,
}

impl ProcessInfo {
    /// Parses the payload of a `ProcessInfo` reply.
    pub fn parse(payload: &[u8]) -> Result<ProcessInfo, Error> {
        let short = || {
            Error::Protocol(format!(
                "ProcessInfo reply of {} bytes is malformed",
                payload.len()
            ))
        };
        let pid = u64_at(payload, 0).ok_or_else(short)?;
        let runtime_cookie: [u8; 16] = payload
            .get(8..24)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(short)?;
        let mut at = 24;
        let command_line = read_string(payload, &mut at).ok_or_else(short)?;
        let os = read_string(payload, &mut at).ok_or_else(short)?;
        let arch = read_string(payload, &mut at).ok_or_else(short)?;
        Ok(ProcessInfo {
            pid,
            runtime_cookie,
            command_line,
            os,
            arch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(msg: &[u8]) -> [u8; HEADER_LEN] {
        msg[..HEADER_LEN].try_into().unwrap()
    }

    #[test]
    fn header_layout() {
        let msg = stop_tracing(0x0102_0304_0506_0708).unwrap();
        assert_eq!(msg.len(), 28);
        assert_eq!(&msg[..14], b"DOTNET_IPC_V1\0");
        assert_eq!(&msg[14..16], &28u16.to_le_bytes());
        assert_eq!(&msg[16..20], &[0x02, 0x01, 0, 0]);
        assert_eq!(&msg[20..], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(reply_payload_len(&header_of(&msg)).unwrap(), 8);
    }

    #[test]
    fn collect_tracing_payload() {
        let msg = collect_tracing(
            256,
            &[Provider {
                name: "AB",
                keywords: 0x10,
                level: 4,
            }],
        )
        .unwrap();
        let mut expected = Vec::new();
        expected.extend_from_slice(&256u32.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&0x10u64.to_le_bytes());
        expected.extend_from_slice(&4u32.to_le_bytes());
        expected.extend_from_slice(&3u32.to_le_bytes());
        expected.extend_from_slice(&[b'A', 0, b'B', 0, 0, 0]);
        expected.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(&msg[HEADER_LEN..], expected.as_slice());
        assert_eq!(&msg[16..18], &[0x02, 0x02]);
        assert_eq!(
            usize::from(u16::from_le_bytes([msg[14], msg[15]])),
            msg.len()
        );
    }

    #[test]
    fn guid_in_windows_layout() {
        let g = guid_bytes("{897B9E27-A69B-4816-9F74-172E6D96334F}").unwrap();
        assert_eq!(
            g,
            [
                0x27, 0x9E, 0x7B, 0x89, 0x9B, 0xA6, 0x16, 0x48, 0x9F, 0x74, 0x17, 0x2E, 0x6D, 0x96,
                0x33, 0x4F
            ]
        );
        assert_eq!(
            guid_bytes("897b9e27-a69b-4816-9f74-172e6d96334f").unwrap(),
            g
        );
        assert!(guid_bytes("{897B9E27-A69B-4816-9F74}").is_err());
        assert!(guid_bytes("{897B9E27-A69B-4816-9F74-172E6D96334G}").is_err());
    }

    #[test]
    fn attach_profiler_payload() {
        let msg = attach_profiler(
            5000,
            "{00000001-0002-0003-0405-060708090A0B}",
            "/a.so",
            b"xyz",
        )
        .unwrap();
        assert_eq!(&msg[16..20], &[0x03, 0x01, 0, 0]);
        let mut expected = Vec::new();
        expected.extend_from_slice(&5000u32.to_le_bytes());
        expected.extend_from_slice(&[1, 0, 0, 0, 2, 0, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11]);
        expected.extend_from_slice(&6u32.to_le_bytes());
        for c in "/a.so\0".encode_utf16() {
            expected.extend_from_slice(&c.to_le_bytes());
        }
        expected.extend_from_slice(&3u32.to_le_bytes());
        expected.extend_from_slice(b"xyz");
        assert_eq!(&msg[HEADER_LEN..], expected.as_slice());
        assert_eq!(
            usize::from(u16::from_le_bytes([msg[14], msg[15]])),
            msg.len()
        );
    }

    #[test]
    fn process_info_request_and_reply() {
        assert_eq!(
            process_info().unwrap(),
            [b"DOTNET_IPC_V1\0".as_slice(), &[20, 0, 4, 0, 0, 0]].concat()
        );
        let mut payload = Vec::new();
        payload.extend_from_slice(&4242u64.to_le_bytes());
        payload.extend_from_slice(&[7u8; 16]);
        put_string(&mut payload, "dotnet app.dll");
        put_string(&mut payload, "Linux");
        put_string(&mut payload, "");
        let info = ProcessInfo::parse(&payload).unwrap();
        assert_eq!(
            info,
            ProcessInfo {
                pid: 4242,
                runtime_cookie: [7; 16],
                command_line: "dotnet app.dll".into(),
                os: "Linux".into(),
                arch: String::new(),
            }
        );
        assert!(ProcessInfo::parse(&payload[..payload.len() - 1]).is_err());
        assert!(ProcessInfo::parse(&payload[..10]).is_err());
    }

    #[test]
    fn replies_ok_error_and_garbage() {
        let ok = message(SET_SERVER, SERVER_OK, &0u32.to_le_bytes()).unwrap();
        assert_eq!(ok.len(), 24);
        let h = header_of(&ok);
        assert_eq!(reply_payload_len(&h).unwrap(), 4);
        assert_eq!(check_reply(&h, ok[HEADER_LEN..].to_vec()).unwrap(), [0; 4]);

        let err = message(
            SET_SERVER,
            SERVER_ERROR,
            &CORPROF_E_PROFILER_ALREADY_ACTIVE.to_le_bytes(),
        )
        .unwrap();
        match check_reply(&header_of(&err), err[HEADER_LEN..].to_vec()) {
            Err(Error::Refused { hresult }) => {
                assert_eq!(hresult, CORPROF_E_PROFILER_ALREADY_ACTIVE)
            }
            other => panic!("{other:?}"),
        }

        let mut bad = ok.clone();
        bad[0] = b'X';
        assert!(reply_payload_len(&header_of(&bad)).is_err());
        let mut tiny = ok;
        tiny[14] = 3;
        tiny[15] = 0;
        assert!(reply_payload_len(&header_of(&tiny)).is_err());
    }
}
