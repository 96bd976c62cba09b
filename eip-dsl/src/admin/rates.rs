//! Channel rates: messages a second in and out, over the last sampling interval.
//!
//! A task the admin server owns reads every channel's `in` and `out` counters each
//! [`RATE_INTERVAL`] and keeps, per channel, the difference from the sample before divided by
//! the time between them. Before the second sample a channel's rates are 0 over 0 seconds.
//! The task ends when the server stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::model::{Counters, Rates as ChannelRates};
use crate::compile::FlowView;

/// How often the channels' counters are sampled for their rates.
pub const RATE_INTERVAL: Duration = Duration::from_secs(1);

/// The last rates of every channel, by name; shared by the sampler and the API.
#[derive(Debug, Clone, Default)]
pub(super) struct Rates(Arc<Mutex<HashMap<String, ChannelRates>>>);

impl Rates {
    /// The rates of the channel `name`.
    pub(super) fn of(&self, name: &str) -> ChannelRates {
        self.lock().get(name).copied().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ChannelRates>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Samples `view`'s channels every `interval`, forever.
    pub(super) async fn sample(self, view: FlowView, interval: Duration) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last: HashMap<String, (u64, u64)> = HashMap::new();
        let mut last_at: Option<Instant> = None;
        loop {
            ticks.tick().await;
            let now = Instant::now();
            let counters = view.counters();
            let elapsed = last_at.map(|at| now.duration_since(at).as_secs_f64());
            let mut rates = HashMap::with_capacity(counters.len());
            for c in &counters {
                let counted = Counters::from(c);
                let current = (counted.received, counted.out);
                let rate = match (elapsed, last.get(&c.channel)) {
                    (Some(seconds), Some(before)) if seconds > 0.0 => ChannelRates {
                        in_per_second: current.0.saturating_sub(before.0) as f64 / seconds,
                        out_per_second: current.1.saturating_sub(before.1) as f64 / seconds,
                        interval_seconds: seconds,
                    },
                    _ => ChannelRates::default(),
                };
                rates.insert(c.channel.clone(), rate);
                last.insert(c.channel.clone(), current);
            }
            *self.lock() = rates;
            last_at = Some(now);
        }
    }
}
