//! The admin API's dead letters: what it refuses (unknown id, bad predicate, missing or wrong
//! token, no token at all), and every answer against the OpenAPI document, on the flow of
//! `support/dead_letter_flow.rs`.

mod support {
    pub mod admin;
    pub mod dead_letter_flow;
    #[allow(dead_code)] // Only its type, in `serve`'s signature: these tests keep nothing on disk.
    pub mod scratch;
}

use std::sync::atomic::Ordering;

use eip_core::Message;
use eip_core::channel::{Datatype, JsonSchema};
use eip_core::message::DeathReason;
use serde_json::{Value, json};
use support::admin::answer;
use support::dead_letter_flow::*;

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
