//! `timer`: a source that makes its own messages, every `interval` (the first after `delay`),
//! forever or `count` of them, from a payload template. Camel's `timer`, Benthos's `generate`:
//! for tests, heartbeats and flows that poll on their own.
//!
//! `payload` is text or JSON with placeholders: `{seq}` (from 1), `{timestamp}` (when it fired,
//! milliseconds since the Unix epoch), `{id}` and `{name}`; the default is
//! `{"seq": {seq}, "timestamp": {timestamp}}`. The content type is `application/json` when the
//! payload is JSON (tried with the placeholders filled), `text/plain` otherwise, unless
//! `content-type` says. Every message also carries `timer-sequence`, `timer-fired-at` and
//! `timer-name` headers, and `subject` if one is written.

use std::time::UNIX_EPOCH;

use eip_adapters::timer::{Fill, PayloadTemplate, Timer, TimerConfig, TimerHandle};
use eip_core::channel::Channel;
use futures::future::BoxFuture;
use tower::BoxError;

use crate::diagnostic::{Check, Problem, inside};
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Inbound, Kind, Site, Started};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `timer`
pub(crate) static TIMER: Kind = Kind {
    id: AdapterKind::adapter("timer", Direction::Inbound),
    feature: "timer",
    keys: &[&[
        "to",
        "interval",
        "delay",
        "count",
        "payload",
        "subject",
        "content-type",
    ]],
    drawing: Drawing::InputOutput,
    check,
};

/// The payload when none is written.
const DEFAULT_PAYLOAD: &str = r#"{"seq": {seq}, "timestamp": {timestamp}}"#;

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let payload = match settings.text(check, "payload") {
        Some(text) => match PayloadTemplate::parse(&text.value) {
            Ok(template) => Some(template),
            Err(e) => {
                // Pointed at the brace of the placeholder, inside the payload.
                let at = inside(&text, e.offset, check.source);
                check.report(
                    Problem::new(format!("invalid `payload`: {e}"), at)
                        .with_key(settings.key("payload"))
                        .with_help(
                            "text or JSON, with `{seq}`, `{timestamp}`, `{id}` or `{name}` where \
                             each message's own goes",
                        ),
                );
                None
            }
        },
        None => PayloadTemplate::parse(DEFAULT_PAYLOAD).ok(),
    };
    let mut config = TimerConfig::new(entry.name, payload?);
    if let Some(d) = settings.positive_duration(check, "interval") {
        config.interval = d;
    }
    if let Some(d) = settings.duration(check, "delay") {
        config.delay = d;
    }
    config.count = settings.whole(check, "count", 1);
    config.subject = settings.text(check, "subject").map(|s| s.value);
    config.content_type = match settings.text(check, "content-type") {
        Some(text) => text.value,
        None if is_json(&config) => "application/json".to_owned(),
        None => "text/plain".to_owned(),
    };
    Some(Box::new(config))
}

/// Whether the payload is JSON once its placeholders are filled.
fn is_json(config: &TimerConfig) -> bool {
    let sample = config.payload.render(Fill {
        seq: 1,
        timestamp: UNIX_EPOCH.elapsed().map_or(0, |d| d.as_secs()),
        id: "00000000-0000-0000-0000-000000000000",
        name: &config.name,
    });
    serde_json::from_str::<serde_json::Value>(&sample).is_ok()
}

impl AdapterConfig for TimerConfig {
    fn endpoint(&self) -> String {
        let every = format!("every {}", crate::settings::spell_duration(self.interval));
        match self.count {
            Some(n) => format!("{every}, {n} messages"),
            None => every,
        }
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        let ready = Ready {
            config: self.clone(),
            channel: site.channel.clone(),
            pause: site.pause.clone(),
        };
        Box::pin(async move { Ok(Endpoint::Inbound(Box::new(ready))) })
    }
}

struct Ready {
    /// Its pause switch: its sends wait while paused.
    pause: eip_core::endpoint::PauseGate,
    config: TimerConfig,
    channel: Channel,
}

impl Inbound for Ready {
    fn start(self: Box<Self>) -> Box<dyn Started> {
        Box::new(Ticking(
            Timer::new(self.config, self.channel.sender().pause_gate(self.pause)).spawn(),
        ))
    }
}

struct Ticking(TimerHandle);

impl Started for Ticking {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.0.shutdown().await;
        })
    }
}
