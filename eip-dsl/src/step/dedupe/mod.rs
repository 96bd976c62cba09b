//! `dedupe`: the Idempotent Receiver. A message whose key was seen within the window is a
//! duplicate: dropped (counted in the route's `duplicates`) or sent to the `divert` channel.
//! The others go on, and their key is remembered.
//!
//! ```yaml
//! steps:
//!   - dedupe: '.order_id'                       # the key, by jq; kept for an hour
//!   - dedupe: {header: x-request-id, window: 10m, divert: orders.duplicates}
//!   - dedupe: {window: 24h, max-keys: 1000000}  # by message id: catches redeliveries
//! ```
//!
//! The key is a jq program's output (a string, or a number or boolean written out), a
//! header's value, or by default the message id. A message whose key can not be computed
//! (a jq error, a missing header) is invalid: dead-lettered with reason `invalid`.
//!
//! The key is recorded when the message arrives, so a copy arriving while the original is
//! still on its way is caught, and forgotten if the rest of the route refuses the original,
//! so that its redelivery passes. On a route whose channel is durable the keys live in the
//! flow's store, and each is written in the commit that acknowledges its message, after the
//! rest of the route accepted it: after a crash either the message is acknowledged and its
//! key kept (a copy is caught), or neither (the message comes again and passes).
//!
//! On a route with `concurrency:` above 1, two messages with one key are never in the step at
//! once: the second waits until the first's outcome is settled ([`turns`]), then is a
//! duplicate if the first was accepted, and passes if it was refused.

mod durable;
mod turns;

use std::time::Duration;

use eip_core::MessageBus;
use eip_core::channel::Channel;
use eip_core::message::Message;
use eip_steps::aggregate::Key;
use eip_steps::dedupe::{
    Decision, DedupeConfig as Config, DedupeError, Deduped, IdempotentReceiverLayer,
};
use futures::future::BoxFuture;
use tower::{Layer, ServiceExt};

use super::key::{DefaultKey, KeyOf, key_of};
use super::{Building, Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::{CompileError, Rest, RouteFailure, Wrapped, bus_channel};
use crate::diagnostic::Check;
use crate::settings::{Settings, spell_duration};

pub(super) static DEDUPE: StepKind = StepKind {
    name: "dedupe",
    feature: None,
    main: "key",
    keys: &["key", "header", "window", "max-keys", "divert"],
    check,
};

/// How long a key is remembered unless the step says otherwise.
const DEFAULT_WINDOW: Duration = Duration::from_secs(3600);

/// How many keys are kept in memory unless the step says otherwise.
const DEFAULT_MAX_KEYS: u64 = 100_000;

/// A checked `dedupe` step.
#[derive(Debug, Clone)]
pub struct DedupeConfig {
    key: KeyOf,
    /// How long a key is remembered.
    pub window: Duration,
    /// How many keys are kept at most (the oldest go first).
    pub max_keys: usize,
    /// Where duplicates go; without one they are dropped.
    pub divert: Option<String>,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let before = check.problems.len();
    let key = key_of(check, settings, DefaultKey::MessageId);
    let window = match settings.get("window") {
        Some(_) => settings.positive_duration(check, "window"),
        None => Some(DEFAULT_WINDOW),
    };
    let max_keys = match settings.get("max-keys") {
        Some(_) => settings.whole(check, "max-keys", 1),
        None => Some(DEFAULT_MAX_KEYS),
    };
    let divert = match settings.get("divert") {
        Some(_) => entry.channel(check, settings, "divert"),
        None => None,
    };
    if check.problems.len() > before {
        return None;
    }
    Some(Box::new(DedupeConfig {
        key: key?,
        window: window?,
        max_keys: usize::try_from(max_keys?).unwrap_or(usize::MAX),
        divert,
    }))
}

impl StepConfig for DedupeConfig {
    fn describe(&self) -> String {
        format!(
            "dedupe {} within {}",
            self.key.describe(),
            spell_duration(self.window)
        )
    }

    fn channels(&self) -> Vec<(&str, &'static str)> {
        self.divert
            .as_deref()
            .map(|d| (d, "duplicates"))
            .into_iter()
            .collect()
    }

    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let layer = IdempotentReceiverLayer::new(self.config());
        self.step(bus, layer)
    }

    fn build_at(&self, at: &Building<'_>) -> Result<Box<dyn RouteStep>, CompileError> {
        let Some(store) = at.store else {
            return self.build(at.bus);
        };
        let table = format!("dedupe/{}/{}", at.route, at.index + 1);
        let seen = durable::DurableSeen::open(store, &table, at.from, at.route, self)?;
        let layer = IdempotentReceiverLayer::with_store(self.config(), seen);
        self.step(at.bus, layer)
    }
}

impl DedupeConfig {
    fn config(&self) -> Config {
        Config::new(self.window)
            .key(self.key.key())
            .max_keys(self.max_keys)
    }

    fn step(
        &self,
        bus: &MessageBus,
        layer: IdempotentReceiverLayer,
    ) -> Result<Box<dyn RouteStep>, CompileError> {
        let divert = self
            .divert
            .as_deref()
            .map(|name| bus_channel(bus, name))
            .transpose()?;
        Ok(Box::new(Dedupe {
            layer,
            divert,
            key: self.key.key(),
            turns: turns::Turns::default(),
        }))
    }
}

#[derive(Debug)]
struct Dedupe {
    layer: IdempotentReceiverLayer,
    divert: Option<Channel>,
    /// The key the receiver computes, computed again for the message's turn.
    key: Key,
    /// The keys whose messages are in the receiver.
    turns: turns::Turns,
}

impl RouteStep for Dedupe {
    fn decide(&self, msg: Message) -> Made {
        match self.layer.peek(&msg) {
            Decision::Passes { .. } => Made::next(msg),
            Decision::Duplicate { .. } => Made::instead(Side::Duplicate {
                divert: self.divert.clone().map(|channel| (channel, msg)),
            }),
            Decision::Invalid { reason } => Made::instead(Side::Invalid { msg, error: reason }),
        }
    }

    fn wraps(&self) -> bool {
        true
    }

    fn around(&self, msg: Message, rest: Rest) -> BoxFuture<'_, Result<(), RouteFailure>> {
        // The receiver drops a duplicate; a divert channel needs the message back.
        let copy = self.divert.as_ref().map(|_| msg.clone());
        let receiver = self.layer.layer(rest.clone());
        // A key that can not be computed takes no turn: the receiver finds it invalid.
        let key = self.key.eval(&msg).ok().map(|k| k.into_owned());
        Box::pin(async move {
            let turn = match key {
                Some(key) => Some(self.turns.take(key).await),
                None => None,
            };
            let outcome = receiver.oneshot(msg).await;
            // Settled: the key is kept or forgotten, so a copy waiting can be judged.
            drop(turn);
            let wrapped = match outcome {
                Ok(Deduped::Passed(())) => Wrapped::Done,
                Ok(_) => Wrapped::Duplicate(self.divert.clone().zip(copy)),
                Err(DedupeError::Invalid { reason, message }) => Wrapped::Invalid {
                    msg: *message,
                    error: reason,
                },
                Err(DedupeError::Inner(failure)) => Wrapped::Failed(failure),
                Err(other) => Wrapped::Error(other.to_string().into()),
            };
            rest.finish(wrapped).await
        })
    }
}
