//! The live status line of `record` and `attach`, on a line of its own that the program's
//! output never reaches.
//!
//! The program writes to the same terminal as clrprof, at any moment and in pieces that need
//! not end with a newline, so a status line drawn where the cursor is would land in the
//! middle of the program's lines. Instead the status line keeps the terminal's bottom row for
//! itself: the scrolling region is set to the rows above it (DECSTBM, which every terminal
//! emulator in use understands), so the program's output scrolls there, never onto the status
//! row, and a line the program has half written is never split. Each update is one `write`
//! (the terminal driver never interleaves it with another process's write) that saves the
//! cursor, draws the bottom row and puts the cursor back where the program left it. When the
//! recording ends the scrolling region is reset and the row cleared.
//!
//! Only on a terminal: when standard error is not one, there is no status line at all.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The status line; inactive (drawing nothing) when standard error is not a terminal.
pub(crate) struct StatusLine {
    state: Mutex<Option<Active>>,
    started: Instant,
}

struct Active {
    /// Terminal rows and columns when the region was set.
    rows: u16,
    cols: u16,
    finished: bool,
}

/// The terminal's size, if standard error is a terminal big enough for a status row.
fn terminal_size() -> Option<(u16, u16)> {
    let term = console::Term::stderr();
    if !term.is_term() {
        return None;
    }
    term.size_checked()
        .filter(|&(rows, cols)| rows >= 3 && cols >= 10)
}

fn write_all(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}

/// Keeps the bottom row of a terminal of `rows` rows: the cursor goes up a row first if it is
/// on the bottom row (a new line scrolls the screen so that nothing is lost), then the
/// scrolling region is set above the bottom row with the cursor saved and restored around it
/// (setting the region moves the cursor home).
fn reserve(rows: u16) -> String {
    format!("\n\x1b[1A\x1b7\x1b[1;{}r\x1b8", rows - 1)
}

/// Gives the whole screen back and clears the bottom row, cursor kept.
fn release(rows: u16) -> String {
    format!("\x1b7\x1b[r\x1b[{rows};1H\x1b[2K\x1b8")
}

/// Draws `text` (cut to `cols`) on the bottom row, cursor kept.
fn draw(rows: u16, cols: u16, text: &str) -> String {
    let text: String = text.chars().take(usize::from(cols) - 1).collect();
    format!("\x1b7\x1b[{rows};1H\x1b[2K{text}\x1b8")
}

impl StatusLine {
    /// Reserves the bottom row of the terminal, if standard error is one.
    pub(crate) fn new() -> StatusLine {
        let active = terminal_size().map(|(rows, cols)| {
            write_all(reserve(rows).as_bytes());
            Active {
                rows,
                cols,
                finished: false,
            }
        });
        StatusLine {
            state: Mutex::new(active),
            started: Instant::now(),
        }
    }

    /// Shows `text` after the elapsed time.
    pub(crate) fn set_message(&self, text: impl AsRef<str>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = state.as_mut().filter(|a| !a.finished) else {
            return;
        };
        let mut out = String::new();
        if let Some((rows, cols)) = terminal_size()
            && (rows, cols) != (a.rows, a.cols)
        {
            // Resized: move the reserved row to the new bottom.
            out.push_str(&release(a.rows));
            out.push_str(&reserve(rows));
            (a.rows, a.cols) = (rows, cols);
        }
        let line = format!(
            "recording {} · {}",
            elapsed(self.started.elapsed()),
            text.as_ref()
        );
        out.push_str(&draw(a.rows, a.cols, &line));
        write_all(out.as_bytes());
    }

    /// Runs `f`, which prints clrprof's own messages; they go where the program's output
    /// goes, above the status row.
    pub(crate) fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        let _state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }

    /// Clears the status row and gives the terminal back.
    pub(crate) fn finish_and_clear(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = state.as_mut().filter(|a| !a.finished) {
            write_all(release(a.rows).as_bytes());
            a.finished = true;
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.finish_and_clear();
    }
}

/// `00:01:05`.
fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences() {
        assert_eq!(reserve(24), "\n\x1b[1A\x1b7\x1b[1;23r\x1b8");
        assert_eq!(release(24), "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8");
        assert_eq!(draw(24, 6, "recording"), "\x1b7\x1b[24;1H\x1b[2Krecor\x1b8");
        assert_eq!(elapsed(Duration::from_secs(3725)), "01:02:05");
    }
}
