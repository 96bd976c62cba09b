//! `wire-tap`: a copy of every message to a channel, for audit or monitoring, while the
//! message itself goes on unchanged.
//!
//! A flow file's tap waits for room when its channel is full, as any send does: an audit
//! copy is not lost because the audit channel is slow. `when-full: drop` offers the copy
//! instead and drops it (counted in the route's `tap_dropped`) when there is no room, so a
//! slow tap never holds the route back.
//!
//! ```yaml
//! steps:
//!   - wire-tap: audit
//!   - wire-tap: {to: metrics, when-full: drop}
//! ```
//!
//! A route's `wire-tap:` key is this step written short, as the route's first step.

use eip_core::MessageBus;
use eip_core::channel::Channel;
use eip_core::message::Message;

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::{CompileError, bus_channel};
use crate::diagnostic::Check;
use crate::settings::Settings;

pub(super) static WIRE_TAP: StepKind = StepKind {
    name: "wire-tap",
    feature: None,
    main: "to",
    keys: &["to", "when-full"],
    check,
};

/// A checked wire tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTapConfig {
    /// The tap channel.
    pub channel: String,
    /// Whether a copy waits for room in a full tap channel (else it is dropped).
    pub wait: bool,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    if settings.get("to").is_none() {
        settings.missing(
            check,
            "to",
            "add `to: CHANNEL`, the channel that gets the copies",
        );
        return None;
    }
    let channel = entry.channel(check, settings, "to");
    let wait = match settings.get("when-full") {
        Some(_) => settings.one_of(check, "when-full", &[("wait", true), ("drop", false)])?,
        None => true,
    };
    Some(Box::new(WireTapConfig {
        channel: channel?,
        wait,
    }))
}

impl StepConfig for WireTapConfig {
    fn describe(&self) -> String {
        match self.wait {
            true => format!("wire-tap {}", self.channel),
            false => format!("wire-tap {} (dropped when full)", self.channel),
        }
    }

    /// Drawn as its edge to the tap channel only.
    fn label(&self) -> Option<String> {
        None
    }

    fn channels(&self) -> Vec<(&str, &'static str)> {
        vec![(self.channel.as_str(), "wire tap")]
    }

    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        Ok(Box::new(WireTap {
            channel: bus_channel(bus, &self.channel)?,
            wait: self.wait,
        }))
    }
}

#[derive(Debug)]
struct WireTap {
    channel: Channel,
    wait: bool,
}

impl RouteStep for WireTap {
    fn decide(&self, msg: Message) -> Made {
        Made {
            side: vec![Side::Tap {
                channel: self.channel.clone(),
                copy: msg.clone(),
                wait: self.wait,
            }],
            next: vec![msg],
            note: None,
        }
    }
}
