//! Fitting the text report into a terminal's width: function names shortened the way a
//! reader can still recognise them, long values cut, prose wrapped, and any other line cut at
//! the width (as `ps` cuts its lines on a terminal).
//!
//! A name is shortened in steps, each taken only while the name is still too long, so that
//! what a reader needs most goes last: the namespaces inside the parameters and generic
//! arguments (`System.Collections.Generic.List<double>` is `List<double>`), the namespace of
//! the declaring type (`Shop.Pricing.Tax` is `Pricing.Tax`), generic arguments nested inside
//! others, the parameters (`(…)`), the generic arguments (`<…>`), the declaring type; the
//! method's name is cut last, at its end.

use std::borrow::Cow;
use std::io::{self, Write};

/// The ellipsis that marks what was left out.
pub const ELLIPSIS: char = '…';

/// Width in columns of `s` (one per character: the report's text is ASCII but for `…`).
pub fn width(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `w` columns, its end replaced by `…` if it was longer.
pub fn cut_end(s: &str, w: usize) -> Cow<'_, str> {
    if width(s) <= w {
        return Cow::Borrowed(s);
    }
    if w == 0 {
        return Cow::Borrowed("");
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push(ELLIPSIS);
    Cow::Owned(out)
}

/// `s` cut to `w` columns by leaving out its middle (for paths and file names, whose both
/// ends say the most).
pub fn cut_middle(s: &str, w: usize) -> Cow<'_, str> {
    let n = width(s);
    if n <= w {
        return Cow::Borrowed(s);
    }
    if w < 3 {
        return cut_end(s, w);
    }
    let tail = (w - 1) / 2;
    let head = w - 1 - tail;
    let mut out: String = s.chars().take(head).collect();
    out.push(ELLIPSIS);
    out.extend(s.chars().skip(n - tail));
    Cow::Owned(out)
}

/// A module's file name in at most `w` columns: without its `.dll`/`.exe` extension if that
/// is enough, else cut in the middle.
pub fn shorten_module(module: &str, w: usize) -> Cow<'_, str> {
    if width(module) <= w {
        return Cow::Borrowed(module);
    }
    let stem = module
        .strip_suffix(".dll")
        .or_else(|| module.strip_suffix(".exe"))
        .unwrap_or(module);
    Cow::Owned(cut_middle(stem, w).into_owned())
}

/// `text` wrapped at `w` columns on spaces, the first line after `first` and the others after
/// `rest` (a hanging indent). A word longer than a line is kept whole.
pub fn wrap(text: &str, w: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let needed = width(&line) + usize::from(!empty) + width(word);
        if !empty && needed > w {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

/// Writes `text` wrapped at `width` (see [`wrap`]), or as one line when `width` is `None`.
pub fn write_wrapped(
    out: &mut dyn Write,
    width: Option<usize>,
    first: &str,
    rest: &str,
    text: &str,
) -> io::Result<()> {
    match width {
        None => writeln!(out, "{first}{text}"),
        Some(w) => {
            for line in wrap(text, w, first, rest) {
                writeln!(out, "{line}")?;
            }
            Ok(())
        }
    }
}

/// A piece of a name: text, or a bracketed group (parameters, generic arguments, `[...]`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group {
        open: char,
        close: char,
        /// False when the name ends inside the group.
        closed: bool,
        pieces: Vec<Piece>,
    },
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '`'
}

/// An open group of [`parse`]: its opening and closing characters and its pieces so far.
type OpenGroup = (char, char, Vec<Piece>);

/// Ends the innermost open group (with the text before its end) and adds it to the one
/// around it; `closed`: its closing character was found.
fn close_group(stack: &mut Vec<OpenGroup>, text: &mut String, closed: bool) {
    let (open, close, mut pieces) = stack.pop().expect("not empty");
    if !text.is_empty() {
        pieces.push(Piece::Text(std::mem::take(text)));
    }
    stack
        .last_mut()
        .expect("the stack keeps its root")
        .2
        .push(Piece::Group {
            open,
            close,
            closed,
            pieces,
        });
}

/// Splits a name into text and bracketed groups. `<` opens generic arguments only right
/// after an identifier (`List<int>`), so that compiler-generated names (`<Main>b__0_0`,
/// `<>c`) stay text.
fn parse(name: &str) -> Vec<Piece> {
    let mut stack: Vec<OpenGroup> = vec![(' ', ' ', Vec::new())];
    let mut text = String::new();
    let mut prev = ' ';
    let flush = |text: &mut String, pieces: &mut Vec<Piece>| {
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(text)));
        }
    };
    for c in name.chars() {
        let open = match c {
            '(' => Some(')'),
            '[' => Some(']'),
            '<' if is_ident(prev) => Some('>'),
            _ => None,
        };
        if let Some(close) = open {
            let top = stack.last_mut().expect("the stack keeps its root");
            flush(&mut text, &mut top.2);
            stack.push((c, close, Vec::new()));
        } else if stack.len() > 1 && c == stack.last().expect("not empty").1 {
            close_group(&mut stack, &mut text, true);
        } else {
            text.push(c);
        }
        prev = c;
    }
    while stack.len() > 1 {
        close_group(&mut stack, &mut text, false);
    }
    let mut root = stack.pop().expect("the root").2;
    flush(&mut text, &mut root);
    root
}

fn render(pieces: &[Piece], out: &mut String) {
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Group {
                open,
                close,
                closed,
                pieces,
            } => {
                out.push(*open);
                render(pieces, out);
                if *closed {
                    out.push(*close);
                }
            }
        }
    }
}

fn rendered(pieces: &[Piece]) -> String {
    let mut s = String::new();
    render(pieces, &mut s);
    s
}

/// `System.Collections.Generic.List` is `List`, `WKS::gc_heap` is `gc_heap`: every dotted
/// or `::` path of a text keeps its last part.
fn last_parts(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let last = word.rsplit(['.', ':']).next().unwrap_or("");
        // A path that ends in a separator (`a.`) is kept as it is.
        out.push_str(if last.is_empty() { word } else { last });
        word.clear();
    };
    for c in text.chars() {
        if is_ident(c) || c == '.' || c == ':' || c == '+' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Step: the namespaces of the types inside every group, and of a return type (`-> T`).
fn strip_inner_namespaces(pieces: &mut [Piece], depth: usize) {
    for p in pieces.iter_mut() {
        match p {
            Piece::Text(t) if depth > 0 => *t = last_parts(t),
            Piece::Text(t) => {
                if let Some(at) = t.find(" -> ") {
                    let (head, ret) = t.split_at(at + 4);
                    *t = format!("{head}{}", last_parts(ret));
                }
            }
            Piece::Group { pieces, open, .. } => {
                // `[stub: precode]`, `[PluginA.dll]`: not types.
                if *open != '[' {
                    strip_inner_namespaces(pieces, depth + 1);
                }
            }
        }
    }
}

/// Step: every group at `depth` or deeper becomes `…`.
fn elide_groups_from(pieces: &mut [Piece], depth: usize, at: usize, open: char) {
    for p in pieces.iter_mut() {
        if let Piece::Group {
            pieces: inner,
            open: o,
            ..
        } = p
        {
            if depth >= at && *o == open && !is_ellipsis(inner) {
                *inner = vec![Piece::Text(ELLIPSIS.to_string())];
            } else {
                elide_groups_from(inner, depth + 1, at, open);
            }
        }
    }
}

fn is_ellipsis(pieces: &[Piece]) -> bool {
    pieces.is_empty() || matches!(pieces, [Piece::Text(t)] if t == "…")
}

/// Step: the method's parameters (the last top-level `(...)`, when not empty) become `(…)`.
fn elide_parameters(pieces: &mut [Piece]) {
    if let Some(Piece::Group { pieces: inner, .. }) = pieces
        .iter_mut()
        .rev()
        .find(|p| matches!(p, Piece::Group { open: '(', .. }))
        && !is_ellipsis(inner)
    {
        *inner = vec![Piece::Text(ELLIPSIS.to_string())];
    }
}

/// Where the top-level separators (`.`, `::`) of a name are: the positions, in pieces and
/// characters, after which a part begins.
fn top_level_parts(pieces: &[Piece]) -> Vec<(usize, usize)> {
    let mut starts = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let Piece::Text(t) = p else { continue };
        // Only the name before the parameters: not a return type after them.
        let end = t.find(" -> ").unwrap_or(t.len());
        let chars: Vec<(usize, char)> = t[..end].char_indices().collect();
        let mut k = 0;
        while k < chars.len() {
            let (at, c) = chars[k];
            let next = chars.get(k + 1).map(|&(_, c)| c);
            if c == '.' && next == Some('.') {
                // `Type..ctor`: the part is `.ctor`.
                starts.push((i, at + 1));
                k += 1;
            } else if c == '.' && at + 1 < t.len() {
                starts.push((i, at + 1));
            } else if c == ':' && next == Some(':') {
                starts.push((i, at + 2));
                k += 1;
            }
            k += 1;
        }
    }
    starts
}

/// Step: only the last `keep` top-level parts of the name (its namespace or type left out).
fn keep_last_parts(pieces: &mut Vec<Piece>, keep: usize) {
    // Parts begin after the parameter-less head of the name: the last group `(...)` and what
    // follows are never a separator's place.
    let params = pieces
        .iter()
        .rposition(|p| matches!(p, Piece::Group { open: '(', .. }))
        .unwrap_or(pieces.len());
    let starts: Vec<(usize, usize)> = top_level_parts(&pieces[..params]);
    if starts.len() < keep {
        return;
    }
    let (piece, at) = starts[starts.len() - keep];
    let Piece::Text(t) = &mut pieces[piece] else {
        return;
    };
    *t = t[at..].to_string();
    pieces.drain(..piece);
}

/// One shortening step of a parsed name.
type Step = dyn Fn(&mut Vec<Piece>);

/// `name` in at most `w` columns, shortened as the module documentation says.
pub fn shorten_name(name: &str, w: usize) -> Cow<'_, str> {
    if width(name) <= w {
        return Cow::Borrowed(name);
    }
    // Markers (`[CPU after the last sample: ...]`, `[stub: precode]`) are sentences: cut.
    if name.starts_with('[') {
        return cut_end(name, w);
    }
    let mut pieces = parse(name);
    let steps: [&Step; 6] = [
        &|p| strip_inner_namespaces(p, 0),
        &|p| keep_last_parts(p, 2),
        &|p| elide_groups_from(p, 0, 1, '<'),
        &|p| elide_parameters(p),
        &|p| elide_groups_from(p, 0, 0, '<'),
        &|p| keep_last_parts(p, 1),
    ];
    for step in steps {
        step(&mut pieces);
        let s = rendered(&pieces);
        if width(&s) <= w {
            return Cow::Owned(s);
        }
    }
    Cow::Owned(cut_end(&rendered(&pieces), w).into_owned())
}

/// A writer that cuts every line longer than `width` columns, marking the cut with `…`:
/// the last resort that keeps a text report inside a terminal (the tables shorten their
/// names themselves first).
pub struct FitLines<W: Write> {
    inner: W,
    width: usize,
    line: Vec<u8>,
}

impl<W: Write> FitLines<W> {
    /// Lines of `inner` cut at `width` columns.
    pub fn new(inner: W, width: usize) -> Self {
        FitLines {
            inner,
            width,
            line: Vec::new(),
        }
    }

    fn write_line(&mut self, end: bool) -> io::Result<()> {
        let text = String::from_utf8_lossy(&self.line);
        let cut = cut_end(&text, self.width);
        self.inner.write_all(cut.as_bytes())?;
        if end {
            self.inner.write_all(b"\n")?;
        }
        self.line.clear();
        Ok(())
    }

    /// The writer inside, after the last line was written.
    pub fn into_inner(mut self) -> io::Result<W> {
        if !self.line.is_empty() {
            self.write_line(false)?;
        }
        Ok(self.inner)
    }
}

impl<W: Write> Write for FitLines<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for chunk in buf.split_inclusive(|&b| b == b'\n') {
            if let Some(text) = chunk.strip_suffix(b"\n") {
                self.line.extend_from_slice(text);
                self.write_line(true)?;
            } else {
                self.line.extend_from_slice(chunk);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INVENTORY: &str = "Shop.Inventory<System.Collections.Generic.KeyValuePair<__Canon, __Canon>>.Add(string, System.Collections.Generic.KeyValuePair<__Canon, __Canon>)";

    #[test]
    fn names_lose_namespaces_then_nested_arguments_then_parameters_then_arguments() {
        let steps = [
            (200, INVENTORY),
            (
                90,
                "Shop.Inventory<KeyValuePair<__Canon, __Canon>>.Add(string, KeyValuePair<__Canon, __Canon>)",
            ),
            (
                85,
                "Inventory<KeyValuePair<__Canon, __Canon>>.Add(string, KeyValuePair<__Canon, __Canon>)",
            ),
            (
                60,
                "Inventory<KeyValuePair<…>>.Add(string, KeyValuePair<…>)",
            ),
            (40, "Inventory<KeyValuePair<…>>.Add(…)"),
            (25, "Inventory<…>.Add(…)"),
            (15, "Add(…)"),
            (4, "Add…"),
        ];
        for (w, shown) in steps {
            let s = shorten_name(INVENTORY, w);
            assert_eq!(s, shown, "at {w}");
            assert!(width(&s) <= w, "{s} at {w}");
        }
    }

    #[test]
    fn compiler_generated_names_runtime_names_and_markers() {
        assert_eq!(
            shorten_name("System.Console.<>c.<get_Out>b__26_0()", 30),
            "<>c.<get_Out>b__26_0()"
        );
        assert_eq!(
            shorten_name("Shop.Program.<Main>m__0()", 20),
            "Program.<Main>m__0()"
        );
        assert_eq!(
            shorten_name("WKS::gc_heap::plan_phase", 20),
            "gc_heap::plan_phase"
        );
        assert_eq!(
            shorten_name(
                "Module::FixupDelayListAux<Module*, int (Module::*)(CORCOMPILE_IMPORT_SECTION*, unsigned long, unsigned long*)>",
                40
            ),
            "Module::FixupDelayListAux<…>"
        );
        assert_eq!(
            shorten_name(
                "System.Math.Round(double, int, System.MidpointRounding)",
                45
            ),
            "Math.Round(double, int, MidpointRounding)"
        );
        assert_eq!(
            shorten_name("Money.op_Implicit(Shop.Money) -> System.Int32", 30),
            "Money.op_Implicit(…) -> Int32"
        );
        assert_eq!(
            shorten_name("Shop.Inventory<int>..ctor(int)", 8),
            ".ctor(…)"
        );
        assert_eq!(
            shorten_name("[CPU after the last sample: no sample saw it]", 20),
            "[CPU after the last…"
        );
        // Unbalanced brackets are kept as they are, or cut.
        assert_eq!(shorten_name("a(b", 10), "a(b");
        assert!(width(&shorten_name("std::operator<<(a, b) very long", 12)) <= 12);
    }

    #[test]
    fn cuts_wraps_and_modules() {
        assert_eq!(cut_end("abcdef", 4), "abc…");
        assert_eq!(cut_middle("/usr/share/dotnet/x.dll", 11), "/usr/…x.dll");
        assert_eq!(
            shorten_module("System.Private.CoreLib.dll", 22),
            "System.Private.CoreLib"
        );
        assert_eq!(
            shorten_module("System.Private.CoreLib.dll", 12),
            "System…reLib"
        );
        assert_eq!(width(&shorten_module("System.Private.CoreLib.dll", 12)), 12);
        assert_eq!(
            wrap("one two three four", 9, "", "  "),
            ["one two", "  three", "  four"]
        );
        let mut out = FitLines::new(Vec::new(), 5);
        out.write_all(b"abcdefgh\nab\nxy").unwrap();
        let out = out.into_inner().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "abcd…\nab\nxy");
    }
}
