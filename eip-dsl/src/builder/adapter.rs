//! Channel adapters and messaging bridges in code: the entries of `adapters:` and `bridges:`,
//! with the same keys as a flow file, checked by the same [kind](crate::kind).
//!
//! [`kind`] starts an entry; [`to`](AdapterBuilder::to) or [`from`](AdapterBuilder::from)
//! names its channel (an inbound kind feeds one, an outbound kind consumes one);
//! [`set`](AdapterBuilder::set) writes any other key with a value as a file would hold it
//! (text, a number, `true`/`false`, a list, a [`Duration`]), [`map`](AdapterBuilder::map) a
//! mapping (`rate-limit`, a database adapter's `claim`). A key the kind does not have, a
//! value of the wrong type, a missing required key: each is the same problem, with the same key
//! path and help, as in a file.
//!
//! ```
//! use std::time::Duration;
//!
//! use eip_dsl::builder::{FlowBuilder, adapter, channel};
//!
//! let plan = FlowBuilder::new()
//!     .channel("ticks", channel::point_to_point())
//!     .adapter(
//!         "clock",
//!         adapter::kind("timer")
//!             .to("ticks")
//!             .set("interval", Duration::from_millis(250))
//!             .set("count", 3),
//!     )
//!     .plan(".")?;
//! assert_eq!(plan.adapters[0].endpoint(), "every 250ms, 3 messages");
//! # Ok::<(), eip_dsl::diagnostic::FlowErrors>(())
//! ```

use std::time::Duration;

use super::channel::{Redelivery, duration_text};
use crate::spec::{AdapterSpec, Located, Setting, SettingValue};

/// An adapter (or bridge) of the kind named `kind` (`file-in`, `http-out`, `rabbitmq-in`,
/// `timer`, ...), with nothing else set.
pub fn kind(kind: impl Into<String>) -> AdapterBuilder {
    AdapterBuilder {
        spec: AdapterSpec {
            at: None,
            kind: Located::new(kind.into()),
            channel: Located::new(String::new()),
            redelivery: None,
            settings: Vec::new(),
        },
    }
}

/// An entry of `adapters:` or `bridges:` under construction. Made by [`kind`].
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct AdapterBuilder {
    spec: AdapterSpec,
}

impl AdapterBuilder {
    /// `to:` the channel an inbound kind feeds.
    pub fn to(self, channel: impl Into<String>) -> Self {
        self.channel("to", channel.into())
    }

    /// `from:` the channel an outbound kind consumes.
    pub fn from(self, channel: impl Into<String>) -> Self {
        self.channel("from", channel.into())
    }

    /// The channel, under the key written: the kind's own key names the channel, the other
    /// stays a setting, so validation reports it as a key the kind does not have, as in a file.
    fn channel(mut self, key: &str, channel: String) -> Self {
        let inbound = crate::kind::named(&self.spec.kind.value).map(|k| k.id.is_inbound());
        let own = match inbound {
            Some(true) => key == "to",
            Some(false) => key == "from",
            // An unknown kind is reported; the channel is kept as given.
            None => true,
        };
        if own {
            self.spec.channel = Located::new(channel);
            self
        } else {
            self.set(key, channel)
        }
    }

    /// `KEY: VALUE`: any other key of the kind. Setting a key again replaces its value.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let value = value.into().0;
        self.spec.settings.retain(|s| s.key.value != key);
        self.spec.settings.push(Setting {
            key: Located::new(key),
            value: Located::new(value),
        });
        self
    }

    /// `KEY: {K: V, ...}`: a mapping, such as `rate-limit: {requests: 10, per: 1s}`.
    pub fn map<K, V>(
        self,
        key: impl Into<String>,
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Self
    where
        K: Into<String>,
        V: Into<Value>,
    {
        self.set(key, Value::map(entries))
    }

    /// `redelivery:` how an outbound adapter's consumer retries, instead of its channel's
    /// policy.
    pub fn redelivery(mut self, redelivery: Redelivery) -> Self {
        self.spec.redelivery = Some(redelivery.into_spec());
        self
    }

    /// The entry as written.
    pub fn into_spec(self) -> AdapterSpec {
        self.spec
    }
}

/// A setting's value, as a flow file would hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct Value(SettingValue);

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value(SettingValue::Text(text.to_owned()))
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Value(SettingValue::Text(text))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value(SettingValue::Bool(b))
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                Value(SettingValue::Number(n.to_string()))
            }
        }
    )*};
}

numbers!(u8, u16, u32, u64, usize, i32, i64, f64);

impl From<Duration> for Value {
    /// As a flow file writes it: `250ms`, `30s`.
    fn from(d: Duration) -> Self {
        Value(SettingValue::Text(duration_text(d)))
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Value {
    fn from(items: [S; N]) -> Self {
        Value::list(items)
    }
}

impl<S: Into<String>> From<Vec<S>> for Value {
    fn from(items: Vec<S>) -> Self {
        Value::list(items)
    }
}

impl Value {
    /// A mapping of keys to values (`{K: V, ...}`).
    pub fn map<K, V>(entries: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<Value>,
    {
        let items = entries
            .into_iter()
            .map(|(k, v)| Setting {
                key: Located::new(k.into()),
                value: Located::new(v.into().0),
            })
            .collect();
        Value(SettingValue::Map(items))
    }

    /// The value as a flow file's reader makes it.
    pub(super) fn into_setting(self) -> SettingValue {
        self.0
    }

    fn list<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Self {
        Value(SettingValue::List(
            items.into_iter().map(|s| Located::new(s.into())).collect(),
        ))
    }
}
