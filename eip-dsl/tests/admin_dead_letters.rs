//! The admin API's message browser and dead letters, against a running flow on 127.0.0.1:
//! pages of what waits on memory and durable channels that take nothing; dead letters with
//! their death records; replay by id, by predicate and of all, keeping each id and marking
//! it `replayed`, into a durable channel too and across a restart; deletion; and the
//! refusals (unknown id, bad predicate, missing or wrong token, no token at all).

mod support {
    pub mod admin;
    pub mod scratch;
}

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{Datatype, JsonSchema};
use eip_core::message::DeathReason;
use eip_dsl::admin::{AdminOptions, AdminServer};
use eip_dsl::compile::{StoreOptions, compile_with};
use eip_dsl::load::load_str_with;
use eip_dsl::step::Services;
use serde_json::{Value, json};
use support::admin::{Served, answer, changes, eventually};
use support::scratch::Scratch;

const TOKEN: &str = "s3cret";

/// `orders` into the route `ship`, which calls `gate` (failing while the gate is broken) and
/// sends on to the output `shipped`; one attempt, then the dead letter channel. `events`, a
/// publish-subscribe channel read by the route `audit`, for browsing per subscription.
const FLOW: &str = r#"
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
type Outputs = Arc<Mutex<Vec<(String, Message)>>>;

/// A served flow, the gate its route calls, and what reached its outputs.
struct Test {
    served: Served,
    broken: Arc<AtomicBool>,
    outputs: Outputs,
}

/// `FLOW` (durable in `data` if given) with its admin server (with `token`), started as
/// `eip run --admin` starts it: the dead letters kept, not output.
async fn serve(data: Option<&Scratch>, token: Option<&str>, broken: bool) -> Test {
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
    async fn send(&self, channel: &str, n: u64) -> String {
        let msg = Message::new(json!({ "n": n }).to_string());
        let id = msg.id().to_string();
        let bus = self.served.flow.bus();
        bus.publish(channel, msg).await.expect("accepted");
        id
    }

    /// Sends `{"n": 0..count}` to `orders` with the gate broken, and waits for them to die.
    async fn dead_letters(&self, count: u64) -> Vec<String> {
        self.broken.store(true, Ordering::SeqCst);
        let mut ids = Vec::new();
        for n in 0..count {
            ids.push(self.send("orders", n).await);
        }
        self.total_is("/api/dead-letters", count).await;
        ids
    }

    /// Waits until `path` answers a `total` of `n`.
    async fn total_is(&self, path: &str, n: u64) {
        eventually(&format!("{path} total {n}"), || async {
            self.served.json(path).await.1["total"] == n
        })
        .await;
    }

    /// POSTs `body` to `path` with the token (if the server has one): status and JSON.
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
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
    async fn delete(&self, path: &str) -> (u16, Value) {
        let request = (self.served.client)
            .delete(format!("{}{path}", self.served.base))
            .bearer_auth(TOKEN);
        json_of(answer(request).await)
    }

    /// What reached the output `channel`.
    fn output(&self, channel: &str) -> Vec<Message> {
        let outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        (outputs.iter())
            .filter(|(c, _)| c == channel)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Waits until `n` messages reached the output `channel`.
    async fn output_reaches(&self, channel: &str, n: usize) -> Vec<Message> {
        eventually(&format!("{n} on {channel}"), || async {
            self.output(channel).len() >= n
        })
        .await;
        self.output(channel)
    }
}

/// `request` with `body` as its JSON body.
fn with_json(request: reqwest::RequestBuilder, body: &Value) -> reqwest::RequestBuilder {
    request
        .header("content-type", "application/json")
        .body(body.to_string())
}

fn json_of((status, body): (u16, String)) -> (u16, Value) {
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"));
    (status, json)
}

/// The payloads' `n` of a page's `messages`.
fn numbers(messages: &Value) -> Vec<u64> {
    (messages.as_array().into_iter().flatten())
        .filter_map(|m| m["payload"]["n"].as_u64())
        .collect()
}

fn pause(test: &Test, route: &str) {
    let routes = test.served.flow.routes();
    let route = routes
        .iter()
        .find(|r| r.name() == route)
        .expect("the route");
    assert!(route.pause());
}

fn resume(test: &Test, route: &str) {
    let routes = test.served.flow.routes();
    let route = routes
        .iter()
        .find(|r| r.name() == route)
        .expect("the route");
    assert!(route.resume());
}

/// Browses `orders` (its route paused) in pages and checks nothing was taken: once resumed,
/// every message is delivered.
async fn browse_pages_and_takes_nothing(test: &Test) {
    pause(test, "ship");
    for n in 0..5 {
        test.send("orders", n).await;
    }
    test.total_is("/api/channels/orders/messages", 5).await;
    let (status, page) = test
        .served
        .json("/api/channels/orders/messages?offset=1&limit=2")
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["kind"], "point-to-point");
    assert_eq!(
        (page["offset"].clone(), page["limit"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(page["total"], 5);
    assert_eq!(numbers(&page["messages"]), [1, 2]);
    let first = &page["messages"][0];
    assert!(
        first["id"].as_str().is_some_and(|id| id.len() == 36),
        "{first}"
    );
    assert_eq!(first["death"], Value::Null);
    assert!(first["headers"].is_object(), "{first}");
    let (_, again) = test.served.json("/api/channels/orders/messages").await;
    assert_eq!(
        numbers(&again["messages"]),
        [0, 1, 2, 3, 4],
        "a second look sees the same"
    );
    let (_, past) = test
        .served
        .json("/api/channels/orders/messages?offset=9")
        .await;
    assert_eq!(
        (past["total"].clone(), numbers(&past["messages"]).len()),
        (json!(5), 0)
    );
    resume(test, "ship");
    let shipped = test.output_reaches("shipped", 5).await;
    let shipped: Vec<String> = shipped
        .iter()
        .filter_map(|m| m.payload_str().map(str::to_owned))
        .collect();
    assert_eq!(
        shipped.len(),
        5,
        "every browsed message is still delivered: {shipped:?}"
    );
    test.total_is("/api/channels/orders/messages", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsing_a_memory_channel_pages_and_takes_nothing() {
    let test = serve(None, None, false).await;
    browse_pages_and_takes_nothing(&test).await;
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsing_a_durable_channel_pages_and_takes_nothing() {
    let data = Scratch::new("admin-browse");
    let test = serve(Some(&data), None, false).await;
    let (_, info) = test.served.json("/api/channels/orders").await;
    assert_eq!(info["store"], "durable");
    browse_pages_and_takes_nothing(&test).await;
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsing_a_publish_subscribe_channel_shows_each_subscription() {
    for data in [None, Some(Scratch::new("admin-browse-topic"))] {
        let test = serve(data.as_ref(), None, false).await;
        pause(&test, "audit");
        for n in [7, 8] {
            test.send("events", n).await;
        }
        test.total_is("/api/channels/events/messages", 2).await;
        let (_, page) = test
            .served
            .json("/api/channels/events/messages?limit=1")
            .await;
        assert_eq!(page["kind"], "publish-subscribe");
        assert_eq!(page["messages"], json!([]));
        let subscriptions = page["subscriptions"].as_array().expect("subscriptions");
        assert_eq!(subscriptions.len(), 1, "{page}");
        assert_eq!(subscriptions[0]["total"], 2);
        assert_eq!(numbers(&subscriptions[0]["messages"]), [7]);
        let name = if data.is_some() {
            json!("audit")
        } else {
            Value::Null
        };
        assert_eq!(
            subscriptions[0]["name"], name,
            "a durable subscription is named"
        );
        resume(&test, "audit");
        test.output_reaches("audited", 2).await;
        test.served.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_browsed_with_their_death_records() {
    let test = serve(None, Some(TOKEN), true).await;
    let ids = test.dead_letters(3).await;
    let (status, page) = test.served.json("/api/dead-letters?limit=2").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["channel"], "dead-letters");
    assert_eq!(page["total"], 3);
    assert_eq!(numbers(&page["messages"]), [0, 1]);
    let first = &page["messages"][0];
    assert_eq!(first["id"], ids[0]);
    let death = &first["death"];
    assert_eq!(death["channel"], "orders");
    assert_eq!(death["reason"], DeathReason::MaxRedeliveries.as_str());
    assert_eq!(death["count"], 1);
    assert!(
        death["error"]
            .as_str()
            .is_some_and(|e| e.contains("the gate is broken")),
        "{death}"
    );
    assert!(
        death["host"].is_string() && death["first_time"].is_u64(),
        "{death}"
    );
    assert!(
        first["headers"].get("death").is_none(),
        "the record is not a header too"
    );

    let when = |predicate: &str| {
        let mut url = reqwest::Url::parse("http://x/api/dead-letters").expect("a URL");
        url.query_pairs_mut().append_pair("when", predicate);
        format!("/api/dead-letters?{}", url.query().unwrap_or_default())
    };
    let (_, selected) = test.served.json(&when("$.n >= 1")).await;
    assert_eq!(
        (selected["total"].clone(), numbers(&selected["messages"])),
        (json!(2), vec![1, 2])
    );
    let (_, by_death) = test
        .served
        .json(&when(r#"header("death-reason") == "max-redeliveries" and header("death-channel") == "orders""#))
        .await;
    assert_eq!(by_death["total"], 3, "{by_death}");
    // Browsing took nothing.
    test.total_is("/api/dead-letters", 3).await;
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_keeps_the_id_and_marks_the_message_replayed() {
    let test = serve(None, Some(TOKEN), true).await;
    let ids = test.dead_letters(3).await;
    test.broken.store(false, Ordering::SeqCst);

    let (status, report) = test
        .post("/api/dead-letters/replay", json!({"ids": [ids[1]]}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report,
        json!({"replayed": [{"id": ids[1], "channel": "orders", "invalid": null}], "failed": []})
    );
    let shipped = test.output_reaches("shipped", 1).await;
    assert_eq!(shipped[0].id().to_string(), ids[1], "the same id");
    assert_eq!(
        shipped[0]
            .headers()
            .get("replayed")
            .and_then(|v| v.as_int()),
        Some(1)
    );
    assert_eq!(
        shipped[0].redelivery_count().ok(),
        Some(0),
        "a fresh set of attempts"
    );
    let record = shipped[0]
        .death()
        .ok()
        .flatten()
        .expect("the death record stays");
    assert_eq!(record.channel, "orders");
    let (_, left) = test.served.json("/api/dead-letters").await;
    assert_eq!(numbers(&left["messages"]), [0, 2]);

    let (_, report) = test
        .post("/api/dead-letters/replay", json!({"when": "$.n == 2"}))
        .await;
    assert_eq!(report["replayed"][0]["id"], ids[2], "{report}");
    test.output_reaches("shipped", 2).await;
    let (_, report) = test
        .post("/api/dead-letters/replay", json!({"all": true}))
        .await;
    assert_eq!(report["replayed"][0]["id"], ids[0], "{report}");
    let shipped = test.output_reaches("shipped", 3).await;
    let mut shipped: Vec<String> = shipped.iter().map(|m| m.id().to_string()).collect();
    shipped.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(shipped, expected, "every one once, with its id");
    test.total_is("/api/dead-letters", 0).await;
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_that_dies_again_counts_on_and_is_not_replayed_twice() {
    let test = serve(None, Some(TOKEN), true).await;
    let ids = test.dead_letters(2).await;
    // Still broken: each replay dies again at once, back on the dead letter channel.
    let (_, report) = test
        .post("/api/dead-letters/replay", json!({"all": true}))
        .await;
    assert_eq!(
        report["replayed"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    eventually("both dead again", || async {
        let page = test.served.json("/api/dead-letters").await.1;
        page["total"] == 2
            && page["messages"]
                .as_array()
                .is_some_and(|m| m.iter().all(|m| m["death"]["count"] == 2))
    })
    .await;
    let (_, page) = test.served.json("/api/dead-letters").await;
    let again: Vec<&str> = page["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(again, ids, "the same ids, in order");
    assert_eq!(page["messages"][0]["headers"]["replayed"], 1);
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_replay_leaves_the_dead_letter_where_it_was() {
    let test = serve(None, Some(TOKEN), false).await;
    let mut msg = Message::new(r#"{"n": 9}"#);
    msg.mark_redelivered();
    let id = msg.id().to_string();
    let dead_letters = test.served.flow.bus().dead_letter_channel();
    dead_letters
        .bury(
            msg,
            "gone",
            DeathReason::Rejected,
            Some("no more".to_owned()),
        )
        .await
        .expect("buried");
    let (status, report) = test
        .post("/api/dead-letters/replay", json!({"all": true}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["replayed"], json!([]));
    assert_eq!(report["failed"][0]["id"], id);
    let reason = report["failed"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("unknown channel `gone`"), "{reason}");
    let (_, page) = test.served.json("/api/dead-letters").await;
    assert_eq!(page["total"], 1);
    let kept = &page["messages"][0];
    assert_eq!(kept["id"], id);
    assert_eq!(kept["headers"]["redelivery-count"], 1, "unchanged: {kept}");
    assert!(kept["headers"].get("replayed").is_none(), "{kept}");
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_into_a_durable_channel_survives_a_restart() {
    let data = Scratch::new("admin-replay-durable");
    let ids = {
        let test = serve(Some(&data), Some(TOKEN), true).await;
        let ids = test.dead_letters(2).await;
        test.served.stop().await;
        ids
    };
    // The dead letters waited on the durable dead letter channel while the flow was down.
    let test = serve(Some(&data), Some(TOKEN), false).await;
    let (_, page) = test.served.json("/api/dead-letters").await;
    let waiting: Vec<&str> = page["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(waiting, ids, "{page}");
    pause(&test, "ship");
    let (_, report) = test
        .post("/api/dead-letters/replay", json!({"ids": [ids[0]]}))
        .await;
    assert_eq!(report["replayed"][0]["channel"], "orders", "{report}");
    // On disk in `orders` now, with the same id: a restart finds it there, and the dead letter
    // gone.
    test.served.stop().await;
    let test = serve(Some(&data), Some(TOKEN), false).await;
    let (_, page) = test.served.json("/api/dead-letters").await;
    assert_eq!(page["total"], 1, "{page}");
    assert_eq!(page["messages"][0]["id"], ids[1]);
    let shipped = test.output_reaches("shipped", 1).await;
    assert_eq!(shipped[0].id().to_string(), ids[0]);
    assert_eq!(
        shipped[0]
            .headers()
            .get("replayed")
            .and_then(|v| v.as_int()),
        Some(1)
    );
    let (_, report) = test
        .post("/api/dead-letters/replay", json!({"all": true}))
        .await;
    assert_eq!(report["replayed"][0]["id"], ids[1], "{report}");
    test.output_reaches("shipped", 2).await;
    test.served.stop().await;
    let test = serve(Some(&data), Some(TOKEN), false).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(test.output("shipped").is_empty(), "nothing delivered twice");
    test.total_is("/api/dead-letters", 0).await;
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_deleted_by_id_by_predicate_and_all() {
    let test = serve(None, Some(TOKEN), true).await;
    let ids = test.dead_letters(5).await;
    let (status, one) = test.delete(&format!("/api/dead-letters/{}", ids[0])).await;
    assert_eq!((status, one), (200, json!({"deleted": 1})));
    let (status, again) = test.delete(&format!("/api/dead-letters/{}", ids[0])).await;
    assert_eq!(status, 404, "{again}");
    assert!(
        again["error"].as_str().is_some_and(|e| e.contains(&ids[0])),
        "{again}"
    );
    let (_, by_ids) = test
        .post("/api/dead-letters/delete", json!({"ids": [ids[1]]}))
        .await;
    assert_eq!(by_ids, json!({"deleted": 1}));
    let (_, matching) = test
        .post("/api/dead-letters/delete", json!({"when": "$.n == 4"}))
        .await;
    assert_eq!(matching, json!({"deleted": 1}));
    let (_, page) = test.served.json("/api/dead-letters").await;
    assert_eq!(numbers(&page["messages"]), [2, 3]);
    let (_, all) = test
        .post("/api/dead-letters/delete", json!({"all": true}))
        .await;
    assert_eq!(all, json!({"deleted": 2}));
    test.total_is("/api/dead-letters", 0).await;
    assert!(test.output("shipped").is_empty(), "deleted, not replayed");
    test.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_was_wrong() {
    let test = serve(None, Some(TOKEN), true).await;
    test.dead_letters(1).await;
    let unknown = "0190a5c4-0000-7000-8000-000000000000";
    let (status, body) = test
        .post("/api/dead-letters/replay", json!({"ids": [unknown]}))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        body["error"],
        format!("no dead letter with id {unknown} waits on `dead-letters`")
    );
    let (status, body) = test
        .post("/api/dead-letters/replay", json!({"ids": ["nope"]}))
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("`nope` is not a message id")),
        "{body}"
    );
    let (status, body) = test
        .post("/api/dead-letters/replay", json!({"when": "$.n >> 1"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"].as_str().map(|e| e.contains("at byte 5")),
        Some(true),
        "{body}"
    );
    let (status, body) = test
        .served
        .json("/api/dead-letters?when=%24.n%20%3E%3E%201")
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("at byte 5")),
        "{body}"
    );
    let (status, body) = test
        .post(
            "/api/dead-letters/replay",
            json!({"all": true, "when": "$.n == 1"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("exactly one of")),
        "{body}"
    );
    let (status, body) = test.post("/api/dead-letters/delete", json!({})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = test.served.json("/api/dead-letters?channel=ordrs").await;
    assert_eq!((status, body["closest"].clone()), (404, json!("orders")));
    let (status, body) = test.served.json("/api/channels/ordrs/messages").await;
    assert_eq!((status, body["closest"].clone()), (404, json!("orders")));
    let (status, _) = test
        .served
        .json("/api/channels/orders/messages?limit=lots")
        .await;
    assert_eq!(status, 400);

    // Without the token, or with another: 401; nothing replayed.
    let url = format!("{}/api/dead-letters/replay", test.served.base);
    let client = &test.served.client;
    let (status, _) = answer(with_json(client.post(&url), &json!({"all": true}))).await;
    assert_eq!(status, 401);
    let (status, _) = answer(with_json(
        client.post(&url).bearer_auth("guess"),
        &json!({"all": true}),
    ))
    .await;
    assert_eq!(status, 401);
    let delete = format!("{}/api/dead-letters/{unknown}", test.served.base);
    let (status, _) = answer(client.delete(&delete).bearer_auth("guess")).await;
    assert_eq!(status, 401);
    test.total_is("/api/dead-letters", 1).await;
    test.served.stop().await;

    // A server without a token browses, and refuses changes with 403.
    let test = serve(None, None, true).await;
    test.dead_letters(1).await;
    let (status, body) = test
        .post("/api/dead-letters/replay", json!({"all": true}))
        .await;
    assert_eq!(status, 403);
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("EIP_ADMIN_TOKEN")),
        "{body}"
    );
    let (status, _) = test
        .post("/api/dead-letters/delete", json!({"all": true}))
        .await;
    assert_eq!(status, 403);
    test.total_is("/api/dead-letters", 1).await;
    test.served.stop().await;
}

/// Checks `answer` (the JSON `method path` answered with `status`) against the schema the
/// OpenAPI document gives for it.
fn conforms(method: &str, path: &str, status: u16, answer: &Value) {
    let doc: Value = serde_json::from_str(eip_dsl::admin::OPENAPI).expect("the document");
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} {status} is not documented"
    );
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": doc["components"],
    });
    let schema = JsonSchema::new(path, &schema).expect("the schema compiles");
    if let Err(reason) = schema.check(&Message::new(answer.to_string())) {
        panic!("{method} {path} ({status}) does not match the document: {reason}\n{answer:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_matches_the_openapi_document() {
    let test = serve(None, Some(TOKEN), true).await;
    let ids = test.dead_letters(2).await;
    let dead_letters = test.served.flow.bus().dead_letter_channel();
    let mut bytes = Message::new(vec![0xff_u8, 0xfe]);
    bytes
        .headers_mut()
        .insert("raw", bytes::Bytes::from_static(b"\x01"));
    dead_letters
        .bury(bytes, "gone", DeathReason::Expired, None)
        .await
        .expect("buried");
    pause(&test, "ship");
    pause(&test, "audit");
    test.send("orders", 1).await;
    test.send("events", 2).await;
    test.total_is("/api/channels/events/messages", 1).await;

    let template = "/api/channels/{name}/messages";
    for channel in ["orders", "events", "nope"] {
        let path = format!("/api/channels/{channel}/messages");
        let (status, answer) = test.served.json(&path).await;
        conforms("get", template, status, &answer);
    }
    for query in [
        "",
        "?when=%24.n%20%3D%3D%200",
        "?when=%24%24",
        "?channel=nope",
    ] {
        let (status, answer) = test.served.json(&format!("/api/dead-letters{query}")).await;
        conforms("get", "/api/dead-letters", status, &answer);
    }
    let (_, page) = test.served.json("/api/dead-letters").await;
    assert_eq!(
        page["messages"][2]["payload"],
        json!({"hex": "fffe"}),
        "{page}"
    );

    test.broken.store(false, Ordering::SeqCst);
    for body in [
        json!({"ids": [ids[0], "0190a5c4-0000-7000-8000-000000000000"]}),
        json!({"all": true}),
        json!({"ids": ["0190a5c4-0000-7000-8000-000000000000"]}),
        json!({"when": "$$"}),
    ] {
        let (status, answer) = test.post("/api/dead-letters/replay", body).await;
        conforms("post", "/api/dead-letters/replay", status, &answer);
    }
    let (status, answer) = test
        .post("/api/dead-letters/delete", json!({"all": true}))
        .await;
    assert_eq!(
        answer,
        json!({"deleted": 1}),
        "the one that could not go back"
    );
    conforms("post", "/api/dead-letters/delete", status, &answer);
    let (status, answer) = test.delete(&format!("/api/dead-letters/{}", ids[0])).await;
    assert_eq!(status, 404);
    conforms("delete", "/api/dead-letters/{id}", status, &answer);
    resume(&test, "ship");
    resume(&test, "audit");
    test.served.stop().await;
}
