//! Text from a model or a tool, made safe for the place it goes: a terminal, a file, a JSON
//! document.
//!
//! An allow-list of bytes: printable characters, newline and tab pass; everything else —
//! C0 controls (ESC and BEL among them), DEL, C1 controls (U+0080–U+009F, which some terminals
//! obey as escape sequences) and bytes that are not UTF-8 — is shown as a visible escape
//! (`\u{1b}`, `\xff`), so an OSC 52 in a tool's name cannot set the operator's clipboard and an
//! OSC 0 cannot retitle the window. Every verb that prints, and every file harrow renders from
//! model text, goes through here.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Whether a character may be written as it is.
fn passes(c: char) -> bool {
    c == '\n' || c == '\t' || !c.is_control()
}

/// Whether `text` is printable ASCII, newlines and tabs only: what nearly every id, name and
/// count is, told from its bytes without decoding characters.
fn plain_ascii(text: &str) -> bool {
    let plain = |b: u8| (b' '..0x7f).contains(&b) || b == b'\n' || b == b'\t';
    // A whole chunk at a time without an early exit, which the compiler turns into vector
    // compares: this runs over every byte a verb prints.
    let chunks = text.as_bytes().chunks_exact(64);
    let tail = chunks.remainder();
    chunks.into_iter().all(|c| c.iter().fold(true, |ok, &b| ok & plain(b)))
        && tail.iter().all(|&b| plain(b))
}

/// `text` with every character that may not be written shown escaped.
pub fn text(text: &str) -> Cow<'_, str> {
    if plain_ascii(text) || text.chars().all(passes) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if passes(c) {
            out.push(c);
        } else {
            let _ = write!(out, "{}", c.escape_unicode());
        }
    }
    Cow::Owned(out)
}

/// One line: like [`text`], and a newline is shown escaped too.
pub fn line(text: &str) -> String {
    self::text(text).replace('\n', "\\n")
}

/// A writer that lets only allowed bytes through (see the module docs). Bytes that are not
/// UTF-8 are shown as `\xNN`; a character split across two writes is held until its end comes,
/// and a tail that never completes is written escaped when the writer is dropped.
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(inner: W) -> Writer<W> {
        Writer { inner, pending: Vec::new() }
    }

    fn emit(&mut self, bytes: &[u8], at_end: bool) -> io::Result<usize> {
        let mut rest = bytes;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    self.inner.write_all(text(valid).as_bytes())?;
                    return Ok(0);
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // The prefix is UTF-8 by the error's own account.
                    self.inner
                        .write_all(text(std::str::from_utf8(valid).unwrap_or("")).as_bytes())?;
                    match e.error_len() {
                        Some(n) => {
                            for b in &after[..n] {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            rest = &after[n..];
                        }
                        None if at_end => {
                            for b in after {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            return Ok(0);
                        }
                        None => return Ok(after.len()),
                    }
                }
            }
        }
    }
}

impl<W: Write> Drop for Writer<W> {
    fn drop(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() && self.emit(&pending, true).is_ok() {
            let _ = self.inner.flush();
        }
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            // Nearly every write: nothing held back, so the bytes are looked at where they are.
            let held = self.emit(buf, false)?;
            self.pending.extend_from_slice(&buf[buf.len() - held..]);
            return Ok(buf.len());
        }
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(buf);
        let held = self.emit(&bytes, false)?;
        self.pending = bytes[bytes.len() - held..].to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A JSON formatter that escapes DEL and the C1 controls too (`\u009b`), which `serde_json`
/// leaves raw: the document stays valid JSON and holds no byte a terminal would obey.
#[derive(Debug, Default)]
pub struct SafeJson;

impl serde_json::ser::Formatter for SafeJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // DEL and the C1 controls are the only characters escaped here: below DEL, no byte is.
        if fragment.bytes().all(|b| b < 0x7f) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if ('\u{7f}'..='\u{9f}').contains(&c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// `value` as one line of JSON with [`SafeJson`]'s escapes: what a script reading harrow's
/// output line by line gets, and may echo to a terminal.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, SafeJson))?;
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// `value` as indented JSON with [`SafeJson`]'s escapes.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    json_pretty_to(&mut out, value)?;
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// [`json_pretty`] straight into `out`, for a document too large to build in memory first.
pub fn json_pretty_to<W: Write, T: serde::Serialize + ?Sized>(
    out: W,
    value: &T,
) -> serde_json::Result<()> {
    let pretty = PrettySafe(serde_json::ser::PrettyFormatter::new());
    value.serialize(&mut serde_json::Serializer::with_formatter(out, pretty))
}

/// Indented output, with [`SafeJson`]'s string escapes.
struct PrettySafe<'a>(serde_json::ser::PrettyFormatter<'a>);

macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $name<W: ?Sized + Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            self.0.$name(writer $(, $arg)*)
        })*
    };
}

impl serde_json::ser::Formatter for PrettySafe<'_> {
    forward!(
        begin_array(),
        end_array(),
        begin_array_value(first: bool),
        end_array_value(),
        begin_object(),
        end_object(),
        begin_object_key(first: bool),
        begin_object_value(),
        end_object_value(),
    );

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        SafeJson.write_string_fragment(writer, fragment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "ok\x1b]52;c;cHduZWQ=\x07 \u{9b}31m \x7f tab\tnew\nline";

    fn forbidden(bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        bytes.iter().any(|b| *b == 0x1b || *b == 0x07 || *b == 0x7f)
            || text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c))
    }

    #[test]
    fn a_control_anywhere_in_long_plain_text_is_escaped() {
        // Long text is told plain a chunk at a time: the control sits in every place of a
        // chunk, at its edges and in the tail after the last whole chunk.
        for at in [0, 1, 62, 63, 64, 65, 100, 127, 128, 190, 199] {
            let mut long = "x".repeat(200);
            long.replace_range(at..=at, "\x1b");
            let t = text(&long);
            assert!(!forbidden(t.as_bytes()) && t.contains("\\u{1b}"), "ESC at {at}: {t:?}");
            let mut out = Vec::new();
            Writer::new(&mut out).write_all(long.as_bytes()).unwrap();
            assert!(!forbidden(&out), "ESC at {at} through the writer");
        }
    }

    #[test]
    fn text_shows_controls_escaped_and_keeps_tab_and_newline() {
        let t = text(HOSTILE);
        assert!(!forbidden(t.as_bytes()), "{t:?}");
        assert!(t.contains("\\u{1b}]52;c;") && t.contains("\\u{9b}") && t.contains("\\u{7f}"));
        assert!(t.contains("tab\tnew\nline"));
        assert!(matches!(self::text("plain"), Cow::Borrowed(_)));
        assert_eq!(line("a\nb"), "a\\nb");
    }

    #[test]
    fn the_writer_holds_a_split_character_and_escapes_bad_bytes() {
        let bytes = HOSTILE.as_bytes();
        for split in 0..bytes.len() {
            let mut out = Vec::new();
            let mut w = Writer::new(&mut out);
            w.write_all(&bytes[..split]).unwrap();
            w.write_all(&bytes[split..]).unwrap();
            drop(w);
            assert_eq!(String::from_utf8(out).unwrap(), text(HOSTILE), "split at {split}");
        }
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.write_all(b"a\xff\xc2").unwrap();
        drop(w);
        assert_eq!(out, b"a\\xff\\xc2", "a tail that never completes is written on drop");
    }

    #[test]
    fn json_escapes_c1_and_stays_json() {
        let value = serde_json::json!({"k": HOSTILE});
        let out = json_pretty(&value).unwrap();
        assert!(!forbidden(out.as_bytes()), "{out}");
        assert!(out.contains("\\u009b") && out.contains("\\u001b") && out.contains("\\u007f"));
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, value);
        // Each alone, in an otherwise plain ASCII string, as in a key or a short name.
        for (alone, escaped) in [("a\x7fb", "a\\u007fb"), ("a\u{85}b", "a\\u0085b")] {
            let out = json_pretty(&serde_json::json!([alone])).unwrap();
            assert!(!forbidden(out.as_bytes()) && out.contains(escaped), "{out}");
        }
    }
}
