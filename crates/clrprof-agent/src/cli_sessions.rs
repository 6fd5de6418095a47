//! Holding a launched program's start until the CLI's event sessions run (CoreCLR 3.1).
//!
//! Where the runtime offers no in-process EventPipe session (CoreCLR 3.1 has no
//! `ICorProfilerInfo12`), the runtime's events of `--contention` and `--alloc ticks` come
//! through EventPipe sessions the CLI starts on the program's diagnostics socket, once the
//! agent said it leaves them to it. The runtime opens that socket after the agent's
//! `Initialize` (none is there while `Initialize` waits), so a program that started at once
//! could contend before the CLI's session ran: those waits were lost (the first of 50
//! contended locks, in one run of 50 on a loaded machine). So the agent holds the first module
//! load after the core library's (the program's own assembly, before any of its code runs)
//! until the CLI said, for each kind it left to it, that its session runs or could not start
//! ([`EventSessionNews`]), for at most [`WAIT_AT_MOST`]. Other threads that load a module
//! meanwhile wait too. The counters say how many sessions were awaited, how many had started
//! and how long the program was held.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clrprof_sdk::ModuleId;
use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_trace::counters::CounterName;
use clrprof_trace::protocol::EventSessionNews;

use crate::cli_link::{self, FromCli};
use crate::instrument::assembly_name;
use crate::session::{Feature, Session};

/// How long the agent holds the program's start at the most. Starting a session takes the
/// CLI a few milliseconds once the socket is open.
pub const WAIT_AT_MOST: Duration = Duration::from_secs(5);

/// The wait for the CLI's event sessions of one launched session.
#[derive(Default)]
pub struct CliSessions {
    /// The connection's reading half, until the wait is over (or known not to be needed).
    /// Held while waiting: another thread's module load waits too.
    from_cli: Mutex<Option<FromCli>>,
    /// The CLI's sessions to wait for (0: none, or the wait is over).
    awaiting: AtomicU32,
    awaited: AtomicU64,
    started: AtomicU64,
    wait_ns: AtomicU64,
}

impl CliSessions {
    /// The wait of a launched agent whose connection's reading half is `from_cli` (`None`
    /// when no CLI is at the other end).
    pub fn new(from_cli: Option<FromCli>) -> CliSessions {
        CliSessions {
            from_cli: Mutex::new(from_cli),
            ..CliSessions::default()
        }
    }

    /// Once the features said who reads the runtime's events: `left_to_cli` kinds are the
    /// CLI's (0: nothing to wait for).
    pub fn arm(&self, left_to_cli: u32) {
        let mut from_cli = lock(&self.from_cli);
        if from_cli.is_some() && left_to_cli > 0 && !no_diagnostics_socket() {
            self.awaiting.store(left_to_cli, Ordering::Release);
        } else {
            *from_cli = None;
        }
    }

    /// `ModuleLoadFinished`: holds the first module load after the core library's until the
    /// awaited sessions run.
    pub fn module_loaded(&self, s: &Session, module: ModuleId) {
        if self.awaiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let is_core_library = s
            .info
            .get_module_info(module)
            .is_ok_and(|m| assembly_name(&m.name) == "System.Private.CoreLib");
        if is_core_library {
            return;
        }
        let mut from_cli = lock(&self.from_cli);
        // Another thread's module load may have waited meanwhile.
        let count = self.awaiting.load(Ordering::Acquire);
        let Some(connection) = from_cli.take().filter(|_| count > 0) else {
            return;
        };
        let since = Instant::now();
        let news = receive(&connection, count, since + WAIT_AT_MOST);
        self.awaiting.store(0, Ordering::Release);
        drop(from_cli);
        self.wait_ns
            .store(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.awaited.store(u64::from(count), Ordering::Relaxed);
        self.started
            .store(u64::from(news.started), Ordering::Relaxed);
        match news.end {
            End::AllCame => {}
            End::NotForThisProcess => s.warn(
                "clrprof reads this runtime's events of --contention and --alloc ticks over the \
                 diagnostics socket of the process it started only: this process's are not \
                 recorded",
            ),
            End::TimedOut => s.warn(format!(
                "clrprof's event sessions for the runtime's events (of --contention, --alloc \
                 ticks) did not start within {} s of the program's start: the program went on \
                 without them, and its first such events may be missing",
                WAIT_AT_MOST.as_secs()
            )),
            End::Unknown(byte) => s.warn(format!(
                "clrprof sent an unknown byte ({byte}) instead of the news of its event \
                 sessions: the program went on without waiting for them"
            )),
            // The CLI went away: its own output says why.
            End::Closed => {}
        }
    }
}

impl Feature for CliSessions {
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        if self.awaiting.load(Ordering::Acquire) > 0 {
            (EventMask::MONITOR_MODULE_LOADS, HighEventMask::empty())
        } else {
            (EventMask::empty(), HighEventMask::empty())
        }
    }

    fn counters(&self, _s: &Session) -> Vec<(CounterName, u64)> {
        let awaited = self.awaited.load(Ordering::Relaxed);
        if awaited == 0 {
            return Vec::new();
        }
        vec![
            (CounterName::CliEventSessionsAwaited, awaited),
            (
                CounterName::CliEventSessionsStarted,
                self.started.load(Ordering::Relaxed),
            ),
            (
                CounterName::CliEventSessionsWaitNs,
                self.wait_ns.load(Ordering::Relaxed),
            ),
        ]
    }
}

/// Whether the runtime opens no diagnostics socket, so that the CLI's sessions cannot start:
/// CoreCLR 3.1 reads the setting only with the `COMPlus_` prefix (and loads profilers with it).
fn no_diagnostics_socket() -> bool {
    std::env::var("COMPlus_EnableDiagnostics").is_ok_and(|v| v.trim() == "0")
}

/// What came of the wait.
struct News {
    started: u32,
    end: End,
}

/// Why the wait ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    AllCame,
    /// The CLI reads such events of the process it started only.
    NotForThisProcess,
    TimedOut,
    Unknown(u8),
    Closed,
}

/// Reads the news of `count` sessions from `from_cli` until `deadline`.
fn receive(from_cli: &FromCli, count: u32, deadline: Instant) -> News {
    let mut started = 0;
    let mut not_for_this_process = false;
    for _ in 0..count {
        let left = deadline.saturating_duration_since(Instant::now());
        let end = match cli_link::read_byte(from_cli, Some(left)) {
            cli_link::Read::Byte(b) => match EventSessionNews::from_byte(b) {
                Some(EventSessionNews::Started) => {
                    started += 1;
                    continue;
                }
                Some(EventSessionNews::Failed) => continue,
                Some(EventSessionNews::NotForThisProcess) => {
                    // The same for each kind: read them all, as the others.
                    not_for_this_process = true;
                    continue;
                }
                None => End::Unknown(b),
            },
            cli_link::Read::Nothing => End::TimedOut,
            cli_link::Read::Closed => End::Closed,
        };
        return News { started, end };
    }
    News {
        started,
        end: if not_for_this_process {
            End::NotForThisProcess
        } else {
            End::AllCame
        },
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_news_of_each_session_ends_the_wait() {
        let (mut cli, agent) = UnixStream::pair().unwrap();
        cli.write_all(&[
            EventSessionNews::Started.to_byte(),
            EventSessionNews::Failed.to_byte(),
        ])
        .unwrap();
        let news = receive(&agent, 2, Instant::now() + Duration::from_secs(5));
        assert_eq!((news.started, news.end), (1, End::AllCame));
    }

    #[test]
    fn a_wait_without_news_ends_at_its_deadline() {
        let (mut cli, agent) = UnixStream::pair().unwrap();
        cli.write_all(&[EventSessionNews::Started.to_byte()])
            .unwrap();
        let since = Instant::now();
        let news = receive(&agent, 2, since + Duration::from_millis(50));
        assert_eq!((news.started, news.end), (1, End::TimedOut));
        assert!(since.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn a_process_the_cli_runs_no_session_for_waits_no_longer() {
        let (mut cli, agent) = UnixStream::pair().unwrap();
        let news = EventSessionNews::NotForThisProcess.to_byte();
        cli.write_all(&[news, news, 9]).unwrap();
        let news = receive(&agent, 2, Instant::now() + Duration::from_secs(5));
        assert_eq!((news.started, news.end), (0, End::NotForThisProcess));
        // Every byte of the news was read, and nothing after it.
        assert_eq!(cli_link::read_byte(&agent, None), cli_link::Read::Byte(9));
    }

    #[test]
    fn a_cli_that_goes_away_or_says_something_else_ends_the_wait() {
        let (cli, agent) = UnixStream::pair().unwrap();
        drop(cli);
        let news = receive(&agent, 1, Instant::now() + Duration::from_secs(5));
        assert_eq!(news.end, End::Closed);
        let (mut cli, agent) = UnixStream::pair().unwrap();
        cli.write_all(&[7]).unwrap();
        let news = receive(&agent, 1, Instant::now() + Duration::from_secs(5));
        assert_eq!(news.end, End::Unknown(7));
    }
}
