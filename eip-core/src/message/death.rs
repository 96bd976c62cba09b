//! The death record: why and where a message left the normal flow.
//!
//! When a message is dead-lettered (or found invalid) eip writes a [`DeathRecord`] into its
//! [`death`](super::headers::names::DEATH) header as JSON, so the record travels with the message
//! across channels, processes and brokers. Dying again for the same reason on the same channel
//! bumps `count` and `last_time`; a different channel or reason starts a new record (the previous
//! one is replaced: the record says why the message is where it is now).

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Why a message was taken out of the normal flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeathReason {
    /// It did not fit a Datatype Channel, or a receiver could not process it.
    Invalid,
    /// Its expiration passed before it was delivered.
    Expired,
    /// No route, binding or `otherwise` clause took it.
    NoRoute,
    /// A consumer rejected it.
    Rejected,
    /// Delivery failed as many times as the redelivery policy allows.
    MaxRedeliveries,
    /// The channel holding it was deleted.
    ChannelDeleted,
    /// A publish-subscribe subscriber with the drop-oldest policy fell behind.
    DroppedSlowSubscriber,
    /// An aggregator gave up the message's group before it completed (its timeout passed, or
    /// room was needed for a new group).
    Incomplete,
}

impl DeathReason {
    /// Every reason, in declaration order.
    pub const ALL: [DeathReason; 8] = [
        DeathReason::Invalid,
        DeathReason::Expired,
        DeathReason::NoRoute,
        DeathReason::Rejected,
        DeathReason::MaxRedeliveries,
        DeathReason::ChannelDeleted,
        DeathReason::DroppedSlowSubscriber,
        DeathReason::Incomplete,
    ];

    /// The reason's name, as written in death records and flow files.
    pub fn as_str(self) -> &'static str {
        match self {
            DeathReason::Invalid => "invalid",
            DeathReason::Expired => "expired",
            DeathReason::NoRoute => "no-route",
            DeathReason::Rejected => "rejected",
            DeathReason::MaxRedeliveries => "max-redeliveries",
            DeathReason::ChannelDeleted => "channel-deleted",
            DeathReason::DroppedSlowSubscriber => "dropped-slow-subscriber",
            DeathReason::Incomplete => "incomplete",
        }
    }
}

impl fmt::Display for DeathReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`DeathReason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown death reason `{0}`")]
pub struct UnknownDeathReason(pub String);

impl FromStr for DeathReason {
    type Err = UnknownDeathReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DeathReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownDeathReason(s.to_owned()))
    }
}

/// Where a message died, why, how often, and with what error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeathRecord {
    /// The channel the message was on (or sent to) when it died; replay sends it back there.
    pub channel: String,
    /// Why it died.
    pub reason: DeathReason,
    /// How many times it died on this channel for this reason.
    pub count: u32,
    /// When it first died there, in milliseconds since the Unix epoch.
    pub first_time: u64,
    /// When it last died there, in milliseconds since the Unix epoch.
    pub last_time: u64,
    /// The error that caused it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The host that dead-lettered it.
    pub host: String,
}

impl DeathRecord {
    /// A first death on `channel` for `reason`, now, on this host.
    pub fn new(channel: &str, reason: DeathReason, error: Option<String>) -> Self {
        let now = now_millis();
        DeathRecord {
            channel: channel.to_owned(),
            reason,
            count: 1,
            first_time: now,
            last_time: now,
            error,
            host: host_name().to_owned(),
        }
    }

    /// The record after one more death: counted on if it is the same channel and reason,
    /// otherwise a fresh record.
    pub fn died_again(previous: Option<DeathRecord>, fresh: DeathRecord) -> DeathRecord {
        match previous {
            Some(p) if p.channel == fresh.channel && p.reason == fresh.reason => DeathRecord {
                count: p.count.saturating_add(1),
                first_time: p.first_time,
                ..fresh
            },
            _ => fresh,
        }
    }
}

/// Milliseconds since the Unix epoch, saturating (a clock before 1970 reads as 0).
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// This machine's host name, read once.
pub fn host_name() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_through_their_names() {
        for r in DeathReason::ALL {
            assert_eq!(r.as_str().parse::<DeathReason>(), Ok(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        assert!("nope".parse::<DeathReason>().is_err());
    }

    #[test]
    fn dying_again_on_the_same_channel_counts_on() {
        let first = DeathRecord::new("orders", DeathReason::Expired, None);
        let second = DeathRecord::died_again(
            Some(first.clone()),
            DeathRecord::new("orders", DeathReason::Expired, Some("late".into())),
        );
        assert_eq!(second.count, 2);
        assert_eq!(second.first_time, first.first_time);
        assert_eq!(second.error.as_deref(), Some("late"));
        let other = DeathRecord::died_again(
            Some(second),
            DeathRecord::new("orders", DeathReason::Rejected, None),
        );
        assert_eq!(other.count, 1);
        assert_eq!(other.reason, DeathReason::Rejected);
    }
}
