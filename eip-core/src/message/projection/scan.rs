//! The fast reader of a projection: one pass over the bytes that builds only what the demand
//! names and checks the rest without building it.
//!
//! It answers `Some` only for a payload serde_json accepts, with a tree of the value the checked
//! reader builds; for anything else, and for the few things it leaves to serde_json to judge, it answers
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
//! What it reads it adds to a [`Tree`]: a container read whole with every member, strings
//! without escapes borrowed from the payload, integers of up to 18 digits parsed here; a
//! string with escapes and any other number are handed to serde_json on their own (a JSON
//! scalar reads the same whatever surrounds it), so every value is the one serde_json builds.

use std::borrow::Cow;

use serde_json::Number;

use super::super::demand::{Demand, Node};
use super::super::tree::Tree;

/// The deepest nesting read here; deeper payloads go to the checked reader.
const MAX_DEPTH: u32 = 100;

/// Numbers longer than this are left to serde_json, as are exponents of three digits or more:
/// what is within stays below 1e300 and above 1e-300, far from `f64`'s limits (about 1.8e308,
/// and 5e-324 below which serde_json reads zero).
const MAX_NUMBER_LENGTH: usize = 200;

/// `payload` projected on `demand`, or `None` when the checked reader must decide.
pub(super) fn project<'p>(payload: &'p [u8], demand: &'p Demand) -> Option<Tree<'p>> {
    let mut scan = Scan {
        bytes: payload,
        pos: 0,
        depth: 0,
        tree: Tree::default(),
    };
    scan.value(demand.node())?;
    scan.skip_whitespace();
    (scan.pos == payload.len()).then_some(scan.tree)
}

/// A position in the payload, the nesting there, and what has been added so far.
struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: u32,
    tree: Tree<'a>,
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
    /// What `node` reads of the field this string names, with the name to keep it under; the
    /// outer `None` when the name can not be read (left to serde_json).
    fn field_of<'d>(&self, node: &'d Node) -> Option<Option<(Cow<'a, str>, &'d Node)>>
    where
        'd: 'a,
    {
        let parts = match node {
            Node::Whole => return Some(Some((self.text()?, &WHOLE))),
            Node::Parts(parts) => parts,
        };
        if self.escaped {
            let name = self.text()?;
            return Some(parts.field(&name).map(|below| (name, below)));
        }
        Some(match parts.field_by_bytes(self.raw) {
            Some((Some(name), below)) => Some((Cow::Borrowed(name), below)),
            Some((None, below)) => {
                Some((Cow::Borrowed(std::str::from_utf8(self.raw).ok()?), below))
            }
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

/// What every member of a value read whole is read as.
static WHOLE: Node = Node::Whole;

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

    /// The value at the position, added as far as `node` demands.
    fn value(&mut self, node: &'a Node) -> Option<u32> {
        self.skip_whitespace();
        match (self.peek()?, node) {
            (b'{', _) => self.object(node),
            (b'[', _) => self.array(node),
            (_, Node::Whole) => self.scalar(),
            (_, Node::Parts(_)) => {
                // Nothing selects in a scalar: the checked reader reads it as null too.
                self.skip_value()?;
                Some(self.tree.null())
            }
        }
    }

    /// The scalar at the position, added.
    fn scalar(&mut self) -> Option<u32> {
        match self.peek()? {
            b'"' => {
                let text = self.string()?.text()?;
                Some(self.tree.string(text))
            }
            b't' => self.literal(b"true").map(|()| self.tree.bool(true)),
            b'f' => self.literal(b"false").map(|()| self.tree.bool(false)),
            b'n' => self.literal(b"null").map(|()| self.tree.null()),
            _ => {
                let start = self.pos;
                self.number()?;
                let number = number_value(&self.bytes[start..self.pos])?;
                Some(self.tree.number(number))
            }
        }
    }

    /// An object, keeping the fields `node` reads (a key given twice: its last value).
    fn object(&mut self, node: &'a Node) -> Option<u32> {
        let mark = self.tree.open_container();
        self.enter()?;
        if !self.closes(b'}') {
            loop {
                self.skip_whitespace();
                let key = self.string()?;
                self.expect(b':')?;
                match key.field_of(node)? {
                    Some((name, below)) => {
                        let child = self.value(below)?;
                        self.tree.member(name, child);
                    }
                    None => self.skip_value()?,
                }
                if !self.next_or_close(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        self.tree.close_object(mark)
    }

    /// An array, keeping the items `node` reads at their places.
    fn array(&mut self, node: &'a Node) -> Option<u32> {
        let mark = self.tree.open_container();
        self.enter()?;
        if !self.closes(b']') {
            let (parts, kept) = match node {
                Node::Whole => (None, usize::MAX),
                Node::Parts(parts) => (Some(parts), parts.kept_items()),
            };
            let mut index = 0;
            loop {
                match parts.map_or(Some(&WHOLE), |parts| parts.item(index)) {
                    Some(below) => {
                        let child = self.value(below)?;
                        self.tree.member(Cow::Borrowed(""), child);
                    }
                    None => {
                        self.skip_value()?;
                        if index < kept {
                            let null = self.tree.null();
                            self.tree.member(Cow::Borrowed(""), null);
                        }
                    }
                }
                index += 1;
                if !self.next_or_close(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        self.tree.close_array(mark)
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
        // Below 0x20 (the subtraction wraps) or above 0x7f (the byte's own high bit).
        let control_or_high = (word.wrapping_sub(ONES * 0x20) | word) & HIGH;
        let hits = quote | backslash | control_or_high;
        if hits != 0 {
            // At most 7: the quotient of a bit index below 64 by 8.
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at
}

/// The number `text` (checked by [`Scan::number`]) as serde_json reads it: integers of up to
/// 18 digits (exact in `u64` and `i64`) here, the rest by serde_json itself (`-0` is a float
/// there, so it goes too).
fn number_value(text: &[u8]) -> Option<Number> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', digits)) => (true, digits),
        _ => (false, text),
    };
    if digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
        let magnitude = digits
            .iter()
            .fold(0u64, |n, digit| n * 10 + u64::from(digit - b'0'));
        match (negative, i64::try_from(magnitude)) {
            (false, _) => return Some(Number::from(magnitude)),
            (true, Ok(magnitude)) if magnitude != 0 => return Some(Number::from(-magnitude)),
            _ => {}
        }
    }
    serde_json::from_slice(text).ok()
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
