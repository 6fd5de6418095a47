//! Readable names from mangled ones (see the crate docs).

use std::fmt::Write as _;

use crate::MAX_NAME;

/// A string that takes at most [`MAX_NAME`] bytes, then refuses more.
struct NameBuf {
    text: String,
    cut: bool,
}

impl std::fmt::Write for NameBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = MAX_NAME - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.cut = true;
        Err(std::fmt::Error)
    }
}

impl NameBuf {
    fn new() -> NameBuf {
        NameBuf {
            text: String::new(),
            cut: false,
        }
    }

    /// The text written, marked when cut; `None` if writing failed for another reason.
    fn finish(mut self, result: std::fmt::Result) -> Option<String> {
        match result {
            Ok(()) => Some(self.text),
            Err(_) if self.cut => {
                self.text.push('…');
                Some(self.text)
            }
            Err(_) => None,
        }
    }
}

/// A readable name for a symbol: demangled Rust or C++ (see the module docs), or the
/// name itself.
pub fn demangle(mangled: &[u8]) -> String {
    let raw = String::from_utf8_lossy(mangled);
    let demangled = std::panic::catch_unwind(|| demangle_str(&raw))
        .ok()
        .flatten();
    demangled.unwrap_or_else(|| {
        let mut buf = NameBuf::new();
        let result = buf.write_str(&raw);
        buf.finish(result).unwrap_or_default()
    })
}

fn demangle_str(raw: &str) -> Option<String> {
    if let Ok(rust) = rustc_demangle::try_demangle(raw) {
        let mut buf = NameBuf::new();
        let result = write!(buf, "{rust:#}");
        return buf.finish(result);
    }
    if !raw.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(raw.as_bytes()).ok()?;
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let mut buf = NameBuf::new();
    let result = symbol.structured_demangle(&mut buf, &options);
    buf.finish(result).filter(|s| !s.is_empty())
}
