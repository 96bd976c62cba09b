//! The kinds of channel adapter and messaging bridge, one module each.
//!
//! A kind (`file-in`, `http-out`, `rabbitmq-in`, `timer`, ...) is a [`Kind`]: its name and
//! direction, whether it is declared under `adapters:` or `bridges:`, its keys, how it is
//! drawn, and the function that checks an entry's settings into an [`AdapterConfig`]. That
//! configuration then says where the adapter reads or writes (for `eip graph`, `eip run`'s
//! start-up lines and logs) and how it connects. Reading, validation, the graph and the
//! compiler ask the kind; none of them names one.
//!
//! [`KINDS`] is the one table that lists them: a new kind is a module here, its line in the
//! table, and the cargo feature that builds it. A kind whose feature is off is not in the
//! table; a flow that names it gets an error naming the feature (see [`missing_feature`]).

#[cfg(any(
    feature = "amqp",
    feature = "nats",
    feature = "mqtt",
    feature = "redis"
))]
pub mod bridge;
mod connect;
#[cfg(feature = "file")]
pub mod file;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "amqp")]
pub mod rabbitmq;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sql")]
pub mod sql;
#[cfg(feature = "timer")]
pub mod timer;

use std::any::Any;
use std::fmt;
use std::path::Path;

use futures::future::BoxFuture;
use tower::BoxError;

pub use self::connect::{Endpoint, Inbound, Rejects, Site, Started};
use crate::diagnostic::{Check, Problem};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Position};

/// One kind of adapter or bridge: everything the flow-file tools need to know about it.
pub struct Kind {
    /// Its name, direction and section.
    pub id: AdapterKind,
    /// The cargo feature of `eip-dsl` that builds it.
    pub feature: &'static str,
    /// Its keys, in groups (a family's shared keys are one group), in the order suggestions
    /// list them, besides `kind:` and (for an outbound kind) [`OUTBOUND_KEYS`]; an inbound
    /// kind's start with `to`.
    pub keys: &'static [&'static [&'static str]],
    /// How `eip graph` draws it.
    pub drawing: Drawing,
    /// Checks an entry's settings; every problem is reported into the check, `None` when
    /// there was one.
    pub(crate) check: CheckFn,
}

/// A kind's check: the entry's settings (already checked against its keys) into its
/// configuration.
pub(crate) type CheckFn =
    for<'a> fn(&mut Check<'a>, &Settings<'_>, &Entry<'_>) -> Option<Box<dyn AdapterConfig>>;

/// What a kind's check knows of its entry besides its settings.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The adapter's name.
    pub name: &'a str,
    /// The flow file's directory: relative paths start there.
    pub base_dir: &'a Path,
}

/// How a kind is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drawing {
    /// Where messages enter or leave the flow: a parallelogram (the flowchart's input/output).
    InputOutput,
    /// A database read or written: a cylinder.
    Database,
}

/// A checked adapter's configuration: what its kind made of its settings.
pub trait AdapterConfig: AsAny + fmt::Debug + Send + Sync + 'static {
    /// Where it reads or writes, in a few words, for graphs and logs: the directory, the
    /// listening address and path, the URL, the queue or the database (a password hidden).
    fn endpoint(&self) -> String;

    /// Does everything that can fail before a message moves (environment variables read,
    /// servers bound, databases and brokers connected, directories made) and returns what
    /// then moves the messages.
    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>>;
}

/// A configuration as its own type, for tools and tests that look inside
/// ([`AdapterPlan::config_as`](crate::plan::adapter::AdapterPlan::config_as)); every type has it.
pub trait AsAny {
    /// `self`, to downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The keys every outbound kind has: its channel, and how its consumer drives it.
pub const OUTBOUND_KEYS: &[&str] = &["from", "concurrency", "rate-limit", "timeout", "redelivery"];

/// One line of [`KINDS`] per kind: the feature that builds it, its name, and where it is.
macro_rules! kinds {
    ($($feature:literal, $name:literal => $kind:path,)*) => {
        /// Every kind built into this `eip`, in the order the book lists them: the channel
        /// adapters, then the messaging bridges.
        pub static KINDS: &[&Kind] = &[$(#[cfg(feature = $feature)] &$kind,)*];
        /// Every kind `eip` knows, built or not, with the feature that builds it.
        static ALL_NAMES: &[(&str, &str)] = &[$(($name, $feature),)*];
    };
}

kinds! {
    "file", "file-in" => file::SOURCE,
    "file", "file-out" => file::SINK,
    "http", "http-in" => http::INBOUND,
    "http", "http-out" => http::OUTBOUND,
    "sql", "sql-in" => sql::INBOUND,
    "sql", "sql-out" => sql::OUTBOUND,
    "timer", "timer" => timer::TIMER,
    "amqp", "rabbitmq-in" => rabbitmq::INBOUND,
    "amqp", "rabbitmq-out" => rabbitmq::OUTBOUND,
    "nats", "nats-in" => nats::INBOUND,
    "nats", "nats-out" => nats::OUTBOUND,
    "mqtt", "mqtt-in" => mqtt::INBOUND,
    "mqtt", "mqtt-out" => mqtt::OUTBOUND,
    "redis", "redis-in" => redis::INBOUND,
    "redis", "redis-out" => redis::OUTBOUND,
}

/// The kind named `name` in a flow file, if it is built.
pub fn named(name: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|k| k.id.as_str() == name)
}

/// The kind of `id`.
pub(crate) fn of(id: AdapterKind) -> Option<&'static Kind> {
    named(id.as_str())
}

/// The kinds declared under `bridges:` (`true`) or `adapters:` (`false`), with their names.
pub(crate) fn choices(bridge: bool) -> Vec<(&'static str, AdapterKind)> {
    KINDS
        .iter()
        .filter(|k| k.id.is_bridge() == bridge)
        .map(|k| (k.id.as_str(), k.id))
        .collect()
}

/// Every kind built, with its name: what `kind:` may say in either section.
pub(crate) fn all_choices() -> Vec<(&'static str, AdapterKind)> {
    KINDS.iter().map(|k| (k.id.as_str(), k.id)).collect()
}

/// For a kind `eip` knows but was built without, the feature that builds it.
pub fn missing_feature(name: &str) -> Option<&'static str> {
    if named(name).is_some() {
        return None;
    }
    ALL_NAMES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, feature)| *feature)
}

/// The problem of a flow that names `name`, a kind `eip` knows but this build is without;
/// `None` if it is built or unknown.
pub(crate) fn not_built(name: &str, at: Option<Position>, key: &str) -> Option<Problem> {
    let feature = missing_feature(name)?;
    Some(
        Problem::new(
            format!("kind `{name}` is not built into this eip: its cargo feature `{feature}` is off"),
            at,
        )
        .with_key(key)
        .with_help(format!(
            "build eip with it: `cargo build -p eip-dsl --features {feature}` (the default builds every kind)"
        )),
    )
}

/// The keys an adapter of `kind` has.
pub(crate) fn keys(kind: AdapterKind) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = vec!["kind"];
    let own = of(kind).map_or(&[][..], |k| k.keys);
    let outbound = if kind.is_inbound() {
        &[][..]
    } else {
        OUTBOUND_KEYS
    };
    for key in outbound.iter().chain(own.iter().copied().flatten()) {
        if !keys.contains(key) {
            keys.push(key);
        }
    }
    keys
}

/// Every key of every kind of adapter (or bridge): what one whose kind could not be read may
/// have.
pub(crate) fn all_keys(bridge: bool) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for kind in KINDS.iter().filter(|k| k.id.is_bridge() == bridge) {
        for key in self::keys(kind.id) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_kind_is_listed_under_its_own_name_and_feature() {
        for kind in KINDS {
            let listed = ALL_NAMES.iter().find(|(name, _)| *name == kind.id.as_str());
            assert_eq!(
                listed.map(|(_, f)| *f),
                Some(kind.feature),
                "{}",
                kind.id.as_str()
            );
        }
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.id.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a name is listed twice");
    }
}
