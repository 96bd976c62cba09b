//! Browsing what waits on a channel: `GET /api/channels/{name}/messages?offset=0&limit=50`.
//!
//! The answer is a page of the messages waiting, in the order they will be delivered,
//! without taking them (see [`eip_core::channel::browse`]): a point-to-point channel's in
//! `messages`, with `total` the number waiting; a publish-subscribe channel's per
//! subscription in `subscriptions` (a durable one with its name), `total` then adding theirs
//! up. Messages delivered and not yet settled are not shown. A channel kept in a broker
//! answers 409: the broker shows its queues itself.
//!
//! Each message is shown as an envelope, the JSON object `eip`'s file adapter writes with
//! `format: envelope` ([`envelope_line`]): its `id`, its `headers` (the death record aside),
//! its `death` record (`null` for a message that did not die) and its `payload` (the JSON
//! value when it is JSON, else the text, else `{"hex": "..."}`). Browsing changes nothing: it
//! needs the token only where every read does.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use eip_adapters::file::envelope_line;
use eip_core::Message;
use eip_core::channel::Channel;
use eip_core::channel::browse::{Browse, NotBrowsable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api::{Admin, unknown};
use super::changes::{Refusal, refusal};
use crate::compile::ChannelStore;

/// How many messages a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 50;

/// The most messages one page holds.
pub const MAX_LIMIT: usize = 1000;

/// Which page: `?offset=0&limit=50`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paging {
    /// How many waiting messages to pass over first (0 unless given).
    #[serde(default)]
    pub offset: usize,
    /// The most messages to show ([`DEFAULT_LIMIT`] unless given; at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
}

/// `GET /api/channels/{name}/messages`: a page of what waits on the channel.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelMessages {
    /// The channel.
    pub channel: String,
    /// `point-to-point` or `publish-subscribe`.
    pub kind: &'static str,
    /// The offset asked for.
    pub offset: usize,
    /// The limit applied.
    pub limit: usize,
    /// How many messages wait (for a publish-subscribe channel: in all its subscriptions).
    pub total: usize,
    /// A point-to-point channel's page, as envelopes; empty for a publish-subscribe one.
    pub messages: Vec<Value>,
    /// A publish-subscribe channel's page of each subscription; empty for a point-to-point
    /// one.
    pub subscriptions: Vec<SubscriptionMessages>,
}

/// One subscription's page.
#[derive(Debug, Clone, Serialize)]
pub struct SubscriptionMessages {
    /// The durable subscription's name (a route's name, for `eip run`); `null` for one that
    /// ends with its subscriber.
    pub name: Option<String>,
    /// How many messages wait for it.
    pub total: usize,
    /// Its page, as envelopes.
    pub messages: Vec<Value>,
}

/// A message as the admin API shows it: its envelope with every key present (`death` `null`
/// for a message that did not die, a death record's `error` `null` when it has none), and a
/// payload that is neither JSON nor text as `{"hex": "..."}` in `payload`.
pub fn envelope(msg: &Message) -> Value {
    let mut envelope = envelope_line(msg);
    if let Value::Object(fields) = &mut envelope {
        let death = fields.entry("death").or_insert(Value::Null);
        if let Value::Object(death) = death {
            death.entry("error").or_insert(Value::Null);
        }
        if let Some(hex) = fields.remove("payload-hex") {
            fields.insert("payload".to_owned(), serde_json::json!({ "hex": hex }));
        }
    }
    envelope
}

/// The paging asked for, or 400 saying what is wrong with it.
pub(super) fn paging<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Refusal> {
    query
        .map(|Query(q)| q)
        .map_err(|e| refusal(StatusCode::BAD_REQUEST, e.body_text()))
}

/// The limit a page applies.
pub(super) fn limit(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT)
}

/// The channel `name` of the flow and where it keeps its messages, or 404.
pub(super) fn channel(admin: &Admin, name: &str) -> Result<(Channel, ChannelStore), Refusal> {
    let channels = admin.view.channels();
    channels
        .iter()
        .find(|(c, _)| c.name() == name)
        .cloned()
        .ok_or_else(|| unknown("channel", name, channels.iter().map(|(c, _)| c.name())))
}

/// The 409 of a store that can not be browsed from here, saying where its messages are.
pub(super) fn not_browsable(name: &str, store: &ChannelStore, why: NotBrowsable) -> Refusal {
    let error = match store {
        ChannelStore::Broker(place) => {
            format!("not browsable: `{name}` is kept in {place}; browse it there")
        }
        _ => format!("`{name}` is {why}"),
    };
    refusal(StatusCode::CONFLICT, error)
}

pub(super) async fn list(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
    query: Result<Query<Paging>, QueryRejection>,
) -> Result<Json<ChannelMessages>, Refusal> {
    let paging = paging(query)?;
    let (channel, store) = channel(&admin, &name)?;
    let limit = limit(paging.limit);
    let offset = paging.offset;
    let browsed =
        |page: Result<Browse, NotBrowsable>| page.map_err(|why| not_browsable(&name, &store, why));
    let mut answer = ChannelMessages {
        channel: name.clone(),
        kind: "point-to-point",
        offset,
        limit,
        total: 0,
        messages: Vec::new(),
        subscriptions: Vec::new(),
    };
    match &channel {
        Channel::PointToPoint(c) => {
            let page = browsed(c.browse(None, offset, limit))?;
            answer.total = page.total;
            answer.messages = page.messages.iter().map(envelope).collect();
        }
        Channel::PublishSubscribe(c) => {
            answer.kind = "publish-subscribe";
            for subscription in c.browse(None, offset, limit) {
                let page = browsed(subscription.page)?;
                answer.total += page.total;
                answer.subscriptions.push(SubscriptionMessages {
                    name: subscription.name,
                    total: page.total,
                    messages: page.messages.iter().map(envelope).collect(),
                });
            }
        }
    }
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use eip_core::message::{DeathReason, DeathRecord};
    use serde_json::json;

    use super::*;

    #[test]
    fn an_envelope_has_every_key_whatever_the_message() {
        let mut dead = Message::new(r#"{"total": 5}"#);
        dead.set_death(&DeathRecord::new("orders", DeathReason::Expired, None));
        let shown = envelope(&dead);
        assert_eq!(shown["id"], dead.id().to_string());
        assert_eq!(shown["payload"], json!({"total": 5}));
        assert_eq!(shown["death"]["channel"], "orders");
        assert_eq!(shown["death"]["error"], Value::Null);
        assert!(shown["headers"].get("death").is_none());

        let bytes = envelope(&Message::new(vec![0xff_u8, 0x00]));
        assert_eq!(bytes["payload"], json!({"hex": "ff00"}));
        assert_eq!(bytes["death"], Value::Null);
        assert!(bytes.get("payload-hex").is_none());
    }
}
