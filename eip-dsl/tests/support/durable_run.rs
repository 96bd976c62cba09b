//! One run of a durable flow in this process: compiled on a data directory, started, sent
//! messages on one channel, stopped once idle; what reached its outputs. Run it again on the
//! same directory for what a restart keeps.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, StoreOptions};
use eip_dsl::load;

/// Runs the flow file `yaml` on `data`: sends `messages` to the queue `to`, waits until the
/// flow is idle (then `linger` more, for timers), and stops it. The messages that reached an
/// output, in order.
pub fn run_durable(
    yaml: &str,
    data: &Path,
    to: &str,
    messages: Vec<Message>,
    linger: Duration,
) -> Vec<Message> {
    let plan = load::load_str(yaml, "flow.yaml", Path::new(".")).expect("the flow validates");
    let store = StoreOptions {
        data_dir: data.to_owned(),
        max_bytes: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let flow = compile::compile_with(&plan, &store).expect("compiles");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let running = flow.start(Arc::new(move |_: &str, msg: &Message| {
            sink.lock().expect("not poisoned").push(msg.clone());
        }));
        let Some(Channel::PointToPoint(input)) = flow.channels().iter().find(|c| c.name() == to)
        else {
            panic!("{to} is a queue of the flow")
        };
        for msg in messages {
            input.send(msg).await.expect("accepted");
        }
        let idle = running.settle(Duration::from_secs(10)).await;
        assert!(idle, "idle in time: {:?}", running.counters());
        tokio::time::sleep(linger).await;
        assert!(running.settle(Duration::from_secs(10)).await, "idle again");
        let left = running.stop(Duration::from_secs(5)).await;
        assert!(left.is_empty(), "nothing left: {left:?}");
        seen.lock().expect("not poisoned").clone()
    })
}
