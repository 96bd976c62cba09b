//! A service that notes when each message reached it, for the steps that wait.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use tokio::time::Instant;
use tower::service_fn;

/// What reached the inner service: each payload and how long after `start`.
pub type Arrivals = Arc<Mutex<Vec<(String, Duration)>>>;

/// A service that notes each message's payload and time of arrival, and answers its payload;
/// it fails on the payload `fail`.
pub fn noting(
    start: Instant,
    arrivals: Arrivals,
) -> impl tower::Service<
    Message,
    Response = String,
    Error = String,
    Future = std::future::Ready<Result<String, String>>,
> + Clone
+ Send
+ 'static {
    service_fn(move |msg: Message| {
        let text = msg.payload_str().unwrap_or_default().to_owned();
        arrivals
            .lock()
            .unwrap()
            .push((text.clone(), start.elapsed()));
        std::future::ready(match text.as_str() {
            "fail" => Err("the inner service is down".to_owned()),
            _ => Ok(text),
        })
    })
}
