//! Loop detection: a channel that takes part in joins never stores the same message id twice.
//!
//! Joins can form cycles and diamonds; without a check a message would circle until its hop
//! budget ran out, or arrive twice over two paths. Within one publish, eip follows joins breadth
//! first and stores at each channel at most once. Across publishes (the same message id sent
//! again later, say replayed from a broker) each such channel also remembers the ids it stored,
//! bounded by count and by age ([`LoopDetection`]): an id older than `max_age`, or pushed out by
//! `max_ids` newer ones, is forgotten, and a message with that id would be stored again. The
//! memory exists only for channels that are the source or destination of a join. A
//! publish-subscribe channel's memory lives under its log's lock, so that a publish (or a join's
//! store) that appends there consults it without a lock of its own. Archival joins
//! skip the check at their destination queue on purpose (see [`crate::join`]).

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::message::MessageId;
use crate::store::memory::shared_log::SharedLog;
use crate::sync::lock;

/// How much a channel remembers for loop detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopDetection {
    /// The most ids remembered (the oldest is forgotten first).
    pub max_ids: usize,
    /// How long an id is remembered.
    pub max_age: Duration,
}

impl Default for LoopDetection {
    /// 16 384 ids or one minute, whichever is shorter: about 1 MiB per channel when full. Within
    /// one publish loops are caught whatever these bounds; they only decide how long a channel
    /// recognises an id published to it again later (a replay, or a loop through a broker).
    fn default() -> Self {
        LoopDetection {
            max_ids: 16_384,
            max_age: Duration::from_secs(60),
        }
    }
}

/// The ids a guard remembers, oldest first. Ids are time-ordered (UUID v7, strictly increasing
/// within a process), so nearly every id admitted is greater than all before it: those go to
/// `ascending`, sorted by construction, where one comparison with the last proves an id new and
/// a binary search finds an old one, touching no hash table. The rest (ids from elsewhere, or
/// replayed) go to `others`, with a hash map. Both keep each id's admission number, so the
/// oldest of the two is forgotten first: together they hold exactly the last `max_ids` ids
/// admitted, within `max_age`.
///
/// Every admission writes one entry at the back of a ring of up to `max_ids`: a stream through
/// memory as long as the ring, on every channel that takes part in joins. So an entry is kept
/// small (24 bytes): times are whole milliseconds since the memory was made and numbers count
/// modulo 2³², both compared by wrapping difference. The front, written so long ago that it
/// is out of the caches, is read as seldom as may be (see [`RecentIds::admit`]).
pub(crate) struct RecentIds {
    ascending: VecDeque<Remembered>,
    others: VecDeque<Remembered>,
    others_at: HashMap<u128, Millis, IdHash>,
    admitted: u32,
    /// `max_age`, as [`Ages::longest`].
    max_age: Millis,
    /// `max_ids`, at most 2³⁰: numbers compare by wrapping difference.
    max_ids: usize,
}

/// Milliseconds since the process first read the time for loop memory, modulo 2³² (see
/// [`Ages`]).
type Millis = u32;

/// A time for loop memory: read once per send (and only where loop detection is on), then
/// compared at every channel the send stores at, with no clock arithmetic there.
///
/// Never zero, so that the `Option<Moment>` a store is given fits four bytes, built and passed
/// whole in a register: a count of zero reads as one, a millisecond late (at the start and
/// every 49 days), which [`Ages`] allows for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moment(NonZeroU32);

impl Moment {
    /// Now.
    pub(crate) fn now() -> Moment {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        let epoch = *EPOCH.get_or_init(Instant::now);
        let since = Instant::now().saturating_duration_since(epoch);
        let millis = (since.as_secs() as Millis)
            .wrapping_mul(1000)
            .wrapping_add(since.subsec_millis());
        Moment(NonZeroU32::new(millis).unwrap_or(NonZeroU32::MIN))
    }
}

#[derive(Clone, Copy)]
struct Remembered {
    /// The id as a number (ordered as ids are, big-endian bytes), in two halves: with a `u128`
    /// the entry would be aligned, and so padded, to 32 bytes.
    key: [u64; 2],
    at: Millis,
    number: u32,
}

impl Remembered {
    fn key(&self) -> u128 {
        (u128::from(self.key[0]) << 64) | u128::from(self.key[1])
    }

    /// Whether it was admitted before `other`.
    fn before(&self, other: &Remembered) -> bool {
        (self.number.wrapping_sub(other.number) as i32) < 0
    }
}

fn key(id: MessageId) -> u128 {
    id.as_uuid().as_u128()
}

/// Ages in whole milliseconds, compared so that an id is never forgotten before `max_age`: an
/// age read as `max_age` rounded up may be up to a millisecond short of it, and one more if
/// the moment it was admitted at read a millisecond late ([`Moment`]), so only an age beyond
/// `max_age` rounded up plus one counts as old (an id is kept at most about three milliseconds
/// longer). Wrapping differences hold for ages up to 2³¹ ms (24 days), the longest `max_age`
/// honoured.
#[derive(Clone, Copy)]
struct Ages {
    now: Millis,
    max_age: Millis,
}

impl Ages {
    const LONGEST: Millis = (1 << 31) - 2;

    /// `max_age` in milliseconds, rounded up, plus the millisecond a [`Moment`] may be late:
    /// the age `young` allows.
    fn longest(max_age: Duration) -> Millis {
        let max_age = max_age.as_nanos().div_ceil(1_000_000) + 1;
        Millis::try_from(max_age).map_or(Ages::LONGEST, |m| m.min(Ages::LONGEST))
    }

    /// Whether an id admitted at `at` is still remembered. An `at` after `now` (another
    /// publish read the time later and admitted first) is young.
    fn young(&self, at: Millis) -> bool {
        (self.now.wrapping_sub(at) as i32) <= self.max_age as i32
    }
}

impl RecentIds {
    /// Admissions in order between two looks at the oldest id's age (a power of two).
    const AGE_STRIDE: u32 = 64;

    fn new(config: LoopDetection) -> Self {
        RecentIds {
            max_age: Ages::longest(config.max_age),
            max_ids: config.max_ids.clamp(1, 1 << 30),
            ascending: VecDeque::new(),
            others: VecDeque::new(),
            others_at: HashMap::with_hasher(IdHash),
            admitted: 0,
        }
    }

    /// Whether `id` may be stored now: true the first time (then it is remembered), false for
    /// an id remembered and not forgotten yet.
    // The common case (ids in order, one forgotten for one remembered) inlined where the
    // memory is consulted; the rest out of line.
    #[inline(always)]
    pub(crate) fn admit(&mut self, id: MessageId, now: Moment) -> bool {
        let ages = self.ages(now);
        if self.others.is_empty() {
            // Every id remembered came in order: forget from the front, and an id greater than
            // the last is new. The front was written up to `max_ids` admissions ago, long out
            // of the caches: a full ring forgets it unread, and its age is read only every
            // `AGE_STRIDE` admissions (see `forget_old_in_order`).
            if self.ascending.len() >= self.max_ids {
                self.ascending.pop_front();
            } else if self.admitted.is_multiple_of(RecentIds::AGE_STRIDE) {
                self.forget_old_in_order(ages);
            }
            let key = key(id);
            if self.ascending.back().is_none_or(|last| last.key() < key) {
                self.remember_newest(key, ages.now);
                return true;
            }
        }
        self.admit_any(id, ages)
    }

    /// Forgets the ids that are too old, while every id remembered came in order. Called
    /// every [`AGE_STRIDE`](Self::AGE_STRIDE) admissions only, so old ids may stay that much
    /// longer: they are never taken for remembered, as every lookup reads an id's age
    /// ([`admitted_at`](Self::admitted_at) after [`admit_any`](Self::admit_any) forgot the
    /// old, [`would_admit`](Self::would_admit)), and the count bound holds regardless.
    #[inline(never)]
    fn forget_old_in_order(&mut self, ages: Ages) {
        while self
            .ascending
            .front()
            .is_some_and(|oldest| !ages.young(oldest.at))
        {
            self.ascending.pop_front();
        }
    }

    /// [`admit`](Self::admit) for an id out of order, or with ids out of order remembered.
    #[inline(never)]
    fn admit_any(&mut self, id: MessageId, ages: Ages) -> bool {
        while let Some((oldest, in_ascending)) = self.oldest() {
            if self.len() < self.max_ids && ages.young(oldest) {
                break;
            }
            self.forget_oldest(in_ascending);
        }
        if self.admitted_at(id).is_none() {
            self.remember(id, ages.now);
            true
        } else {
            false
        }
    }

    /// Whether `id` would be admitted at `now`, remembering nothing.
    pub(crate) fn would_admit(&self, id: MessageId, now: Moment) -> bool {
        let ages = self.ages(now);
        self.admitted_at(id).is_none_or(|at| !ages.young(at))
    }

    fn ages(&self, now: Moment) -> Ages {
        Ages {
            now: now.0.get(),
            max_age: self.max_age,
        }
    }

    fn len(&self) -> usize {
        self.ascending.len() + self.others.len()
    }

    /// When the id admitted first was admitted, and whether it is in `ascending`.
    fn oldest(&self) -> Option<(Millis, bool)> {
        match (self.ascending.front(), self.others.front()) {
            (Some(a), Some(o)) if o.before(a) => Some((o.at, false)),
            (Some(a), _) => Some((a.at, true)),
            (None, Some(o)) => Some((o.at, false)),
            (None, None) => None,
        }
    }

    fn forget_oldest(&mut self, in_ascending: bool) {
        if in_ascending {
            self.ascending.pop_front();
        } else if let Some(old) = self.others.pop_front() {
            self.others_at.remove(&old.key());
        }
    }

    /// When `id` was admitted, if it is remembered. For an id greater than all in `ascending`
    /// (the common case) and no `others`, one comparison.
    fn admitted_at(&self, id: MessageId) -> Option<Millis> {
        let id = key(id);
        if self
            .ascending
            .back()
            .is_some_and(|newest| id <= newest.key())
            && let Ok(i) = self.ascending.binary_search_by(|r| r.key().cmp(&id))
        {
            return self.ascending.get(i).map(|r| r.at);
        }
        if self.others.is_empty() {
            return None;
        }
        self.others_at.get(&id).copied()
    }

    fn remember(&mut self, id: MessageId, at: Millis) {
        let id = key(id);
        if self.ascending.back().is_none_or(|newest| newest.key() < id) {
            self.remember_newest(id, at);
        } else {
            let remembered = self.next_entry(id, at);
            self.others.push_back(remembered);
            self.others_at.insert(id, at);
        }
    }

    /// Remembers `id`, known to be greater than every id in `ascending` (the common case: the
    /// caller compared it with the last already).
    #[inline]
    fn remember_newest(&mut self, id: u128, at: Millis) {
        let remembered = self.next_entry(id, at);
        self.ascending.push_back(remembered);
    }

    /// The entry for `id` admitted now, numbered.
    #[inline]
    fn next_entry(&mut self, id: u128, at: Millis) -> Remembered {
        let number = self.admitted;
        self.admitted = self.admitted.wrapping_add(1);
        Remembered {
            key: [(id >> 64) as u64, id as u64],
            at,
            number,
        }
    }
}

/// Hashes a message id (as its number) by folding its 8-byte halves. Ids are UUID v7, whose low bits are random
/// (eip's generator) or a counter: already spread, so SipHash would only cost time.
#[derive(Default, Clone, Copy)]
struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Mix once: a counter in the low bits would otherwise fill buckets in order.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }
}

/// A channel's memory of the ids it stored, switched on by the first join that touches it.
pub(crate) struct LoopGuard {
    config: LoopDetection,
    memory: Memory,
    duplicates: AtomicU64,
}

/// Where a guard keeps its memory.
enum Memory {
    /// Its own, under a lock of its own.
    Own(OnceLock<Mutex<RecentIds>>),
    /// In the channel's log, under the log's lock: a publish that appends there reads it
    /// under the lock it takes anyway ([`SharedLog::try_append_following`]).
    Log(Arc<SharedLog>),
}

impl LoopGuard {
    pub(crate) fn new(config: LoopDetection) -> Self {
        LoopGuard {
            config,
            memory: Memory::Own(OnceLock::new()),
            duplicates: AtomicU64::new(0),
        }
    }

    /// A guard whose memory `log` keeps.
    pub(crate) fn in_log(config: LoopDetection, log: Arc<SharedLog>) -> Self {
        LoopGuard {
            config,
            memory: Memory::Log(log),
            duplicates: AtomicU64::new(0),
        }
    }

    /// Starts remembering ids (idempotent).
    pub(crate) fn enable(&self) {
        match &self.memory {
            Memory::Own(recent) => {
                recent.get_or_init(|| Mutex::new(RecentIds::new(self.config)));
            }
            Memory::Log(log) => log.remember_ids(|| RecentIds::new(self.config)),
        }
    }

    /// Whether the guard remembers ids (a join has touched its channel).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        match &self.memory {
            Memory::Own(recent) => recent.get().is_some(),
            Memory::Log(log) => log.remembers_ids(),
        }
    }

    /// The time to check against, if the guard is on: senders read the clock only then.
    /// Inlined: asked on every send, where a guard is usually off.
    #[inline]
    pub(crate) fn clock(&self) -> Option<Moment> {
        self.is_on().then(Moment::now)
    }

    /// Whether `id` may be stored: true the first time (and remembers it), false for an id
    /// stored before and not yet forgotten (counted as a duplicate). Always true when off.
    pub(crate) fn admit(&self, id: MessageId, now: Moment) -> bool {
        let fresh = match &self.memory {
            Memory::Own(recent) => match recent.get() {
                Some(recent) => lock(recent).admit(id, now),
                None => true,
            },
            Memory::Log(log) => log.admit_id(id, now),
        };
        if !fresh {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
        }
        fresh
    }

    /// Whether `id` would be admitted now, without remembering it (for dry runs).
    pub(crate) fn would_admit(&self, id: MessageId) -> bool {
        match &self.memory {
            Memory::Own(recent) => recent
                .get()
                .is_none_or(|recent| lock(recent).would_admit(id, Moment::now())),
            Memory::Log(log) => log.would_admit_id(id, Moment::now()),
        }
    }

    /// Messages refused as duplicates, here and by the log keeping the memory.
    pub(crate) fn duplicates(&self) -> u64 {
        let own = self.duplicates.load(Ordering::Relaxed);
        match &self.memory {
            Memory::Own(_) => own,
            Memory::Log(log) => own + log.duplicates(),
        }
    }
}

#[cfg(test)]
mod tests;
