//! The on-error tests' flows: a `pricing` service that fails on demand, a route from the queue
//! `orders` (which redelivers twice), and what came out of each output channel.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::Flow;
use eip_dsl::load;
use eip_dsl::step::Services;

/// The channels of the on-error tests' flows: `orders` redelivers a failed message twice.
pub const CHANNELS: &str = "
channels:
  orders:
    kind: point-to-point
    redelivery: {max-attempts: 3, initial-backoff: 1ms, max-backoff: 1ms}
  priced: {kind: point-to-point}
  orders.failed: {kind: point-to-point}
  news: {kind: publish-subscribe}
";

/// A service that counts its calls and fails on the payload `fail`, answering the payload in
/// capitals otherwise.
pub fn pricing(
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<
    Message,
    Response = Message,
    Error = tower::BoxError,
    Future = impl Future<Output = Result<Message, tower::BoxError>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |msg: Message| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            let text = msg.payload_str().unwrap_or_default().to_owned();
            if text.contains("fail") {
                return Err::<Message, tower::BoxError>("pricing is down".into());
            }
            Ok(Message::new(text.to_uppercase()))
        }
    })
}

/// The plan of `source`, with `services`; else the rendered problems.
pub fn load_with(source: &str, services: &Services) -> Result<eip_dsl::plan::Plan, String> {
    load::load_str_with(source, "flow.yaml", Path::new("."), services).map_err(|e| e.render())
}

/// What the flow's outputs (channels no route consumes) got, by channel, in order.
pub type Outputs = Arc<Mutex<Vec<(String, Message)>>>;

/// Starts `flow`, sends `payloads` to `orders`, waits until it is idle and stops it; what came
/// out of each output channel.
pub async fn run(flow: &Flow, payloads: &[&str]) -> Vec<(String, Message)> {
    let Some(Channel::PointToPoint(orders)) = flow.channels().iter().find(|c| c.name() == "orders")
    else {
        panic!("orders is a queue")
    };
    run_sending(flow, async {
        for payload in payloads {
            orders
                .send(Message::new(payload.to_string()))
                .await
                .expect("accepted");
        }
    })
    .await
}

/// Starts `flow`, runs `send`, waits until the flow is idle and stops it; what came out of each
/// output channel.
pub async fn run_sending(flow: &Flow, send: impl Future<Output = ()>) -> Vec<(String, Message)> {
    let seen: Outputs = Arc::default();
    let sink = seen.clone();
    let running = flow.start(Arc::new(move |channel: &str, msg: &Message| {
        sink.lock()
            .expect("not poisoned")
            .push((channel.to_owned(), msg.clone()));
    }));
    send.await;
    let idle = running.settle(Duration::from_secs(10)).await;
    assert!(idle, "idle in time: {:?}", running.counters());
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "nothing left: {left:?}");
    seen.lock().expect("not poisoned").clone()
}

/// The payloads `channel` got, in order.
pub fn payloads_at<'m>(out: &'m [(String, Message)], channel: &str) -> Vec<&'m str> {
    out.iter()
        .filter(|(c, _)| c == channel)
        .filter_map(|(_, m)| m.payload_str())
        .collect()
}

/// A runtime of two workers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}
