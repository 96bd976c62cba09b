//! The Resequencer over a store that keeps its state: what it is asked to keep and when, a
//! released message the inner service refused kept rather than dropped, and `resume` sending
//! what a store read back as released and not sent.

use std::sync::{Arc, Mutex};

use eip_core::Message;
use eip_steps::Keeping;
use eip_steps::resequence::{
    InMemorySequence, Released, Resequenced, Resequencer, ResequencerConfig, SequenceStore, Skipped,
};
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceExt, service_fn};

/// What a store was asked to keep, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// The memory state, recording each keep as a durable store would make it.
struct Recording {
    memory: InMemorySequence,
    log: Log,
}

fn done() -> Option<Keeping> {
    Some(Box::pin(async { Ok(()) }))
}

impl SequenceStore for Recording {
    fn next(&self) -> u64 {
        self.memory.next()
    }
    fn is_held(&self, n: u64) -> bool {
        self.memory.is_held(n)
    }
    fn was_skipped(&self, n: u64) -> bool {
        self.memory.was_skipped(n)
    }
    fn held(&self) -> usize {
        self.memory.held()
    }
    fn run_after(&self, n: u64) -> usize {
        self.memory.run_after(n)
    }
    fn waiting_since(&self) -> Option<Instant> {
        self.memory.waiting_since()
    }
    fn hold(&mut self, n: u64, msg: Message, now: Instant) {
        self.memory.hold(n, msg, now);
    }
    fn release(&mut self, msg: Message, now: Instant) -> Vec<Message> {
        self.memory.release(msg, now)
    }
    fn skip_gap(&mut self, now: Instant) -> Option<Skipped> {
        self.memory.skip_gap(now)
    }
    fn keeps(&self) -> bool {
        true
    }
    fn keep_held(&self, n: u64) -> Option<Keeping> {
        self.log.lock().unwrap().push(format!("held {n}"));
        done()
    }
    fn keep_released(&self, released: &Released<'_>) -> Option<Keeping> {
        let sent: Vec<u64> = released.sent.iter().map(|(n, _)| *n).collect();
        let unsent: Vec<u64> = released.unsent.iter().map(|(n, _)| *n).collect();
        self.log.lock().unwrap().push(format!(
            "sent {sent:?} unsent {unsent:?} next {}",
            released.next
        ));
        done()
    }
}

fn numbered(n: u64) -> Message {
    Message::builder(n.to_string())
        .header("sequence-number", i64::try_from(n).unwrap())
        .build()
}

/// An inner service that records what it took and refuses the payload `refuse`.
fn inner(
    took: Arc<Mutex<Vec<String>>>,
    refuse: &'static str,
) -> impl Service<Message, Response = (), Error = BoxError, Future: Send> + Clone + Send + 'static {
    service_fn(move |msg: Message| {
        let took = took.clone();
        async move {
            let text = msg.payload_str().unwrap_or_default().to_owned();
            if text == refuse {
                return Err::<(), BoxError>(format!("{text} refused").into());
            }
            took.lock().unwrap().push(text);
            Ok(())
        }
    })
}

#[tokio::test]
async fn holds_and_released_runs_are_kept_and_a_refused_message_stays_in_the_store() {
    let log = Log::default();
    let took = Arc::new(Mutex::new(Vec::new()));
    let store = Recording {
        memory: InMemorySequence::starting_at(1),
        log: log.clone(),
    };
    let mut r = Resequencer::with_store(inner(took.clone(), "3"), ResequencerConfig::new(), store);
    for n in [3, 2] {
        let got = r.ready().await.unwrap().call(numbered(n)).await.unwrap();
        assert_eq!(got, Resequenced::Held);
    }
    let got = r.ready().await.unwrap().call(numbered(1)).await.unwrap();
    assert_eq!(got, Resequenced::Kept { sent: 2, kept: 1 });
    assert_eq!(*took.lock().unwrap(), ["1", "2"]);
    assert_eq!(
        *log.lock().unwrap(),
        ["held 3", "held 2", "sent [1, 2] unsent [3] next 4"]
    );
    // The next number moved on: 4 goes straight through.
    let got = r.ready().await.unwrap().call(numbered(4)).await.unwrap();
    assert_eq!(got, Resequenced::Released { count: 1 });
    assert_eq!(
        log.lock().unwrap().last().unwrap(),
        "sent [4] unsent [] next 5"
    );
}

#[tokio::test]
async fn resume_sends_what_was_released_and_not_sent_before_anything_else() {
    let log = Log::default();
    let took = Arc::new(Mutex::new(Vec::new()));
    // Read back: 3 released and not sent; next 4; 6 held.
    let store = Recording {
        memory: InMemorySequence::restored(4, [(6, numbered(6))], None, []),
        log: log.clone(),
    };
    let mut r = Resequencer::with_store(inner(took.clone(), ""), ResequencerConfig::new(), store);
    r.resume(vec![(3, numbered(3))]);
    let got = r.ready().await.unwrap().call(numbered(4)).await.unwrap();
    assert_eq!(got, Resequenced::Released { count: 1 });
    assert_eq!(r.held(), 1, "6 waits for 5");
    let got = r.ready().await.unwrap().call(numbered(5)).await.unwrap();
    assert_eq!(got, Resequenced::Released { count: 2 });
    assert_eq!(*took.lock().unwrap(), ["3", "4", "5", "6"]);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "sent [3] unsent [] next 4",
            "sent [4] unsent [] next 5",
            "sent [5, 6] unsent [] next 7"
        ]
    );
}
