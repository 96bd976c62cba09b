//! The kinds of route step, one module each.
//!
//! A route takes a message from its channel, runs it through its `steps:` in order, then sends
//! what comes out by `to`, `choice` or `recipient-list`. A step kind (`filter`, `wire-tap`,
//! `transform`, ...) is a [`StepKind`]: its name, the cargo feature that builds it, its keys
//! (and the one a value that is not a mapping sets: `- filter: PREDICATE`), and the function
//! that checks an entry into a [`StepConfig`]. The configuration builds the running
//! [`RouteStep`], whose [`decide`](RouteStep::decide) says what the step makes of one message.
//!
//! [`STEPS`] is the one table that lists them. Reading, validation, the compiler, the dry run
//! and the graph ask the kind; none of them names one.
//!
//! Each step decides without side effects: what it makes of a message is a [`Made`], the
//! messages that go on to the next step and what else happens ([`Side`]: a wire tap's copy, a
//! filter's discard, an invalid message). The running route carries that out by sending, the
//! dry run (`eip route`) by recording it, so the two can not drift apart.

mod aggregate;
mod calls;
mod convert;
mod dedupe;
mod delay;
#[cfg(feature = "jq")]
mod enrich;
mod expr;
mod filter;
mod key;
mod later;
pub(crate) mod on_error;
mod process;
mod resequence;
mod routing_slip;
pub(crate) mod split;
mod throttle;
#[cfg(feature = "jq")]
mod transform;
mod wire_tap;

pub use self::aggregate::AggregateConfig;
pub use self::calls::CallError;
pub use self::convert::{ConvertConfig, Direction as ConvertDirection, Format as ConvertFormat};
pub use self::dedupe::DedupeConfig;
pub use self::delay::DelayConfig;
#[cfg(feature = "jq")]
pub use self::enrich::EnrichConfig;
pub use self::filter::FilterConfig;
pub use self::process::{ProcessConfig, Services};
pub use self::resequence::ResequenceConfig;
pub use self::routing_slip::RoutingSlipConfig;
pub use self::split::SplitConfig;
pub use self::throttle::{Rate, RateError, ThrottleConfig, parse_rate};
#[cfg(feature = "jq")]
pub use self::transform::TransformConfig;
pub use self::wire_tap::WireTapConfig;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use eip_core::MessageBus;
use eip_core::channel::Channel;
use eip_core::message::Message;
use eip_core::store::durable::Durable;
use futures::future::BoxFuture;
use tower::BoxError;

use crate::compile::{CompileError, Rest, RouteFailure, WeakRest};
use crate::diagnostic::{Check, Problem};
use crate::kind::AsAny;
use crate::settings::Settings;
use crate::spec::{Located, Position};
use crate::validate::Names;
use crate::validate::routes::not_back_to;

/// One kind of route step: everything the flow-file tools need to know about it.
pub struct StepKind {
    /// Its name in a flow file (`transform`).
    pub name: &'static str,
    /// The cargo feature of `eip-dsl` that builds it; `None` for a step always built.
    pub feature: Option<&'static str>,
    /// The key a value that is not a mapping sets: `- filter: PREDICATE` is
    /// `- filter: {when: PREDICATE}`.
    pub main: &'static str,
    /// Its keys, in the order suggestions list them; `main` among them.
    pub keys: &'static [&'static str],
    /// Checks an entry's settings; every problem is reported into the check, `None` when
    /// there was one.
    pub(crate) check: CheckFn,
}

/// A step kind's check: the entry's settings (already checked against its keys) into its
/// configuration.
pub(crate) type CheckFn =
    for<'a> fn(&mut Check<'a>, &Settings<'_>, &Entry<'_>) -> Option<Box<dyn StepConfig>>;

/// What a step's check knows of its route besides the step's settings.
pub struct Entry<'a> {
    /// The route's name.
    pub route: &'a str,
    /// The channel the route consumes.
    pub from: &'a str,
    /// Whether that channel outlives the process (durable, or kept in a broker): a step that
    /// holds messages in memory is refused there.
    pub from_durable: bool,
    /// Whether that channel is kept in a broker (its messages are acknowledged there, not in
    /// a commit of the flow's store).
    pub from_broker: bool,
    /// The flow file's directory: relative paths start there.
    pub base_dir: &'a Path,
    pub(crate) names: &'a Names,
    /// The services the program registered, for `process`.
    pub(crate) services: &'a Services,
}

impl Entry<'_> {
    /// The channel `key` names, which the step writes to: a channel the flow declares, and not
    /// the one the route consumes (every message would come back to it forever).
    pub(crate) fn channel(
        &self,
        check: &mut Check<'_>,
        settings: &Settings<'_>,
        key: &str,
    ) -> Option<String> {
        let name = settings.text(check, key)?;
        let path = settings.key(key);
        self.names.channel(check, &name, key, &path)?;
        let (who, what) = ("the step sends", "the channel its route consumes");
        not_back_to(check, &name, self.from, &path, who, what)?;
        Some(name.value)
    }
}

/// A checked step's configuration: what its kind made of its settings.
pub trait StepConfig: AsAny + fmt::Debug + Send + Sync + 'static {
    /// The step in a few words, for `eip graph` and `eip route`: `filter $.total > 0`.
    fn describe(&self) -> String;

    /// What `eip graph` writes for the step on the edge into its route; `None` for a step
    /// drawn only as its own edge (a wire tap). The default is [`describe`](Self::describe).
    fn label(&self) -> Option<String> {
        Some(self.describe())
    }

    /// The channels the step sends to besides the route's own targets (a tap, a discard
    /// channel), each with the label of its edge in `eip graph`.
    fn channels(&self) -> Vec<(&str, &'static str)> {
        Vec::new()
    }

    /// The running step, over the flow's channels.
    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError>;

    /// The running step of a route, where it is built ([`Building`]): a step that keeps state
    /// (the keys an idempotent receiver has seen) keeps it in the route's durable store. By
    /// default as [`build`](Self::build).
    fn build_at(&self, at: &Building<'_>) -> Result<Box<dyn RouteStep>, CompileError> {
        self.build(at.bus)
    }
}

/// Where a route step is built.
pub struct Building<'a> {
    /// The flow's channels.
    pub bus: &'a MessageBus,
    /// The route's name (a durable subscription's name too, on a publish-subscribe channel).
    pub route: &'a str,
    /// The channel the route consumes.
    pub from: &'a Channel,
    /// The step's place in the route, from 0.
    pub index: usize,
    /// The embedded store, when the channel the route consumes lives there: a step's state is
    /// kept there too, so it survives the process as the messages do.
    pub store: Option<&'a Arc<Durable>>,
}

/// A step of a running route.
pub trait RouteStep: fmt::Debug + Send + Sync + 'static {
    /// What the step makes of `msg`. Pure: sends nothing, counts nothing, changes no state,
    /// so the dry run asks it too.
    fn decide(&self, msg: Message) -> Made;

    /// Whether, in a running flow, the step calls out ([`call`](Self::call)) instead of
    /// deciding alone: it runs a program's service, or looks something up.
    fn calls_out(&self) -> bool {
        false
    }

    /// What the step makes of `msg` in a running flow, for a step that [calls
    /// out](Self::calls_out). An error fails the route for the message, which is then
    /// redelivered.
    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        let made = self.decide(msg);
        Box::pin(std::future::ready(Ok(made)))
    }

    /// Whether, in a running flow, the step wraps the rest of the route (the steps after it
    /// and the action): it is then [`around`](Self::around) that runs, and the step learns
    /// whether what it passed on was accepted. An idempotent receiver forgets a key whose
    /// message was refused, and keeps (durably) the key of one that went through.
    fn wraps(&self) -> bool {
        false
    }

    /// Once the route is built: the rest of it after this step, for a step that hands on
    /// messages later, outside any call (an aggregator's timeout). Held weakly: it no longer
    /// runs once the route is dropped. Nothing by default.
    fn attach(&self, rest: WeakRest) {
        let _ = rest;
    }

    /// For a step that [wraps](Self::wraps): takes `msg` and hands what it makes of it to
    /// `rest`, completing once that was accepted. By default what [`decide`](Self::decide)
    /// made goes on to `rest`, after its side effects.
    fn around(&self, msg: Message, rest: Rest) -> BoxFuture<'_, Result<(), RouteFailure>> {
        let made = self.decide(msg);
        Box::pin(async move {
            for side in made.side {
                rest.carry(side).await?;
            }
            for msg in made.next {
                rest.run(msg).await?;
            }
            Ok(())
        })
    }

    /// When the flow stops, once nothing more comes in: hands on or gives up what the step
    /// still holds (an aggregator's open groups, as its `on-stop:` says), completing once
    /// that was accepted. Whether it handed on or gave up anything: the flow then drains and
    /// asks again. Nothing by default.
    fn stop(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(false))
    }
}

/// What a step made of one message.
#[derive(Debug, Default)]
pub struct Made {
    /// What goes on to the next step, in order: the message (changed or not), none (held
    /// back), or several (the parts of a split).
    pub next: Vec<Message>,
    /// What else happens, in order, before the next step runs.
    pub side: Vec<Side>,
    /// What the step did with the message, for the dry run, when passing it on or not does
    /// not say it all: `held in group sensor-7, 3 of 10`.
    pub note: Option<String>,
}

impl Made {
    /// The message goes on, with nothing else happening.
    pub fn next(msg: Message) -> Self {
        Made {
            next: vec![msg],
            side: Vec::new(),
            note: None,
        }
    }

    /// The same, with what the step says it did for the dry run.
    pub fn noted(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Nothing goes on; `side` happens instead.
    pub fn instead(side: Side) -> Self {
        Made {
            next: Vec::new(),
            side: vec![side],
            note: None,
        }
    }
}

/// Something a step does besides passing messages on.
#[derive(Debug)]
pub enum Side {
    /// A copy of the message to a wire tap.
    Tap {
        /// The tap channel.
        channel: Channel,
        /// The copy.
        copy: Message,
        /// Whether the copy waits for room in a full tap (else it is dropped, and counted).
        wait: bool,
    },
    /// A filter held the message back: to its discard channel if it has one, else dropped
    /// (and counted).
    Filtered {
        /// The discard channel.
        discard: Option<Channel>,
        /// The message.
        msg: Message,
    },
    /// An idempotent receiver found the message's key seen within its window: to its divert
    /// channel if it has one, else dropped (and counted).
    Duplicate {
        /// The divert channel with the duplicate; `None` when it is dropped.
        divert: Option<(Channel, Message)>,
    },
    /// The step could not process the message (a jq error on its content, a malformed
    /// record): it goes to the dead letter channel with reason `invalid` and this error.
    Invalid {
        /// The message as the step received it.
        msg: Message,
        /// What was wrong, for the death record.
        error: String,
    },
}

/// One line of [`STEPS`] per kind: the feature that builds it (or `always`), its name, and
/// where it is.
macro_rules! steps {
    ($($feature:tt, $name:literal => $kind:path,)*) => {
        /// Every step kind built into this `eip`, in the order the book lists them.
        pub static STEPS: &[&StepKind] = &[$(steps!(@entry $feature, $kind),)*];
        /// Every step kind `eip` knows, built or not, with the feature that builds it.
        static ALL_NAMES: &[(&str, Option<&str>)] = &[$(($name, steps!(@feature $feature)),)*];
    };
    (@entry always, $kind:path) => { &$kind };
    (@entry $feature:literal, $kind:path) => { #[cfg(feature = $feature)] &$kind };
    (@feature always) => { None };
    (@feature $feature:literal) => { Some($feature) };
}

steps! {
    always, "filter" => filter::FILTER,
    always, "wire-tap" => wire_tap::WIRE_TAP,
    always, "split" => split::SPLIT,
    always, "unmarshal" => convert::UNMARSHAL,
    always, "marshal" => convert::MARSHAL,
    always, "process" => process::PROCESS,
    always, "dedupe" => dedupe::DEDUPE,
    always, "aggregate" => aggregate::AGGREGATE,
    always, "resequence" => resequence::RESEQUENCE,
    "jq", "transform" => transform::TRANSFORM,
    always, "delay" => delay::DELAY,
    always, "throttle" => throttle::THROTTLE,
    always, "routing-slip" => routing_slip::ROUTING_SLIP,
    "jq", "enrich" => enrich::ENRICH,
}

/// The step kind named `name` in a flow file, if it is built.
pub fn named(name: &str) -> Option<&'static StepKind> {
    STEPS.iter().copied().find(|k| k.name == name)
}

/// The names of every step kind built, in the table's order.
pub(crate) fn names() -> Vec<&'static str> {
    STEPS.iter().map(|k| k.name).collect()
}

/// The problem of a step whose kind `eip` knows but this build is without; `None` if it is
/// built or unknown.
pub(crate) fn not_built(name: &str, at: Option<Position>, key: &str) -> Option<Problem> {
    if named(name).is_some() {
        return None;
    }
    let (_, feature) = ALL_NAMES.iter().find(|(known, _)| *known == name)?;
    let feature = (*feature)?;
    Some(
        Problem::new(
            format!(
                "step `{name}` is not built into this eip: its cargo feature `{feature}` is off"
            ),
            at,
        )
        .with_key(key)
        .with_help(format!(
            "build eip with it: `cargo build -p eip-dsl --features {feature}` (the default builds \
             every step)"
        )),
    )
}

/// The settings of a step written `- KIND: VALUE`: the mapping's keys, or (for any other
/// value) the kind's main key set to it.
pub(crate) fn settings_of(
    kind: &StepKind,
    value: &Located<crate::spec::SettingValue>,
) -> Vec<crate::spec::Setting> {
    match &value.value {
        crate::spec::SettingValue::Map(items) => items.clone(),
        _ => vec![crate::spec::Setting {
            key: Located {
                value: kind.main.to_owned(),
                at: value.at,
            },
            value: value.clone(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_step_is_listed_under_its_own_name_and_feature() {
        for kind in STEPS {
            let listed = ALL_NAMES.iter().find(|(name, _)| *name == kind.name);
            assert_eq!(listed.map(|(_, f)| *f), Some(kind.feature), "{}", kind.name);
            assert!(
                kind.keys.contains(&kind.main),
                "{}: main key not listed",
                kind.name
            );
        }
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STEPS.len(), "a name is listed twice");
    }
}
