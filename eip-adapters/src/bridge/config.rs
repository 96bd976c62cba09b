//! Checking a bridge's configuration as a whole: every problem is collected, then told in one
//! [`BridgeError::Config`] that names the bridge, so a wrong configuration is fixed in one go
//! rather than one complaint at a time.

use std::time::Duration;

use super::BridgeError;

/// Adds a problem for each of `durations` (a name and its value) that is zero.
pub(crate) fn zero_durations(problems: &mut Vec<String>, durations: &[(&str, Duration)]) {
    for (name, duration) in durations {
        if duration.is_zero() {
            problems.push(format!("{name} is zero"));
        }
    }
}

/// `Ok` without problems, else the error naming `bridge` (`jetstream outbound`) and every
/// problem.
pub(crate) fn checked(bridge: &str, problems: Vec<String>) -> Result<(), BridgeError> {
    match problems.is_empty() {
        true => Ok(()),
        false => Err(BridgeError::Config(format!(
            "{bridge}: {}",
            problems.join("; ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_told_at_once_naming_the_bridge() {
        let mut problems = vec!["the url is empty".to_owned()];
        zero_durations(
            &mut problems,
            &[
                ("connect_timeout", Duration::ZERO),
                ("ack_wait", Duration::from_secs(1)),
                ("heartbeat", Duration::ZERO),
            ],
        );
        let e = checked("jetstream source", problems).unwrap_err();
        assert_eq!(
            e.to_string(),
            "configuration: jetstream source: the url is empty; connect_timeout is zero; heartbeat is zero"
        );
        assert!(checked("x", Vec::new()).is_ok());
    }
}
