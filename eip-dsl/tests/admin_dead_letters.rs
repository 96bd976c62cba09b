//! The admin API's message browser and dead letters, against a running flow on 127.0.0.1:
//! pages of what waits on memory and durable channels that take nothing; dead letters with
//! their death records; replay by id, by predicate and of all, keeping each id and marking
//! it `replayed`, into a durable channel too and across a restart; deletion; and the
//! refusals are in `admin_dead_letters_refusals.rs`.

mod support {
    pub mod admin;
    pub mod dead_letter_flow;
    pub mod scratch;
}

use std::sync::atomic::Ordering;
use std::time::Duration;

use eip_core::Message;
use eip_core::message::DeathReason;
use serde_json::{Value, json};
use support::admin::eventually;
use support::dead_letter_flow::*;
use support::scratch::Scratch;

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
