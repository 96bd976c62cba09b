//! The sensors example (`examples/flows/sensors.yaml`) under `eip run`, against the brokers on
//! this machine: readings published to Mosquitto (127.0.0.1:1883, MQTT v5, QoS 1) come in
//! through the flow's MQTT bridge; the hot one reaches a RabbitMQ queue the test binds to the
//! example's `alerts` exchange (and the example's own log queue, printed); the valid ones pass
//! through the JetStream stream that keeps `readings.history` and are written as files; the
//! invalid one is printed on `readings.invalid` with its reason. The example runs as written,
//! with its broker names made unique to the run; what the run made on the brokers is removed
//! afterwards, whatever the outcome. A broker that is down fails the test naming it;
//! `EIP_SKIP_BROKERS=1` skips it and says so.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use eip_adapters::mqtt::{MqttBroker, MqttOutbound, MqttOutboundConfig, TopicTemplate};
use eip_core::message::{Message, MessageId};
use futures::FutureExt;
use lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
    QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use serde_json::Value;
use tokio::time::Instant;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// The brokers the example uses, where it expects them.
const BROKERS: [(&str, &str); 3] = [
    ("Mosquitto (MQTT)", "127.0.0.1:1883"),
    ("RabbitMQ", "127.0.0.1:5672"),
    ("NATS JetStream", "127.0.0.1:4222"),
];

/// How long the whole run may take, start to clean-up.
const LIMIT: Duration = Duration::from_secs(90);

fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// Whether the brokers are to be used: `false` (said on stdout) when `EIP_SKIP_BROKERS=1`.
/// A broker that does not answer fails the test, naming it.
async fn brokers(test: &str) -> bool {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return false;
    }
    for (name, address) in BROKERS {
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

/// The broker names of one run: the example's, made unique.
struct Names {
    /// Replaces the MQTT topic root `sensors` (and so the subjects' first word).
    root: String,
    client_id: String,
    exchange: String,
    log_queue: String,
    /// The queue this test binds to the exchange.
    test_queue: String,
    stream: String,
}

impl Names {
    fn new() -> Names {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let tag = format!("{}-{nanos}", std::process::id());
        let root = format!("eiptest-sensors-{tag}");
        Names {
            client_id: format!("{root}-in"),
            exchange: format!("{root}.alerts"),
            log_queue: format!("{root}.alerts.log"),
            test_queue: format!("{root}.alerts.test"),
            stream: format!("EIPTEST_SENSORS_{}", tag.replace('-', "_")),
            root,
        }
    }

    /// The example's text with these names; each name it replaces must be there as expected.
    fn example(&self) -> String {
        let mut text =
            std::fs::read_to_string(examples().join("sensors.yaml")).expect("the example");
        let replacements = [
            (
                "stream: SENSOR_READINGS".to_owned(),
                format!("stream: {}", self.stream),
                1,
            ),
            (
                "exchange: alerts\n".to_owned(),
                format!("exchange: {}\n", self.exchange),
                2,
            ),
            (
                "queue: sensors.alerts.log".to_owned(),
                format!("queue: {}", self.log_queue),
                1,
            ),
            (
                // The session outlives the run by a minute, not a day.
                "client-id: eip-sensors\n".to_owned(),
                format!("client-id: {}\n    session-expiry: 60s\n", self.client_id),
                1,
            ),
            (
                "filter: sensors/+/temperature".to_owned(),
                format!("filter: {}/+/temperature", self.root),
                1,
            ),
            (
                r#"binding-keys: ["sensors.#"]"#.to_owned(),
                format!(r#"binding-keys: ["{}.#"]"#, self.root),
                1,
            ),
        ];
        for (from, to, times) in replacements {
            assert_eq!(
                text.matches(&from).count(),
                times,
                "the example no longer says {from:?} {times} time(s)"
            );
            text = text.replace(&from, &to);
        }
        text
    }

    fn subject(&self, room: &str) -> String {
        format!("{}.{room}.temperature", self.root)
    }
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows")
}

/// `eip run` as a child, killed (SIGKILL) when dropped if it has not ended.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines a reader gives, one by one, through a channel (read on a thread of their own).
fn lines_of(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The files of `dir`, sorted; hidden ones (a writer's temporary files) left out.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Removes what the run made on the brokers. (The MQTT session ends by itself a minute after
/// the run.)
async fn clean_up(names: &Names) {
    if let Ok(connection) =
        lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        for queue in [&names.log_queue, &names.test_queue] {
            let _ = channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = channel
            .exchange_delete(
                names.exchange.as_str().into(),
                ExchangeDeleteOptions::default(),
            )
            .await;
        let _ = connection.close(200, "done".into()).await;
    }
    if let Ok(client) = async_nats::connect(nats_url()).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&names.stream)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sensors_example_alerts_through_rabbitmq_keeps_readings_in_jetstream_and_reports_the_invalid_one()
 {
    if !brokers("the sensors example").await {
        return;
    }
    let names = Names::new();
    let run = std::panic::AssertUnwindSafe(tokio::time::timeout(LIMIT, run_example(&names)))
        .catch_unwind()
        .await;
    clean_up(&names).await;
    match run {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("the sensors example took longer than {LIMIT:?}"),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

async fn run_example(names: &Names) {
    // The test's own queue on the alerts exchange, bound before the flow publishes (the
    // declaration is the example's: a durable topic exchange).
    let rabbit = lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ at {}: {e}", BROKERS[1].1));
    let channel = rabbit.create_channel().await.expect("an AMQP channel");
    channel
        .exchange_declare(
            names.exchange.as_str().into(),
            lapin::ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("the alerts exchange declared");
    channel
        .queue_declare(
            names.test_queue.as_str().into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("the test's queue declared");
    channel
        .queue_bind(
            names.test_queue.as_str().into(),
            names.exchange.as_str().into(),
            format!("{}.#", names.root).as_str().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("the test's queue bound");

    // The example as written, with this run's names, in a scratch directory.
    let scratch = Scratch::new("sensors");
    std::fs::write(scratch.0.join("sensors.yaml"), names.example()).expect("the flow written");
    std::fs::create_dir_all(scratch.0.join("schemas")).expect("schemas/");
    std::fs::copy(
        examples().join("schemas/reading.json"),
        scratch.0.join("schemas/reading.json"),
    )
    .expect("the schema copied");
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_eip"))
            .args(["run", "sensors.yaml", "--stats-interval", "0"])
            .current_dir(&scratch.0)
            .env("AMQP_URL", amqp_url())
            .env("NATS_URL", nats_url())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("eip run starts"),
    );
    let stdout = lines_of(child.0.stdout.take().expect("stdout"));
    let stderr = lines_of(child.0.stderr.take().expect("stderr"));
    let mut said: Vec<String> = Vec::new();

    // Started once every bridge is connected (the last one printed is `alert-log`): the MQTT
    // bridge's session exists, so the broker keeps what is published from here on for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        said.extend(stderr.try_iter());
        if said
            .iter()
            .any(|l| l.starts_with("[eip] bridge alert-log "))
        {
            break;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            said.extend(stderr.try_iter());
            panic!(
                "eip run ended ({status}) before starting:\n{}",
                said.join("\n")
            );
        }
        assert!(
            Instant::now() < deadline,
            "eip run did not start within 30 s:\n{}",
            said.join("\n")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Three sensors: a mild reading, a hot one, and one the schema refuses.
    let config = MqttOutboundConfig::new(
        MqttBroker::new("127.0.0.1", 1883),
        format!("{}-sensor", names.root),
        TopicTemplate::parse("{subject}").expect("a topic template"),
    );
    let sensors = MqttOutbound::connect(config)
        .await
        .unwrap_or_else(|e| panic!("Mosquitto at {}: {e}", BROKERS[0].1));
    let readings = [
        ("room1", r#"{"sensor": "room1", "celsius": 21.5}"#),
        ("room2", r#"{"sensor": "room2", "celsius": 35.2}"#),
        ("room3", r#"{"sensor": "room3", "celsius": "warm"}"#),
    ];
    let mut ids: Vec<MessageId> = Vec::new();
    for (room, payload) in readings {
        let reading = Message::builder(payload)
            .subject(names.subject(room))
            .build();
        ids.push(reading.id());
        // Answers once Mosquitto sent its PUBACK (QoS 1).
        sensors
            .publish(&reading)
            .await
            .unwrap_or_else(|e| panic!("publishing to Mosquitto: {e}"));
    }

    // The hot reading on the test's queue, the two valid ones as files, the invalid one and
    // the logged alert printed.
    let out = scratch.0.join("readings-out");
    let mut printed: Vec<Value> = Vec::new();
    let mut alert = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if alert.is_none() {
            alert = channel
                .basic_get(
                    names.test_queue.as_str().into(),
                    BasicGetOptions { no_ack: true },
                )
                .await
                .expect("reading the test's queue");
        }
        for line in stdout.try_iter() {
            printed.push(
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: printed {line}")),
            );
        }
        said.extend(stderr.try_iter());
        let printed_on = |channel: &str| printed.iter().filter(|p| p["channel"] == channel).count();
        if alert.is_some()
            && files_in(&out).len() >= 2
            && printed_on("readings.invalid") >= 1
            && printed_on("alerts.log") >= 1
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "within 30 s: alert {}, files {:?}, printed {printed:?}; eip said:\n{}",
            alert.is_some(),
            files_in(&out),
            said.join("\n")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let alert = alert.expect("the alert").delivery;
    assert_eq!(alert.exchange.as_str(), names.exchange);
    assert_eq!(alert.routing_key.as_str(), names.subject("room2"));
    assert_eq!(
        alert.properties.message_id().as_ref().map(|id| id.as_str()),
        Some(ids[1].to_string().as_str()),
        "the alert keeps the reading's id"
    );
    assert_eq!(alert.data, readings[1].1.as_bytes());

    let mut expected = vec![format!("{}.json", ids[0]), format!("{}.json", ids[1])];
    expected.sort();
    assert_eq!(files_in(&out), expected, "each valid reading once, by id");
    for (i, (_, payload)) in readings.iter().take(2).enumerate() {
        let written = std::fs::read_to_string(out.join(format!("{}.json", ids[i])))
            .expect("a reading's file");
        assert_eq!(written, *payload);
    }

    let invalid: Vec<&Value> = printed
        .iter()
        .filter(|p| p["channel"] == "readings.invalid")
        .collect();
    assert_eq!(invalid.len(), 1, "{printed:?}");
    assert_eq!(invalid[0]["id"], ids[2].to_string());
    let death: Value = serde_json::from_str(invalid[0]["headers"]["death"].as_str().unwrap_or(""))
        .expect("a death record");
    assert_eq!(death["reason"], "invalid");
    assert!(
        death["error"]
            .as_str()
            .is_some_and(|e| e.contains("celsius")),
        "the reason names what did not fit: {death}"
    );
    let logged: Vec<&Value> = printed
        .iter()
        .filter(|p| p["channel"] == "alerts.log")
        .collect();
    assert_eq!(logged.len(), 1, "{printed:?}");
    assert_eq!(logged[0]["id"], ids[1].to_string());

    // Both valid readings went through the stream (each once: the id is JetStream's message
    // id), read by the file adapter's own durable consumer.
    let js = async_nats::jetstream::new(
        async_nats::connect(nats_url())
            .await
            .unwrap_or_else(|e| panic!("NATS at {}: {e}", BROKERS[2].1)),
    );
    let mut stream = js
        .get_stream(&names.stream)
        .await
        .unwrap_or_else(|e| panic!("the stream {}: {e}", names.stream));
    let info = stream.info().await.expect("the stream's state").clone();
    assert_eq!(info.state.last_sequence, 2, "{:?}", info.state);
    stream
        .consumer_info("history-dir")
        .await
        .unwrap_or_else(|e| panic!("the subscription of `history-dir`: {e}"));

    // SIGINT: eip drains and exits 0; nothing was dead-lettered.
    let stopped = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("eip run's status") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "eip run did not stop within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    said.extend(stderr.try_iter());
    assert!(status.success(), "eip run: {status}\n{}", said.join("\n"));
    // The rest of what it printed, up to the end of its output.
    while let Ok(line) = stdout.recv_timeout(Duration::from_secs(5)) {
        printed.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: printed {line}")));
    }
    assert!(
        printed.iter().all(|p| p["channel"] != "dead-letters"),
        "nothing dead-lettered: {printed:?}"
    );
    let _ = rabbit.close(200, "done".into()).await;
}
