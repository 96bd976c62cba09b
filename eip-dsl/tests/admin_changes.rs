//! The write side of the admin API for joins and bindings: a change made over HTTP is in place
//! at once, listed by `GET /api/changes`, removed by its id; a refused one says why as the
//! flow file would; a server without a token refuses every change; and every answer matches
//! the OpenAPI document's schema for its method, path and status.

mod support {
    pub mod admin;
}

use eip_core::Message;
use eip_core::channel::{Channel, Datatype, JsonSchema};
use eip_dsl::admin::OPENAPI;
use serde_json::{Value, json};
use support::admin::{FLOW, Served, answer, serve};

const TOKEN: &str = "t0ken";

/// `method path` with `body`, with the token: the status and the JSON answer, checked against
/// the document's schema for `template` and that status.
async fn call(
    served: &Served,
    method: reqwest::Method,
    template: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = served
        .client
        .request(method.clone(), format!("{}{path}", served.base));
    if let Some(token) = &served.token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let (status, text) = answer(request).await;
    let doc: Value = serde_json::from_str(OPENAPI).unwrap();
    let verb = method.as_str().to_lowercase();
    let documented = &doc["paths"][template][&verb]["responses"][status.to_string()];
    assert!(
        documented.is_object(),
        "{verb} {path} answered {status}, which the document does not list: {text}"
    );
    let schema = json!({
        "allOf": [documented["content"]["application/json"]["schema"]],
        "components": doc["components"],
    });
    let check = JsonSchema::new(path, &schema).expect("the document's schema compiles");
    if let Err(reason) = check.check(&Message::new(text.clone())) {
        panic!("{verb} {path} ({status}) does not match the document: {reason}\n{text}");
    }
    (status, serde_json::from_str(&text).expect("JSON"))
}

/// How many messages the queue `name` has taken (the running flow consumes them).
fn taken(served: &Served, name: &str) -> u64 {
    match served.flow.bus().channel(name) {
        Ok(Channel::PointToPoint(c)) => c.stats().accepted,
        _ => panic!("no queue {name}"),
    }
}

/// Publishes `{"total": TOTAL}` on `events`.
async fn events(served: &Served, total: u64) {
    let msg = Message::new(json!({"total": total}).to_string());
    served.flow.bus().publish("events", msg).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_added_over_http_forwards_until_removed() {
    use reqwest::Method;
    let served = serve(FLOW, Some(TOKEN)).await;
    let join = json!({"from": "events", "to": "trades", "hops": 1, "filter": "$.total > 1000"});
    let (status, made) = call(
        &served,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(join),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["from"], "events");
    assert_eq!(made["hops"], 1);
    let id = made["id"].as_u64().unwrap();

    let (_, listed) = call(&served, Method::GET, "/api/changes", "/api/changes", None).await;
    assert_eq!(
        listed["kept"], false,
        "a flow without a durable store keeps nothing"
    );
    assert_eq!(listed["joins"][0]["id"], id);
    let (_, joins) = served.json("/api/joins").await;
    assert!(
        joins
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["to"] == "trades"),
        "{joins}"
    );

    events(&served, 5000).await;
    events(&served, 5).await;
    assert_eq!(
        taken(&served, "trades"),
        1,
        "the filtered join took the big one only"
    );

    let path = format!("/api/joins/{id}");
    let (status, removed) = call(&served, Method::DELETE, "/api/joins/{id}", &path, None).await;
    assert_eq!((status, &removed["to"]), (200, &json!("trades")));
    events(&served, 5000).await;
    assert_eq!(taken(&served, "trades"), 1, "removed: nothing more crosses");

    let (status, gone) = call(&served, Method::DELETE, "/api/joins/{id}", &path, None).await;
    assert_eq!(status, 404);
    assert_eq!(gone["error"], format!("no runtime join has id {id}"));
    let (status, bad) = call(
        &served,
        Method::DELETE,
        "/api/joins/{id}",
        "/api/joins/first",
        None,
    )
    .await;
    assert_eq!(status, 400, "{bad}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_change_says_why_as_the_flow_file_would() {
    use reqwest::Method;
    let served = serve(FLOW, Some(TOKEN)).await;
    let typo = json!({"from": "events", "to": "adit"});
    let (status, refused) = call(
        &served,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(typo),
    )
    .await;
    assert_eq!(status, 400);
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("`adit`") && error.contains("did you mean `audit`?"),
        "{error}"
    );

    let queue = json!({"from": "orders", "to": "audit"});
    let (status, refused) = call(
        &served,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(queue),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        refused["error"].as_str().unwrap().contains("queue"),
        "{refused}"
    );

    let not_a_join = json!({"from": "events", "to": "audit", "hop": 3});
    let (status, refused) = call(
        &served,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(not_a_join),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        refused["error"].as_str().unwrap().contains("hop"),
        "{refused}"
    );

    let pattern = json!({"exchange": "market", "key": "stock.#x", "to": ["trades"]});
    let (status, refused) = call(
        &served,
        Method::POST,
        "/api/bindings",
        "/api/bindings",
        Some(pattern),
    )
    .await;
    assert_eq!(status, 400, "{refused}");

    let (_, listed) = call(&served, Method::GET, "/api/changes", "/api/changes", None).await;
    assert_eq!(listed["joins"], json!([]));
    assert_eq!(listed["bindings"], json!([]));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_added_over_http_routes_until_removed() {
    use reqwest::Method;
    let served = serve(FLOW, Some(TOKEN)).await;
    let binding = json!({"exchange": "market", "key": "bond.#", "to": ["audit"]});
    let (status, made) = call(
        &served,
        Method::POST,
        "/api/bindings",
        "/api/bindings",
        Some(binding),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_u64().unwrap();
    let bond = || Message::builder("{}").subject("bond.us.10y").build();
    let market = served.flow.bus().exchange("market").unwrap();
    market.publish(bond()).await.unwrap();
    assert_eq!(taken(&served, "audit"), 1);

    let path = format!("/api/bindings/{id}");
    let (status, removed) = call(&served, Method::DELETE, "/api/bindings/{id}", &path, None).await;
    assert_eq!((status, &removed["key"]), (200, &json!("bond.#")));
    market.publish(bond()).await.unwrap();
    assert_eq!(
        taken(&served, "audit"),
        1,
        "removed: the alternate takes it"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_need_a_token() {
    use reqwest::Method;
    let open = serve(FLOW, None).await;
    let join = json!({"from": "events", "to": "trades"});
    let (status, refused) = call(
        &open,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(join.clone()),
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("EIP_ADMIN_TOKEN"),
        "{refused}"
    );
    let (status, _) = call(&open, Method::GET, "/api/changes", "/api/changes", None).await;
    assert_eq!(status, 200, "reading needs no token on loopback");
    open.stop().await;

    let mut guarded = serve(FLOW, Some(TOKEN)).await;
    guarded.token = Some("another".into());
    let (status, _) = call(
        &guarded,
        Method::POST,
        "/api/joins",
        "/api/joins",
        Some(join),
    )
    .await;
    assert_eq!(status, 401);
    guarded.token = Some(TOKEN.into());
    let (_, listed) = call(&guarded, Method::GET, "/api/changes", "/api/changes", None).await;
    assert_eq!(
        listed["joins"],
        json!([]),
        "the refused change made nothing"
    );
    guarded.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_message_is_sent_marked_and_a_purge_empties_a_queue() {
    use reqwest::Method;
    // Not started: what is sent waits on its channel, for the purge to find.
    let mut served = support::admin::serve_unstarted(FLOW, Some(TOKEN)).await;
    served.token = Some(TOKEN.into());
    let template = "/api/channels/{name}/messages";
    for total in [5, 500, 7] {
        let body = json!({"payload": {"total": total}, "headers": {"kind": "probe"}});
        let (status, sent) = call(
            &served,
            Method::POST,
            template,
            "/api/channels/trades/messages",
            Some(body),
        )
        .await;
        assert_eq!(
            (status, &sent["outcome"]),
            (202, &json!("accepted")),
            "{sent}"
        );
    }
    let Ok(Channel::PointToPoint(trades)) = served.flow.bus().channel("trades") else {
        panic!("trades is a queue")
    };
    assert_eq!(trades.stats().depth, 3);

    let purge = "/api/channels/{name}/purge";
    let (status, purged) = call(
        &served,
        Method::POST,
        purge,
        "/api/channels/trades/purge",
        Some(json!({"when": "$.total > 100"})),
    )
    .await;
    assert_eq!((status, &purged["purged"]), (200, &json!(1)), "{purged}");
    assert_eq!(trades.stats().depth, 2);

    let delivery = trades.receiver().recv().await.unwrap();
    let marked = delivery.message().headers().get("test-message");
    assert_eq!(marked, Some(&eip_core::message::HeaderValue::from(true)));
    delivery.ack();
    let (status, purged) = call(
        &served,
        Method::POST,
        purge,
        "/api/channels/trades/purge",
        None,
    )
    .await;
    assert_eq!((status, &purged["purged"]), (200, &json!(1)));

    let (status, refused) = call(
        &served,
        Method::POST,
        purge,
        "/api/channels/trades/purge",
        Some(json!({"when": "$.total >"})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    let (status, unknown) = call(
        &served,
        Method::POST,
        purge,
        "/api/channels/trade/purge",
        None,
    )
    .await;
    assert_eq!((status, &unknown["closest"]), (404, &json!("trades")));
    let (status, refused) = call(
        &served,
        Method::POST,
        template,
        "/api/channels/trades/messages",
        Some(json!({"to": "orders", "payload": 1})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_route_takes_nothing_until_resumed() {
    use reqwest::Method;
    let served = serve(FLOW, Some(TOKEN)).await;
    let (status, route) = call(
        &served,
        Method::POST,
        "/api/routes/{name}/pause",
        "/api/routes/sort/pause",
        None,
    )
    .await;
    assert_eq!((status, &route["paused"]), (200, &json!(true)), "{route}");
    for total in [500, 5] {
        served.send("orders", json!({"total": total})).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let Ok(Channel::PointToPoint(orders)) = served.flow.bus().channel("orders") else {
        panic!("orders is a queue")
    };
    assert_eq!(
        orders.stats().depth,
        2,
        "the orders wait while `sort` is paused"
    );
    let (_, listed) = served.json("/api/routes/sort").await;
    assert_eq!(listed["paused"], true);

    let (status, route) = call(
        &served,
        Method::POST,
        "/api/routes/{name}/resume",
        "/api/routes/sort/resume",
        None,
    )
    .await;
    assert_eq!((status, &route["paused"]), (200, &json!(false)));
    support::admin::eventually("the waiting orders taken", || async {
        orders.stats().depth == 0
    })
    .await;
    assert_eq!(taken(&served, "big"), 1);

    let (status, unknown) = call(
        &served,
        Method::POST,
        "/api/routes/{name}/pause",
        "/api/routes/sorts/pause",
        None,
    )
    .await;
    assert_eq!((status, &unknown["closest"]), (404, &json!("sort")));
    served.stop().await;
}
