//! The groups an aggregator holds, and the store they live in.
//!
//! A [`Group`] is the messages that share a correlation key, with the sequence numbers they
//! carry and the time the first one arrived. A [`GroupStore`] keeps the open groups. Each change
//! of state is one call (`add` a part, `remove` a group), so a durable store can make each one
//! atomic with the acknowledgement of the message that caused it ("ack the input and add it to
//! its group in one commit"; "remove the group once its aggregate was accepted").
//! [`InMemoryGroups`] is the store for in-memory routes.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use eip_core::message::{Message, MessageId};

use crate::Keeping;
use tokio::time::Instant;

use super::config::Rule;
use super::decision::Refusal;

/// A message on its way into a group, with the sequence headers it carries.
#[derive(Debug, Clone)]
pub struct Part {
    /// The message.
    pub message: Message,
    /// Its sequence number (1-based), if it carries one.
    pub number: Option<u64>,
    /// The size of the sequence it belongs to, if it carries one.
    pub size: Option<u64>,
}

/// The messages of one correlation key, in arrival order.
#[derive(Debug, Clone)]
pub struct Group {
    key: Arc<str>,
    opened: Instant,
    /// A store-wide counter at opening: orders groups opened at the same instant.
    order: u64,
    messages: Vec<Message>,
    /// The sequence numbers of the numbered messages, in arrival order (all of them are
    /// numbered when it is as long as `messages`).
    message_numbers: Vec<u64>,
    numbers: HashSet<u64>,
    size: Option<u64>,
}

impl Group {
    /// An empty group for `key`, opened at `opened`.
    pub fn new(key: impl Into<Arc<str>>, opened: Instant, order: u64) -> Self {
        Group {
            key: key.into(),
            opened,
            order,
            messages: Vec::new(),
            message_numbers: Vec::new(),
            numbers: HashSet::new(),
            size: None,
        }
    }

    /// Adds a part (the caller has checked it is no duplicate: see `Aggregator::peek`).
    pub fn push(&mut self, part: Part) {
        if let Some(n) = part.number {
            self.numbers.insert(n);
            self.message_numbers.push(n);
        }
        if self.size.is_none() {
            self.size = part.size;
        }
        self.messages.push(part.message);
    }

    /// The correlation key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The correlation key, shared.
    pub fn shared_key(&self) -> Arc<str> {
        self.key.clone()
    }

    /// When its first message arrived.
    pub fn opened(&self) -> Instant {
        self.opened
    }

    /// The messages, in arrival order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, in arrival order.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The messages in the order an aggregate lists them: by sequence number when every one
    /// carries a number, otherwise in arrival order.
    pub fn into_ordered_messages(self) -> Vec<Message> {
        if self.message_numbers.len() != self.messages.len() {
            return self.messages;
        }
        let mut numbered: Vec<(u64, Message)> = self
            .message_numbers
            .into_iter()
            .zip(self.messages)
            .collect();
        numbered.sort_by_key(|(n, _)| *n);
        numbered.into_iter().map(|(_, m)| m).collect()
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The sequence size, once a part carried it.
    pub fn sequence_size(&self) -> Option<u64> {
        self.size
    }

    /// Whether a part with sequence number `n` is in the group.
    pub fn has_number(&self, n: u64) -> bool {
        self.numbers.contains(&n)
    }

    /// The largest sequence number in the group.
    pub fn max_number(&self) -> Option<u64> {
        self.numbers.iter().copied().max()
    }

    /// Whether every part of the sequence is here: the size is known and each number from 1 to
    /// the size is present (numbers are checked to lie in that range on the way in).
    pub fn has_all_parts(&self) -> bool {
        self.size
            .is_some_and(|size| u64::try_from(self.numbers.len()).is_ok_and(|n| n == size))
    }
}

/// What a store asks of the aggregator while it adds a part.
pub trait GroupRules {
    /// Whether `part` may join `group` (`None`: it would open a new one).
    fn admit(&self, group: Option<&Group>, part: &Part) -> Result<(), Refusal>;

    /// The rule that completes `group` as it is now, if any.
    fn completion(&self, group: &Group) -> Option<Rule>;

    /// How many messages a new group will likely hold (room is made for them at once).
    fn expected_len(&self) -> usize {
        0
    }
}

/// How a group stands after a part was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// How many messages it holds.
    pub count: usize,
    /// The rule that completes it now, if any.
    pub rule: Option<Rule>,
}

/// Where an aggregator keeps its open groups. Each method that changes state is one change a
/// durable store makes atomic with the acknowledgement of the message behind it.
pub trait GroupStore: Send + 'static {
    /// The open group of `key`.
    fn group(&self, key: &str) -> Option<&Group>;

    /// Adds `part` to the group of `key` if `rules` admit it (given the group, or `None` when
    /// the part would open one), opening the group at `now()` if there is none. Returns how
    /// the group stands, or the refusal with the part (boxed: it is the rare case).
    fn add(
        &mut self,
        key: &str,
        part: Part,
        now: &dyn Fn() -> Instant,
        rules: &dyn GroupRules,
    ) -> Result<Added, Box<(Refusal, Part)>>;

    /// Takes the group of `key` out of the store (its aggregate was sent, or it was given up).
    /// With `close`, the key is remembered as closed: a split whose every part arrived, so a
    /// late copy of one of its parts is a duplicate, not the start of a new group.
    fn remove(&mut self, key: &str, close: bool) -> Option<Group>;

    /// Whether `key` was closed (a store remembers a bounded number of closed keys).
    fn is_closed(&self, key: &str) -> bool;

    /// The number of open groups.
    fn len(&self) -> usize;

    /// Whether no group is open.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key of the group opened first, and when.
    fn oldest(&self) -> Option<(&str, Instant)>;

    /// Makes lasting that `message` joined the group of `key` and is held there, before the
    /// message's call completes: a durable store writes it, with the message's
    /// acknowledgement, in one commit. `None` (the default): nothing to wait for.
    fn keep_added(&self, key: &str, message: &Message) -> Option<Keeping> {
        let _ = (key, message);
        None
    }

    /// Makes lasting that the group of `key` is gone, once its aggregate was accepted (or the
    /// group was given up and went to the dead letters): a durable store deletes its messages
    /// (`messages`, the whole group) in one commit, with the acknowledgement of the one whose
    /// call is still under way. `None` (the default): nothing to wait for.
    fn keep_removed(&self, key: &str, messages: &[MessageId]) -> Option<Keeping> {
        let _ = (key, messages);
        None
    }
}

/// Open groups in memory: a hash map by key, and an index by opening time for timeouts and
/// for the bound on open groups.
#[derive(Debug)]
pub struct InMemoryGroups {
    groups: HashMap<String, Group>,
    by_age: BTreeMap<(Instant, u64), Arc<str>>,
    opened: u64,
    closed: HashSet<String>,
    closed_order: VecDeque<String>,
    closed_capacity: usize,
}

impl Default for InMemoryGroups {
    fn default() -> Self {
        InMemoryGroups::with_closed_capacity(10_000)
    }
}

impl InMemoryGroups {
    /// An empty store that remembers the last 10 000 closed keys.
    pub fn new() -> Self {
        InMemoryGroups::default()
    }

    /// An empty store that remembers the last `capacity` closed keys.
    pub fn with_closed_capacity(capacity: usize) -> Self {
        InMemoryGroups {
            groups: HashMap::new(),
            by_age: BTreeMap::new(),
            opened: 0,
            closed: HashSet::new(),
            closed_order: VecDeque::new(),
            closed_capacity: capacity,
        }
    }

    fn close(&mut self, key: &str) {
        if self.closed_capacity == 0 || !self.closed.insert(key.to_owned()) {
            return;
        }
        self.closed_order.push_back(key.to_owned());
        while self.closed_order.len() > self.closed_capacity {
            if let Some(old) = self.closed_order.pop_front() {
                self.closed.remove(&old);
            }
        }
    }
}

impl GroupStore for InMemoryGroups {
    fn group(&self, key: &str) -> Option<&Group> {
        self.groups.get(key)
    }

    fn add(
        &mut self,
        key: &str,
        part: Part,
        now: &dyn Fn() -> Instant,
        rules: &dyn GroupRules,
    ) -> Result<Added, Box<(Refusal, Part)>> {
        if let Some(group) = self.groups.get_mut(key) {
            if let Err(refusal) = rules.admit(Some(group), &part) {
                return Err(Box::new((refusal, part)));
            }
            group.push(part);
            return Ok(Added {
                count: group.len(),
                rule: rules.completion(group),
            });
        }
        if let Err(refusal) = rules.admit(None, &part) {
            return Err(Box::new((refusal, part)));
        }
        self.opened += 1;
        let opened = now();
        let shared: Arc<str> = Arc::from(key);
        self.by_age.insert((opened, self.opened), shared.clone());
        let mut group = Group::new(shared, opened, self.opened);
        group.messages.reserve(rules.expected_len());
        group.push(part);
        let added = Added {
            count: 1,
            rule: rules.completion(&group),
        };
        self.groups.insert(key.to_owned(), group);
        Ok(added)
    }

    fn remove(&mut self, key: &str, close: bool) -> Option<Group> {
        let group = self.groups.remove(key)?;
        self.by_age.remove(&(group.opened, group.order));
        if close {
            self.close(key);
        }
        Some(group)
    }

    fn is_closed(&self, key: &str) -> bool {
        self.closed.contains(key)
    }

    fn len(&self) -> usize {
        self.groups.len()
    }

    fn oldest(&self) -> Option<(&str, Instant)> {
        self.by_age
            .iter()
            .next()
            .map(|((at, _), key)| (&**key, *at))
    }
}
