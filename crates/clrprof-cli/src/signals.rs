//! The signals that end a command run from a terminal, a script, a service manager or a
//! container (SIGINT, SIGTERM, SIGHUP), received as messages instead of ending `clrprof` on
//! the spot, and the file-size limit's signal, which would otherwise kill `clrprof` when a
//! trace reaches the limit instead of failing the write.
//!
//! `record` passes each one on to the program and finishes the trace when the program ends;
//! `attach` detaches. A Ctrl-C typed on the terminal reaches the whole foreground process
//! group, so the program already has it: [`Received::from_terminal`] says so, and `record`
//! does not send it a second time.
//!
//! The handlers are not inherited by the program, which starts with the default actions.

use std::sync::mpsc::{Receiver, channel};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGXFSZ};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithRawSiginfo;

/// One signal received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    /// Its number.
    pub(crate) signal: i32,
    /// Sent by the terminal driver (Ctrl-C, a hangup) to the whole process group, rather than
    /// by a process to `clrprof` alone.
    pub(crate) from_terminal: bool,
}

/// The termination signals received since [`Signals::install`].
pub(crate) struct Signals {
    received: Receiver<Received>,
    handle: signal_hook::iterator::Handle,
}

impl Signals {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on, and ignores SIGXFSZ.
    pub(crate) fn install() -> Result<Signals> {
        let mut signals = SignalsInfo::<WithRawSiginfo>::new([SIGINT, SIGTERM, SIGHUP])
            .context("cannot catch termination signals")?;
        let _ = signal_hook::flag::register(
            SIGXFSZ,
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        );
        let handle = signals.handle();
        let (tx, received) = channel();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for info in signals.forever() {
                    let received = Received {
                        signal: info.si_signo,
                        // The terminal driver's signals come from the kernel; `kill` sets
                        // SI_USER, `tgkill` SI_TKILL, `sigqueue` SI_QUEUE.
                        from_terminal: info.si_code == libc::SI_KERNEL,
                    };
                    if tx.send(received).is_err() {
                        break;
                    }
                }
            })
            .context("cannot start the signal thread")?;
        Ok(Signals { received, handle })
    }

    /// The next signal received and not yet taken, if any.
    pub(crate) fn next(&self) -> Option<Received> {
        self.received.try_recv().ok()
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.handle.close();
    }
}

/// `SIGTERM`, `SIGINT`, ... for signal number `signal`.
pub(crate) fn name(signal: i32) -> String {
    clrprof_analysis::ending::program_end(-1, signal)
        .trim_start_matches("killed by ")
        .to_string()
}

/// Sends `signal` to process `pid`.
pub(crate) fn send(pid: u32, signal: i32) -> std::io::Result<()> {
    let signal = nix::sys::signal::Signal::try_from(signal).map_err(std::io::Error::from)?;
    let pid =
        i32::try_from(pid).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).map_err(std::io::Error::from)
}
