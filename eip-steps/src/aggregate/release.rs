//! Turning a group into its aggregate, and giving up an incomplete group.

use bytes::Bytes;
use eip_core::message::{Message, MessageId, names};
use tower::{Service, ServiceExt};

use super::config::{AggregatorConfig, Incomplete, Rule};
use super::dead_letter::{INCOMPLETE, INVALID, IncompleteGroup};
use super::group::Group;
use super::state::Shared;
use super::stats::Counters;

/// The aggregate of `messages` (already in aggregate order) for group `key`: a new id,
/// `correlation-id` = the key, the first message's other headers without its sequence headers,
/// and the combined payload.
pub(crate) fn aggregate(
    config: &AggregatorConfig,
    key: &str,
    messages: &[Message],
) -> Result<Message, String> {
    let payload = match &config.combine {
        Some(combine) => combine(messages)?,
        None => json_array(messages)?,
    };
    let mut headers = messages
        .first()
        .map(|m| m.headers().clone())
        .unwrap_or_default();
    for name in [&config.sequence_number, &config.sequence_size] {
        if let super::Key::Header(h) = name {
            headers.remove(h);
        }
    }
    headers.insert(names::CORRELATION_ID, key.to_owned());
    if config.combine.is_none() {
        headers.insert(names::CONTENT_TYPE, "application/json");
    }
    Ok(Message::from_parts(MessageId::new(), headers, payload))
}

/// The default combination: a JSON array of the payloads, each parsed as JSON.
fn json_array(messages: &[Message]) -> Result<Bytes, String> {
    let values = messages
        .iter()
        .map(|m| m.json_value().cloned().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    serde_json::to_vec(&values)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// Gives up `group`, which did not complete before `rule` (timeout, overflow or stop) struck:
/// it is released or dead-lettered as `incomplete` says. What can be neither is logged and
/// counted as lost.
pub(crate) async fn give_up<S>(
    config: &AggregatorConfig,
    counters: &Counters,
    group: Group,
    rule: Rule,
    incomplete: Incomplete,
    inner: S,
) where
    S: Service<Message>,
    S::Error: std::fmt::Display,
{
    counters.given_up(rule);
    let key = group.key().to_owned();
    let count = group.len();
    if incomplete == Incomplete::DeadLetter {
        let detail = format!("given up ({rule}) with {count} messages");
        dead_letter(
            config,
            counters,
            &key,
            INCOMPLETE,
            detail,
            group.into_messages(),
        )
        .await;
        return;
    }
    let messages = group.into_ordered_messages();
    let aggregate = match aggregate(config, &key, &messages) {
        Ok(m) => m,
        Err(reason) => {
            dead_letter(config, counters, &key, INVALID, reason, messages).await;
            return;
        }
    };
    match inner.oneshot(aggregate).await {
        Ok(_) => counters.released(),
        Err(e) => {
            let detail = format!("the aggregate was refused: {e}");
            dead_letter(config, counters, &key, INCOMPLETE, detail, messages).await;
        }
    }
}

/// [`give_up`] as configured for a timeout or an overflow, then the store forgets the group
/// (a durable one deletes it).
pub(crate) async fn give_up_and_forget<S>(shared: &Shared, group: Group, rule: Rule, inner: S)
where
    S: Service<Message>,
    S::Error: std::fmt::Display,
{
    give_up_as_and_forget(shared, group, rule, shared.config.incomplete, inner).await;
}

/// [`give_up`] as `incomplete` says, then the store forgets the group.
pub(crate) async fn give_up_as_and_forget<S>(
    shared: &Shared,
    group: Group,
    rule: Rule,
    incomplete: Incomplete,
    inner: S,
) where
    S: Service<Message>,
    S::Error: std::fmt::Display,
{
    let key = group.shared_key();
    let ids: Vec<MessageId> = group.messages().iter().map(Message::id).collect();
    let (config, counters) = (&shared.config, &shared.counters);
    give_up(config, counters, group, rule, incomplete, inner).await;
    forget(shared, &key, &ids).await;
}

/// The store forgets the group `key` of `ids`, its aggregate accepted or its messages
/// dead-lettered. A store that can not is logged: after a restart it would hold the group
/// again, and send its aggregate a second time.
pub(crate) async fn forget(shared: &Shared, key: &str, ids: &[MessageId]) {
    let Some(keeping) = shared.keep_removed(key, ids) else {
        return;
    };
    if let Err(error) = keeping.await {
        tracing::error!(
            group = %eip_core::log::escape(key),
            %error,
            "aggregator: the store could not forget a group that was sent on; after a restart \
             it would be sent again"
        );
    }
}

/// Hands `messages` to the dead letters; logs and counts what nothing took.
pub(crate) async fn dead_letter(
    config: &AggregatorConfig,
    counters: &Counters,
    key: &str,
    reason: &'static str,
    detail: String,
    messages: Vec<Message>,
) {
    let count = messages.len();
    let refused = match &config.dead_letters {
        None => messages,
        Some(dl) => {
            let group = IncompleteGroup {
                key: key.to_owned(),
                reason,
                detail: detail.clone(),
                messages,
            };
            dl.deliver(group).await
        }
    };
    counters.dead_lettered(count.saturating_sub(refused.len()), refused.len());
    if !refused.is_empty() {
        tracing::error!(
            group = %eip_core::log::escape(key),
            lost = refused.len(),
            "aggregator: {reason}: {detail}; no dead letter destination took the messages"
        );
    }
}
