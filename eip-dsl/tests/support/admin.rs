//! A flow running with its admin server on 127.0.0.1 (a free port), and a client for it.

// Each admin test file uses some of these helpers, not all.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_core::message::Message;
use eip_dsl::admin::{AdminOptions, AdminServer};
use eip_dsl::compile::{Flow, RunningFlow, compile};
use eip_dsl::control::RuntimeChanges;
use eip_dsl::load::load_str_with;
use eip_dsl::plan::Plan;
use eip_dsl::step::Services;

/// A flow of every shape the API shows: a queue into a choice, a topic fed by a route with a
/// filter, a route calling the service `check` (which fails on a payload saying `fail`), a
/// join, an exchange with bindings, and outputs.
pub const FLOW: &str = r#"
channels:
  orders: {kind: point-to-point}
  big: {kind: point-to-point}
  small:
    kind: point-to-point
    redelivery: {max-attempts: 1}
  checked: {kind: point-to-point}
  events: {kind: publish-subscribe}
  audit: {kind: point-to-point}
  trades: {kind: point-to-point}
routes:
  - name: sort
    from: orders
    choice:
      - when: $.total > 100
        to: big
    otherwise: small
  - name: tag
    from: big
    steps:
      - filter: $.total > 0
    to: events
  - name: check
    from: small
    steps:
      - process: check
    to: checked
joins:
  - from: events
    to: audit
    hops: 2
exchanges:
  market:
    alternate: small
    bindings:
      - key: stock.*.nyse
        to: [trades]
"#;

/// A flow and its admin server, started.
pub struct Served {
    pub flow: Flow,
    pub running: Option<RunningFlow>,
    pub server: AdminServer,
    pub base: String,
    pub client: reqwest::Client,
    pub token: Option<String>,
}

/// The plan of `yaml`, which may name the service `check`.
pub fn plan(yaml: &str) -> Plan {
    load_str_with(yaml, "flow.yaml", ".".as_ref(), &services())
        .unwrap_or_else(|e| panic!("{}", e.render()))
}

/// `check`: fails on a payload that says `fail`, passes the others on.
fn services() -> Services {
    let check = tower::service_fn(|msg: Message| async move {
        if msg.payload_str().is_some_and(|p| p.contains("fail")) {
            return Err::<Message, tower::BoxError>("the check failed".into());
        }
        Ok(msg)
    });
    Services::new().add("check", check)
}

/// `yaml`'s flow compiled, its admin server started on a free loopback port (with `token`
/// if given), and the flow started.
pub async fn serve(yaml: &str, token: Option<&str>) -> Served {
    let served = serve_unstarted(yaml, token).await;
    start(served).await
}

/// The same, the flow not started (not ready).
pub async fn serve_unstarted(yaml: &str, token: Option<&str>) -> Served {
    let plan = plan(yaml);
    let flow = compile(&plan).expect("the flow compiles");
    let options = AdminOptions {
        listen: "127.0.0.1:0".parse().expect("an address"),
        token: token.map(str::to_owned),
    };
    let server = AdminServer::start(options, flow.view(), &plan, changes(&flow).await)
        .await
        .expect("the admin server starts");
    let base = format!("http://{}", server.local_addr());
    Served {
        flow,
        running: None,
        server,
        base,
        client: reqwest::Client::new(),
        token: token.map(str::to_owned),
    }
}

/// The runtime changes of `flow`, opened.
pub async fn changes(flow: &Flow) -> Arc<RuntimeChanges> {
    let (changes, _) = RuntimeChanges::open(flow.view())
        .await
        .expect("the runtime changes open");
    Arc::new(changes)
}

/// Connects the adapters and starts the flow.
pub async fn start(mut served: Served) -> Served {
    let adapters = served
        .flow
        .connect_adapters()
        .await
        .expect("the adapters connect");
    let mut running = served.flow.start(Arc::new(|_: &str, _: &Message| {}));
    running.attach(adapters);
    served.running = Some(running);
    served
}

impl Served {
    /// GETs `path`, with the token if the server has one: the status and the body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        answer(request).await
    }

    /// GETs `path` and reads its JSON body.
    pub async fn json(&self, path: &str) -> (u16, serde_json::Value) {
        let (status, body) = self.get(path).await;
        let json = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{path} answered {status} with no JSON ({e}): {body}"));
        (status, json)
    }

    /// Sends `payload` (JSON) to `channel`.
    pub async fn send(&self, channel: &str, payload: serde_json::Value) {
        self.send_text(channel, &payload.to_string()).await;
    }

    /// Sends the text `payload` to `channel`.
    pub async fn send_text(&self, channel: &str, payload: &str) {
        let msg = Message::builder(payload.to_owned()).build();
        self.flow
            .bus()
            .publish(channel, msg)
            .await
            .expect("the channel takes the message");
    }

    /// Stops the flow and the server.
    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.stop(Duration::from_secs(5)).await;
        }
        self.server.shutdown(Duration::from_secs(1)).await;
    }
}

/// The status and body of `request`.
pub async fn answer(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = request.send().await.expect("the admin server answers");
    let status = response.status().as_u16();
    let body = response.text().await.expect("a body");
    (status, body)
}

/// Waits up to 10 s for `done` to hold.
pub async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of the sample `series` (its name and labels, as written) in the metrics `text`.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The RabbitMQ URL of this machine's broker (`AMQP_ADDR` overrides).
pub fn amqp_url() -> String {
    std::env::var("AMQP_ADDR").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// Deletes the RabbitMQ queue and exchange a test named `name`, if the broker answers.
pub async fn delete_queue_and_exchange(name: &str) {
    if let Ok(connection) =
        lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        let _ = channel.queue_delete(name.into(), Default::default()).await;
        let _ = channel
            .exchange_delete(name.into(), Default::default())
            .await;
    }
}
