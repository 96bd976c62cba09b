//! The payload read straight from its bytes into jaq's values: the parts a [`Demand`] reads
//! built, the rest checked and passed over, with no serde layer between the bytes and the
//! values.
//!
//! This is the fast way to the value [`super::value`]'s serde_json parse gives, for the
//! payloads it knows how to read. It takes only text serde_json takes too, and gives the same
//! value:
//!
//! - whitespace is space, tab, line feed and carriage return; after the value, only whitespace;
//! - a string is checked as serde_json checks it (no control character, every escape one of
//!   JSON's, valid UTF-8), kept as a slice of the payload when it has no escape;
//! - a number has JSON's form (`-0`, `1.5e3`; not `01`, `1.`, `.5`); an integer of up to 18
//!   digits is jq's integer as serde_json's `u64` or `i64` becomes one (`-0` the float `-0.0`,
//!   as serde_json reads it), any other number the nearest `f64` (both round correctly: the
//!   same `f64`); one skipped is checked to be finite;
//! - an object keeps its keys in order, a key given twice its first place and last value.
//!
//! Anything else makes it give up ([`GiveUp`]), and the payload is parsed by serde_json, which
//! says what is wrong and where (so an error is serde_json's, line and column included), or
//! reads the few forms left to it: an integer of more than 18 digits, an escaped surrogate
//! (`\ud83d\ude00`), a number written with more than 300 digits, and nesting deeper than
//! [`MAX_NESTING`] (serde_json's limit is 128).
//!
//! What is built follows [`super::project`] exactly: an object keeps the fields read by name
//! (all of them when iterated, the whole object when indexed by number), an array every item as
//! read (none when its items are never read, the whole array when read by key), a scalar whole.

use bytes::Bytes;
use jaq_json::{Num, Val};

use super::demand::{Demand, Named};
use super::value::{Scratch, array_of, object_of};

/// The reader left the payload to serde_json: it is not JSON, or has a form left to it.
#[derive(Debug)]
pub(super) struct GiveUp;

type Read<T> = Result<T, GiveUp>;

/// Arrays and objects nested deeper than this are left to serde_json.
pub(super) const MAX_NESTING: usize = 100;

/// Longest integer read here (19 digits may pass `i64`).
const MAX_INTEGER_DIGITS: usize = 18;

/// A number skipped without an exponent is finite up to this many digits before its point
/// (`f64` reaches 1.8e308).
const MAX_PLAIN_DIGITS: usize = 300;

/// `payload` as a jaq value, the parts `demand` reads built; `GiveUp` when serde_json must
/// read it. `scratch` is left empty.
pub(super) fn read(payload: &Bytes, demand: &Demand, scratch: &mut Scratch) -> Read<Val> {
    let mut reader = Reader {
        payload,
        bytes: payload,
        at: 0,
        depth: 0,
        scratch,
    };
    let value = reader.value(demand);
    reader.whitespace();
    if value.is_err() || reader.at != reader.bytes.len() {
        reader.scratch.clear();
        return Err(GiveUp);
    }
    value
}

struct Reader<'a> {
    payload: &'a Bytes,
    bytes: &'a [u8],
    /// The next byte to read.
    at: usize,
    /// Arrays and objects open around `at`.
    depth: usize,
    scratch: &'a mut Scratch,
}

/// A string read: its bytes between the quotes, and whether any is an escape.
#[derive(Clone, Copy)]
struct Text {
    start: usize,
    end: usize,
    escaped: bool,
}

/// What is built of an object's fields.
#[derive(Clone, Copy)]
enum Keep<'d> {
    /// Nothing: the object is skipped.
    Skip,
    /// Every field whole.
    Whole,
    /// The fields named, each as its demand says.
    Named(&'d Named),
    /// Every field: those named as their demand says, the others as the second.
    Every(&'d Named, &'d Demand),
}

impl Reader<'_> {
    fn value(&mut self, demand: &Demand) -> Read<Val> {
        self.whitespace();
        let skip = matches!(demand, Demand::Nothing);
        match self.peek() {
            Some(b'{') => self.object(demand),
            Some(b'[') => self.array(demand),
            Some(b'"') => {
                let text = self.string()?;
                Ok(if skip { Val::Null } else { self.text(text)? })
            }
            Some(b't') => self.word(b"true", Val::Bool(true)),
            Some(b'f') => self.word(b"false", Val::Bool(false)),
            Some(b'n') => self.word(b"null", Val::Null),
            Some(b'-' | b'0'..=b'9') => self.number(skip),
            _ => Err(GiveUp),
        }
    }

    /// [`Self::value`], with the scalars most fields hold read without the rest of it.
    fn field_value(&mut self, demand: &Demand) -> Read<Val> {
        self.whitespace();
        let skip = matches!(demand, Demand::Nothing);
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(skip),
            Some(b'"') if !skip => {
                let text = self.string()?;
                self.text(text)
            }
            _ => self.value(demand),
        }
    }

    fn skip(&mut self) -> Read<()> {
        self.whitespace();
        match self.peek() {
            // The most common value, read without the rest of `value`.
            Some(b'"') => self.string().map(drop),
            _ => self.value(&Demand::Nothing).map(drop),
        }
    }

    fn array(&mut self, demand: &Demand) -> Read<Val> {
        let each = match demand {
            Demand::Nothing => None,
            Demand::All => Some(&Demand::All),
            // An array read by key fails quoting itself: kept whole.
            Demand::Parts(p) if !p.fields.is_empty() => Some(&Demand::All),
            Demand::Parts(p) => p.items.as_ref(),
        };
        self.enter()?;
        let start = self.scratch.items.len();
        if !self.closes(b']') {
            loop {
                match each {
                    Some(demand) => {
                        let item = self.value(demand)?;
                        self.scratch.items.push(item);
                    }
                    None => self.skip()?,
                }
                if self.next_or_close(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(match demand {
            Demand::Nothing => Val::Null,
            _ => array_of(self.scratch.items.drain(start..)),
        })
    }

    fn object(&mut self, demand: &Demand) -> Read<Val> {
        let keep = match demand {
            Demand::Nothing => Keep::Skip,
            Demand::All => Keep::Whole,
            // An object indexed by number fails quoting itself: kept whole.
            Demand::Parts(p) if p.index.is_some() => Keep::Whole,
            Demand::Parts(p) => match &p.iter {
                Some(every) => Keep::Every(&p.fields, every),
                None => Keep::Named(&p.fields),
            },
        };
        self.enter()?;
        let start = self.scratch.fields.len();
        if !self.closes(b'}') {
            loop {
                self.whitespace();
                if self.peek() != Some(b'"') {
                    return Err(GiveUp);
                }
                let (key, wanted) = match keep {
                    Keep::Skip => (self.string()?, None),
                    Keep::Whole => (self.string()?, Some(&Demand::All)),
                    Keep::Named(named) => match self.plain_key(named) {
                        Some((key, demand)) => (key, Some(demand)),
                        None => {
                            let key = self.string()?;
                            // A key without escapes is no plain name, or it would have been
                            // found above.
                            match key.escaped || !named.plain() {
                                true => (key, self.lookup(named, key)?),
                                false => (key, None),
                            }
                        }
                    },
                    Keep::Every(named, every) => {
                        let key = self.string()?;
                        (key, Some(self.lookup(named, key)?.unwrap_or(every)))
                    }
                };
                self.whitespace();
                if self.peek() != Some(b':') {
                    return Err(GiveUp);
                }
                self.at += 1;
                match wanted {
                    Some(demand) => {
                        let key = self.text(key)?;
                        let value = self.field_value(demand)?;
                        self.scratch.fields.push((key, value));
                    }
                    None => self.skip()?,
                }
                if self.next_or_close(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(match keep {
            Keep::Skip => Val::Null,
            _ => object_of(self.scratch.fields.drain(start..)),
        })
    }

    /// Past an opening bracket, one level deeper.
    fn enter(&mut self) -> Read<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(GiveUp);
        }
        self.at += 1;
        Ok(())
    }

    /// Past `close` if it comes next (an empty array or object).
    fn closes(&mut self, close: u8) -> bool {
        self.whitespace();
        let closes = self.peek() == Some(close);
        self.at += usize::from(closes);
        closes
    }

    /// Past the comma before the next item (false) or the closing bracket (true).
    fn next_or_close(&mut self, close: u8) -> Read<bool> {
        self.whitespace();
        let closed = match self.peek() {
            Some(b',') => false,
            Some(b) if b == close => true,
            _ => return Err(GiveUp),
        };
        self.at += 1;
        Ok(closed)
    }

    fn word(&mut self, word: &[u8], value: Val) -> Read<Val> {
        if !self.bytes[self.at..].starts_with(word) {
            return Err(GiveUp);
        }
        self.at += word.len();
        Ok(value)
    }

    fn whitespace(&mut self) {
        while let Some(&(b' ' | b'\n' | b'\t' | b'\r')) = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Reads a string (`at` on its opening quote), checking it.
    fn string(&mut self) -> Read<Text> {
        let bytes = self.bytes;
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        let mut high = false;
        loop {
            // Eight bytes at a time past those that need no look.
            while let Some(chunk) = bytes.get(at..at + 8) {
                let mut word = [0; 8];
                word.copy_from_slice(chunk);
                let special = special_bytes(u64::from_le_bytes(word));
                if special != 0 {
                    at += (special.trailing_zeros() / 8) as usize;
                    break;
                }
                at += 8;
            }
            match *bytes.get(at).ok_or(GiveUp)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    at += escape(&bytes[at..])?.1;
                }
                0..=0x1f => return Err(GiveUp),
                b => {
                    high |= b >= 0x80;
                    at += 1;
                }
            }
        }
        // Escapes are ASCII: the bytes are UTF-8 with them if and only if without.
        if high && std::str::from_utf8(&bytes[start..at]).is_err() {
            return Err(GiveUp);
        }
        self.at = at + 1;
        Ok(Text {
            start,
            end: at,
            escaped,
        })
    }

    /// The key that comes next (`at` on its opening quote) when it is one of the plain names
    /// of `named` written as it is, read past, and what is read of its field. The bytes matched
    /// are a valid string: text with no quote, backslash or control character, UTF-8 (a name
    /// comes from the program's text). `None`, nothing read, for any other key.
    fn plain_key<'d>(&mut self, named: &'d Named) -> Option<(Text, &'d Demand)> {
        if !named.plain() {
            return None;
        }
        let start = self.at + 1;
        let rest = self.bytes.get(start..)?;
        let (name, demand) = named.iter().find(|(name, _)| {
            rest.get(name.len()) == Some(&b'"') && name.iter().zip(rest).all(|(a, b)| a == b)
        })?;
        self.at = start + name.len() + 1;
        Some((
            Text {
                start,
                end: start + name.len(),
                escaped: false,
            },
            demand,
        ))
    }

    /// What `named` reads of the field of key `key`.
    fn lookup<'d>(&self, named: &'d Named, key: Text) -> Read<Option<&'d Demand>> {
        let raw = &self.bytes[key.start..key.end];
        Ok(match key.escaped {
            false => named.get(raw),
            true => named.get(&unescape(raw)?),
        })
    }

    /// A string as a jq value: a slice of the payload when it has no escape.
    fn text(&self, text: Text) -> Read<Val> {
        Ok(match text.escaped {
            false => Val::utf8_str(self.payload.slice(text.start..text.end)),
            true => Val::utf8_str(unescape(&self.bytes[text.start..text.end])?),
        })
    }

    /// Reads a number (`at` on its sign or first digit); `Null` when `skip`.
    fn number(&mut self, skip: bool) -> Read<Val> {
        let negative = self.peek() == Some(b'-');
        self.at += usize::from(negative);
        let int = self.digits();
        if int.is_empty() || (int.len() > 1 && self.bytes[int.start] == b'0') {
            return Err(GiveUp);
        }
        let mut fraction = self.at..self.at;
        if self.peek() == Some(b'.') {
            self.at += 1;
            fraction = self.digits();
            if fraction.is_empty() {
                return Err(GiveUp);
            }
        }
        let mut exponent = None;
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            let start = self.at;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits().is_empty() {
                return Err(GiveUp);
            }
            exponent = Some(start..self.at);
        }
        if skip && exponent.is_none() && int.len() <= MAX_PLAIN_DIGITS {
            return Ok(Val::Null);
        }
        let bytes = self.bytes;
        if fraction.is_empty() && exponent.is_none() {
            if int.len() > MAX_INTEGER_DIGITS {
                return Err(GiveUp);
            }
            let magnitude = decimal(&bytes[int]);
            return Ok(match (negative, magnitude) {
                (false, n) => Val::Num(Num::from_integral(n)),
                // serde_json reads `-0` as a float.
                (true, 0) => Val::from(-0.0),
                (true, n) => Val::Num(Num::from_integral(-(n as i64))),
            });
        }
        if int.len() > MAX_PLAIN_DIGITS {
            return Err(GiveUp);
        }
        let exponent = exponent.map_or(&[][..], |e| &bytes[e]);
        let magnitude = match exact_float(&bytes[int.clone()], &bytes[fraction], exponent) {
            Some(f) => f,
            // The text is ASCII digits, signs, `.` and `e`: Rust's float syntax includes JSON's.
            None => std::str::from_utf8(&bytes[int.start..self.at])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or(GiveUp)?,
        };
        match magnitude.is_finite() {
            true if skip => Ok(Val::Null),
            true if negative => Ok(Val::from(-magnitude)),
            true => Ok(Val::from(magnitude)),
            // serde_json: "number out of range".
            false => Err(GiveUp),
        }
    }

    /// Past a run of ASCII digits; where they are.
    fn digits(&mut self) -> std::ops::Range<usize> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        start..self.at
    }
}

/// The value of ASCII digits (at most 19 of them).
fn decimal(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0'))
}

/// The exact powers of ten an `f64` holds.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The `f64` nearest to `int.fraction e exponent` when it takes one operation on exact values:
/// a significand of at most 15 digits (below 2^53) and a power of ten up to 22 are both exact,
/// so one multiplication or division rounds once, correctly, to the `f64` every correct parser
/// gives (Clinger's fast path). `None` otherwise.
fn exact_float(int: &[u8], fraction: &[u8], exponent: &[u8]) -> Option<f64> {
    if int.len() + fraction.len() > 15 || exponent.len() > 4 {
        return None;
    }
    let significand = decimal(int) * 10u64.pow(fraction.len() as u32) + decimal(fraction);
    let exponent = match exponent {
        [b'-', digits @ ..] => -(decimal(digits) as i64),
        [b'+', digits @ ..] | digits => decimal(digits) as i64,
    } - fraction.len() as i64;
    let power = *POWERS_OF_TEN.get(exponent.unsigned_abs() as usize)?;
    Some(match exponent < 0 {
        true => significand as f64 / power,
        false => significand as f64 * power,
    })
}

/// A string's bytes with its escapes replaced.
fn unescape(raw: &[u8]) -> Read<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(slash) = rest.iter().position(|&b| b == b'\\') {
        out.extend_from_slice(&rest[..slash]);
        let (c, len) = escape(&rest[slash..])?;
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        rest = &rest[slash + len..];
    }
    out.extend_from_slice(rest);
    Ok(out)
}

/// The bytes of `word` (eight of a string, the first in the lowest bits) that end the run of
/// plain text: a quote, a backslash, a control character or one of a multi-byte character,
/// each flagged by its high bit. The lowest flagged is always such a byte (a borrow may flag
/// the ones above it too).
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let zero_byte = |w: u64| w.wrapping_sub(ONES) & !w;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (quote | backslash | control | word) & HIGH
}

/// The character an escape (`rest` starting at its backslash) stands for, and its length in
/// bytes; an escaped surrogate is left to serde_json.
fn escape(rest: &[u8]) -> Read<(char, usize)> {
    let c = match rest.get(1).ok_or(GiveUp)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = rest.get(2..6).ok_or(GiveUp)?;
            let code = hex.iter().try_fold(0u32, |code, &h| {
                let digit = (h as char).to_digit(16).ok_or(GiveUp)?;
                Ok(code * 16 + digit)
            })?;
            // `None` for a surrogate.
            return char::from_u32(code).map(|c| (c, 6)).ok_or(GiveUp);
        }
        _ => return Err(GiveUp),
    };
    Ok((c, 2))
}
