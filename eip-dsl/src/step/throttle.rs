//! `throttle`: the Throttler. Messages go on at no more than a rate; one that comes sooner
//! waits for its turn (none is dropped).
//!
//! ```yaml
//! steps:
//!   - throttle: 100/s
//!   - throttle: {rate: 600/min, burst: 20}
//!   - throttle: {rate: 5/s, key: '$headers.tenant'}
//! ```
//!
//! A rate is a count per time: `100/s`, `5/min` (or `5/m`), `1000/h`, or per any duration,
//! `10/30s` ([`parse_rate`]). The step is a token bucket of `burst` tokens (default 1), one
//! more every `1/rate`: with `burst: 1` messages are spaced evenly (`100/s` lets one through
//! every 10 ms); a larger burst lets that many through at once after a quiet time, and the
//! rate holds over any longer stretch. Each message reserves its turn as it arrives, so
//! messages go on in the order they came, and the bucket is shared by everything that runs the
//! route's steps.
//!
//! With `key:` (a jq program, one value per message; text as is, anything else as JSON) each
//! key has its own bucket: `5/s` per tenant. A key whose bucket is full again is forgotten, so
//! memory holds only the keys seen within the last `burst / rate`. A jq error makes the message
//! invalid: it goes to the dead letter channel with reason `invalid` and the error.
//!
//! The wait is a call the route's consumer awaits: a message from a durable channel stays
//! unacknowledged until its turn came and it went on. The dry run (`eip route`) does not wait
//! and takes no turn.
//!
//! The bucket and the wait are [`eip_steps::throttle`]'s (`Throttle`, usable from Rust alone);
//! this module reads the step from a flow file, checks it and describes it.

use eip_core::MessageBus;
use eip_core::message::Message;
#[cfg(feature = "jq")]
use eip_steps::aggregate::Key;
use eip_steps::error::StepError;
use eip_steps::throttle as engine;
use futures::future::BoxFuture;
use tower::{BoxError, ServiceExt};

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, Problem};
use crate::settings::Settings;

pub(super) static THROTTLE: StepKind = StepKind {
    name: "throttle",
    feature: None,
    main: "rate",
    keys: &["rate", "burst", "key"],
    check,
};

/// A checked throttle.
#[derive(Debug, Clone)]
pub struct ThrottleConfig {
    /// The rate messages go on at, at most.
    pub rate: Rate,
    /// Messages let through at once after a quiet time, at least 1.
    pub burst: u32,
    #[cfg(feature = "jq")]
    key: Option<eip_steps::expr::Jq>,
    described: String,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let rate =
        settings
            .required_text(check, "rate", rate::FORMS)
            .and_then(|text| match parse_rate(&text.value) {
                Ok(rate) => Some((rate, text.value)),
                Err(e) => {
                    check.report(
                        Problem::new(format!("invalid `rate`: {e}"), text.at)
                            .with_key(settings.key("rate"))
                            .with_help(e.help()),
                    );
                    None
                }
            });
    let burst = match settings.get("burst") {
        Some(_) => settings
            .whole(check, "burst", 1)
            .and_then(|n| match u32::try_from(n) {
                Ok(n) => Some(n),
                Err(_) => {
                    let message = format!("`burst` must be at most {}, found {n}", u32::MAX);
                    settings.report_at(check, "burst", &message, None);
                    None
                }
            }),
        None => Some(1),
    };
    let key = key(check, settings);
    let ((rate, text), burst, key) = (rate?, burst?, key?);
    let mut described = format!("throttle {text}");
    if burst > 1 {
        described.push_str(&format!(", burst {burst}"));
    }
    #[cfg(feature = "jq")]
    if let Some(jq) = &key {
        described.push_str(&format!(" per {}", jq.source()));
    }
    #[cfg(not(feature = "jq"))]
    let () = key;
    Some(Box::new(ThrottleConfig {
        rate,
        burst,
        #[cfg(feature = "jq")]
        key,
        described,
    }))
}

/// `key:` the jq program that picks each message's bucket; `Some(None)` without one.
#[cfg(feature = "jq")]
fn key(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Option<eip_steps::expr::Jq>> {
    if settings.get("key").is_none() {
        return Some(None);
    }
    let help = "a jq program giving each message's key, such as `$headers.tenant` or `.customer`";
    let text = settings.required_text(check, "key", help)?;
    super::transform::compile(check, &text, &settings.key("key")).map(Some)
}

#[cfg(not(feature = "jq"))]
fn key(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<()> {
    if settings.get("key").is_none() {
        return Some(());
    }
    settings.report_entry(
        check,
        "a throttle per `key` needs the cargo feature `jq`, which this eip is built without"
            .to_owned(),
        Some("build eip with it: `cargo build -p eip-dsl --features jq`"),
    );
    None
}

impl StepConfig for ThrottleConfig {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let config = engine::ThrottleConfig::new(self.rate).burst(self.burst);
        #[cfg(feature = "jq")]
        let config = match &self.key {
            Some(jq) => config.key(key_by(jq.clone())),
            None => config,
        };
        Ok(Box::new(Throttle {
            throttle: engine::Throttle::new(tower::service_fn(passed), config),
        }))
    }
}

/// A bucket per output of `jq`: text as is, anything else as JSON; a jq error is the reason
/// the message is invalid.
#[cfg(feature = "jq")]
fn key_by(jq: eip_steps::expr::Jq) -> Key {
    Key::computed(move |msg| match jq.one(msg) {
        Ok(serde_json::Value::String(text)) => Ok(text),
        Ok(other) => Ok(other.to_string()),
        Err(e) => Err(format!("`{}`: {e}", jq.source())),
    })
}

/// The Throttler's engine (`eip_steps::throttle`) in front of nothing: what it passes on comes
/// back. Its bucket is shared by every call of the route's steps.
#[derive(Debug)]
struct Throttle {
    throttle: engine::Throttle<tower::util::ServiceFn<Passed>>,
}

type Passed = fn(Message) -> std::future::Ready<Result<Message, std::convert::Infallible>>;

fn passed(msg: Message) -> std::future::Ready<Result<Message, std::convert::Infallible>> {
    std::future::ready(Ok(msg))
}

impl RouteStep for Throttle {
    /// The dry run neither waits nor takes a turn; a key that can not be read makes the message
    /// invalid.
    fn decide(&self, msg: Message) -> Made {
        match self.throttle.key_of(&msg) {
            Ok(_) => Made::next(msg),
            Err(e) => Made::instead(Side::Invalid {
                msg,
                error: e.to_string(),
            }),
        }
    }

    fn calls_out(&self) -> bool {
        true
    }

    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        let throttled = self.throttle.clone().oneshot(msg);
        Box::pin(async move {
            Ok(match throttled.await {
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

pub use self::rate::{RateError, parse_rate};
pub use eip_steps::throttle::Rate;

/// Rates as written in a flow file: `100/s`.
mod rate {
    use std::time::Duration;

    use eip_steps::throttle::Rate;

    use crate::settings::{DurationError, parse_duration};

    /// The forms a rate takes, for help texts.
    pub(super) const FORMS: &str =
        "a rate is a whole count per time: `100/s`, `5/min`, `1000/h`, `10/30s`";

    /// A rate that could not be read.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    pub enum RateError {
        /// No `/` between a count and a time.
        #[error("`{0}` is not a rate")]
        Syntax(String),
        /// The count is not a whole number of at least 1.
        #[error("`{text}`: the count `{count}` is not a whole number of at least 1")]
        Count {
            /// The rate as written.
            text: String,
            /// The count as written.
            count: String,
        },
        /// The time is neither a unit nor a duration.
        #[error("`{text}`: {source}")]
        Per {
            /// The rate as written.
            text: String,
            /// Why the time is not a duration.
            source: DurationError,
        },
        /// A time of zero.
        #[error("`{0}`: the time must be longer than zero")]
        ZeroTime(String),
        /// More than one message a nanosecond.
        #[error("`{0}` is faster than one message a nanosecond")]
        TooFast(String),
    }

    impl RateError {
        /// How to write it instead.
        pub fn help(&self) -> String {
            match self {
                RateError::Per { source, .. } => format!(
                    "{FORMS}; the time is `s`, `min` (or `m`), `h`, or a duration ({})",
                    source.help()
                ),
                _ => FORMS.to_owned(),
            }
        }
    }

    /// Parses a rate: a whole count, `/`, then a unit (`s`, `m` or `min`, `h`) or a duration
    /// (`30s`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use eip_dsl::step::parse_rate;
    ///
    /// let rate = parse_rate("100/s").unwrap();
    /// assert_eq!(rate.interval(), Duration::from_millis(10));
    /// assert_eq!(parse_rate("5/min").unwrap().per, Duration::from_secs(60));
    /// assert_eq!(parse_rate("10/30s").unwrap().interval(), Duration::from_secs(3));
    /// assert!(parse_rate("100").is_err());
    /// ```
    pub fn parse_rate(text: &str) -> Result<Rate, RateError> {
        let Some((count, per)) = text.split_once('/') else {
            return Err(RateError::Syntax(text.to_owned()));
        };
        let count_error = || RateError::Count {
            text: text.to_owned(),
            count: count.to_owned(),
        };
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(count_error());
        }
        let count: u64 = count.parse().map_err(|_| count_error())?;
        if count == 0 {
            return Err(count_error());
        }
        let per = match per {
            "min" => Duration::from_secs(60),
            unit if !unit.is_empty() && unit.bytes().all(|b| b.is_ascii_alphabetic()) => {
                parse_duration(&format!("1{unit}")).map_err(|_| RateError::Per {
                    text: text.to_owned(),
                    source: DurationError::Unit {
                        text: per.to_owned(),
                        unit: per.to_owned(),
                    },
                })?
            }
            written => parse_duration(written).map_err(|source| RateError::Per {
                text: text.to_owned(),
                source,
            })?,
        };
        if per.is_zero() {
            return Err(RateError::ZeroTime(text.to_owned()));
        }
        let rate = Rate { count, per };
        if rate.interval().is_zero() {
            return Err(RateError::TooFast(text.to_owned()));
        }
        Ok(rate)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_rate_is_a_count_per_unit_or_duration() {
            let r = |t: &str| parse_rate(t).map(|r| (r.count, r.per));
            assert_eq!(r("100/s"), Ok((100, Duration::from_secs(1))));
            assert_eq!(r("5/min"), Ok((5, Duration::from_secs(60))));
            assert_eq!(r("5/m"), Ok((5, Duration::from_secs(60))));
            assert_eq!(r("1000/h"), Ok((1000, Duration::from_secs(3600))));
            assert_eq!(r("10/30s"), Ok((10, Duration::from_secs(30))));
            assert_eq!(r("1/500ms"), Ok((1, Duration::from_millis(500))));
            assert_eq!(
                parse_rate("3/s").unwrap().interval(),
                Duration::from_nanos(333_333_333)
            );
        }

        #[test]
        fn bad_rates_say_what_is_wrong() {
            assert_eq!(parse_rate("100"), Err(RateError::Syntax("100".into())));
            for bad in [
                "0/s",
                "-1/s",
                "1.5/s",
                "/s",
                "x/s",
                "99999999999999999999/s",
            ] {
                assert!(
                    matches!(parse_rate(bad), Err(RateError::Count { .. })),
                    "{bad}"
                );
            }
            let err = parse_rate("5/d").unwrap_err();
            assert_eq!(err.to_string(), "`5/d`: `d`: unknown unit `d`");
            assert!(err.help().contains("`min`"), "{}", err.help());
            let err = parse_rate("5/1.5s").unwrap_err();
            assert!(err.help().ends_with("write `1500ms`)"), "{}", err.help());
            assert_eq!(parse_rate("5/0s"), Err(RateError::ZeroTime("5/0s".into())));
            assert_eq!(
                parse_rate("2000000000/s"),
                Err(RateError::TooFast("2000000000/s".into()))
            );
        }
    }
}
