//! Counters a channel keeps about its traffic.

/// A snapshot of a channel's (or subscription's) counters.
///
/// `accepted` counts messages stored; `delivered` counts deliveries (a redelivery counts again);
/// `acked` the deliveries settled; `requeued` the nacks and dropped deliveries;
/// `dead_lettered` the messages sent to the dead letter channel from here; `discarded` those
/// that had to be logged and dropped because no dead letter channel was open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Messages waiting to be delivered.
    pub depth: usize,
    /// Messages delivered and not yet settled.
    pub in_flight: usize,
    /// Messages stored.
    pub accepted: u64,
    /// Deliveries made.
    pub delivered: u64,
    /// Deliveries acknowledged.
    pub acked: u64,
    /// Deliveries put back (nack, or dropped without settling).
    pub requeued: u64,
    /// Messages dead-lettered from this channel.
    pub dead_lettered: u64,
    /// Messages lost for want of a dead letter channel (each one logged as a warning).
    pub discarded: u64,
    /// Messages not stored because loop detection had seen their id (channels in joins).
    pub duplicates: u64,
    /// Messages that did not fit the channel's datatype and went to its invalid message
    /// channel instead.
    pub invalid: u64,
}

impl std::ops::Add for ChannelStats {
    type Output = ChannelStats;
    fn add(self, o: ChannelStats) -> ChannelStats {
        ChannelStats {
            depth: self.depth + o.depth,
            in_flight: self.in_flight + o.in_flight,
            accepted: self.accepted + o.accepted,
            delivered: self.delivered + o.delivered,
            acked: self.acked + o.acked,
            requeued: self.requeued + o.requeued,
            dead_lettered: self.dead_lettered + o.dead_lettered,
            discarded: self.discarded + o.discarded,
            duplicates: self.duplicates + o.duplicates,
            invalid: self.invalid + o.invalid,
        }
    }
}
