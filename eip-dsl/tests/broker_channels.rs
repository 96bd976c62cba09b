//! Channels kept in a broker under `eip run`: two processes of one flow compete for a
//! point-to-point channel kept in RabbitMQ (a queue) and in JetStream (a work-queue stream).
//! The test feeds the channel from outside (a third process's view of it), and each `eip run`
//! prints what its route moved to an output channel: every message is printed, none is lost,
//! and both processes did part of the work. Duplicates (at-least-once allows them) are counted.
//! Then one of the two is SIGKILLed a third of the way through, with the printed channel kept
//! in the broker too: the other process gets what it held, and nothing is lost. And joins in a
//! loop and a chain across two `eip run` through JetStream.
//! A broker that is down fails the test naming it; `EIP_SKIP_BROKERS=1` skips it and says so.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eip_adapters::store::{JetStream, RabbitMq};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::store::Backend;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

const RABBITMQ: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const NATS: &str = "nats://127.0.0.1:4222";

/// Messages fed to the channel.
const MESSAGES: usize = 2_000;

/// Whether to run: `false` (said on stdout) when `EIP_SKIP_BROKERS=1`; a broker that does not
/// answer fails the test, naming it.
fn brokers(test: &str) -> bool {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return false;
    }
    for (name, address) in [("RabbitMQ", "127.0.0.1:5672"), ("NATS", "127.0.0.1:4222")] {
        let reachable = address.parse().is_ok_and(|address| {
            std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)).is_ok()
        });
        assert!(
            reachable,
            "{name} at {address} is needed by this test and does not answer"
        );
    }
    true
}

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("EIP_RUN_{name}_{}_{nanos}", std::process::id())
}

/// A child `eip run` whose output lines are collected; killed if still running when dropped.
struct Run {
    child: Child,
    printed: Arc<Mutex<Vec<String>>>,
    connected: Arc<Mutex<bool>>,
}

impl Run {
    fn start(flow: &Path) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
            .arg("run")
            .arg(flow)
            .args(["--stats-interval", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("eip run starts");
        let printed = Arc::new(Mutex::new(Vec::new()));
        let connected = Arc::new(Mutex::new(false));
        let stdout = child.stdout.take().expect("its output");
        let stderr = child.stderr.take().expect("its errors");
        let lines = printed.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value: serde_json::Value =
                    serde_json::from_str(&line).expect("an output line is JSON");
                let id = value["id"].as_str().expect("an output line has an id");
                lines.lock().expect("the lines").push(id.to_owned());
            }
        });
        let up = connected.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("kept in") {
                    *up.lock().expect("the flag") = true;
                }
                eprintln!("eip: {line}");
            }
        });
        Run {
            child,
            printed,
            connected,
        }
    }

    fn printed(&self) -> Vec<String> {
        self.printed.lock().expect("the lines").clone()
    }

    fn is_connected(&self) -> bool {
        *self.connected.lock().expect("the flag")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run of two `eip run` of one flow competing for `work`.
struct Trial<'a> {
    label: &'a str,
    /// The `store:` of `work`.
    work: String,
    /// The `store:` of `done` (the channel printed); `None` keeps it in memory.
    done: Option<String>,
    /// The test's own view of `work`, to feed it.
    feeder: Arc<dyn Backend>,
    /// SIGKILL process 1 once this many messages were printed in all.
    kill_at: Option<usize>,
}

/// Two `eip run` of one flow compete for `work`, kept where the trial says; the test feeds it
/// and counts what each process printed (a killed process's lines up to its death count).
async fn two_processes(trial: Trial<'_>) {
    let label = trial.label;
    let scratch = Scratch::new("broker-run");
    let flow = scratch.0.join("flow.yaml");
    let done = trial
        .done
        .map_or_else(String::new, |store| format!(", store: {store}"));
    std::fs::write(
        &flow,
        format!(
            "channels:\n  work: {{kind: point-to-point, capacity: 32, store: {}}}\n  \
             done: {{kind: point-to-point{done}}}\nroutes:\n  - {{name: worker, from: work, to: done}}\n",
            trial.work
        ),
    )
    .expect("the flow file");
    let mut runs = [Run::start(&flow), Run::start(&flow)];
    let started = Instant::now();
    while !runs.iter().all(Run::is_connected) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{label}: both processes start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past "kept in": each has its consumer on the broker within a moment.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let work = PointToPoint::builder("work")
        .store(trial.feeder)
        .build()
        .expect("the feeder's view of the channel");
    let mut messages = Vec::with_capacity(MESSAGES);
    let sent: HashSet<String> = (0..MESSAGES)
        .map(|i| {
            let msg = Message::new(format!("{{\"n\":{i}}}"));
            let id = msg.id().to_string();
            messages.push(msg);
            id
        })
        .collect();
    let feeding = tokio::spawn(async move {
        for msg in messages {
            work.send(msg)
                .await
                .expect("a send confirmed by the broker");
        }
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut kills = 0;
    let (mut counts, mut per_run);
    loop {
        per_run = runs.iter().map(Run::printed).collect::<Vec<_>>();
        counts = HashMap::new();
        for id in per_run.iter().flatten() {
            *counts.entry(id.clone()).or_insert(0usize) += 1;
        }
        if let Some(at) = trial.kill_at
            && kills == 0
            && counts.len() >= at
        {
            // SIGKILL: no draining, no acknowledgement; what it held is the broker's again.
            let _ = runs[0].child.kill();
            let _ = runs[0].child.wait();
            kills += 1;
        }
        if sent.iter().all(|id| counts.contains_key(id)) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    feeding.await.expect("the feeder");
    let lost = sent.iter().filter(|id| !counts.contains_key(*id)).count();
    let duplicates: usize = counts.values().map(|n| n - 1).sum();
    println!(
        "{label}: {kills} kills, {MESSAGES} sent and confirmed; process 1 printed {}, process 2 printed {}; {lost} lost, {duplicates} duplicates",
        per_run[0].len(),
        per_run[1].len()
    );
    assert_eq!(lost, 0, "{label}: every message processed");
    assert_eq!(
        kills,
        usize::from(trial.kill_at.is_some()),
        "{label}: the kill came"
    );
    assert!(
        per_run.iter().all(|p| !p.is_empty()),
        "{label}: both processes busy"
    );
    assert!(
        counts.keys().all(|id| sent.contains(id)),
        "{label}: nothing printed that was not sent"
    );
}

/// Deletes RabbitMQ queues a test made.
async fn delete_queues(queues: &[&str]) {
    if let Ok(connection) =
        lapin::Connection::connect(RABBITMQ, lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        for queue in queues {
            let _ = channel
                .queue_delete((*queue).into(), Default::default())
                .await;
        }
        let _ = connection.close(200, "done".into()).await;
    }
}

/// Deletes JetStream streams a test made.
async fn delete_streams(streams: &[&str]) {
    if let Ok(client) = async_nats::connect(NATS).await {
        let js = async_nats::jetstream::new(client);
        for stream in streams {
            let _ = js.delete_stream(stream).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_eip_runs_compete_for_a_channel_kept_in_rabbitmq() {
    if !brokers("eip run on rabbitmq") {
        return;
    }
    let queue = unique("work");
    two_processes(Trial {
        label: "two eip run on a rabbitmq queue",
        work: format!("{{rabbitmq: {{url: '{RABBITMQ}', queue: {queue}}}}}"),
        done: None,
        feeder: Arc::new(RabbitMq::queue(RABBITMQ, &queue)),
        kill_at: None,
    })
    .await;
    delete_queues(&[&queue]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_eip_runs_compete_for_a_channel_kept_in_jetstream() {
    if !brokers("eip run on jetstream") {
        return;
    }
    let stream = unique("WORK");
    two_processes(Trial {
        label: "two eip run on a jetstream stream",
        work: format!("{{jetstream: {{url: '{NATS}', stream: {stream}}}}}"),
        done: None,
        feeder: Arc::new(JetStream::queue(NATS, &stream).expect("a stream name")),
        kill_at: None,
    })
    .await;
    delete_streams(&[&stream]).await;
}

/// One of two `eip run` is killed (SIGKILL) a third of the way through: with both channels of
/// the flow kept in RabbitMQ, what it held goes to the other process, and every message is
/// printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_eip_run_loses_nothing_on_channels_kept_in_rabbitmq() {
    if !brokers("eip run killed, rabbitmq") {
        return;
    }
    let (work, done) = (unique("work"), unique("done"));
    let store = |queue: &str| format!("{{rabbitmq: {{url: '{RABBITMQ}', queue: {queue}}}}}");
    two_processes(Trial {
        label: "two eip run on rabbitmq queues, one killed",
        work: store(&work),
        done: Some(store(&done)),
        feeder: Arc::new(RabbitMq::queue(RABBITMQ, &work)),
        kill_at: Some(MESSAGES / 3),
    })
    .await;
    delete_queues(&[&work, &done]).await;
}

/// The same through JetStream: what the killed process held is delivered again once the ack
/// wait (5 s here) is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_eip_run_loses_nothing_on_channels_kept_in_jetstream() {
    if !brokers("eip run killed, jetstream") {
        return;
    }
    let (work, done) = (unique("WORK"), unique("DONE"));
    let store =
        |stream: &str| format!("{{jetstream: {{url: '{NATS}', stream: {stream}, ack-wait: 5s}}}}");
    two_processes(Trial {
        label: "two eip run on jetstream streams, one killed",
        work: store(&work),
        done: Some(store(&done)),
        feeder: Arc::new(JetStream::queue(NATS, &work).expect("a stream name")),
        kill_at: Some(MESSAGES / 3),
    })
    .await;
    delete_streams(&[&work, &done]).await;
}

/// What `subscriber` receives until `quiet` passes without a message (acking each), by id.
async fn observed(
    mut subscriber: eip_core::channel::Subscriber,
    quiet: Duration,
) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    while let Ok(Some(delivery)) = tokio::time::timeout(quiet, subscriber.recv()).await {
        *seen.entry(delivery.message().id().to_string()).or_insert(0) += 1;
        delivery.ack();
    }
    seen
}

/// The joins seed across two `eip run`: process a publishes into channels in memory joined to
/// channels kept in JetStream; process b joins those in a loop (`loop1` ⇄ `loop2`) and in a
/// chain (`chain1` → `chain2` → `chain3`, the first join, in process a, with hop count 1).
/// A third view of the streams watches what each channel stores: every event once on each
/// channel of the loop, and the chain stopping after `chain2`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_across_two_eip_runs_keep_hop_counts_and_store_once_per_channel() {
    use eip_core::channel::PublishSubscribe;
    if !brokers("joins across eip runs") {
        return;
    }
    let names = ["loop1", "loop2", "chain1", "chain2", "chain3"];
    let streams: Vec<String> = names.iter().map(|n| unique(&n.to_uppercase())).collect();
    let kept = |i: usize| {
        format!(
            "{{kind: publish-subscribe, store: {{jetstream: {{url: '{NATS}', stream: {}}}}}}}",
            streams[i]
        )
    };
    let scratch = Scratch::new("broker-joins");
    let flow_a = scratch.0.join("a.yaml");
    std::fs::write(
        &flow_a,
        format!(
            "channels:\n  loop0: {{kind: publish-subscribe}}\n  chain0: {{kind: publish-subscribe}}\n  \
             loop1: {}\n  chain1: {}\njoins:\n  - {{from: loop0, to: loop1}}\n  \
             - {{from: chain0, to: chain1, hops: 1}}\n",
            kept(0),
            kept(2)
        ),
    )
    .expect("flow a");
    let flow_b = scratch.0.join("b.yaml");
    std::fs::write(
        &flow_b,
        format!(
            "channels:\n  loop1: {}\n  loop2: {}\n  chain1: {}\n  chain2: {}\n  chain3: {}\n\
             joins:\n  - {{from: loop1, to: loop2}}\n  - {{from: loop2, to: loop1}}\n  \
             - {{from: chain1, to: chain2}}\n  - {{from: chain2, to: chain3}}\n",
            kept(0),
            kept(1),
            kept(2),
            kept(3),
            kept(4)
        ),
    )
    .expect("flow b");
    // The watchers first: a subscription sees what is published after it is made.
    let views: Vec<PublishSubscribe> = names
        .iter()
        .zip(&streams)
        .map(|(name, stream)| {
            PublishSubscribe::builder(name)
                .store(Arc::new(
                    JetStream::fan_out(NATS, stream).expect("a stream name"),
                ))
                .build()
                .expect("a watching view")
        })
        .collect();
    let watchers: Vec<_> = views
        .iter()
        .map(|view| view.durable_subscribe("observer"))
        .collect();
    for view in &views {
        view.ready(Duration::from_secs(10))
            .await
            .expect("the watchers' subscriptions are made");
    }
    let b = Run::start(&flow_b);
    let started = Instant::now();
    while !b.is_connected() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "process b starts"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let input = scratch.0.join("input.jsonl");
    let lines: String = (0..20)
        .flat_map(|i| {
            [
                format!("{{\"to\": \"loop0\", \"payload\": {{\"loop\": {i}}}}}\n"),
                format!("{{\"to\": \"chain0\", \"payload\": {{\"chain\": {i}}}}}\n"),
            ]
        })
        .collect();
    std::fs::write(&input, lines).expect("the input");
    let a = Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(&flow_a)
        .args(["--stats-interval", "0", "--quiet", "--input"])
        .arg(&input)
        .output()
        .expect("process a runs");
    assert!(
        a.status.success(),
        "process a: {}",
        String::from_utf8_lossy(&a.stderr)
    );
    let mut seen = Vec::new();
    for watcher in watchers {
        seen.push(observed(watcher, Duration::from_secs(3)).await);
    }
    drop(b);
    let count = |i: usize| seen[i].len();
    let twice = |i: usize| seen[i].values().filter(|n| **n > 1).count();
    println!(
        "joins across two eip run: 20 events each way; loop1 {} ({} twice), loop2 {} ({} twice); \
         chain1 {}, chain2 {}, chain3 {}",
        count(0),
        twice(0),
        count(1),
        twice(1),
        count(2),
        count(3),
        count(4)
    );
    assert_eq!(
        (count(0), count(1)),
        (20, 20),
        "the loop stores every event"
    );
    assert_eq!(
        (twice(0), twice(1)),
        (0, 0),
        "once per channel, all round the loop"
    );
    assert_eq!(
        seen[0].keys().collect::<HashSet<_>>(),
        seen[1].keys().collect()
    );
    assert_eq!(
        (count(2), count(3)),
        (20, 20),
        "hop count 1: chain1, then chain2"
    );
    assert_eq!(count(4), 0, "and not chain3");
    if let Ok(client) = async_nats::connect(NATS).await {
        let js = async_nats::jetstream::new(client);
        for stream in &streams {
            let _ = js.delete_stream(stream).await;
        }
    }
}
