//! Browsing a store: a page of the messages waiting in it, shown and left where they are.
//!
//! [`MessageStore::browse`](super::MessageStore::browse) answers the messages waiting (not
//! those in flight: delivered and not yet settled), in the order they would be taken, from
//! the `offset`-th on, at most `limit` of them, with how many wait in all. With a selector,
//! only the messages it selects count and are shown (the offset and the total count those).
//! Browsing takes nothing: each message shown is a copy, and the store delivers it as if it
//! had not been looked at. A store whose messages live elsewhere (a broker's queue) answers
//! [`NotBrowsable`].

use crate::message::Message;

use super::Select;

/// A page of the messages waiting in a store.
#[derive(Debug, Clone, Default)]
pub struct Browse {
    /// How many messages wait (that the selector selects, if one was given), on this page or
    /// not.
    pub total: usize,
    /// The messages from the offset asked for on, at most as many as the limit, in the order
    /// they would be taken.
    pub messages: Vec<Message>,
}

/// A store that can not show the messages waiting in it from this process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not browsable: {reason}")]
pub struct NotBrowsable {
    /// Why, in a few words (where the messages are kept instead).
    pub reason: String,
}

/// Gathers a page while walking waiting messages in order: skips the first `offset`
/// selected, keeps the next `limit`, counts every selected one.
pub(crate) struct Pager<'a> {
    select: Option<&'a dyn Select>,
    offset: usize,
    limit: usize,
    page: Browse,
}

impl<'a> Pager<'a> {
    pub(crate) fn new(select: Option<&'a dyn Select>, offset: usize, limit: usize) -> Self {
        Pager {
            select,
            offset,
            limit,
            page: Browse::default(),
        }
    }

    /// Whether the page is full and no selector needs the rest counted: the caller may stop
    /// walking and set the total itself.
    pub(crate) fn is_done(&self) -> bool {
        self.select.is_none() && self.page.messages.len() >= self.limit
    }

    /// The next waiting message.
    pub(crate) fn see(&mut self, msg: &Message) {
        if self.select.is_some_and(|s| !s.selects(msg)) {
            return;
        }
        let at = self.page.total;
        self.page.total += 1;
        if at >= self.offset && self.page.messages.len() < self.limit {
            self.page.messages.push(msg.clone());
        }
    }

    /// Walks `waiting`, the messages held in memory (in order): passes over those it may
    /// skip, then sees each until the page is done.
    pub(crate) fn walk<'m>(&mut self, waiting: impl ExactSizeIterator<Item = &'m Message>) {
        let skip = self.skippable().min(waiting.len());
        self.skipped(skip);
        for msg in waiting.skip(skip) {
            if self.is_done() {
                return;
            }
            self.see(msg);
        }
    }

    /// How many messages (selected or not) the walk may skip without looking, from the
    /// start: the offset when there is no selector to count.
    pub(crate) fn skippable(&self) -> usize {
        match self.select {
            None => self.offset.saturating_sub(self.page.total),
            Some(_) => 0,
        }
    }

    /// Counts `n` messages skipped without looking (see [`skippable`](Self::skippable)).
    pub(crate) fn skipped(&mut self, n: usize) {
        self.page.total += n;
    }

    /// The page; without a selector, `waiting` is the total (the walk may have stopped
    /// early).
    pub(crate) fn finish(mut self, waiting: usize) -> Browse {
        if self.select.is_none() {
            self.page.total = waiting.max(self.page.total);
        }
        self.page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Even;
    impl Select for Even {
        fn selects(&self, msg: &Message) -> bool {
            msg.payload_str()
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|n| n % 2 == 0)
        }
    }

    fn walk(pager: &mut Pager<'_>, n: u32) {
        let messages: Vec<Message> = (0..n).map(|i| Message::new(i.to_string())).collect();
        pager.walk(messages.iter());
    }

    fn payloads(page: &Browse) -> Vec<String> {
        page.messages
            .iter()
            .filter_map(|m| m.payload_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn a_page_starts_at_the_offset_and_holds_at_most_the_limit() {
        let mut pager = Pager::new(None, 3, 2);
        walk(&mut pager, 10);
        let page = pager.finish(10);
        assert_eq!(page.total, 10);
        assert_eq!(payloads(&page), ["3", "4"]);
    }

    #[test]
    fn a_selector_pages_and_counts_only_what_it_selects() {
        let mut pager = Pager::new(Some(&Even), 1, 2);
        walk(&mut pager, 10);
        let page = pager.finish(10);
        assert_eq!(page.total, 5);
        assert_eq!(payloads(&page), ["2", "4"]);
    }

    #[test]
    fn a_page_past_the_end_is_empty_with_the_total() {
        let mut pager = Pager::new(None, 20, 5);
        walk(&mut pager, 4);
        let page = pager.finish(4);
        assert_eq!(page.total, 4);
        assert!(page.messages.is_empty());
    }
}
