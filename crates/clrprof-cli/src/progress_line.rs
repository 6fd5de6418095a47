//! The progress line of `report` (a heap analysis, a symbol server's download): drawn where
//! the cursor is on standard error, when it is a terminal, since nothing else writes to it
//! meanwhile; cleared when dropped. (`record` and `attach` have their own status line, kept on
//! a row of its own below the program's output: [`crate::status`] on Unix.)

use std::io::{IsTerminal, Write};

/// A line showing on a terminal what the heap analysis (it can take a while on big heaps) or a
/// symbol server's download is doing; cleared when dropped.
pub(crate) struct Status {
    tty: bool,
}

impl Status {
    pub(crate) fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// Shows `clrprof: WHAT...` (nothing for an empty `what`) on a terminal.
    pub(crate) fn show(&mut self, what: &str) {
        if self.tty && what.is_empty() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        } else if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2Kclrprof: {what}...");
        }
    }

    /// Runs `work`, which reports its progress to the status line, then clears the line.
    pub(crate) fn during<T>(work: impl FnOnce(&mut dyn FnMut(&str)) -> T) -> T {
        let mut status = Status::new();
        work(&mut |what| status.show(what))
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.show("");
    }
}
