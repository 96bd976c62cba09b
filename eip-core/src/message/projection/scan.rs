//! The fast reader of a projection: one pass over the bytes that builds only what the demand
//! names and checks the rest without building it.
//!
//! It answers `Some` only for a payload serde_json accepts, with the value the checked reader
//! builds; for anything else, and for the few things it leaves to serde_json to judge, it answers
//! `None` and the checked reader reads the payload again (see [the module](super)). What it
//! checks of a part it skips:
//!
//! - strings: the closing quote, no control character (below U+0020) unescaped, only the escapes
//!   JSON has, valid UTF-8; a `\u` escape of a surrogate gives up (serde_json pairs them, or
//!   refuses a lone one);
//! - numbers: JSON's grammar (no leading zero, a digit after the point and in the exponent),
//!   and it gives up on any number long enough, or with an exponent large enough, to come near
//!   the ends of `f64` (serde_json refuses one out of range);
//! - literals spelled in full, objects with string keys, `:` and `,` where they belong, no
//!   trailing comma, only JSON's four whitespace characters, nothing after the value;
//! - nesting up to [`MAX_DEPTH`], well below serde_json's limit of 128, so a part built on its
//!   own by serde_json can never meet a limit the whole payload would not.
//!
//! A demanded whole part is handed to serde_json as its own slice once the pass has found its
//! end: serde_json builds it exactly as in a full parse, because JSON values do not depend on
//! what surrounds them. Strings without escapes, and the three literals, are built here.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::super::demand::{Demand, Node, Parts};

/// The deepest nesting read here; deeper payloads go to the checked reader.
const MAX_DEPTH: u32 = 100;

/// Numbers longer than this are left to serde_json, as are exponents of three digits or more:
/// what is within stays below 1e300 and above 1e-300, far from `f64`'s limits (about 1.8e308,
/// and 5e-324 below which serde_json reads zero).
const MAX_NUMBER_LENGTH: usize = 200;

/// `payload` projected on `demand`, or `None` when the checked reader must decide.
pub(super) fn project(payload: &[u8], demand: &Demand) -> Option<Value> {
    let mut scan = Scan {
        bytes: payload,
        pos: 0,
        depth: 0,
    };
    let value = scan.value(demand.node())?;
    scan.skip_whitespace();
    (scan.pos == payload.len()).then_some(value)
}

/// A position in the payload and the nesting there.
struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: u32,
}

/// What a byte inside a string asks of the string loop.
#[derive(Clone, Copy, PartialEq)]
enum InString {
    /// Nothing: an ASCII character other than `"` and `\`.
    Plain,
    Quote,
    Backslash,
    /// A control character, refused unescaped.
    Control,
    /// The first or a later byte of a multi-byte UTF-8 character.
    NonAscii,
}

/// [`InString`] of every byte, looked up once per byte.
const IN_STRING: [InString; 256] = {
    let mut table = [InString::Plain; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b {
            0x00..=0x1f => InString::Control,
            0x22 => InString::Quote,
            0x5c => InString::Backslash,
            0x80..=0xff => InString::NonAscii,
            _ => InString::Plain,
        };
        b += 1;
    }
    table
};

/// A string as found in the payload.
struct Str<'a> {
    /// The bytes between the quotes, escapes as written.
    raw: &'a [u8],
    /// The bytes from the opening quote to the closing one.
    quoted: &'a [u8],
    escaped: bool,
}

impl<'a> Str<'a> {
    /// What `parts` reads of the field this string names, with the name to keep it under; the
    /// outer `None` when the name can not be read (left to serde_json).
    fn field_of<'p>(&self, parts: &'p Parts) -> Option<Option<(String, &'p Node)>> {
        if self.escaped {
            let name = self.text()?;
            return Some(parts.field(&name).map(|node| (name.into_owned(), node)));
        }
        Some(match parts.field_by_bytes(self.raw) {
            Some((Some(name), node)) => Some((name.to_owned(), node)),
            Some((None, node)) => Some((std::str::from_utf8(self.raw).ok()?.to_owned(), node)),
            None => None,
        })
    }

    /// The string's text: borrowed when it has no escape, else decoded by serde_json.
    fn text(&self) -> Option<Cow<'a, str>> {
        if self.escaped {
            return serde_json::from_slice::<String>(self.quoted)
                .ok()
                .map(Cow::Owned);
        }
        std::str::from_utf8(self.raw).ok().map(Cow::Borrowed)
    }
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Takes `byte`, after whitespace, or gives up.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// The value at the position, built as far as `node` demands.
    fn value(&mut self, node: &Node) -> Option<Value> {
        self.skip_whitespace();
        match node {
            Node::Whole => self.whole(),
            Node::Parts(parts) => match self.peek()? {
                b'{' => self.object(parts),
                b'[' => self.array(parts),
                _ => {
                    // Nothing selects in a scalar: the checked reader reads it as null too.
                    self.skip_value()?;
                    Some(Value::Null)
                }
            },
        }
    }

    /// The value at the position, built whole.
    fn whole(&mut self) -> Option<Value> {
        let start = self.pos;
        match self.peek()? {
            b'"' => {
                let string = self.string()?;
                Some(Value::String(string.text()?.into_owned()))
            }
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            _ => {
                self.skip_value()?;
                serde_json::from_slice(&self.bytes[start..self.pos]).ok()
            }
        }
    }

    /// An object, keeping the fields `parts` names (a key given twice: its last value).
    fn object(&mut self, parts: &Parts) -> Option<Value> {
        let mut fields = Map::new();
        self.enter()?;
        if self.closes(b'}') {
            self.depth -= 1;
            return Some(Value::Object(fields));
        }
        loop {
            self.skip_whitespace();
            let key = self.string()?;
            self.expect(b':')?;
            match key.field_of(parts)? {
                Some((name, node)) => {
                    let value = self.value(node)?;
                    fields.insert(name, value);
                }
                None => self.skip_value()?,
            }
            if !self.next_or_close(b'}')? {
                break;
            }
        }
        self.depth -= 1;
        Some(Value::Object(fields))
    }

    /// An array, keeping the items `parts` names at their places.
    fn array(&mut self, parts: &Parts) -> Option<Value> {
        let mut items = Vec::new();
        self.enter()?;
        if self.closes(b']') {
            self.depth -= 1;
            return Some(Value::Array(items));
        }
        let kept = parts.kept_items();
        let mut index = 0;
        loop {
            match parts.item(index) {
                Some(node) => items.push(self.value(node)?),
                None => {
                    self.skip_value()?;
                    if index < kept {
                        items.push(Value::Null);
                    }
                }
            }
            index += 1;
            if !self.next_or_close(b']')? {
                break;
            }
        }
        self.depth -= 1;
        Some(Value::Array(items))
    }

    /// Steps into the container at the position (past its bracket), counting the nesting.
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.pos += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Whether the container is empty: its closing bracket follows at once (and is taken).
    fn closes(&mut self, close: u8) -> bool {
        self.skip_whitespace();
        let empty = self.peek() == Some(close);
        if empty {
            self.pos += 1;
        }
        empty
    }

    /// After a member: `true` for a comma (another member follows), `false` for the closing
    /// bracket; gives up on anything else.
    fn next_or_close(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        let byte = self.peek()?;
        self.pos += 1;
        match byte {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    /// Checks the value at the position and passes it.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_whitespace();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => self.skip_container(b'}', true),
            b'[' => self.skip_container(b']', false),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// Checks an object (with `keyed`) or an array and passes it.
    fn skip_container(&mut self, close: u8, keyed: bool) -> Option<()> {
        self.enter()?;
        if !self.closes(close) {
            loop {
                if keyed {
                    self.skip_whitespace();
                    self.string()?;
                    self.expect(b':')?;
                }
                self.skip_value()?;
                if !self.next_or_close(close)? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// The string at the position, checked: escapes, control characters, and UTF-8 when it
    /// holds anything but ASCII.
    fn string(&mut self) -> Option<Str<'a>> {
        let bytes = self.bytes;
        if bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let mut at = start;
        let mut escaped = false;
        let mut ascii = true;
        loop {
            at = plain_run_end(bytes, at);
            match IN_STRING[usize::from(*bytes.get(at)?)] {
                InString::Plain => at += 1,
                InString::Quote => break,
                InString::Backslash => {
                    escaped = true;
                    at += 1 + escape_length(&bytes[at + 1..])?;
                }
                InString::Control => return None,
                InString::NonAscii => {
                    ascii = false;
                    at += 1;
                }
            }
        }
        let raw = &bytes[start..at];
        if !ascii {
            std::str::from_utf8(raw).ok()?;
        }
        self.pos = at + 1;
        Some(Str {
            raw,
            quoted: &bytes[start - 1..at + 1],
            escaped,
        })
    }

    /// Checks that `word` is written at the position and passes it.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos + word.len();
        (self.bytes.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// Checks a number's grammar and passes it; gives up on one near `f64`'s limits.
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes;
        let start = self.pos;
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = digits_end(bytes, at),
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            let end = digits_end(bytes, at + 1);
            if end == at + 1 {
                return None;
            }
            at = end;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            let end = digits_end(bytes, at);
            // Two digits at most, and the whole number short: see MAX_NUMBER_LENGTH.
            if end == at || end - at > 2 {
                return None;
            }
            at = end;
        }
        if at - start > MAX_NUMBER_LENGTH {
            return None;
        }
        self.pos = at;
        Some(())
    }
}

/// Where the run of [plain](InString::Plain) string bytes from `at` ends, looked for eight
/// bytes at a time while eight are left (the last few are the caller's to read one by one).
///
/// In each 64-bit word, a byte's high bit is set in `hits` if the byte is a quote, a backslash,
/// below 0x20 or above 0x7f. The subtractions can set it wrongly, but only in bytes above one
/// rightly set (their borrow runs upwards), so the lowest set bit is always a right one, and
/// the word's bytes are read in little-endian order, lowest first.
fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero_in = |word: u64| word.wrapping_sub(ONES) & !word & HIGH;
    while let Some(chunk) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*chunk);
        let quote = zero_in(word ^ (ONES * u64::from(b'"')));
        let backslash = zero_in(word ^ (ONES * u64::from(b'\\')));
        let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
        let hits = quote | backslash | control | (word & HIGH);
        if hits != 0 {
            // At most 7: the quotient of a bit index below 64 by 8.
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at
}

/// Where the run of ASCII digits from `at` ends.
fn digits_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The length of the escape whose letter starts `rest` (the bytes after a backslash), or
/// `None` for one JSON does not have, or a surrogate (left to serde_json).
fn escape_length(rest: &[u8]) -> Option<usize> {
    match rest.first()? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(1),
        b'u' => {
            let hex = std::str::from_utf8(rest.get(1..5)?).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let unit = u16::from_str_radix(hex, 16).ok()?;
            (!(0xd800..=0xdfff).contains(&unit)).then_some(5)
        }
        _ => None,
    }
}
