//! The admin API's read side against a running flow on 127.0.0.1: the whole picture, each
//! channel's counters and rates moving with the messages, routes with their counters and
//! last failure, joins, exchanges with bindings, and unknown names answered 404 with the
//! closest known one.

mod support {
    pub mod admin;
}

use serde_json::{Value, json};
use support::admin::{FLOW, Served, eventually, metric, serve};

/// The entry of `list` whose `name` is `name`.
fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|items| items.iter().find(|i| i["name"] == name))
        .unwrap_or_else(|| panic!("no `{name}` in {list}"))
}

/// Waits until the channel `name`'s counter `counter` reaches `n`.
async fn counter_reaches(served: &Served, name: &str, counter: &str, n: u64) {
    let path = format!("/api/channels/{name}");
    eventually(&format!("{name}.{counter} = {n}"), || async {
        served.json(&path).await.1["counters"][counter] == n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_shows_channels_routes_joins_exchanges() {
    let served = serve(FLOW, None).await;
    let (status, flow) = served.json("/api/flow").await;
    assert_eq!(status, 200, "{flow}");

    let orders = named(&flow["channels"], "orders");
    assert_eq!(orders["kind"], "point-to-point");
    assert_eq!(orders["store"], "memory");
    assert_eq!(orders["broker"], Value::Null);
    assert_eq!(
        named(&flow["channels"], "events")["kind"],
        "publish-subscribe"
    );
    assert!(
        flow["channels"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["name"] == "dead-letters")),
        "the dead letter channel is listed: {flow}"
    );

    let sort = named(&flow["routes"], "sort");
    assert_eq!(sort["from"], "orders");
    assert_eq!(sort["action"]["kind"], "choice");
    assert_eq!(
        sort["action"]["when"],
        json!([{"when": "$.total > 100", "to": "big"}])
    );
    assert_eq!(sort["action"]["otherwise"], "small");
    assert_eq!(sort["action"]["targets"], json!(["big", "small"]));
    let tag = named(&flow["routes"], "tag");
    assert_eq!(tag["steps"][0]["kind"], "filter");
    assert_eq!(tag["steps"][0]["description"], "filter $.total > 0");
    assert_eq!(
        tag["action"],
        json!({"kind": "to", "targets": ["events"], "when": [], "otherwise": null, "header": null, "strategy": null})
    );

    assert_eq!(
        flow["joins"],
        json!([{"from": "events", "to": "audit", "hops": 2, "archival": false, "filter": null}])
    );
    assert_eq!(
        flow["exchanges"],
        json!([{"name": "market", "alternate": "small", "bindings": [
            {"id": "#0", "key": "stock.*.nyse", "to": ["trades"]}
        ]}])
    );
    assert_eq!(flow["adapters"], json!([]));
    assert_eq!(flow["store"], Value::Null);
    assert_eq!(flow["health"], json!({"ready": true, "waiting_for": []}));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_counters_and_rates_move_with_the_messages() {
    let served = serve(FLOW, None).await;
    let (_, before) = served.json("/api/channels/orders").await;
    assert_eq!(before["counters"]["in"], 0);
    for total in [500, 150, 20] {
        served.send("orders", json!({"total": total})).await;
    }
    counter_reaches(&served, "orders", "out", 3).await;
    counter_reaches(&served, "big", "out", 2).await;
    counter_reaches(&served, "small", "out", 1).await;
    let (_, orders) = served.json("/api/channels/orders").await;
    assert_eq!(orders["counters"]["in"], 3);
    assert_eq!(orders["counters"]["waiting"], 0);
    assert_eq!(orders["counters"]["in_flight"], 0);
    assert_eq!(orders["counters"]["dead_letters"], 0);
    // The sample after the sends sees them: 3 in over about a second.
    eventually("a rate in on orders", || async {
        let rates = served.json("/api/channels/orders").await.1["rates"].clone();
        rates["in_per_second"].as_f64().is_some_and(|r| r > 0.0)
            && rates["interval_seconds"].as_f64().is_some_and(|s| s > 0.0)
    })
    .await;
    let (_, routes) = served.json("/api/routes").await;
    let sort = named(&routes, "sort");
    assert_eq!(sort["counters"]["taken"], 3);
    assert_eq!(sort["counters"]["handled"], 3);
    assert_eq!(sort["counters"]["failed"], 0);
    assert_eq!(sort["last_error"], Value::Null);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_route_shows_its_count_and_last_error() {
    let served = serve(FLOW, None).await;
    served.send("small", json!({"say": "fail"})).await;
    counter_reaches(&served, "small", "dead_letters", 1).await;
    let (status, check) = served.json("/api/routes/check").await;
    assert_eq!(status, 200);
    assert_eq!(check["counters"]["failed"], 1, "{check}");
    assert_eq!(check["counters"]["handled"], 0, "{check}");
    let error = check["last_error"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("the check failed"), "{check}");
    let at = check["last_error"]["at"].as_str().unwrap_or_default();
    assert!(
        at.ends_with('Z') && at.len() == 24,
        "an RFC 3339 time: {at}"
    );
    assert_eq!(
        check["steps"][0]["counters"],
        json!({"in": 1, "out": 0, "failed": 1}),
        "{check}"
    );
    served.send("small", json!({"say": "fine"})).await;
    counter_reaches(&served, "checked", "in", 1).await;
    let (_, check) = served.json("/api/routes/check").await;
    assert_eq!(
        check["steps"][0]["counters"],
        json!({"in": 2, "out": 1, "failed": 1}),
        "{check}"
    );
    let (_, metrics) = served.get("/metrics").await;
    let labels = r#"{route="check",step="1",kind="process"}"#;
    for (family, value) in [("in", 2.0), ("out", 1.0), ("failed", 1.0)] {
        let series = format!("eip_step_{family}_total{labels}");
        assert_eq!(metric(&metrics, &series), Some(value), "{metrics}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_are_404_with_the_closest_name() {
    let served = serve(FLOW, None).await;
    for (path, error, closest) in [
        (
            "/api/channels/order",
            "unknown channel `order`",
            json!("orders"),
        ),
        ("/api/routes/sorts", "unknown route `sorts`", json!("sort")),
        (
            "/api/exchanges/markets",
            "unknown exchange `markets`",
            json!("market"),
        ),
        (
            "/api/channels/zzzzzzzz",
            "unknown channel `zzzzzzzz`",
            Value::Null,
        ),
        (
            "/api/channel",
            "no such endpoint: `/api/channel`",
            json!("/api/channels"),
        ),
    ] {
        let (status, body) = served.json(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body, json!({"error": error, "closest": closest}), "{path}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_step_counts_what_went_in_and_what_it_passed_on() {
    let served = serve(
        r#"
channels:
  batches: {kind: point-to-point}
  pairs: {kind: point-to-point}
routes:
  - name: regroup
    from: batches
    steps:
      - split: json-lines
      - filter: header("sequence-number") != 3
      - aggregate: 2
    to: pairs
"#,
        None,
    )
    .await;
    let lines: Vec<String> = (1..=5).map(|n| format!("{{\"n\": {n}}}")).collect();
    served.send_text("batches", &lines.join("\n")).await;
    counter_reaches(&served, "pairs", "in", 2).await;
    let (_, route) = served.json("/api/routes/regroup").await;
    let counters: Vec<&Value> = (0..3).map(|i| &route["steps"][i]["counters"]).collect();
    assert_eq!(
        counters,
        [
            &json!({"in": 1, "out": 5, "failed": 0}),
            &json!({"in": 5, "out": 4, "failed": 0}),
            // An aggregator wraps the rest of the route: what it passed on is counted when
            // it hands a group on.
            &json!({"in": 4, "out": 2, "failed": 0}),
        ],
        "{route}"
    );
    served.stop().await;
}
