//! Durations as written in a flow file: a whole number and a unit, `500ms`, `30s`, `5m`, `1h`.
//!
//! Fractions (`1.5s`) are not accepted: every duration has one exact spelling in whole units
//! (`1500ms`), so no rounding rule is needed and two flows that mean the same wait read the
//! same. Neither are spaces, signs, compound forms (`1m30s`) or other units; the error says
//! what to write instead.

use std::time::Duration;

/// A duration that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number followed by a unit.
    #[error("`{text}` is not a duration")]
    Syntax {
        /// The text as written.
        text: String,
        /// An equivalent spelling, when there is an obvious one (`1.5s` → `1500ms`).
        suggestion: Option<String>,
    },
    /// A number followed by something other than `ms`, `s`, `m` or `h`.
    #[error("`{text}`: unknown unit `{unit}`")]
    Unit {
        /// The text as written.
        text: String,
        /// The unit as written.
        unit: String,
    },
    /// Longer than a `Duration` can hold.
    #[error("`{text}` is too long a duration")]
    TooLong {
        /// The text as written.
        text: String,
    },
}

impl DurationError {
    /// How to write it instead.
    pub fn help(&self) -> String {
        const FORMS: &str = "a duration is a whole number and a unit: `500ms`, `30s`, `5m`, `1h`";
        match self {
            DurationError::Syntax {
                suggestion: Some(s),
                ..
            } => format!("{FORMS}; write `{s}`"),
            DurationError::Syntax { .. } | DurationError::TooLong { .. } => FORMS.to_owned(),
            DurationError::Unit { .. } => {
                format!("{FORMS} (milliseconds, seconds, minutes, hours)")
            }
        }
    }
}

/// Milliseconds per unit.
fn unit_millis(unit: &str) -> Option<u64> {
    match unit {
        "ms" => Some(1),
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        _ => None,
    }
}

/// Parses a duration: digits, then `ms`, `s`, `m` or `h`.
///
/// ```
/// use std::time::Duration;
/// use eip_dsl::validate::parse_duration;
///
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
/// assert!(parse_duration("1.5s").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let syntax = || DurationError::Syntax {
        text: text.to_owned(),
        suggestion: suggest(text),
    };
    if number.is_empty() {
        return Err(syntax());
    }
    let Some(per_unit) = unit_millis(unit) else {
        return Err(
            if unit.is_empty() || !unit.chars().all(char::is_alphabetic) {
                syntax()
            } else {
                DurationError::Unit {
                    text: text.to_owned(),
                    unit: unit.to_owned(),
                }
            },
        );
    };
    let too_long = || DurationError::TooLong {
        text: text.to_owned(),
    };
    let n: u64 = number.parse().map_err(|_| too_long())?;
    let millis = n.checked_mul(per_unit).ok_or_else(too_long)?;
    Ok(Duration::from_millis(millis))
}

/// The whole-unit spelling of a decimal duration such as `1.5s` (`1500ms`), when it is a
/// whole number of milliseconds.
fn suggest(text: &str) -> Option<String> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let per_unit = unit_millis(unit)?;
    let (whole, fraction) = number.split_once('.')?;
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || fraction.len() > 3
    {
        return None;
    }
    // Exact in integers: whole * unit + fraction * unit / 10^len.
    let scale = 10u64.pow(u32::try_from(fraction.len()).ok()?);
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().ok()?
    };
    let fraction_millis = fraction.checked_mul(per_unit)?;
    if fraction_millis % scale != 0 {
        return None;
    }
    let millis = whole
        .checked_mul(per_unit)?
        .checked_add(fraction_millis / scale)?;
    Some(spell(millis))
}

/// A duration as a flow file writes it, in its shortest whole unit (`1h`, `90s`, `250ms`).
pub(crate) fn spell_duration(d: std::time::Duration) -> String {
    spell(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The shortest whole-unit spelling of `millis`.
fn spell(millis: u64) -> String {
    for (unit, per) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if millis != 0 && millis.is_multiple_of(per) {
            return format!("{}{unit}", millis / per);
        }
    }
    format!("{millis}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_with_a_unit_are_durations() {
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn fractions_are_refused_with_the_whole_unit_spelling() {
        let err = parse_duration("1.5s").unwrap_err();
        assert!(err.help().ends_with("write `1500ms`"), "{}", err.help());
        let err = parse_duration("0.5m").unwrap_err();
        assert!(err.help().ends_with("write `30s`"), "{}", err.help());
        let err = parse_duration("1.0001s").unwrap_err();
        assert_eq!(
            err,
            DurationError::Syntax {
                text: "1.0001s".into(),
                suggestion: None
            }
        );
    }

    #[test]
    fn other_forms_are_refused() {
        for bad in [
            "", "s", "30", " 30s", "30 s", "-1s", "+1s", "1m30s", "1e3ms", "١s",
        ] {
            assert!(
                matches!(parse_duration(bad), Err(DurationError::Syntax { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_duration("3d"),
            Err(DurationError::Unit {
                text: "3d".into(),
                unit: "d".into()
            })
        );
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        assert!(matches!(
            parse_duration("99999999999999999999999h"),
            Err(DurationError::TooLong { .. })
        ));
        assert!(matches!(
            parse_duration("18446744073709551615h"),
            Err(DurationError::TooLong { .. })
        ));
    }
}
