//! Stopping an aggregator: what becomes of the groups still open when its flow shuts down.

use std::fmt;

use eip_core::message::{Message, MessageId};
use tower::Service;

use super::config::{Incomplete, OnStop, Rule};
use super::release::{forget, give_up_as_and_forget};
use super::service::Aggregator;

/// What [`Aggregator::stop`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// What became of the open groups.
    pub action: OnStop,
    /// How many groups were open.
    pub groups: usize,
    /// How many messages they held (not counted for [`OnStop::Keep`], which leaves them be).
    pub messages: usize,
}

impl Stopped {
    /// Whether it handed on or gave up anything: some group was open, and not kept.
    pub fn acted(&self) -> bool {
        self.groups > 0 && self.action != OnStop::Keep
    }
}

impl fmt::Display for Stopped {
    /// `2 open groups released (3 messages)`, `1 open group kept`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups = counted(self.groups, "open group");
        match self.action {
            OnStop::Keep => write!(f, "{groups} {}", self.action),
            _ => write!(
                f,
                "{groups} {} ({})",
                self.action,
                counted(self.messages, "message")
            ),
        }
    }
}

/// `1 message`, `3 messages`.
fn counted(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

impl<S> Aggregator<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    /// Handles every open group as the configured [`OnStop`] says; completes once each release
    /// was taken, or each dead letter handed over.
    ///
    /// Groups no rule completed yet are still open when the flow stops. Kept in memory only, they
    /// would end with the process and their messages with them, without a word; so the owner of
    /// the aggregator calls [`Aggregator::stop`] once nothing more comes in, and every open group
    /// is handled as the configured [`OnStop`] says: released as it is (the default, as Camel's
    /// `forceCompletionOnStop` does), handed to the dead letters with reason `incomplete`,
    /// dropped (counted and logged), or kept in the store, which a durable one gives back at the
    /// next start. The groups are handled oldest first, one at a time, each release waiting until
    /// the inner service took it. The aggregator goes on working afterwards: a message that comes
    /// later opens a new group, which a second `stop` handles the same way.
    pub async fn stop(&self) -> Stopped {
        let shared = &self.shared;
        let action = shared.config.on_stop;
        if action == OnStop::Keep {
            let groups = shared.open_groups();
            return Stopped {
                action,
                groups,
                messages: 0,
            };
        }
        let groups = shared.take_all();
        let mut stopped = Stopped {
            action,
            groups: groups.len(),
            messages: 0,
        };
        for group in groups {
            stopped.messages += group.len();
            let incomplete = match action {
                OnStop::Release => Incomplete::Release,
                OnStop::DeadLetter => Incomplete::DeadLetter,
                OnStop::Drop | OnStop::Keep => {
                    let key = group.shared_key();
                    let ids: Vec<MessageId> = group.messages().iter().map(Message::id).collect();
                    shared.counters.dropped(ids.len());
                    tracing::warn!(
                        group = %eip_core::log::escape(&key),
                        messages = ids.len(),
                        "aggregator stopped: an open group was dropped"
                    );
                    forget(shared, &key, &ids).await;
                    continue;
                }
            };
            let inner = self.inner.clone();
            give_up_as_and_forget(shared, group, Rule::Stop, incomplete, inner).await;
        }
        stopped
    }
}
