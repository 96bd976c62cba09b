//! The Delayer from Rust alone: `Delay` and `DelayLayer` in front of a service that notes when
//! each message reached it. Times are measured on tokio's paused clock, which moves only when
//! every task waits: a wait is as long as the step makes it, whatever the machine's load.

use std::time::{Duration, SystemTime};

mod support {
    pub mod arrivals;
}

use eip_core::Message;
use eip_steps::delay::{Delay, DelayError, DelayLayer, Wait};
use eip_steps::error::StepError;
use support::arrivals::{Arrivals, noting};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

/// Seconds since 1970 of a time `ahead` from now.
fn epoch_in(ahead: Duration) -> u64 {
    (SystemTime::now() + ahead)
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits until the time the header `at` names (seconds since 1970), at most an hour ahead.
fn until_header() -> Wait {
    Wait::until(Duration::from_secs(3600), |msg: &Message| {
        let at = msg.headers().get("at").and_then(|v| v.as_int());
        let at = at.ok_or_else(|| "no header `at`".to_owned())?;
        let at = u64::try_from(at).map_err(|_| format!("`at` is {at}, before 1970"))?;
        Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(at))
    })
}

#[tokio::test(start_paused = true)]
async fn a_fixed_delay_holds_each_message_before_the_inner_service_sees_it() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Delay::new(
        noting(start, arrivals.clone()),
        Wait::fixed(Duration::from_secs(5)),
    );
    let waiting = tokio::spawn(step.clone().oneshot(Message::new("one")));
    tokio::time::sleep(Duration::from_millis(4900)).await;
    assert!(
        arrivals.lock().unwrap().is_empty(),
        "still waiting at 4.9 s"
    );
    assert_eq!(waiting.await.unwrap().unwrap(), "one");
    assert_eq!(
        *arrivals.lock().unwrap(),
        [("one".to_owned(), Duration::from_secs(5))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_delay_until_waits_for_the_time_the_message_names_and_not_for_one_past() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = DelayLayer::new(until_header()).layer(noting(start, arrivals.clone()));
    let at = |secs: u64| {
        Message::builder("{}")
            .header("at", i64::try_from(secs).unwrap())
            .build()
    };
    step.clone()
        .oneshot(at(epoch_in(Duration::from_secs(120))))
        .await
        .unwrap();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(118) && waited <= Duration::from_secs(121),
        "waited {waited:?}"
    );
    let again = Instant::now();
    step.oneshot(at(1_000_000_000)).await.unwrap();
    assert_eq!(again.elapsed(), Duration::ZERO, "a time past: no wait");
    assert_eq!(arrivals.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_message_naming_no_time_or_one_too_far_comes_back_at_once_and_is_not_passed_on() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Delay::new(noting(start, arrivals.clone()), until_header());

    let far = Message::builder("{}")
        .header(
            "at",
            i64::try_from(epoch_in(Duration::from_secs(7200))).unwrap(),
        )
        .build();
    let err = step.clone().oneshot(far.clone()).await.unwrap_err();
    assert!(err.is_permanent());
    match &err {
        StepError::Failed {
            error: DelayError::TooFar { by, ahead, max },
            ..
        } => {
            assert_eq!(*by, None);
            assert!(
                *ahead > *max && *max == Duration::from_secs(3600),
                "{ahead:?}"
            );
        }
        other => panic!("not too far: {other:?}"),
    }
    assert!(
        err.to_string()
            .ends_with("from now, past the delay's `max` of 1h"),
        "{err}"
    );
    assert_eq!(err.into_message(), Some(far), "the message handed back");

    let none = Message::new("{}");
    let err = step.oneshot(none.clone()).await.unwrap_err();
    assert_eq!(err.to_string(), "no header `at`");
    assert_eq!(err.into_message(), Some(none));
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    assert!(arrivals.lock().unwrap().is_empty(), "nothing passed on");
}

#[tokio::test(start_paused = true)]
async fn the_inner_service_s_error_comes_back_after_the_wait_as_its_own() {
    let start = Instant::now();
    let step = Delay::new(
        noting(start, Arrivals::default()),
        Wait::fixed(Duration::from_secs(1)),
    );
    let err = step.oneshot(Message::new("fail")).await.unwrap_err();
    assert!(!err.is_permanent(), "the inner service's to judge");
    assert!(
        matches!(&err, StepError::Inner(e) if e == "the inner service is down"),
        "{err:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn messages_waiting_at_once_each_wait_their_own_time() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Delay::new(
        noting(start, arrivals.clone()),
        Wait::fixed(Duration::from_secs(2)),
    );
    let calls: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|p| tokio::spawn(step.clone().oneshot(Message::new(p))))
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let times: Vec<Duration> = arrivals.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert_eq!(
        times,
        [Duration::from_secs(2); 3],
        "side by side, not in turn"
    );
}

#[cfg(feature = "jq")]
#[tokio::test(start_paused = true)]
async fn a_delay_until_a_jq_time_reads_rfc3339_text_and_names_the_program_in_its_errors() {
    use eip_steps::expr::Jq;

    let start = Instant::now();
    let arrivals = Arrivals::default();
    let wait = Wait::until_jq(Jq::compile(".at").unwrap(), Duration::from_secs(3600));
    let step = Delay::new(noting(start, arrivals.clone()), wait);
    let past = Message::new(r#"{"at": "2001-01-01T00:00:00+02:00"}"#);
    step.clone().oneshot(past).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);

    let soon = Message::new(r#"{"at": "soon"}"#);
    let err = step.clone().oneshot(soon).await.unwrap_err().to_string();
    assert!(
        err.starts_with("`.at`: `soon` is not an RFC 3339 time"),
        "{err}"
    );
    let far = format!(r#"{{"at": {}}}"#, epoch_in(Duration::from_secs(86_400)));
    let err = step
        .oneshot(Message::new(far))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("`.at`: the time is 23h 59m"), "{err}");
    assert_eq!(arrivals.lock().unwrap().len(), 1);
}
