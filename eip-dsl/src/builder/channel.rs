//! Channels: [`point_to_point`] and [`publish_subscribe`], configured key by key.
//!
//! Each method sets the flow-file key of the same name (`capacity`, `datatype`, `invalid`,
//! `dead-letter`, `time-to-live`, `redelivery`, `overflow`, `durable`). Nothing is checked here: a
//! datatype without an invalid message channel, or `overflow` on a queue, is reported by
//! validation, exactly as it would be for a file.
//!
//! ```
//! use std::time::Duration;
//! use eip_dsl::builder::channel;
//! use eip_dsl::core::channel::Overflow;
//!
//! let orders = channel::point_to_point()
//!     .capacity(10_000)
//!     .time_to_live(Duration::from_secs(30))
//!     .redelivery(channel::redelivery().max_attempts(3).initial_backoff(Duration::from_millis(250)));
//! let prices = channel::publish_subscribe().overflow(Overflow::DropOldest);
//! let payments = channel::point_to_point().durable();
//! # let _ = (orders, prices, payments);
//! ```

use std::time::Duration;

use eip_core::channel::Overflow;

use crate::spec::{ChannelSpec, KindSpec, Located, OverflowSpec, RedeliverySpec};

/// A point-to-point channel (`kind: point-to-point`): each message goes to one consumer.
pub fn point_to_point() -> ChannelBuilder {
    ChannelBuilder::new(KindSpec::PointToPoint)
}

/// A publish-subscribe channel (`kind: publish-subscribe`): each message goes to every
/// subscriber.
pub fn publish_subscribe() -> ChannelBuilder {
    ChannelBuilder::new(KindSpec::PublishSubscribe)
}

/// A redelivery policy (`redelivery:`) with every key left to its default.
pub fn redelivery() -> Redelivery {
    Redelivery::default()
}

/// One channel of a flow, as the entry under `channels:` would declare it. Made by
/// [`point_to_point`] or [`publish_subscribe`]; added with
/// [`FlowBuilder::channel`](super::FlowBuilder::channel).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct ChannelBuilder {
    spec: ChannelSpec,
}

impl ChannelBuilder {
    fn new(kind: KindSpec) -> Self {
        ChannelBuilder {
            spec: ChannelSpec::new(Located::new(kind), None),
        }
    }

    /// `capacity:` the most messages the channel holds (at least 1).
    pub fn capacity(mut self, messages: u64) -> Self {
        self.spec.capacity = Some(Located::new(messages));
        self
    }

    /// `datatype:` the JSON Schema file every message must fit, relative to the base
    /// directory given to [`FlowBuilder::plan`](super::FlowBuilder::plan). Needs
    /// [`invalid`](Self::invalid).
    pub fn datatype(mut self, schema_path: impl Into<String>) -> Self {
        self.spec.datatype = Some(Located::new(schema_path.into()));
        self
    }

    /// `invalid:` the point-to-point channel that takes messages that do not fit the
    /// [`datatype`](Self::datatype).
    pub fn invalid(mut self, channel: impl Into<String>) -> Self {
        self.spec.invalid = Some(Located::new(channel.into()));
        self
    }

    /// `dead-letter:` the point-to-point channel that takes this channel's dead letters
    /// (default: the flow's `dead-letters`).
    pub fn dead_letter(mut self, channel: impl Into<String>) -> Self {
        self.spec.dead_letter = Some(Located::new(channel.into()));
        self
    }

    /// `time-to-live:` messages that wait longer are dead-lettered with reason `expired`.
    /// Durations are whole milliseconds; see [`duration_text`] for how one is written.
    pub fn time_to_live(mut self, ttl: Duration) -> Self {
        self.spec.time_to_live = Some(Located::new(duration_text(ttl)));
        self
    }

    /// `redelivery:` how the channel's consumers retry a message whose processing failed.
    pub fn redelivery(mut self, policy: Redelivery) -> Self {
        self.spec.redelivery = Some(policy.spec);
        self
    }

    /// `overflow:` what a publish-subscribe channel does when a subscriber's queue is full.
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        let spec = match overflow {
            Overflow::Backpressure => OverflowSpec::Backpressure,
            Overflow::DropOldest => OverflowSpec::DropOldest,
        };
        self.spec.overflow = Some(Located::new(spec));
        self
    }

    /// `durable: true`: the channel keeps its messages on disk, in the flow's
    /// [store](super::FlowBuilder::store), so that they survive a crash (Guaranteed Delivery).
    /// Its dead letter and invalid message channels become durable too.
    pub fn durable(mut self) -> Self {
        self.spec.durable = Some(Located::new(true));
        self
    }

    /// The channel's entry as plain data.
    pub fn into_spec(self) -> ChannelSpec {
        self.spec
    }
}

/// The `redelivery:` of a channel; each key left out falls back to the core's default (5
/// attempts, `100ms` doubling up to `30s`, jitter 0.2). Made by [`redelivery`].
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct Redelivery {
    spec: RedeliverySpec,
}

impl Redelivery {
    /// `max-attempts:` deliveries in all, the first included (at least 1).
    pub fn max_attempts(mut self, attempts: u64) -> Self {
        self.spec.max_attempts = Some(Located::new(attempts));
        self
    }

    /// `initial-backoff:` the wait before the first redelivery.
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.spec.initial_backoff = Some(Located::new(duration_text(wait)));
        self
    }

    /// `max-backoff:` the longest wait between two deliveries.
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.spec.max_backoff = Some(Located::new(duration_text(wait)));
        self
    }

    /// `multiplier:` how much each wait grows over the one before (at least 1.0).
    pub fn multiplier(mut self, factor: f64) -> Self {
        self.spec.multiplier = Some(Located::new(factor));
        self
    }

    /// `jitter:` the largest fraction of a wait taken off at random (0.0 to 1.0).
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.spec.jitter = Some(Located::new(fraction));
        self
    }

    /// The policy as plain data.
    pub fn into_spec(self) -> RedeliverySpec {
        self.spec
    }
}

/// A duration as a flow file writes it: a whole number in the largest unit that holds it
/// exactly (`250ms`, `30s`, `5m`, `2h`).
///
/// A flow's durations are whole milliseconds, and the builder does not round: a duration
/// with a finer part is written in microseconds or nanoseconds (`1500us`), which validation
/// refuses with the key it was given for, the same way it refuses `1.5ms` in a file.
///
/// ```
/// use std::time::Duration;
/// use eip_dsl::builder::channel::duration_text;
///
/// assert_eq!(duration_text(Duration::from_millis(250)), "250ms");
/// assert_eq!(duration_text(Duration::from_secs(90)), "90s");
/// assert_eq!(duration_text(Duration::from_secs(7200)), "2h");
/// assert_eq!(duration_text(Duration::from_micros(1500)), "1500us");
/// ```
pub fn duration_text(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if !nanos.is_multiple_of(1_000) {
        return format!("{nanos}ns");
    }
    if !nanos.is_multiple_of(1_000_000) {
        return format!("{}us", nanos / 1_000);
    }
    let millis = duration.as_millis();
    let (count, unit) = [(3_600_000, "h"), (60_000, "m"), (1_000, "s")]
        .into_iter()
        .find(|(per_unit, _)| millis != 0 && millis.is_multiple_of(*per_unit))
        .map_or((millis, "ms"), |(per_unit, unit)| (millis / per_unit, unit));
    format!("{count}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::parse_duration;

    #[test]
    fn whole_millisecond_durations_read_back_as_themselves() {
        for duration in [
            Duration::ZERO,
            Duration::from_millis(1),
            Duration::from_millis(1_500),
            Duration::from_secs(59),
            Duration::from_secs(60),
            Duration::from_secs(3_600),
            Duration::from_secs(3_660),
            Duration::from_secs(86_400),
        ] {
            let text = duration_text(duration);
            assert_eq!(parse_duration(&text), Ok(duration), "{text}");
        }
    }

    #[test]
    fn durations_take_the_largest_exact_unit() {
        assert_eq!(duration_text(Duration::ZERO), "0ms");
        assert_eq!(duration_text(Duration::from_millis(60_000)), "1m");
        assert_eq!(duration_text(Duration::from_secs(3_660)), "61m");
        assert_eq!(duration_text(Duration::from_nanos(1_000_001)), "1000001ns");
    }

    #[test]
    fn sub_millisecond_durations_are_refused_not_rounded() {
        assert!(parse_duration(&duration_text(Duration::from_micros(1_500))).is_err());
        assert!(parse_duration(&duration_text(Duration::from_nanos(7))).is_err());
    }

    #[test]
    fn the_longest_duration_is_written_without_overflow() {
        let text = duration_text(Duration::MAX);
        assert!(text.ends_with("ns"), "{text}");
        assert!(parse_duration(&text).is_err());
    }
}
