//! The literal words of a trie's patterns, numbered.
//!
//! Every literal word in a pattern gets a small id, and the trie's edges are labelled with ids.
//! A search looks each subject word up here once; after that, following an edge compares two
//! integers, and a subject word that no pattern contains skips every literal edge at its
//! position without looking. Ids are counted by the edges that use them and freed (for reuse)
//! when the last one goes.
//!
//! The lookup is a small open-addressing table whose slots hold a word's first 8 bytes and its
//! length, 16 bytes a slot, four to a cache line: for the short words topics are made of,
//! finding one compares integers in one cache line, with no call and no pointer to follow. A
//! longer word is checked against its text once its first 8 bytes and length agree.

use crate::topic::hash::{chunks, fold, random_seeds};

/// A word's number in its trie.
pub(super) type WordId = u32;

/// The id of an empty slot: never a word's (ids are dense from 0).
const NO_ID: WordId = WordId::MAX;

/// What a subject word no pattern uses looks up as: no edge is labelled with it.
pub(super) const UNKNOWN: WordId = NO_ID;

/// Bytes of a word kept in its slot.
const HEAD: usize = 16;

#[derive(Clone)]
pub(super) struct Words {
    /// Probed linearly from a word's home slot; at most three quarters full (a probe mostly
    /// stays in its first cache line); a power of two long.
    slots: Box<[Slot]>,
    /// By id: the word and how many edges use it; `None` once freed.
    entries: Vec<Option<(Box<str>, usize)>>,
    free: Vec<WordId>,
    len: usize,
    /// Random per trie, so words can not be chosen to collide without knowing them.
    seeds: [u64; 3],
}

/// A word in the table. Its hash is not kept: the table is rebuilt, and entries moved, from
/// the words' text, which is rare; a lookup compares the first half of the head and the length
/// (all of a word of up to 8 bytes), then, for a longer word, its text.
#[derive(Clone, Copy)]
struct Slot {
    /// The first half of the word's head ([`head`]).
    head: u64,
    len: u32,
    id: WordId,
}

const EMPTY: Slot = Slot {
    head: 0,
    len: 0,
    id: NO_ID,
};

/// Words of up to this many bytes are told apart by [`Slot::head`] and the length alone.
const SHORT: usize = 8;

/// The head of `word` as two integers: its first 8 bytes (zero-padded), and its last 8 if it
/// has 9 to [`HEAD`] bytes, its bytes 8 to 16 if it has more (0 if it has at most 8). Both feed
/// the hash, and for a word of up to [`SHORT`] bytes the first and the length together name
/// the word, so finding it compares integers only. [`Words::scan`] reads the same in place.
#[inline]
fn head(word: &[u8]) -> [u64; 2] {
    let n = word.len();
    let mut first = [0_u8; SHORT];
    for (to, from) in first.iter_mut().zip(word) {
        *to = *from;
    }
    let second = match n {
        0..=SHORT => 0,
        _ => {
            let at = if n <= HEAD { n - SHORT } else { SHORT };
            word.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        }
    };
    [u64::from_le_bytes(first), second]
}

/// The 8 bytes of `bytes` from `at`, little-endian, zero-padded past its end: one load, but
/// for the last chunk of a subject shorter than 8 bytes.
#[inline(always)]
fn chunk_at(bytes: &[u8], at: usize) -> u64 {
    if let Some(whole) = bytes.get(at..at + 8) {
        return whole.try_into().map_or(0, u64::from_le_bytes);
    }
    let rest = bytes.len().saturating_sub(at);
    match bytes
        .get(bytes.len().saturating_sub(8)..)
        .map(<[u8; 8]>::try_from)
    {
        // The last 8 bytes, shifted so those before `at` (already read) go.
        Some(Ok(last)) if rest > 0 => u64::from_le_bytes(last) >> (8 * (8 - rest)),
        _ => bytes
            .get(at..)
            .unwrap_or_default()
            .iter()
            .rev()
            .fold(0, |w, b| w << 8 | u64::from(*b)),
    }
}

/// The `.`s of an 8-byte chunk: the high bit of each byte that is one.
#[inline(always)]
fn dots_in(chunk: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const DOTS: u64 = 0x2e2e_2e2e_2e2e_2e2e;
    // A byte of `x` is zero where the chunk has a dot; the high bit of each byte of the result
    // is set exactly there (no carry crosses a byte: each is at most 0x7f + 0x7f).
    let x = chunk ^ DOTS;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// A word prepared for the table: its hash, head and length, computed once.
struct Key<'a> {
    word: &'a [u8],
    hash: u64,
    head: [u64; 2],
}

impl Words {
    pub(super) fn new() -> Self {
        Words {
            slots: vec![EMPTY; 16].into_boxed_slice(),
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
            seeds: random_seeds(),
        }
    }

    /// The id of `word`, if a pattern uses it.
    pub(super) fn get(&self, word: &str) -> Option<WordId> {
        let id = self.get_bytes(word.as_bytes());
        (id != UNKNOWN).then_some(id)
    }

    /// The id of the word spelled by `word`, or [`UNKNOWN`] if no pattern uses it. Inlined
    /// into the subject's scan: a call costs about a third of a lookup.
    #[inline(always)]
    pub(super) fn get_bytes(&self, word: &[u8]) -> WordId {
        let key = self.key(word);
        self.find(&key)
            .and_then(|i| self.slots.get(i))
            .map_or(UNKNOWN, |s| s.id)
    }

    /// Looks up the words of `subject` in order, calling `found` with each one's id (as
    /// [`get_bytes`](Self::get_bytes) does): the words of the empty string are one empty word
    /// here. The subject is read 8 bytes at a time for its dots, and each word's head is one
    /// load and a mask, wherever the word ends.
    #[inline(always)]
    pub(super) fn scan(&self, subject: &[u8], mut found: impl FnMut(WordId)) {
        let n = subject.len();
        let (mut start, mut at) = (0, 0);
        while at < n {
            // Bytes past the end read as zero, never a dot.
            let mut dots = dots_in(chunk_at(subject, at));
            while dots != 0 {
                let end = at + dots.trailing_zeros() as usize / 8;
                found(self.get_scanned(subject, start, end));
                start = end + 1;
                dots &= dots - 1;
            }
            at += 8;
        }
        found(self.get_scanned(subject, start, n));
    }

    /// [`get_bytes`](Self::get_bytes) for the word at `start..end` of `subject`, read in place.
    #[inline(always)]
    fn get_scanned(&self, subject: &[u8], start: usize, end: usize) -> WordId {
        let n = end.wrapping_sub(start);
        if n > SHORT {
            return self.get_bytes(subject.get(start..end).unwrap_or_default());
        }
        // The 8 bytes from the word's start, those after its end masked off: the word's head
        // (see `head`), which with its length names it.
        let first = chunk_at(subject, start) & u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0);
        let [seed, step, _] = self.seeds;
        self.find_short(fold(first ^ seed, step ^ n as u64), first, n)
    }

    /// The id of the word of at most [`SHORT`] bytes whose hash, head and length are given.
    #[inline(always)]
    fn find_short(&self, hash: u64, head: u64, len: usize) -> WordId {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        // Never full, so an empty slot ends every probe; the bound is a safeguard.
        for _ in 0..self.slots.len() {
            let Some(slot) = self.slots.get(i) else {
                break;
            };
            // An empty slot's id is `UNKNOWN`.
            if slot.id == NO_ID || (slot.head == head && slot.len as usize == len) {
                return slot.id;
            }
            i = (i + 1) & mask;
        }
        UNKNOWN
    }

    /// The id of `word`, numbered now if it has none. It is freed again unless an edge
    /// [`retain`](Self::retain)s it.
    pub(super) fn id(&mut self, word: &str) -> WordId {
        let key = self.key(word.as_bytes());
        if let Some(slot) = self.find(&key).and_then(|i| self.slots.get(i)) {
            return slot.id;
        }
        let entry = Some((Box::<str>::from(word), 0));
        let id = match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.entries.get_mut(id as usize) {
                    *slot = entry;
                }
                id
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as WordId
            }
        };
        self.insert(
            Slot {
                head: key.head[0],
                len: word.len() as u32,
                id,
            },
            key.hash,
        );
        id
    }

    /// One more edge uses `id`.
    pub(super) fn retain(&mut self, id: WordId) {
        if let Some(Some((_, uses))) = self.entries.get_mut(id as usize) {
            *uses += 1;
        }
    }

    /// One edge fewer uses `id`; the last one frees it.
    pub(super) fn release(&mut self, id: WordId) {
        let Some(Some((word, uses))) = self.entries.get_mut(id as usize) else {
            return;
        };
        *uses = uses.saturating_sub(1);
        if *uses > 0 {
            return;
        }
        // Find the slot while the entry still holds the word (long words are checked on it).
        let word = word.clone();
        let key = self.key(word.as_bytes());
        if let Some(i) = self.find(&key) {
            self.remove_slot(i);
        }
        if let Some(entry) = self.entries.get_mut(id as usize) {
            *entry = None;
        }
        self.free.push(id);
    }

    /// How many words are numbered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn key<'a>(&self, word: &'a [u8]) -> Key<'a> {
        let head = head(word);
        let [start, step, finish] = self.seeds;
        // One multiplication for the short words topics are made of; longer ones fold in the
        // rest 8 bytes at a time.
        let mut h = fold(head[0] ^ start, head[1] ^ step ^ word.len() as u64);
        if let Some(tail) = word.get(HEAD..) {
            for w in chunks(tail) {
                h = fold(h ^ w, step);
            }
            h = fold(h, finish);
        }
        Key {
            word,
            hash: h,
            head,
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `key`'s word.
    #[inline(always)]
    fn find(&self, key: &Key<'_>) -> Option<usize> {
        let mask = self.mask();
        let mut i = key.hash as usize & mask;
        // Never full, so an empty slot ends every probe; the bound is a safeguard.
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            if slot.id == NO_ID {
                return None;
            }
            if slot.head == key.head[0]
                && slot.len as usize == key.word.len()
                && (key.word.len() <= SHORT || self.word(slot.id) == Some(key.word))
            {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
        None
    }

    fn word(&self, id: WordId) -> Option<&[u8]> {
        self.entries
            .get(id as usize)
            .and_then(Option::as_ref)
            .map(|(w, _)| w.as_bytes())
    }

    /// The hash of the word in `slot`, from its text.
    fn hash_of(&self, slot: &Slot) -> u64 {
        self.word(slot.id).map_or(0, |word| self.key(word).hash)
    }

    /// Puts a slot for a word not in the table, whose hash is `hash`; grows the table first if
    /// it would be more than three quarters full.
    fn insert(&mut self, slot: Slot, hash: u64) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let grown = vec![EMPTY; self.slots.len() * 2].into_boxed_slice();
            let old = std::mem::replace(&mut self.slots, grown);
            self.len = 0;
            for s in old.iter().filter(|s| s.id != NO_ID) {
                self.insert(*s, self.hash_of(s));
            }
        }
        let mask = self.mask();
        let mut i = hash as usize & mask;
        while self.slots[i].id != NO_ID {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
    }

    /// Empties slot `hole`, shifting later entries of its probe run back so no probe stops
    /// early.
    fn remove_slot(&mut self, mut hole: usize) {
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let slot = self.slots[j];
            if slot.id == NO_ID {
                break;
            }
            // The entry at `j` may fill the hole unless its home lies after the hole (up to j).
            let home = self.hash_of(&slot) as usize & mask;
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = slot;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ids [`Words::scan`] finds in `subject`.
    fn scanned(w: &Words, subject: &[u8]) -> Vec<WordId> {
        let mut ids = Vec::new();
        w.scan(subject, |id| ids.push(id));
        ids
    }

    /// The dots of `bytes` as [`dots_in`] finds them, 8 bytes at a time.
    fn dots(bytes: &[u8]) -> Vec<usize> {
        (0..bytes.len())
            .step_by(8)
            .flat_map(|at| {
                let mut found = dots_in(chunk_at(bytes, at));
                std::iter::from_fn(move || {
                    (found != 0).then(|| {
                        let i = at + found.trailing_zeros() as usize / 8;
                        found &= found - 1;
                        i
                    })
                })
            })
            .collect()
    }

    #[test]
    fn dots_are_found_in_whole_chunks_and_the_rest() {
        assert_eq!(dots(b""), Vec::<usize>::new());
        assert_eq!(dots(b"."), [0]);
        assert_eq!(dots(b"stock.ibm.nyse"), [5, 9]);
        assert_eq!(dots(b"........."), (0..9).collect::<Vec<_>>());
        // Bytes next to `.` (0x2e) in value, and high bytes, are not dots.
        assert_eq!(dots(b"-/\xae\xaf\x2d.\x00\xff.\x2f"), [5, 8]);
    }

    #[test]
    fn a_scan_looks_up_each_word_between_dots() {
        let mut w = Words::new();
        let words = [
            "stock",
            "ibm",
            "nyse",
            "",
            "eightbyt",
            "nine-byte",
            "longer-than-sixteen",
        ];
        let ids: Vec<WordId> = words.iter().map(|s| w.id(s)).collect();
        assert_eq!(scanned(&w, b"stock.ibm.nyse"), ids[..3]);
        assert_eq!(scanned(&w, b"."), [ids[3], ids[3]]);
        assert_eq!(scanned(&w, b""), [ids[3]], "one empty word");
        assert_eq!(
            scanned(&w, b"eightbyt.nine-byte.x.longer-than-sixteen"),
            [ids[4], ids[5], UNKNOWN, ids[6]]
        );
        // Words that share a head with a known one, or are a prefix of one, are not it.
        assert_eq!(
            scanned(&w, b"nys.nysee.eightbyte.nine-bytf.longer-than-sixteeN"),
            [UNKNOWN; 5]
        );
        // Sixteen bytes (the head's whole width) and eight, hashed as `key` hashes them.
        let sixteen = w.id("exactly-16-bytes");
        let eight = w.id("8-bytes!");
        assert_eq!(
            scanned(&w, b"x.exactly-16-bytes.8-bytes!"),
            [UNKNOWN, sixteen, eight]
        );
        let long = ["ibm"; 100].join(".");
        assert_eq!(
            scanned(&w, long.as_bytes()),
            [ids[1]; 100],
            "a subject longer than a routing key is scanned too"
        );
    }

    proptest! {
        #[test]
        fn dots_agree_with_a_byte_scan(s in proptest::collection::vec(
            prop_oneof![Just(b'.'), Just(b'-'), Just(b'/'), Just(0xae_u8), any::<u8>()], 0..40)) {
            let want: Vec<usize> = (0..s.len()).filter(|i| s[*i] == b'.').collect();
            prop_assert_eq!(dots(&s), want);
        }

        /// Subjects of words of every length class, some numbered and some not: a scan finds
        /// what looking each split word up finds.
        #[test]
        fn a_scan_agrees_with_looking_up_each_word(
            known in proptest::collection::vec(0..24usize, 0..12),
            subject in proptest::collection::vec(0..24usize, 1..30),
        ) {
            let word = |n: usize| match n % 8 {
                0 => String::new(),
                1 => "a".repeat(n % 4 + 1),
                2 => format!("w{n}"),
                3 => "é".repeat(n % 5 + 1),
                4 => format!("eightby{}", n % 10),
                5 => format!("nine-byte-{}", "x".repeat(n % 7)),
                6 => format!("a-word-of-more-than-sixteen-{n}"),
                _ => format!("-/\u{ae}{n}"),
            };
            let mut w = Words::new();
            for n in known {
                w.id(&word(n));
            }
            let subject = subject.iter().map(|n| word(*n)).collect::<Vec<_>>().join(".");
            let want: Vec<WordId> =
                subject.split('.').map(|s| w.get_bytes(s.as_bytes())).collect();
            prop_assert_eq!(scanned(&w, subject.as_bytes()), want, "{:?}", subject);
        }
    }

    #[test]
    fn an_id_lives_as_long_as_an_edge_uses_it_then_is_reused() {
        let mut w = Words::new();
        let a = w.id("a");
        assert_eq!(w.id("a"), a);
        w.retain(a);
        w.retain(a);
        let b = w.id("b");
        w.retain(b);
        assert_ne!(a, b);
        w.release(a);
        assert_eq!(w.get("a"), Some(a));
        w.release(a);
        assert_eq!(w.get("a"), None);
        assert_eq!(w.id("c"), a, "the freed id is reused");
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn word_hashes_depend_on_every_byte_and_the_length() {
        let w = Words::new();
        let long = "x".repeat(40);
        let words = [
            "",
            "a",
            "b",
            "a\0",
            "ab",
            "ba",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
        ];
        let more = [
            long.as_str(),
            &long[1..],
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
        ];
        let hashes: std::collections::HashSet<u64> = words
            .iter()
            .chain(&more)
            .map(|s| w.key(s.as_bytes()).hash)
            .collect();
        assert_eq!(hashes.len(), words.len() + more.len());
        assert_ne!(
            w.key(b"nyse").hash,
            Words::new().key(b"nyse").hash,
            "keyed per trie"
        );
    }

    proptest! {
        /// Random words, long ones with shared heads included, numbered and freed against a
        /// map: every word is found exactly while an edge uses it.
        #[test]
        fn words_agree_with_a_map(
            ops in proptest::collection::vec((any::<bool>(), 0..40usize), 0..200),
        ) {
            // Short words, long ones sharing their first 8 bytes (told apart by their text), and
            // words of 9 to 16 bytes sharing them too.
            let word = |n: usize| match n % 5 {
                0 => format!("w{n}"),
                1 => format!("{}{n}", "shared-head-of-a-long-word-"),
                2 => String::new() + &"é".repeat(n % 9),
                3 => format!("eightbyt{}", "x".repeat(n % 8)),
                _ => format!("{n}.{n}"),
            };
            let mut w = Words::new();
            let mut model: std::collections::HashMap<String, (WordId, usize)> = Default::default();
            for (add, n) in ops {
                let text = word(n);
                if add {
                    let id = w.id(&text);
                    w.retain(id);
                    let entry = model.entry(text.clone()).or_insert((id, 0));
                    prop_assert_eq!(entry.0, id);
                    entry.1 += 1;
                } else if let Some((id, uses)) = model.get_mut(&text) {
                    w.release(*id);
                    *uses -= 1;
                    if *uses == 0 {
                        model.remove(&text);
                    }
                }
                for m in 0..40 {
                    let text = word(m);
                    prop_assert_eq!(w.get(&text), model.get(&text).map(|e| e.0), "{:?}", text);
                }
                prop_assert_eq!(w.len(), model.len());
            }
        }
    }
}
