//! `delay`: the Delayer. Each message waits before it goes on: a fixed time (`for`), or until
//! the time a jq program reads from the message (`until`).
//!
//! ```yaml
//! steps:
//!   - delay: 5s
//!   - delay: {until: '.deliver_at', max: 2h}
//! ```
//!
//! `until` gives one value per message: text in RFC 3339 (`2026-12-01T18:30:00Z`,
//! `2026-12-01T19:30:00+01:00`) or a number of seconds since 1970-01-01 UTC, as jq's own
//! `now`, `todate` and `fromdate` count (a fraction is kept; milliseconds are `.ms / 1000`).
//! A time already past means no wait. A time further ahead than `max` (default 24h) is a
//! mistake, not a wait: the message goes to the dead letter channel with reason `invalid` and
//! the time it named, as does a jq error or a value that is not a time, and the route goes on
//! with the next one.
//!
//! The wait is a call the route's consumer awaits: the message stays in processing, and a
//! message from a durable channel stays unacknowledged until it went on. A process that dies
//! while a message waits loses nothing: the channel delivers it again when the flow starts
//! again, and the wait starts over (`for`) or goes on to the same time (`until`). Stopping
//! the flow waits for the delay within its limit, then gives the message back the same way.
//! The route takes its messages one at a time, so a delay also spaces them out: a route with
//! `delay: 5s` sends at most one message every five seconds.
//!
//! The dry run (`eip route --steps`) does not wait: it says how long this message would,
//! `delayed 5s`, or for `until` the time read and how far ahead it is now, `until
//! 2026-12-01T10:00:00Z (in 3m 2s)`, or `not delayed: 2026-12-01T10:00:00Z is already past`;
//! a time that can not be read, or one past `max`, makes the message invalid there as in a
//! running flow.

use std::time::Duration;

use eip_core::MessageBus;
use eip_core::message::Message;
use eip_steps::delay as engine;
#[cfg(feature = "jq")]
use eip_steps::delay::time;
use eip_steps::error::StepError;
use futures::future::BoxFuture;
use tower::{BoxError, ServiceExt};

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::Check;
use crate::settings::Settings;

pub(super) static DELAY: StepKind = StepKind {
    name: "delay",
    feature: None,
    main: "for",
    keys: &["for", "until", "max"],
    check,
};

/// How far ahead an `until` time may be when the step sets no `max`.
#[cfg(feature = "jq")]
pub const DEFAULT_MAX: Duration = Duration::from_secs(24 * 3600);

/// A checked delay.
#[derive(Debug, Clone)]
pub struct DelayConfig {
    wait: Wait,
    described: String,
}

#[derive(Debug, Clone)]
enum Wait {
    /// The same time for every message.
    For(Duration),
    /// Until the time a jq program reads from the message, at most `max` from now.
    #[cfg(feature = "jq")]
    Until {
        jq: eip_steps::expr::Jq,
        max: Duration,
    },
}

impl DelayConfig {
    /// The fixed wait, for a `delay` written with `for`.
    pub fn fixed(&self) -> Option<Duration> {
        match self.wait {
            Wait::For(d) => Some(d),
            #[cfg(feature = "jq")]
            Wait::Until { .. } => None,
        }
    }
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    match (settings.get("for"), settings.get("until")) {
        (Some(_), Some(_)) => {
            settings.report_entry(
                check,
                "`for` and `until` contradict each other".to_owned(),
                Some("wait a fixed time (`for: 5s`) or until a time each message names (`until: JQ`): keep one"),
            );
            None
        }
        (None, None) => {
            settings.missing(
                check,
                "for",
                "add how long each message waits, `delay: 5s`, or `until:` with a jq program \
                 giving the time it goes on, such as `until: '.deliver_at'`",
            );
            None
        }
        (Some(_), None) => {
            if settings.get("max").is_some() {
                settings.report_at(
                    check,
                    "max",
                    "`max` caps an `until` time, and this delay waits a fixed time",
                    Some("remove `max`, or wait `until:` a time each message names"),
                );
                return None;
            }
            let text = settings.text(check, "for")?;
            let wait = settings.positive_duration(check, "for")?;
            Some(Box::new(DelayConfig {
                wait: Wait::For(wait),
                described: format!("delay {}", text.value),
            }))
        }
        (None, Some(_)) => until(check, settings),
    }
}

#[cfg(feature = "jq")]
fn until(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Box<dyn StepConfig>> {
    const HELP: &str = "a jq program giving the time the message goes on: RFC 3339 text \
                        (`.deliver_at`) or seconds since 1970 (`.sent + 60`)";
    let jq = settings
        .required_text(check, "until", HELP)
        .and_then(|text| {
            Some((
                super::transform::compile(check, &text, &settings.key("until"))?,
                text,
            ))
        });
    let max = match settings.get("max") {
        None => Some((DEFAULT_MAX, "24h".to_owned())),
        // Read as text only once it is a duration: a wrong value is reported once.
        Some(_) => settings
            .positive_duration(check, "max")
            .and_then(|max| Some((max, settings.text(check, "max")?.value))),
    };
    let ((jq, text), (max, max_text)) = (jq?, max?);
    Some(Box::new(DelayConfig {
        wait: Wait::Until { jq, max },
        described: format!("delay until {} (at most {max_text})", text.value),
    }))
}

#[cfg(not(feature = "jq"))]
fn until(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Box<dyn StepConfig>> {
    settings.report_entry(
        check,
        "a delay `until` a time needs the cargo feature `jq`, which this eip is built without"
            .to_owned(),
        Some("build eip with it: `cargo build -p eip-dsl --features jq`, or wait `for:` a fixed time"),
    );
    None
}

impl StepConfig for DelayConfig {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let wait = match &self.wait {
            Wait::For(d) => engine::Wait::fixed(*d),
            #[cfg(feature = "jq")]
            Wait::Until { jq, max } => engine::Wait::until_jq(jq.clone(), *max),
        };
        Ok(Box::new(Delay {
            delay: engine::Delay::new(tower::service_fn(passed), wait),
            wait: self.wait.clone(),
        }))
    }
}

/// The Delayer's engine (`eip_steps::delay`) in front of nothing: what it passes on comes back.
#[derive(Debug)]
struct Delay {
    delay: engine::Delay<tower::util::ServiceFn<Passed>>,
    /// What the flow file said, for the dry run's note.
    wait: Wait,
}

type Passed = fn(Message) -> std::future::Ready<Result<Message, std::convert::Infallible>>;

fn passed(msg: Message) -> std::future::Ready<Result<Message, std::convert::Infallible>> {
    std::future::ready(Ok(msg))
}

/// How long one message waits, and until when, as its delay reads it now.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Planned {
    /// From now.
    wait: Duration,
    /// The time an `until` program named (`None` for a fixed wait).
    until: Option<std::time::SystemTime>,
}

impl Planned {
    /// What the dry run says of the message: `delayed 5s`, `until 2026-12-01T10:00:00Z (in
    /// 3m 2s)`, `not delayed: 2026-12-01T10:00:00Z is already past`.
    fn note(&self) -> String {
        match self.until {
            None => format!("delayed {}", crate::settings::spell_duration(self.wait)),
            #[cfg(feature = "jq")]
            Some(at) => {
                let shown = time::show(at);
                match self.wait.is_zero() {
                    true => format!("not delayed: {shown} is already past"),
                    false => format!("until {shown} (in {})", time::spell(self.wait)),
                }
            }
            #[cfg(not(feature = "jq"))]
            Some(_) => format!("delayed {}", crate::settings::spell_duration(self.wait)),
        }
    }
}

impl Delay {
    /// How long `msg` waits from now; else why its time can not be read.
    #[cfg_attr(not(feature = "jq"), allow(unused_variables))]
    fn plan(&self, msg: &Message) -> Result<Planned, String> {
        match &self.wait {
            Wait::For(d) => Ok(Planned {
                wait: *d,
                until: None,
            }),
            #[cfg(feature = "jq")]
            Wait::Until { jq, max } => {
                let value = jq.one(msg).map_err(|e| e.to_string())?;
                let at = time::read(&value).map_err(|e| format!("`{}`: {e}", jq.source()))?;
                let wait = time::until(at, std::time::SystemTime::now(), *max)
                    .map_err(|e| format!("`{}`: {e}", jq.source()))?;
                Ok(Planned {
                    wait,
                    until: Some(at),
                })
            }
        }
    }
}

impl RouteStep for Delay {
    /// The dry run does not wait: it says how long this message would (`delayed 5s`, `until
    /// ... (in 3m 2s)`); a time that can not be read makes the message invalid.
    fn decide(&self, msg: Message) -> Made {
        match self.plan(&msg) {
            Ok(planned) => Made::next(msg).noted(planned.note()),
            Err(error) => Made::instead(Side::Invalid { msg, error }),
        }
    }

    fn calls_out(&self) -> bool {
        true
    }

    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        let delayed = self.delay.clone().oneshot(msg);
        Box::pin(async move {
            Ok(match delayed.await {
                Ok(msg) => Made::next(msg),
                Err(StepError::Failed { error, message }) => Made::instead(Side::Invalid {
                    msg: message,
                    error: error.to_string(),
                }),
                Err(StepError::Inner(never)) => match never {},
            })
        })
    }
}
