//! The checked `adapters:` and `bridges:` of a flow: each adapter's kind and configuration
//! (what its [kind](crate::kind) made of its settings), and the tower layers its consumer
//! applies.

use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::RedeliveryPolicy;

pub use crate::kind::AdapterConfig;
use crate::kind::AsAny;
pub use crate::spec::AdapterKind;

/// A checked adapter or bridge.
#[derive(Debug, Clone)]
pub struct AdapterPlan {
    /// Its name.
    pub name: String,
    /// The channel it feeds (inbound) or consumes (outbound).
    pub channel: String,
    /// Its kind.
    pub kind: AdapterKind,
    /// How it is configured.
    pub config: Arc<dyn AdapterConfig>,
    /// For an outbound adapter: the layers around it and how its consumer retries.
    pub outbound: OutboundPlan,
}

impl AdapterPlan {
    /// Its kind.
    pub fn kind(&self) -> AdapterKind {
        self.kind
    }

    /// Whether it feeds its channel (rather than consuming it).
    pub fn is_inbound(&self) -> bool {
        self.kind.is_inbound()
    }

    /// Whether it is a messaging bridge (declared under `bridges:`).
    pub fn is_bridge(&self) -> bool {
        self.kind.is_bridge()
    }

    /// "adapter" or "bridge", for messages.
    pub fn noun(&self) -> &'static str {
        if self.is_bridge() {
            "bridge"
        } else {
            "adapter"
        }
    }

    /// Where it reads or writes, in a few words, for graphs and logs: the directory, the
    /// listening address and path, the URL or the database (its password hidden).
    pub fn endpoint(&self) -> String {
        self.config.endpoint()
    }

    /// Its configuration as the type its kind made, if it is a `T`: a
    /// `eip_adapters::file::FileSourceConfig` for a `file-in` adapter, say.
    pub fn config_as<T: 'static>(&self) -> Option<&T> {
        // Through the trait object, not the `Arc` (which is `Any` too).
        AsAny::as_any(&*self.config).downcast_ref::<T>()
    }
}

/// The tower layers around an outbound adapter, and its consumer's settings. All off for an
/// inbound adapter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutboundPlan {
    /// `concurrency:` messages in processing at once (default 1).
    pub concurrency: Option<usize>,
    /// `rate-limit:` at most this many calls per period.
    pub rate_limit: Option<(u64, Duration)>,
    /// `timeout:` a deadline per attempt; an attempt that takes longer fails (and is retried
    /// as the redelivery policy says).
    pub timeout: Option<Duration>,
    /// `redelivery:` how the consumer retries, instead of the channel's policy.
    pub redelivery: Option<RedeliveryPolicy>,
}
