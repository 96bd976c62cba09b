//! Message History: the channels and steps a message went through, carried by the message.
//!
//! Where history is switched on (a channel built with
//! [`ChannelBuilder::history`](crate::channel::ChannelBuilder::history), or a whole flow with a
//! flow file's `history: true`), each channel that stores the message, and each route and route
//! step that handles it, adds an entry to the message's [`history`](super::names::HISTORY)
//! header: the component's name, what kind of component it is, and when (milliseconds since the
//! Unix epoch). The oldest entry comes first. Copies made on the way (a fan-out, a wire tap, the
//! parts of a split) carry the history up to where they were made, and go on from there on
//! their own.
//!
//! The header is a string holding a JSON array (`[{"name":"orders","kind":"channel","at":
//! 1796192468583}, ...]`), so it crosses bridges and brokers like any other string header and
//! a program in another language can read it. It is bounded: past [`MAX_HISTORY_BYTES`] the
//! oldest entries are dropped (a message going round a cycle keeps the latest part of its
//! path). A `history` header that is not such an array (set by someone else) is replaced by a
//! new history when the message is next recorded.

use serde::{Deserialize, Serialize};

use super::headers::{HeaderError, names};
use super::{Message, now_millis};

/// The most bytes the `history` header holds; older entries are dropped to stay under it.
pub const MAX_HISTORY_BYTES: usize = 8 * 1024;

/// What kind of component an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistoryKind {
    /// A channel stored the message.
    Channel,
    /// A route took the message from its channel.
    Route,
    /// A route step passed the message on (the name is `ROUTE/N KIND`, N from 1).
    Step,
    /// A kind this version does not know (written by a newer one).
    #[serde(other)]
    Other,
}

/// One place a message went through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The channel, route, step or adapter.
    pub name: String,
    /// What it is.
    pub kind: HistoryKind,
    /// When, in milliseconds since the Unix epoch.
    pub at: u64,
}

/// The entry as it is written, borrowing its name.
#[derive(Serialize)]
struct Written<'a> {
    name: &'a str,
    kind: HistoryKind,
    at: u64,
}

impl Message {
    /// Adds `name` (a `kind`) at the end of the message's history, now.
    pub fn record_history(&mut self, name: &str, kind: HistoryKind) {
        let entry = Written {
            name,
            kind,
            at: now_millis(),
        };
        // A name and two plain values: serializing them can not fail.
        let entry = serde_json::to_string(&entry).unwrap_or_default();
        let current = self
            .headers()
            .get(names::HISTORY)
            .and_then(|v| v.as_str())
            .filter(|text| is_array(text));
        let text = match current {
            Some(text) if text.len() + entry.len() < MAX_HISTORY_BYTES => {
                let mut text = text.to_owned();
                text.pop();
                if text.len() > 1 {
                    text.push(',');
                }
                text.push_str(&entry);
                text.push(']');
                text
            }
            Some(text) => trimmed(text, &entry),
            None => format!("[{entry}]"),
        };
        self.headers_mut().insert(names::HISTORY, text);
    }

    /// The message's history, oldest first: empty when it has none.
    pub fn history(&self) -> Result<Vec<HistoryEntry>, HeaderError> {
        match self.headers().str(names::HISTORY)? {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(json).map_err(|e| HeaderError::Malformed {
                name: names::HISTORY,
                reason: e.to_string(),
            }),
        }
    }
}

/// Whether `text` looks like the array a history is (checked in full when it is read).
fn is_array(text: &str) -> bool {
    text.starts_with('[') && text.ends_with(']')
}

/// The history `text` with `entry` added and as many of its oldest entries dropped as it takes
/// to stay under [`MAX_HISTORY_BYTES`]. A text that does not parse starts again from `entry`.
fn trimmed(text: &str, entry: &str) -> String {
    let Ok(entries) = serde_json::from_str::<Vec<serde_json::Value>>(text) else {
        return format!("[{entry}]");
    };
    let written: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
    // Keep the newest that fit beside the new entry and the brackets and commas.
    let mut room = MAX_HISTORY_BYTES.saturating_sub(entry.len() + 2);
    let mut keep = 0;
    for e in written.iter().rev() {
        if e.len() + 1 > room {
            break;
        }
        room -= e.len() + 1;
        keep += 1;
    }
    let mut out = String::from("[");
    for e in &written[written.len() - keep..] {
        out.push_str(e);
        out.push(',');
    }
    out.push_str(entry);
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_of(msg: &Message) -> Vec<String> {
        msg.history().unwrap().into_iter().map(|e| e.name).collect()
    }

    #[test]
    fn entries_are_kept_oldest_first_with_their_kind_and_time() {
        let before = now_millis();
        let mut msg = Message::new("{}");
        assert!(msg.history().unwrap().is_empty());
        msg.record_history("orders", HistoryKind::Channel);
        msg.record_history("pricing", HistoryKind::Route);
        msg.record_history("pricing/1 transform", HistoryKind::Step);
        let history = msg.history().unwrap();
        assert_eq!(names_of(&msg), ["orders", "pricing", "pricing/1 transform"]);
        assert_eq!(
            history.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [HistoryKind::Channel, HistoryKind::Route, HistoryKind::Step]
        );
        assert!(
            history
                .iter()
                .all(|e| e.at >= before && e.at <= now_millis())
        );
    }

    #[test]
    fn names_that_need_escaping_survive() {
        let mut msg = Message::new("{}");
        msg.record_history("a \"quoted\" name, with ] and \\", HistoryKind::Step);
        msg.record_history("next", HistoryKind::Channel);
        assert_eq!(names_of(&msg), ["a \"quoted\" name, with ] and \\", "next"]);
    }

    #[test]
    fn the_oldest_entries_go_when_the_history_is_full() {
        let mut msg = Message::new("{}");
        for i in 0..1000 {
            msg.record_history(&format!("channel.{i}"), HistoryKind::Channel);
            let text = msg.headers().str(names::HISTORY).unwrap().unwrap();
            assert!(text.len() <= MAX_HISTORY_BYTES, "{} bytes", text.len());
        }
        let names = names_of(&msg);
        assert_eq!(names.last().map(String::as_str), Some("channel.999"));
        assert!(names.len() > 50 && names.len() < 1000, "{}", names.len());
        let first: usize = names[0]["channel.".len()..].parse().unwrap();
        assert_eq!(
            names.len(),
            1000 - first,
            "the kept entries are the latest, in order"
        );
    }

    #[test]
    fn a_history_header_that_is_not_a_history_is_replaced() {
        for foreign in ["route 66", "[not json", "[1, 2, 3"] {
            let mut msg = Message::builder("{}")
                .header(names::HISTORY, foreign)
                .build();
            msg.record_history("orders", HistoryKind::Channel);
            assert_eq!(names_of(&msg), ["orders"], "{foreign}");
        }
        let mut msg = Message::builder("{}").header(names::HISTORY, 7_i64).build();
        msg.record_history("orders", HistoryKind::Channel);
        assert_eq!(names_of(&msg), ["orders"]);
    }

    #[test]
    fn a_malformed_history_is_an_error_when_read() {
        let msg = Message::builder("{}")
            .header(names::HISTORY, "[{\"name\": 1}]")
            .build();
        assert!(matches!(
            msg.history(),
            Err(HeaderError::Malformed { name, .. }) if name == names::HISTORY
        ));
    }

    #[test]
    fn an_unknown_kind_reads_as_other() {
        let msg = Message::builder("{}")
            .header(names::HISTORY, r#"[{"name":"x","kind":"gateway","at":1}]"#)
            .build();
        assert_eq!(msg.history().unwrap()[0].kind, HistoryKind::Other);
    }
}
