//! A flow run until idle and then stopped, for the tests of what steps holding messages do at
//! stop.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_dsl::compile::{self, Flow};
use eip_dsl::load;

/// What reached the flow's outputs, by channel, in order.
type Seen = Arc<Mutex<Vec<(String, Message)>>>;

/// Compiles `yaml` (every channel in memory), starts it, sends `messages` to `orders`, waits
/// until idle, and stops it through [`RunningFlow::stop`](eip_dsl::compile::RunningFlow).
/// What reached the outputs, and the flow (for its counters).
pub fn run_then_stop(yaml: &str, messages: Vec<Message>) -> (Vec<(String, Message)>, Flow) {
    let plan = load::load_str(yaml, "flow.yaml", Path::new(".")).expect("the flow validates");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let flow = compile::compile(&plan).expect("compiles");
        let seen: Seen = Arc::default();
        let sink = seen.clone();
        let running = flow.start(Arc::new(move |channel: &str, msg: &Message| {
            sink.lock()
                .expect("not poisoned")
                .push((channel.to_owned(), msg.clone()));
        }));
        for msg in messages {
            flow.bus().publish("orders", msg).await.expect("accepted");
        }
        assert!(running.settle(Duration::from_secs(10)).await, "idle");
        assert!(seen.lock().expect("not poisoned").is_empty(), "all held");
        let left = running.stop(Duration::from_secs(10)).await;
        assert!(left.is_empty(), "nothing left: {left:?}");
        let seen = seen.lock().expect("not poisoned").clone();
        (seen, flow)
    })
}
