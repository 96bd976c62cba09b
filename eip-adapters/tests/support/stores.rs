//! What the broker-backed channel tests share: the brokers' addresses, a check that they answer,
//! names unique to a run, the clean-up, and receiving on many receivers at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use eip_core::channel::{Receiver, Subscriber};
use eip_core::message::{Message, MessageId};

pub const RABBITMQ: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
pub const NATS: &str = "nats://127.0.0.1:4222";

/// Whether the brokers are to be used: `false` (said on stdout) when `EIP_SKIP_BROKERS=1`.
/// A broker that does not answer fails the test, naming it.
pub async fn brokers(test: &str) -> bool {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return false;
    }
    for (name, address) in [("RabbitMQ", "127.0.0.1:5672"), ("NATS", "127.0.0.1:4222")] {
        let connected = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(address),
        )
        .await;
        assert!(
            matches!(connected, Ok(Ok(_))),
            "{name} at {address} is needed by this test and does not answer"
        );
    }
    true
}

/// A broker name unique to this run.
pub fn unique(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("EIP_STORE_{name}_{}_{n}_{nanos}", std::process::id())
}

/// Removes what a test made on the brokers.
pub async fn clean_up(queues: &[String], exchange: Option<&str>, stream: Option<&str>) {
    use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
    if let Ok(connection) =
        lapin::Connection::connect(RABBITMQ, lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        for queue in queues {
            let _ = channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        if let Some(exchange) = exchange {
            let _ = channel
                .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
                .await;
        }
        let _ = connection.close(200, "done".into()).await;
    }
    if let Some(stream) = stream
        && let Ok(client) = async_nats::connect(NATS).await
    {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(stream)
            .await;
    }
}

/// A point-to-point receiver or a subscriber.
pub trait Receives: Send + 'static {
    fn receiver(&mut self) -> &mut Receiver;
}

impl Receives for Receiver {
    fn receiver(&mut self) -> &mut Receiver {
        self
    }
}

impl Receives for Subscriber {
    fn receiver(&mut self) -> &mut Receiver {
        self
    }
}

/// Receives on every receiver at once until `n` messages came in all (or `limit` passed),
/// acking each; what each receiver got, by id.
pub async fn drain<R: Receives>(receivers: Vec<R>, n: usize, limit: Duration) -> Vec<Vec<Message>> {
    let got = Arc::new(AtomicU32::new(0));
    let deadline = tokio::time::Instant::now() + limit;
    let tasks: Vec<_> = receivers
        .into_iter()
        .map(|mut receiver| {
            let got = got.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                while (got.load(Ordering::SeqCst) as usize) < n {
                    let wait =
                        deadline.min(tokio::time::Instant::now() + Duration::from_millis(200));
                    match tokio::time::timeout_at(wait, receiver.receiver().recv()).await {
                        Ok(Some(delivery)) => {
                            mine.push(delivery.message().clone());
                            delivery.ack();
                            got.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(None) => break,
                        Err(_) if tokio::time::Instant::now() >= deadline => break,
                        Err(_) => {}
                    }
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.expect("a receiving task"));
    }
    all
}

/// How often each id came, over every receiver.
pub fn counts(got: &[Vec<Message>]) -> HashMap<MessageId, usize> {
    let mut counts = HashMap::new();
    for msg in got.iter().flatten() {
        *counts.entry(msg.id()).or_insert(0) += 1;
    }
    counts
}
