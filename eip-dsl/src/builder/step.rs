//! Route steps in code: the entries of a route's `steps:`, with the same kinds and keys as a
//! flow file, checked by the same [step kind](crate::step).
//!
//! [`kind`] starts a step; [`value`](StepBuilder::value) gives it its main setting, as
//! `- filter: PREDICATE` does in a file, or [`set`](StepBuilder::set) writes its keys one by one,
//! as `- wire-tap: {to: audit, when-full: drop}` does; a key whose value is a mapping (a
//! transform's `set-headers`) takes a [`Value::map`].
//!
//! ```
//! use eip_dsl::builder::{FlowBuilder, channel, route, step};
//!
//! let plan = FlowBuilder::new()
//!     .channel("orders", channel::point_to_point())
//!     .channel("audit", channel::point_to_point())
//!     .channel("billing", channel::point_to_point())
//!     .route(
//!         route::from("orders")
//!             .step(step::kind("wire-tap").set("to", "audit").set("when-full", "drop"))
//!             .step(step::kind("filter").value("$.total > 0"))
//!             .to("billing"),
//!     )
//!     .plan(".")?;
//! let steps: Vec<&str> = plan.routes[0].steps.iter().map(|s| s.kind).collect();
//! assert_eq!(steps, ["wire-tap", "filter"]);
//! # Ok::<(), eip_dsl::diagnostic::FlowErrors>(())
//! ```

pub use super::adapter::Value;
use crate::spec::{Located, Setting, SettingValue, StepSpec};

/// A step of the kind named `kind` (`filter`, `wire-tap`, `transform`, ...), with nothing set.
pub fn kind(kind: impl Into<String>) -> StepBuilder {
    StepBuilder {
        spec: StepSpec::new(kind, SettingValue::Map(Vec::new())),
    }
}

/// A step under construction. Made by [`kind`]; added with
/// [`RouteBuilder::step`](super::RouteBuilder::step).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct StepBuilder {
    spec: StepSpec,
}

impl StepBuilder {
    /// The step's main setting, as `- KIND: VALUE` writes it (a filter's predicate, a
    /// transform's jq program, a wire tap's channel). It replaces any key set before.
    pub fn value(mut self, value: impl Into<Value>) -> Self {
        self.spec.value = Located::new(value.into().into_setting());
        self
    }

    /// `KEY: VALUE`: one of the kind's keys. Setting a key again replaces its value.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let mut items = match std::mem::replace(&mut self.spec.value.value, SettingValue::Null) {
            SettingValue::Map(items) => items,
            _ => Vec::new(),
        };
        items.retain(|s| s.key.value != key);
        items.push(Setting {
            key: Located::new(key),
            value: Located::new(value.into().into_setting()),
        });
        self.spec.value = Located::new(SettingValue::Map(items));
        self
    }

    /// The step as written.
    pub fn into_spec(self) -> StepSpec {
        self.spec
    }
}
