//! The log's entries: how an append puts one at the head and how a reader passes them,
//! taking the front entry out when it is its last reader. Under the log's lock, on its state.

use std::collections::VecDeque;

use super::State;
use crate::message::Message;
use crate::store::TakeOne;

/// Puts `msg` in the log for its `readers` (none: it is gone at once).
#[inline(always)]
pub(super) fn put(state: &mut State, msg: Message, readers: u32) {
    if readers == 0 {
        state.base = state.head + 1;
        state.floor = state.head + 1;
    } else {
        state.entries.push_back(msg);
        state.unread.push_back(readers);
    }
    state.head += 1;
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
        match state.unread.front() {
            Some(1) if i == 0 => {
                state.unread.pop_front();
                if let Some(message) = state.entries.pop_front() {
                    state.base += 1;
                    into.push_back(message);
                }
            }
            _ => {
                if let (Some(unread), Some(message)) =
                    (state.unread.get_mut(i), state.entries.get(i))
                {
                    *unread -= 1;
                    into.push_back(message.clone());
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
pub(super) fn pass_first(state: &mut State, i: &mut usize) -> TakeOne {
    match state.unread.front() {
        Some(1) if *i == 0 => {
            state.unread.pop_front();
            let Some(message) = state.entries.pop_front() else {
                return TakeOne::Empty;
            };
            state.base += 1;
            TakeOne::Taken(message)
        }
        _ => {
            let (Some(unread), Some(message)) = (state.unread.get_mut(*i), state.entries.get(*i))
            else {
                return TakeOne::Empty;
            };
            *unread -= 1;
            *i += 1;
            TakeOne::Taken(message.clone())
        }
    }
}
