//! Dead letters: browsed with their death records, replayed to the channel each died on
//! keeping its id, or deleted.
//!
//! - `GET /api/dead-letters?offset=0&limit=50[&when=PREDICATE]`: a page of the dead letters
//!   waiting, as envelopes (see [`browse`](super::browse)) with their `death` records; with
//!   `when`, only those the predicate selects (`total` counts those).
//! - `POST /api/dead-letters/replay` with `{"ids": [...]}`, `{"when": "..."}` or `{"all":
//!   true}`: each selected dead letter is sent back to the channel its death record names,
//!   with the same id, its `redelivery-count` removed and the header `replayed` counting its
//!   replays ([`REPLAYED`]); it leaves the dead letter channel once that channel accepted it.
//!   Answered `{"replayed": [{"id", "channel", "invalid"}], "failed": [{"id", "reason"}]}`; a
//!   failed one stays where it was (see [`eip_core::bus::replay`](MessageBus::replay_dead_letters)).
//! - `POST /api/dead-letters/delete` with the same bodies: `{"deleted": N}`; and `DELETE
//!   /api/dead-letters/{id}`. What is deleted is gone.
//!
//! Every request may name another dead letter channel of the flow than `dead-letters`
//! (`?channel=` or `"channel"`): a point-to-point channel a channel names as its
//! `dead-letter:`, or an invalid message channel. In a predicate the death record reads as
//! headers: `header("death-channel")`, `header("death-reason")`, `header("death-error")`,
//! `header("death-count")`.
//!
//! Replaying and deleting change the flow: they need the server's token and are written to
//! standard error. An id that waits nowhere is a 404, a predicate that does not parse a 400
//! giving the byte where it went wrong.

use std::collections::HashSet;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use eip_core::MessageBus;
use eip_core::bus::{DEAD_LETTERS, REPLAYED, Which};
use eip_core::channel::{Channel, PointToPoint, Selector};
use eip_core::message::{Message, MessageId};
use eip_core::predicate::Predicate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api::Admin;
use super::browse::{channel, envelope, limit, not_browsable, paging};
use super::changes::{Refusal, allowed, audit, body, refusal};
use crate::compile::ChannelStore;

/// `GET /api/dead-letters`' query.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterQuery {
    /// How many (selected) dead letters to pass over first.
    #[serde(default)]
    pub offset: usize,
    /// The most to show (50 unless given, at most 1000).
    pub limit: Option<usize>,
    /// Only those this predicate selects.
    pub when: Option<String>,
    /// The dead letter channel (`dead-letters` unless given).
    pub channel: Option<String>,
}

/// `GET /api/dead-letters`: a page of the dead letters waiting.
#[derive(Debug, Clone, Serialize)]
pub struct DeadLetters {
    /// The dead letter channel.
    pub channel: String,
    /// The offset asked for.
    pub offset: usize,
    /// The limit applied.
    pub limit: usize,
    /// How many wait (that `when` selects, if given).
    pub total: usize,
    /// The page, as envelopes with their death records.
    pub messages: Vec<Value>,
}

/// The body of a replay or a deletion: exactly one of `ids`, `when` and `all`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    /// These dead letters, by id.
    pub ids: Option<Vec<String>>,
    /// Those this predicate selects.
    pub when: Option<String>,
    /// Every one (`true`).
    pub all: Option<bool>,
    /// The dead letter channel (`dead-letters` unless given).
    pub channel: Option<String>,
}

/// What a replay did.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayAnswer {
    /// The dead letters replayed.
    pub replayed: Vec<ReplayedInfo>,
    /// Those not replayed, left where they were.
    pub failed: Vec<FailedInfo>,
}

/// A dead letter replayed.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayedInfo {
    /// Its id, which the replayed message keeps.
    pub id: String,
    /// The channel it went back to.
    pub channel: String,
    /// Why it did not fit that channel's datatype (it went on to the invalid message
    /// channel); `null` when it was stored.
    pub invalid: Option<String>,
}

/// A dead letter not replayed.
#[derive(Debug, Clone, Serialize)]
pub struct FailedInfo {
    /// Its id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// What a deletion removed.
#[derive(Debug, Clone, Serialize)]
pub struct Deleted {
    /// How many dead letters.
    pub deleted: u64,
}

/// The dead letter channel `name` (`dead-letters` without one): a point-to-point channel
/// of the flow, else 404 or 400.
fn dead_letter_channel(
    admin: &Admin,
    name: Option<&str>,
) -> Result<(PointToPoint, ChannelStore), Refusal> {
    let name = name.unwrap_or(DEAD_LETTERS);
    match channel(admin, name)? {
        (Channel::PointToPoint(c), store) => Ok((c, store)),
        (Channel::PublishSubscribe(_), _) => Err(refusal(
            StatusCode::BAD_REQUEST,
            format!("`{name}` is a publish-subscribe channel, not a dead letter channel"),
        )),
    }
}

/// The predicate `text` as a selector over dead letters (their death record read as
/// headers), or 400 saying where it went wrong.
fn selector(text: &str) -> Result<Selector, Refusal> {
    let predicate = Predicate::parse(text)
        .map_err(|e| refusal(StatusCode::BAD_REQUEST, format!("`when`: {e}")))?;
    Ok(Selector::new(text, move |m: &Message| {
        predicate.matches(&with_death_headers(m))
    }))
}

/// `msg` with its death record's fields as headers, for a predicate to read.
fn with_death_headers(msg: &Message) -> Message {
    let mut msg = msg.clone();
    if let Ok(Some(death)) = msg.death() {
        let headers = msg.headers_mut();
        headers.insert("death-channel", death.channel);
        headers.insert("death-reason", death.reason.as_str());
        headers.insert("death-count", i64::from(death.count));
        if let Some(error) = death.error {
            headers.insert("death-error", error);
        }
    }
    msg
}

/// What `selection` selects, in words for the audit line, or 400.
fn which(selection: &Selection) -> Result<(Which, String), Refusal> {
    let exactly_one = "say which dead letters: exactly one of `ids` (a list of message ids), \
                       `when` (a predicate) and `all` (true)";
    match (&selection.ids, &selection.when, selection.all) {
        (Some(ids), None, None) if ids.is_empty() => Err(refusal(
            StatusCode::BAD_REQUEST,
            "`ids` is empty: list the dead letters' message ids",
        )),
        (Some(ids), None, None) => {
            let parsed = ids
                .iter()
                .map(|id| {
                    id.parse::<MessageId>().map_err(|e| {
                        refusal(
                            StatusCode::BAD_REQUEST,
                            format!("`{id}` is not a message id: {e}"),
                        )
                    })
                })
                .collect::<Result<HashSet<_>, _>>()?;
            Ok((Which::Ids(parsed), format!("ids {}", ids.join(", "))))
        }
        (None, Some(when), None) => {
            Ok((Which::Matching(selector(when)?), format!("matching {when}")))
        }
        (None, None, Some(true)) => Ok((Which::All, "all".to_owned())),
        (None, None, Some(false)) => Err(refusal(
            StatusCode::BAD_REQUEST,
            "`all` must be true; to select some dead letters, send `ids` or `when` instead",
        )),
        _ => Err(refusal(StatusCode::BAD_REQUEST, exactly_one)),
    }
}

pub(super) async fn list(
    State(admin): State<Arc<Admin>>,
    query: Result<Query<DeadLetterQuery>, QueryRejection>,
) -> Result<Json<DeadLetters>, Refusal> {
    let query = paging(query)?;
    let (channel, store) = dead_letter_channel(&admin, query.channel.as_deref())?;
    let selector = query.when.as_deref().map(selector).transpose()?;
    let limit = limit(query.limit);
    let page = channel
        .browse(selector.as_ref(), query.offset, limit)
        .map_err(|why| not_browsable(channel.name(), &store, why))?;
    Ok(Json(DeadLetters {
        channel: channel.name().to_owned(),
        offset: query.offset,
        limit,
        total: page.total,
        messages: page.messages.iter().map(envelope).collect(),
    }))
}

pub(super) async fn replay(
    State(admin): State<Arc<Admin>>,
    selection: Result<Json<Selection>, JsonRejection>,
) -> Result<Json<ReplayAnswer>, Refusal> {
    allowed(&admin)?;
    let selection = body(selection)?;
    let (channel, _) = dead_letter_channel(&admin, selection.channel.as_deref())?;
    let (which, what) = which(&selection)?;
    let bus: &MessageBus = admin.view.bus();
    let report = bus.replay_dead_letters(&channel, &which).await;
    let nowhere = |id: &MessageId| FailedInfo {
        id: id.to_string(),
        reason: format!("no dead letter with this id waits on `{}`", channel.name()),
    };
    if report.replayed.is_empty() && report.failed.is_empty() && !report.missing.is_empty() {
        let ids: Vec<String> = report.missing.iter().map(MessageId::to_string).collect();
        return Err(refusal(
            StatusCode::NOT_FOUND,
            format!(
                "no dead letter with id {} waits on `{}`",
                ids.join(", "),
                channel.name()
            ),
        ));
    }
    for replayed in &report.replayed {
        audit(format_args!(
            "dead letter {} replayed from {} to {} ({REPLAYED} header set)",
            replayed.id,
            channel.name(),
            replayed.channel
        ));
    }
    audit(format_args!(
        "dead letters replayed from {} ({what}): {} replayed, {} failed",
        channel.name(),
        report.replayed.len(),
        report.failed.len()
    ));
    Ok(Json(ReplayAnswer {
        replayed: (report.replayed.into_iter())
            .map(|r| ReplayedInfo {
                id: r.id.to_string(),
                channel: r.channel,
                invalid: r.invalid,
            })
            .collect(),
        failed: (report.failed.into_iter())
            .map(|f| FailedInfo {
                id: f.id.to_string(),
                reason: f.reason,
            })
            .chain(report.missing.iter().map(nowhere))
            .collect(),
    }))
}

pub(super) async fn delete(
    State(admin): State<Arc<Admin>>,
    selection: Result<Json<Selection>, JsonRejection>,
) -> Result<Json<Deleted>, Refusal> {
    allowed(&admin)?;
    let selection = body(selection)?;
    let (channel, _) = dead_letter_channel(&admin, selection.channel.as_deref())?;
    let (which, what) = which(&selection)?;
    let deleted = which.delete_from(&channel);
    audit(format_args!(
        "dead letters deleted from {} ({what}): {deleted}",
        channel.name()
    ));
    Ok(Json(Deleted {
        deleted: deleted as u64,
    }))
}

/// `DELETE /api/dead-letters/{id}`' query: the dead letter channel.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelQuery {
    /// The dead letter channel (`dead-letters` unless given).
    pub channel: Option<String>,
}

pub(super) async fn delete_one(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    query: Result<Query<ChannelQuery>, QueryRejection>,
) -> Result<Json<Deleted>, Refusal> {
    allowed(&admin)?;
    let query = paging(query)?;
    let selection = Selection {
        ids: Some(vec![id.clone()]),
        channel: query.channel,
        ..Selection::default()
    };
    let (channel, _) = dead_letter_channel(&admin, selection.channel.as_deref())?;
    let (which, _) = which(&selection)?;
    let deleted = which.delete_from(&channel);
    if deleted == 0 {
        return Err(refusal(
            StatusCode::NOT_FOUND,
            format!("no dead letter with id {id} waits on `{}`", channel.name()),
        ));
    }
    audit(format_args!(
        "dead letter {id} deleted from {}",
        channel.name()
    ));
    Ok(Json(Deleted {
        deleted: deleted as u64,
    }))
}
