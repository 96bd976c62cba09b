//! One consistent set of bindings: what a message is routed against.
//!
//! Targets are numbered (slots) so the trie stores small integers: one entry per (binding,
//! target) pair, under the binding's key. A match yields slots, which are sorted and deduplicated
//! so each target gets a message once, however many of its bindings matched.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use super::binding::{Binding, BindingId, Change};
use crate::channel::Channel;
use crate::topic::{TopicPattern, TopicTrie};

#[derive(Clone, Default)]
pub(super) struct Table {
    trie: TopicTrie<u32>,
    bindings: BTreeMap<BindingId, Binding>,
    targets: Vec<Option<Target>>,
    slots: HashMap<String, u32>,
    free: Vec<u32>,
    pub(super) alternate: Option<Channel>,
    /// Counts the batches of changes applied: the generation match results are cached under.
    /// A copy keeps it, and its first change moves it past every result of the original.
    pub(super) generation: u64,
}

#[derive(Clone)]
struct Target {
    channel: Channel,
    /// How many bindings name it; the slot is freed at zero.
    bindings: usize,
}

/// What a keyless binding is stored under: `#` matches every subject the trie accepts.
fn match_all() -> &'static TopicPattern {
    static ALL: OnceLock<TopicPattern> = OnceLock::new();
    ALL.get_or_init(TopicPattern::match_all)
}

impl Table {
    pub(super) fn bindings(&self) -> &BTreeMap<BindingId, Binding> {
        &self.bindings
    }

    /// The slots of the targets whose bindings match `subject`, ascending, each once.
    pub(super) fn matching_slots(&self, subject: &str) -> Vec<u32> {
        self.trie.matches(subject)
    }

    pub(super) fn channel(&self, slot: u32) -> Option<&Channel> {
        self.targets
            .get(slot as usize)
            .and_then(Option::as_ref)
            .map(|t| &t.channel)
    }

    /// The first unbind in `changes` of a binding not in the table (or unbound twice).
    pub(super) fn first_unknown(&self, changes: &[Change]) -> Option<BindingId> {
        let mut seen = std::collections::HashSet::new();
        changes.iter().find_map(|c| match c {
            Change::Unbind(id) if !self.bindings.contains_key(id) || !seen.insert(*id) => Some(*id),
            _ => None,
        })
    }

    /// Applies checked changes (see [`first_unknown`](Self::first_unknown)), numbering new
    /// bindings from `next_id`. Returns the new bindings' ids and what the unbinds removed.
    pub(super) fn apply(
        &mut self,
        changes: Vec<Change>,
        next_id: &mut u64,
    ) -> (Vec<BindingId>, Vec<Binding>) {
        let (mut bound, mut unbound) = (Vec::new(), Vec::new());
        self.generation += 1;
        for change in changes {
            match change {
                Change::Bind(binding) => {
                    let id = BindingId(*next_id);
                    *next_id += 1;
                    let key = binding.key().unwrap_or(match_all()).clone();
                    for target in binding.targets() {
                        let slot = self.hold(target);
                        self.trie.insert(&key, slot);
                    }
                    self.bindings.insert(id, binding);
                    bound.push(id);
                }
                Change::Unbind(id) => {
                    let Some(binding) = self.bindings.remove(&id) else {
                        continue;
                    };
                    let key = binding.key().unwrap_or(match_all());
                    for target in binding.targets() {
                        if let Some(&slot) = self.slots.get(target.name()) {
                            self.trie.remove(key, &slot);
                            self.release(slot);
                        }
                    }
                    unbound.push(binding);
                }
                Change::Alternate(channel) => self.alternate = channel,
            }
        }
        (bound, unbound)
    }

    /// The slot of `channel`, taken for one more binding. A channel bound under a name already
    /// taken replaces the one held there: the name is the target.
    fn hold(&mut self, channel: &Channel) -> u32 {
        if let Some(&slot) = self.slots.get(channel.name())
            && let Some(Some(target)) = self.targets.get_mut(slot as usize)
        {
            target.channel = channel.clone();
            target.bindings += 1;
            return slot;
        }
        let target = Some(Target {
            channel: channel.clone(),
            bindings: 1,
        });
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(entry) = self.targets.get_mut(slot as usize) {
                    *entry = target;
                }
                slot
            }
            None => {
                self.targets.push(target);
                (self.targets.len() - 1) as u32
            }
        };
        self.slots.insert(channel.name().to_owned(), slot);
        slot
    }

    fn release(&mut self, slot: u32) {
        let Some(entry) = self.targets.get_mut(slot as usize) else {
            return;
        };
        if let Some(target) = entry {
            target.bindings -= 1;
            if target.bindings == 0 {
                self.slots.remove(target.channel.name());
                *entry = None;
                self.free.push(slot);
            }
        }
    }
}
