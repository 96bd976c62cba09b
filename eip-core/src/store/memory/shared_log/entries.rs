//! The log's entries: how an append puts one at the head and how a reader passes them,
//! taking the front entry out when it is its last reader. Under the log's lock, on its state.

use std::collections::VecDeque;

use super::State;
use crate::message::Message;

pub(super) struct Entry {
    pub(super) message: Message,
    /// Subscriptions that have not read it. Never decreases along the log (a subscription
    /// reads in order and detaches reading everything), so the read entries are a prefix.
    pub(super) unread: u32,
}

impl Entry {
    /// An entry of a copy of `msg`, its reader count to be set. Out of line: the copy is then
    /// made where the entry is, not moved there as soon as it is made (a move that would wait
    /// for the copy's writes).
    #[inline(never)]
    pub(super) fn of(msg: &Message) -> Entry {
        Entry {
            message: msg.clone(),
            unread: 0,
        }
    }
}

/// Appends `entry` for `readers` subscriptions (none: it is gone at once). The reader count
/// is written where the entry lands, not before it is moved there: a move reading what was
/// just written would wait for the write.
#[inline(always)]
pub(super) fn put_entry(state: &mut State, entry: Entry, readers: u32) {
    if readers == 0 {
        state.base = state.head + 1;
        state.floor = state.head + 1;
    } else {
        state.entries.push_back(entry);
        if let Some(last) = state.entries.back_mut() {
            last.unread = readers;
        }
    }
    state.head += 1;
}

/// Puts `msg` in the log for its `readers` (none: it is gone at once).
#[inline(always)]
pub(super) fn put(state: &mut State, msg: Message, readers: u32) {
    let entry = Entry {
        message: msg,
        unread: 0,
    };
    put_entry(state, entry, readers);
}

pub(super) fn read_locked(
    state: &mut State,
    cursor: &mut u64,
    max: usize,
    into: &mut VecDeque<Message>,
) -> usize {
    let unread = usize::try_from(state.head.saturating_sub(*cursor)).unwrap_or(usize::MAX);
    let n = unread.min(max);
    let mut i = index_of(state, *cursor);
    // `pass` written out: through its `Option`, a read of many cost a tenth more.
    for _ in 0..n {
        match state.entries.front() {
            Some(front) if i == 0 && front.unread == 1 => {
                if let Some(entry) = state.entries.pop_front() {
                    state.base += 1;
                    into.push_back(entry.message);
                }
            }
            _ => {
                if let Some(entry) = state.entries.get_mut(i) {
                    entry.unread -= 1;
                    into.push_back(entry.message.clone());
                }
                i += 1;
            }
        }
    }
    *cursor += n as u64;
    n
}

/// Where the reader at `cursor` is among the entries.
#[inline]
pub(super) fn index_of(state: &State, cursor: u64) -> usize {
    // An entry leaves only once every reader passed it, so a cursor is never behind `base`.
    debug_assert!(
        cursor >= state.base,
        "a reader's cursor fell behind the log"
    );
    usize::try_from(cursor.saturating_sub(state.base)).unwrap_or(usize::MAX)
}

/// A reader passes the entry at `i`: its copy, taken out rather than cloned if it is the front
/// entry's last reader (then the next entry is at `i` again).
// Out of line: measured faster for a subscriber's take straight from the log (a chain of ten
// joins, two to three per cent), where inlined the message is staged on the stack.
#[inline(never)]
pub(super) fn pass(state: &mut State, i: &mut usize) -> Option<Message> {
    match state.entries.front() {
        Some(front) if *i == 0 && front.unread == 1 => {
            let entry = state.entries.pop_front()?;
            state.base += 1;
            Some(entry.message)
        }
        _ => {
            let entry = state.entries.get_mut(*i)?;
            entry.unread -= 1;
            *i += 1;
            Some(entry.message.clone())
        }
    }
}
