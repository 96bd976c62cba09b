//! The flow the dead letter tests of the admin API run (`admin_dead_letters*.rs`): a route
//! whose gate can be broken to make dead letters, served with its admin server as
//! `eip run --admin` serves it, and what those tests ask of it.

// Each dead letter test file uses some of these helpers, not all.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_dsl::admin::{AdminOptions, AdminServer};
use eip_dsl::compile::{StoreOptions, compile_with};
use eip_dsl::load::load_str_with;
use eip_dsl::step::Services;
use serde_json::{Value, json};

use super::admin::{Served, answer, changes, eventually};
use super::scratch::Scratch;

pub const TOKEN: &str = "s3cret";

/// `orders` into the route `ship`, which calls `gate` (failing while the gate is broken) and
/// sends on to the output `shipped`; one attempt, then the dead letter channel. `events`, a
/// publish-subscribe channel read by the route `audit`, for browsing per subscription.
pub const FLOW: &str = r#"
channels:
  orders:
    kind: point-to-point
    durable: DURABLE
    redelivery: {max-attempts: 1}
  shipped: {kind: point-to-point, durable: DURABLE}
  events: {kind: publish-subscribe, durable: DURABLE}
  audited: {kind: point-to-point, durable: DURABLE}
routes:
  - name: ship
    from: orders
    steps:
      - process: gate
    to: shipped
  - name: audit
    from: events
    to: audited
"#;

/// What reached the outputs, by channel.
pub type Outputs = Arc<Mutex<Vec<(String, Message)>>>;

/// A served flow, the gate its route calls, and what reached its outputs.
pub struct Test {
    pub served: Served,
    pub broken: Arc<AtomicBool>,
    pub outputs: Outputs,
}

/// `FLOW` (durable in `data` if given) with its admin server (with `token`), started as
/// `eip run --admin` starts it: the dead letters kept, not output.
pub async fn serve(data: Option<&Scratch>, token: Option<&str>, broken: bool) -> Test {
    let broken = Arc::new(AtomicBool::new(broken));
    let gate = {
        let broken = broken.clone();
        tower::service_fn(move |msg: Message| {
            let broken = broken.load(Ordering::SeqCst);
            async move {
                if broken {
                    return Err::<Message, tower::BoxError>("the gate is broken".into());
                }
                Ok(msg)
            }
        })
    };
    let yaml = FLOW.replace("DURABLE", if data.is_some() { "true" } else { "false" });
    let services = Services::new().add("gate", gate);
    let plan = load_str_with(&yaml, "flow.yaml", ".".as_ref(), &services)
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let store = StoreOptions {
        data_dir: data.map_or_else(std::env::temp_dir, |d| d.0.clone()),
        max_bytes: None,
    };
    // A flow stopped a moment ago may still hold its data directory (the admin server's
    // tasks end as the runtime gets to them): try again for a while.
    let mut tries = 0;
    let flow = loop {
        match compile_with(&plan, &store) {
            Ok(flow) => break flow,
            Err(e) if tries < 100 => {
                tries += 1;
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the flow does not compile: {e}"),
        }
    };
    let options = AdminOptions {
        listen: "127.0.0.1:0".parse().expect("an address"),
        token: token.map(str::to_owned),
    };
    let server = AdminServer::start(options, flow.view(), &plan, changes(&flow).await)
        .await
        .expect("the admin server starts");
    let outputs: Outputs = Arc::default();
    let seen = outputs.clone();
    let output = Arc::new(move |channel: &str, msg: &Message| {
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.push((channel.to_owned(), msg.clone()));
    });
    let adapters = flow
        .connect_adapters()
        .await
        .expect("no adapters to connect");
    let mut running = flow.start_keeping(output, &["dead-letters".to_owned()]);
    running.attach(adapters);
    assert_eq!(running.kept(), ["dead-letters"]);
    let base = format!("http://{}", server.local_addr());
    Test {
        served: Served {
            flow,
            running: Some(running),
            server,
            base,
            client: reqwest::Client::new(),
            token: token.map(str::to_owned),
        },
        broken,
        outputs,
    }
}

impl Test {
    /// Sends `{"n": n}` to `channel`; its id.
    pub async fn send(&self, channel: &str, n: u64) -> String {
        let msg = Message::new(json!({ "n": n }).to_string());
        let id = msg.id().to_string();
        let bus = self.served.flow.bus();
        bus.publish(channel, msg).await.expect("accepted");
        id
    }

    /// Sends `{"n": 0..count}` to `orders` with the gate broken, and waits for them to die.
    pub async fn dead_letters(&self, count: u64) -> Vec<String> {
        self.broken.store(true, Ordering::SeqCst);
        let mut ids = Vec::new();
        for n in 0..count {
            ids.push(self.send("orders", n).await);
        }
        self.total_is("/api/dead-letters", count).await;
        ids
    }

    /// Waits until `path` answers a `total` of `n`.
    pub async fn total_is(&self, path: &str, n: u64) {
        eventually(&format!("{path} total {n}"), || async {
            self.served.json(path).await.1["total"] == n
        })
        .await;
    }

    /// POSTs `body` to `path` with the token (if the server has one): status and JSON.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let mut request = with_json(
            self.served
                .client
                .post(format!("{}{path}", self.served.base)),
            &body,
        );
        if let Some(token) = &self.served.token {
            request = request.bearer_auth(token);
        }
        json_of(answer(request).await)
    }

    /// DELETEs `path` with the token.
    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let request = (self.served.client)
            .delete(format!("{}{path}", self.served.base))
            .bearer_auth(TOKEN);
        json_of(answer(request).await)
    }

    /// What reached the output `channel`.
    pub fn output(&self, channel: &str) -> Vec<Message> {
        let outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        (outputs.iter())
            .filter(|(c, _)| c == channel)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Waits until `n` messages reached the output `channel`.
    pub async fn output_reaches(&self, channel: &str, n: usize) -> Vec<Message> {
        eventually(&format!("{n} on {channel}"), || async {
            self.output(channel).len() >= n
        })
        .await;
        self.output(channel)
    }
}

/// `request` with `body` as its JSON body.
pub fn with_json(request: reqwest::RequestBuilder, body: &Value) -> reqwest::RequestBuilder {
    request
        .header("content-type", "application/json")
        .body(body.to_string())
}

pub fn json_of((status, body): (u16, String)) -> (u16, Value) {
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"));
    (status, json)
}

/// The payloads' `n` of a page's `messages`.
pub fn numbers(messages: &Value) -> Vec<u64> {
    (messages.as_array().into_iter().flatten())
        .filter_map(|m| m["payload"]["n"].as_u64())
        .collect()
}

pub fn pause(test: &Test, route: &str) {
    let routes = test.served.flow.routes();
    let route = routes
        .iter()
        .find(|r| r.name() == route)
        .expect("the route");
    assert!(route.pause());
}

pub fn resume(test: &Test, route: &str) {
    let routes = test.served.flow.routes();
    let route = routes
        .iter()
        .find(|r| r.name() == route)
        .expect("the route");
    assert!(route.resume());
}
