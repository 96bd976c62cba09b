//! Times a message names: RFC 3339 text or seconds since 1970, read and measured from now.

use std::time::{Duration, SystemTime};

/// Why a value is not a time a message may wait for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    /// Text that is not an RFC 3339 time.
    #[error("`{text}` is not an RFC 3339 time ({reason})")]
    Text {
        /// The text.
        text: String,
        /// What the parser said.
        reason: String,
    },
    /// A number of seconds before 1970 or too large for a time.
    #[error("{0} is not a number of seconds since 1970-01-01 UTC")]
    Seconds(String),
    /// Neither text nor a number.
    #[error("gave {0}, not a time (RFC 3339 text or seconds since 1970)")]
    NotATime(&'static str),
    /// Further ahead than the step allows.
    #[error(
        "the time is {} from now, past the delay's `max` of {}",
        spell(*ahead),
        spell(*max)
    )]
    TooFar {
        /// How far ahead.
        ahead: Duration,
        /// The most a message may wait.
        max: Duration,
    },
}

/// `d` in whole seconds, the largest units first: `1d 2h 3m 4s`, `0s`.
pub fn spell(d: Duration) -> String {
    let mut left = d.as_secs();
    let mut parts = Vec::new();
    for (unit, per) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if left >= per {
            parts.push(format!("{}{unit}", left / per));
            left %= per;
        }
    }
    match parts.is_empty() {
        true => "0s".to_owned(),
        false => parts.join(" "),
    }
}

/// `at` as RFC 3339 text in UTC, or as seconds since 1970 where the text can not show it.
#[cfg(feature = "jq")]
pub fn show(at: SystemTime) -> String {
    match jiff::Timestamp::try_from(at) {
        Ok(at) => at.to_string(),
        Err(_) => {
            let secs = at
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            format!("{} seconds since 1970", secs.as_secs())
        }
    }
}

/// The time `value` names (with the `jq` feature, whose programs compute such values).
#[cfg(feature = "jq")]
pub fn read(value: &serde_json::Value) -> Result<SystemTime, TimeError> {
    match value {
        serde_json::Value::String(text) => {
            let at: jiff::Timestamp = text.parse().map_err(|e: jiff::Error| TimeError::Text {
                text: text.clone(),
                reason: e.to_string(),
            })?;
            Ok(SystemTime::from(at))
        }
        serde_json::Value::Number(n) => {
            let seconds = || TimeError::Seconds(n.to_string());
            let secs = n.as_f64().filter(|s| s.is_finite() && *s >= 0.0);
            let since = secs
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(seconds)?;
            SystemTime::UNIX_EPOCH
                .checked_add(since)
                .ok_or_else(seconds)
        }
        serde_json::Value::Null => Err(TimeError::NotATime("null")),
        serde_json::Value::Bool(_) => Err(TimeError::NotATime("a boolean")),
        serde_json::Value::Array(_) => Err(TimeError::NotATime("an array")),
        serde_json::Value::Object(_) => Err(TimeError::NotATime("an object")),
    }
}

/// How long from `now` until `at`: zero for a time past, refused past `max`.
pub fn until(at: SystemTime, now: SystemTime, max: Duration) -> Result<Duration, TimeError> {
    let ahead = at.duration_since(now).unwrap_or(Duration::ZERO);
    if ahead > max {
        return Err(TimeError::TooFar { ahead, max });
    }
    Ok(ahead)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "jq")]
    use serde_json::json;

    #[test]
    #[cfg(feature = "jq")]
    fn rfc3339_text_and_epoch_seconds_are_times() {
        let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_315_200);
        assert_eq!(read(&json!("2026-06-01T12:00:00Z")), Ok(noon));
        assert_eq!(read(&json!("2026-06-01T14:00:00+02:00")), Ok(noon));
        assert_eq!(read(&json!(1_780_315_200)), Ok(noon));
        assert_eq!(
            read(&json!(1_780_315_200.5)),
            Ok(noon + Duration::from_millis(500))
        );
    }

    #[test]
    #[cfg(feature = "jq")]
    fn other_values_are_refused_with_what_they_are() {
        let err = read(&json!("tomorrow")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("`tomorrow` is not an RFC 3339 time"),
            "{err}"
        );
        assert_eq!(read(&json!(-1)), Err(TimeError::Seconds("-1".to_owned())));
        assert!(matches!(read(&json!(1e300)), Err(TimeError::Seconds(_))));
        assert_eq!(read(&json!(null)), Err(TimeError::NotATime("null")));
        assert_eq!(read(&json!({})), Err(TimeError::NotATime("an object")));
    }

    #[test]
    fn a_time_past_waits_nothing_and_one_too_far_is_refused() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let hour = Duration::from_secs(3600);
        let past = now - Duration::from_secs(10);
        assert_eq!(until(past, now, hour), Ok(Duration::ZERO));
        assert_eq!(until(now + hour, now, hour), Ok(hour));
        assert_eq!(
            until(now + hour + Duration::from_secs(1), now, hour),
            Err(TimeError::TooFar {
                ahead: hour + Duration::from_secs(1),
                max: hour
            })
        );
    }
}
