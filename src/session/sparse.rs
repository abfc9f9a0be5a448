//! A JSON reader for one event line that decodes only the values a fold keeps.
//!
//! Most of a log's bytes are prompts, tool output and reasoning that no summary reads. A
//! general JSON decoder walks each of those bytes to validate and unescape them; this reader
//! jumps from quote to backslash to quote with `memchr`, so a skipped string costs about what
//! finding its end costs. It is strict about the structure a torn or spliced line breaks —
//! the envelope's and every nested object's keys, colons, commas and brackets, unterminated
//! strings, bad literals, trailing bytes — and decodes the strings it keeps fully (escapes,
//! UTF-8). A skipped string is read from quote to quote (a quote after an odd run of
//! backslashes is text), so a bad escape, a raw control character or a byte that is not UTF-8
//! in a prompt leaves the line readable: every line the full decoder accepts, this one accepts
//! with the same values.

use std::fmt;

/// Why a line is not an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseError {
    /// Byte offset in the line where reading stopped.
    pub at: usize,
    pub what: &'static str,
}

impl fmt::Display for SparseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for SparseError {}

pub type Result<T> = std::result::Result<T, SparseError>;

/// A kept value as read where it lies. A string is its text, checked and unescaped once by
/// the thread that read the line, in the text kept beside the marks
/// ([`super::fact::KeptValues`]): the fold borrows it there without looking at its bytes again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Token {
    /// The string's text: this range of the kept text.
    Str {
        start: u32,
        end: u32,
    },
    Int(i64),
    Big(u64),
    Float(f64),
    Bool(bool),
    Null,
    Nested,
    /// A value of any shape kept as it was written: its bytes in the line.
    Whole {
        start: u32,
        end: u32,
    },
}

impl Token {
    /// The text of a string token whose text went into `text`. `None` for any other token.
    pub fn text(self, text: &str) -> Option<&str> {
        let Token::Str { start, end } = self else { return None };
        text.get(start as usize..end as usize)
    }
}

/// A byte of ones, and each byte's high bit, across a word: the masks of the word-at-a-time
/// searches below.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// How many bytes of a string are looked at a word at a time before `memchr` takes over.
const SHORT: usize = 32;

/// The first `"` or `\\` in `bytes` (with `QUOTE_ONLY`, the first `"`), eight bytes at a time:
/// for the short runs between a string's start, its escapes and its end, cheaper than setting
/// up a vector search.
fn first_stop<const QUOTE_ONLY: bool>(bytes: &[u8]) -> Option<usize> {
    const QUOTES: u64 = ONES * b'"' as u64;
    const SLASHES: u64 = ONES * b'\\' as u64;
    // A byte of `x` is zero where the word held the byte looked for; the lowest flagged byte of
    // this classic test is always a true zero (a borrow only flags bytes above it).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let stops = |b: u8| b == b'"' || (!QUOTE_ONLY && b == b'\\');
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for (n, word) in words.enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        let hit = if QUOTE_ONLY { zero(w ^ QUOTES) } else { zero(w ^ QUOTES) | zero(w ^ SLASHES) };
        if hit != 0 {
            return Some(n * 8 + (hit.trailing_zeros() / 8) as usize);
        }
    }
    let done = bytes.len() - tail.len();
    tail.iter().position(|&b| stops(b)).map(|k| done + k)
}

/// [`first_stop`] over a string's first bytes, then `memchr` over the rest.
fn find_stop<const QUOTE_ONLY: bool>(rest: &[u8]) -> Option<usize> {
    match first_stop::<QUOTE_ONLY>(&rest[..rest.len().min(SHORT)]) {
        Some(k) => Some(k),
        None if rest.len() > SHORT => {
            let far = &rest[SHORT..];
            let k = if QUOTE_ONLY {
                memchr::memchr(b'"', far)
            } else {
                memchr::memchr2(b'"', b'\\', far)
            };
            k.map(|k| k + SHORT)
        }
        None => None,
    }
}

/// Whether every byte is printable ASCII (`0x20..=0x7f`): text as it is, needing neither the
/// UTF-8 check nor the control-character one. Eight bytes at a time; a borrow out of a byte
/// below `0x20` can only flag bytes above it, so a string that is not plain falls to the full
/// checks and never the other way round.
fn printable_ascii(bytes: &[u8]) -> bool {
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for word in words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        if (w.wrapping_sub(ONES * 0x20) | w) & HIGH != 0 {
            return false;
        }
    }
    tail.iter().all(|&b| (0x20..0x80).contains(&b))
}

/// The brackets a skipped value has open, innermost last: whether each is an object. The
/// first 64 live in a word, so the values of an event's payload are skipped without
/// allocating.
#[derive(Default)]
struct Brackets {
    depth: usize,
    bits: u64,
    deeper: Vec<bool>,
}

impl Brackets {
    fn push(&mut self, object: bool) {
        if self.depth < 64 {
            self.bits = (self.bits & !(1 << self.depth)) | (u64::from(object) << self.depth);
        } else {
            self.deeper.push(object);
        }
        self.depth += 1;
    }

    fn last(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d <= 64 => Some(self.bits >> (d - 1) & 1 == 1),
            _ => self.deeper.last().copied(),
        }
    }

    fn pop(&mut self) {
        if self.depth > 64 {
            self.deeper.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }
}

/// A position in one line.
#[derive(Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    fn fail<T>(&self, what: &'static str) -> Result<T> {
        Err(SparseError { at: self.at, what })
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte that is not white space, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8, what: &'static str) -> Result<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            self.fail(what)
        }
    }

    /// Where the next value starts, past any white space.
    pub fn value_start(&mut self) -> usize {
        self.skip_ws();
        self.at
    }

    /// How far reading has come.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// Nothing but white space is left.
    pub fn end(&mut self) -> Result<()> {
        if self.peek().is_some() { self.fail("trailing characters") } else { Ok(()) }
    }

    /// Reads the string that starts here (at its quote) without decoding it: its raw bytes
    /// between the quotes, and whether it holds an escape.
    fn raw_string(&mut self) -> Result<(&'a [u8], bool)> {
        self.eat(b'"', "expected a string")?;
        let start = self.at;
        let mut escaped = false;
        loop {
            // Keys and the values a fold keeps are short: a plain loop finds their end sooner
            // than setting up a vector search; long text goes to `memchr`.
            let Some(k) = find_stop::<false>(&self.bytes[self.at..]) else {
                self.at = self.bytes.len();
                return self.fail("unterminated string");
            };
            self.at += k;
            if self.bytes[self.at] == b'"' {
                let raw = &self.bytes[start..self.at];
                self.at += 1;
                return Ok((raw, escaped));
            }
            escaped = true;
            self.at += 1;
            match self.bytes.get(self.at) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 1,
                Some(b'u') => {
                    let hex = self.bytes.get(self.at + 1..self.at + 5);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return self.fail("bad \\u escape");
                    }
                    self.at += 5;
                }
                _ => return self.fail("bad escape"),
            }
        }
    }

    /// Skips the string that starts here without looking at its escapes: from quote to quote,
    /// a quote after an odd run of backslashes being part of the text. A string no fold reads
    /// costs about what finding its end costs.
    fn skip_string(&mut self) -> Result<()> {
        self.eat(b'"', "expected a string")?;
        let start = self.at;
        loop {
            let Some(k) = find_stop::<true>(&self.bytes[self.at..]) else {
                self.at = self.bytes.len();
                return self.fail("unterminated string");
            };
            self.at += k;
            let slashes =
                self.bytes[start..self.at].iter().rev().take_while(|&&b| b == b'\\').count();
            self.at += 1;
            if slashes % 2 == 0 {
                return Ok(());
            }
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            self.fail("bad literal")
        }
    }

    /// The bytes of the number that starts here, checked against JSON's grammar.
    fn number_token(&mut self) -> Result<(&'a str, bool)> {
        let start = self.at;
        let b = self.bytes;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        let int_start = i;
        let int_digits = digits(&mut i);
        if int_digits == 0 || (int_digits > 1 && b[int_start] == b'0') {
            self.at = i;
            return self.fail("bad number");
        }
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            integer = false;
            if digits(&mut i) == 0 {
                self.at = i;
                return self.fail("bad number");
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            integer = false;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                self.at = i;
                return self.fail("bad number");
            }
        }
        self.at = i;
        // Only ASCII digits, signs, dots and exponents were taken.
        let text = std::str::from_utf8(&b[start..i]).unwrap_or_default();
        Ok((text, integer))
    }

    fn number(&mut self) -> Result<Token> {
        if let Some(token) = self.small_integer() {
            return Ok(token);
        }
        let (text, integer) = self.number_token()?;
        if integer {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Token::Int(v));
            }
            if let Ok(v) = text.parse::<u64>() {
                return Ok(Token::Big(v));
            }
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Token::Float(v)),
            _ => self.fail("number out of range"),
        }
    }

    /// The integer that starts here, summed as its digits are read, when it is one of at most
    /// 18 digits (so it fits) in JSON's form and no fraction or exponent follows: the counts
    /// and numbers an event carries. Anything else is left for [`Cursor::number_token`]
    /// (nothing consumed).
    fn small_integer(&mut self) -> Option<Token> {
        let b = self.bytes;
        let negative = b.get(self.at) == Some(&b'-');
        let first = self.at + usize::from(negative);
        let mut i = first;
        let mut value: i64 = 0;
        while let Some(&d) = b.get(i).filter(|d| d.is_ascii_digit()) {
            if i - first == 18 {
                return None;
            }
            value = value * 10 + i64::from(d - b'0');
            i += 1;
        }
        let digits = i - first;
        let leading_zero = digits > 1 && b[first] == b'0';
        if digits == 0 || leading_zero || matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at = i;
        Some(Token::Int(if negative { -value } else { value }))
    }

    /// Reads the value that starts here and checks it as the full decoder would; an object or
    /// array is skipped whole. A string's text is appended to `text`, unescaped and checked as
    /// UTF-8.
    pub fn token(&mut self, text: &mut Vec<u8>) -> Result<Token> {
        match self.peek() {
            Some(b'"') => {
                let begin = self.at;
                let (raw, escaped) = self.raw_string()?;
                let start = text.len();
                let valid = if escaped {
                    serde_json::from_slice::<String>(&self.bytes[begin..self.at])
                        .map(|s| text.extend_from_slice(s.as_bytes()))
                        .is_ok()
                } else {
                    // Plain ASCII needs neither check; anything else gets both.
                    let text_as_is = printable_ascii(raw)
                        || (std::str::from_utf8(raw).is_ok() && !raw.iter().any(|&b| b < 0x20));
                    if text_as_is {
                        text.extend_from_slice(raw);
                    }
                    text_as_is
                };
                if !valid {
                    return self.fail("a string that is not valid text");
                }
                let at = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
                Ok(Token::Str { start: at(start), end: at(text.len()) })
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true").map(|()| Token::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| Token::Bool(false)),
            Some(b'n') => self.literal(b"null").map(|()| Token::Null),
            Some(b'{' | b'[') => self.skip_value().map(|()| Token::Nested),
            Some(_) => self.fail("expected a value"),
            None => self.fail("unexpected end of line"),
        }
    }

    /// Skips the value that starts here, however deeply nested, checking its structure.
    pub fn skip_value(&mut self) -> Result<()> {
        // What each open bracket still expects: `true` for an object (keys), `false` for an
        // array. Depth is bounded by the line's length, as in any recursive reader, but the
        // stack is a word's bits, then the heap.
        let mut open = Brackets::default();
        loop {
            // A value.
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                    } else {
                        open.push(true);
                        self.skip_string()?;
                        self.eat(b':', "expected ':'")?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    if self.peek() == Some(b']') {
                        self.at += 1;
                    } else {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'"') => self.skip_string()?,
                Some(b'-' | b'0'..=b'9') => {
                    self.number_token()?;
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(_) => return self.fail("expected a value"),
                None => return self.fail("unexpected end of line"),
            }
            // After a value: the next one, or the end of as many brackets as close here.
            loop {
                let Some(object) = open.last() else { return Ok(()) };
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if object {
                            self.skip_string()?;
                            self.eat(b':', "expected ':'")?;
                        }
                        break;
                    }
                    Some(b'}') if object => {
                        self.at += 1;
                        open.pop();
                    }
                    Some(b']') if !object => {
                        self.at += 1;
                        open.pop();
                    }
                    _ => return self.fail("expected ',' or a closing bracket"),
                }
            }
        }
    }

    /// Reads the object that starts here, calling `each` with every key and the cursor at its
    /// value; `each` must read or skip the value.
    /// A key is given as its bytes, unescaped; one that is not text matches no name.
    pub fn object(
        &mut self,
        mut each: impl FnMut(&[u8], &mut Cursor<'a>) -> Result<()>,
    ) -> Result<()> {
        self.eat(b'{', "expected an object")?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let begin = self.value_start();
            let (raw, escaped) = self.raw_string()?;
            let end = self.at;
            self.eat(b':', "expected ':'")?;
            if escaped {
                let key =
                    serde_json::from_slice::<String>(&self.bytes[begin..end]).unwrap_or_default();
                each(key.as_bytes(), self)?;
            } else {
                each(raw, self)?;
            }
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.fail("expected ',' or '}'"),
            }
        }
    }

    /// The value that starts here, skipped and kept whole.
    pub fn whole(&mut self) -> Result<Token> {
        self.skip_ws();
        let start = self.at;
        self.skip_value()?;
        let at = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        Ok(Token::Whole { start: at(start), end: at(self.at) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(text: &str) -> bool {
        let mut c = Cursor::new(text.as_bytes());
        c.skip_value().and_then(|()| c.end()).is_ok()
    }

    #[test]
    fn skipping_checks_the_structure_a_torn_line_breaks() {
        for good in [
            r#"{"a":[1,-2.5e3,{"b":"c\"\\\u00e9"}],"d":{},"e":[],"f":true,"g":null}"#,
            " [ 1 , 2 ] ",
            r#""just a string""#,
            "0",
        ] {
            assert!(skips(good), "{good}");
        }
        for bad in [
            r#"{"a":"unterminated"#,
            r#"{"a":1"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{"a":1]"#,
            "[1,2",
            r#"{"a":tru}"#,
            r#"{"a":01}"#,
            "{1:2}",
            r#"{"a":1}{"b":2}"#,
            "",
            "-",
        ] {
            assert!(!skips(bad), "{bad}");
        }
    }

    #[test]
    fn values_nested_deeper_than_a_word_of_brackets_are_skipped_and_checked() {
        for depth in [63usize, 64, 65, 130] {
            // Objects and arrays alternating, so a bracket taken for the wrong kind shows.
            let objects: Vec<bool> = (0..depth).map(|level| level % 2 == 0).collect();
            let open: String = objects.iter().map(|&o| if o { "{\"k\":" } else { "[" }).collect();
            let closers: Vec<char> =
                objects.iter().rev().map(|&o| if o { '}' } else { ']' }).collect();
            let line = |closers: &[char]| format!("{open}1{}", closers.iter().collect::<String>());
            assert!(skips(&line(&closers)), "depth {depth}");
            for level in [0, 63, 64, depth / 2, depth - 1].into_iter().filter(|l| *l < depth) {
                let mut wrong = closers.clone();
                let at = depth - 1 - level;
                wrong[at] = if wrong[at] == '}' { ']' } else { '}' };
                assert!(
                    !skips(&line(&wrong)),
                    "depth {depth}: level {level} closed by the other kind"
                );
            }
            assert!(!skips(&line(&closers[1..])), "depth {depth}: one bracket left open");
        }
    }

    #[test]
    fn the_word_search_finds_what_a_plain_search_finds() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 0..160 {
            for _ in 0..50 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        [b'a', b'"', b'\\', 0x80, 0xff, b'!', b']', b'#'][(seed % 8) as usize]
                    })
                    .collect();
                let plain = bytes.iter().position(|&b| b == b'"' || b == b'\\');
                assert_eq!(first_stop::<false>(&bytes), plain, "{bytes:?}");
                assert_eq!(find_stop::<false>(&bytes), plain, "{bytes:?}");
                let quote = bytes.iter().position(|&b| b == b'"');
                assert_eq!(first_stop::<true>(&bytes), quote, "{bytes:?}");
                assert_eq!(find_stop::<true>(&bytes), quote, "{bytes:?}");
            }
        }
    }

    #[test]
    fn kept_values_read_as_the_full_decoder_reads_them() {
        fn read(t: &str) -> Result<Token> {
            Cursor::new(t.as_bytes()).token(&mut Vec::new())
        }
        fn text(t: &str) -> Option<String> {
            let mut kept = Vec::new();
            let token = Cursor::new(t.as_bytes()).token(&mut kept).ok()?;
            token.text(std::str::from_utf8(&kept).ok()?).map(str::to_owned)
        }
        assert_eq!(text("\"plain\"").as_deref(), Some("plain"));
        assert_eq!(text(r#""a\"b\u00e9\ud83d\ude00""#).as_deref(), Some("a\"bé😀"));
        assert_eq!(text("12"), None, "a number has no text");
        assert_eq!(read("-12"), Ok(Token::Int(-12)));
        assert_eq!(read("18446744073709551615"), Ok(Token::Big(u64::MAX)));
        assert_eq!(read("18446744073709551616"), Ok(Token::Float(18_446_744_073_709_551_616.0)));
        assert_eq!(read("2.5E-1"), Ok(Token::Float(0.25)));
        assert_eq!(read("{\"x\":[1]}"), Ok(Token::Nested));
        assert_eq!(read("null"), Ok(Token::Null));
        assert!(
            Cursor::new(b"\"\xff\"").token(&mut Vec::new()).is_err(),
            "a kept string must be text"
        );
        assert!(read(r#""\x""#).is_err(), "a kept string's escapes are checked");
        assert!(read(r#""\u12""#).is_err());
        assert!(skips(r#"{"skipped":"\x \u12 \\\" still in"}"#), "a skipped one's are not");
        assert!(read("1e999").is_err(), "as the full decoder refuses it");
        // Integers read digit by digit as far as 18 digits, and by the text past that.
        for (t, want) in [
            ("0", Token::Int(0)),
            ("-0", Token::Int(0)),
            ("999999999999999999", Token::Int(999_999_999_999_999_999)),
            ("-999999999999999999", Token::Int(-999_999_999_999_999_999)),
            ("9223372036854775807", Token::Int(i64::MAX)),
            ("-9223372036854775808", Token::Int(i64::MIN)),
            ("9223372036854775808", Token::Big(9_223_372_036_854_775_808)),
            ("12.0", Token::Float(12.0)),
            ("12e1", Token::Float(120.0)),
        ] {
            assert_eq!(read(t), Ok(want), "{t}");
        }
        for bad in ["01", "-", "-01", "1.", "1e", "--1"] {
            assert!(read(bad).is_err(), "{bad}");
        }
        // Text with a control character, a byte that is not UTF-8 or neither, at every place
        // of the eight-byte words the plain-ASCII check reads.
        for at in 0..20 {
            for odd in [&[0x01u8][..], &[0x1f], &[0x7f], &[0xc3, 0xa9], &[0xff], &[0x80]] {
                let mut raw = vec![b'"'];
                raw.extend(std::iter::repeat_n(b'a', at));
                raw.extend_from_slice(odd);
                raw.extend(std::iter::repeat_n(b'b', 20 - at));
                raw.push(b'"');
                let sparse = Cursor::new(&raw).token(&mut Vec::new()).is_ok();
                let full = serde_json::from_slice::<String>(&raw).is_ok();
                assert_eq!(sparse, full, "{raw:?}");
            }
        }
    }
}
