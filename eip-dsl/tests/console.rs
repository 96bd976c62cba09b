//! The web console the admin server serves at `/`: its page and files answered without the
//! token and with a Content-Security-Policy, the API behind it still guarded; and the console
//! itself in a real browser (headless Chromium over WebDriver): it draws the flow, a counter on
//! the drawing moves when a message is sent from its form, a join added from its form routes
//! the next message and removed routes no more, a route paused and resumed from its buttons,
//! a dead letter replayed and deleted from its browser; and without a token the console reads
//! and says why a change is refused.
//!
//! Set `EIP_CONSOLE_SCREENSHOT=PATH` to keep the screenshot the first test takes (the book's
//! `book/src/images/console.png` is made so).

mod support {
    pub mod admin;
    pub mod webdriver;
}

use std::sync::Arc;
use std::time::Duration;

use eip_core::Message;

use eip_dsl::admin::console::CONTENT_SECURITY_POLICY;
use serde_json::{Value, json};
use support::admin::{FLOW, Served, serve, serve_unstarted};
use support::webdriver::Browser;

const TOKEN: &str = "console-t0ken";
/// How long the page may take to show what the server has (generous: CI runs these beside
/// the whole workspace's tests on two cores).
const SHOWN: Duration = Duration::from_secs(20);

/// The status, content type, CSP header and body of `GET path`, with `token` if given.
async fn get_as(
    served: &Served,
    path: &str,
    token: Option<&str>,
) -> (u16, String, Option<String>, String) {
    let mut request = served.client.get(format!("{}{path}", served.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("an answer");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let kind = header("content-type").unwrap_or_default();
    let csp = header("content-security-policy");
    let status = response.status().as_u16();
    (status, kind, csp, response.text().await.expect("a body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_served_without_the_token_and_its_data_only_with_it() {
    let served = serve(FLOW, Some(TOKEN)).await;
    let (status, kind, csp, page) = get_as(&served, "/", None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(kind, "text/html; charset=utf-8");
    assert_eq!(csp.as_deref(), Some(CONTENT_SECURITY_POLICY));
    assert!(page.contains("src=\"/console/console.js\""), "{page}");
    for (file, expected) in [
        ("console.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
    ] {
        let (status, kind, csp, body) = get_as(&served, &format!("/console/{file}"), None).await;
        assert_eq!((status, kind.as_str()), (200, expected), "{file}");
        assert_eq!(csp.as_deref(), Some(CONTENT_SECURITY_POLICY), "{file}");
        assert!(!body.is_empty(), "{file}");
    }
    let (status, kind, _, body) = get_as(&served, "/console/consol.js", None).await;
    assert_eq!((status, kind.as_str()), (404, "application/json"), "{body}");
    let body: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        body,
        json!({"error": "unknown console file `consol.js`", "closest": "console.js"})
    );

    // What the page shows needs the token.
    for path in ["/api/flow", "/api/graph.svg", "/api/changes"] {
        let (status, _, _, body) = get_as(&served, path, None).await;
        assert_eq!(status, 401, "{path} without the token: {body}");
    }
    let (status, kind, _, svg) = get_as(&served, "/api/graph.svg", Some(TOKEN)).await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "image/svg+xml; charset=utf-8")
    );
    for name in ["orders", "sort", "events", "audit", "market"] {
        assert!(
            svg.contains(&format!("data-name=\"{name}\"")),
            "{name}: {svg}"
        );
    }
    served.stop().await;
}

/// The console of `served` open in `browser`, the token given in its token form, the flow
/// drawn.
async fn open_console(browser: &Browser, served: &Served) {
    browser.goto(&format!("{}/", served.base)).await;
    browser
        .wait_text("the token asked for", "#token-reason", SHOWN, |t| {
            t.contains("needs a token")
        })
        .await;
    browser.fill("#token-input", TOKEN).await;
    browser.click("#token-save").await;
    browser
        .find("#graph svg g.node.point-to-point[data-name=\"orders\"] text.counter")
        .await;
}

/// The counter line the console wrote on the drawing under the channel `name`.
fn channel_counter(name: &str) -> String {
    format!("#graph g.node[data-name=\"{name}\"]:not(.route) text.counter")
}

/// Sends `payload` (JSON text) to `channel` from the console's test message form and waits
/// for it to say the channel accepted it.
async fn send_from_form(browser: &Browser, channel: &str, payload: &str) {
    browser.fill("#send-channel", channel).await;
    browser.fill("#send-payload", payload).await;
    browser.click("#send-button").await;
    browser
        .wait_text("the test message accepted", "#status", SHOWN, |t| {
            t.contains(&format!("sent to {channel}: accepted"))
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_draws_the_flow_and_its_counters_move_when_a_message_is_sent() {
    let served = serve(FLOW, Some(TOKEN)).await;
    let browser = Browser::start(1280, 1000).await;
    open_console(&browser, &served).await;
    browser
        .wait_text("orders' counter", &channel_counter("orders"), SHOWN, |t| {
            t == "in 0 · out 0"
        })
        .await;
    for node in ["sort", "tag", "check"] {
        browser
            .find(&format!(
                "#graph g.node.route[data-name=\"{node}\"] text.counter"
            ))
            .await;
    }

    // orders -> sort -> big -> tag -> events -> (join) -> audit
    send_from_form(&browser, "orders", r#"{"total": 500}"#).await;
    browser
        .wait_text(
            "audit's counter to move",
            &channel_counter("audit"),
            SHOWN,
            |t| t.starts_with("in 1 "),
        )
        .await;
    browser
        .wait_text(
            "the table's count",
            "#channels tr[data-name=\"big\"] td[data-counter=\"in\"]",
            SHOWN,
            |t| t == "1",
        )
        .await;

    // A few more, and one that fails its check and is dead-lettered, for the picture.
    for total in [20, 30, 150, 700] {
        served.send("orders", json!({"total": total})).await;
    }
    served.send("small", json!({"say": "fail"})).await;
    browser
        .wait_text("audit's counter", &channel_counter("audit"), SHOWN, |t| {
            t.starts_with("in 3 ")
        })
        .await;
    browser
        .wait_text(
            "the check's failure",
            "#graph g.node.route[data-name=\"check\"] text.counter",
            SHOWN,
            |t| t.contains("1 failed"),
        )
        .await;
    // Traffic for a few seconds, so that the rates show, then the picture.
    for total in 0..20 {
        served.send("orders", json!({"total": total * 15})).await;
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    browser
        .script(
            "document.activeElement.blur(); window.scrollTo(0, 0); return true;",
            json!([]),
        )
        .await;
    let png = browser.screenshot().await;
    assert_eq!(png.get(..8), Some(&b"\x89PNG\r\n\x1a\n"[..]), "a PNG");
    if let Ok(path) = std::env::var("EIP_CONSOLE_SCREENSHOT") {
        std::fs::write(&path, &png).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    browser.quit().await;
    served.stop().await;
}

/// The channel `name`'s counter `counter`, from the API.
async fn api_count(served: &Served, name: &str, counter: &str) -> u64 {
    let (status, channel) = served.json(&format!("/api/channels/{name}")).await;
    assert_eq!(status, 200, "{channel}");
    channel["counters"][counter].as_u64().expect("a count")
}

/// Waits, at most 10 s, for the channel `name`'s `in` counter to read `count`.
async fn wait_in(served: &Served, name: &str, count: u64) {
    support::admin::eventually(&format!("{name} in = {count}"), || async {
        api_count(served, name, "in").await == count
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_added_in_the_console_routes_and_removed_routes_no_more() {
    let served = serve(FLOW, Some(TOKEN)).await;
    let browser = Browser::start(1280, 1000).await;
    open_console(&browser, &served).await;

    browser.fill("#join-from", "events").await;
    browser.fill("#join-to", "trades").await;
    browser.fill("#join-hops", "3").await;
    browser.click("#join-add").await;
    browser
        .wait_text("the join added", "#status", SHOWN, |t| {
            t == "join 1 added: events → trades"
        })
        .await;
    let row = "#joins tr[data-from=\"events\"][data-to=\"trades\"]";
    browser.find(&format!("{row} button.remove")).await;
    // Drawn too: an edge from `events` (the fifth channel) to `trades` (the seventh).
    let edge = "#graph g.edge[data-from=\"c4_events\"][data-to=\"c6_trades\"]";
    browser.find(edge).await;
    let (_, joins) = served.json("/api/joins").await;
    assert!(
        joins
            .as_array()
            .expect("joins")
            .iter()
            .any(|j| j["from"] == "events" && j["to"] == "trades" && j["hops"] == 3),
        "{joins}"
    );

    // orders -> sort -> big -> tag -> events -> audit, and now trades too
    send_from_form(&browser, "orders", r#"{"total": 900}"#).await;
    wait_in(&served, "trades", 1).await;
    wait_in(&served, "audit", 1).await;

    browser.click(&format!("{row} button.remove")).await;
    browser
        .wait_text("the join removed", "#status", SHOWN, |t| {
            t == "join 1 removed"
        })
        .await;
    browser.gone(edge).await;
    send_from_form(&browser, "orders", r#"{"total": 901}"#).await;
    wait_in(&served, "audit", 2).await;
    assert_eq!(api_count(&served, "trades", "in").await, 1, "no more");

    // A binding: added, shown with its remove button, removed.
    browser.fill("#binding-exchange", "market").await;
    browser.fill("#binding-key", "bond.#").await;
    browser.fill("#binding-to", "trades, audit").await;
    browser.click("#binding-add").await;
    browser
        .wait_text("the binding added", "#status", SHOWN, |t| {
            t.starts_with("binding ") && t.ends_with(" added: market bond.# → trades, audit")
        })
        .await;
    let binding = "#bindings tr[data-exchange=\"market\"] button.remove";
    browser.find(binding).await;
    browser.click(binding).await;
    browser
        .wait_text("the binding removed", "#status", SHOWN, |t| {
            t.starts_with("binding ") && t.ends_with(" removed")
        })
        .await;

    // A join the flow refuses: the server's reason, shown.
    browser.fill("#join-from", "orders").await;
    browser.fill("#join-to", "audit").await;
    browser.click("#join-add").await;
    let refusal = browser
        .wait_text("the refusal", "#status.error", SHOWN, |t| !t.is_empty())
        .await;
    assert!(refusal.contains("orders"), "{refusal}");
    browser.quit().await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_paused_in_the_console_holds_its_messages_until_resumed() {
    let served = serve(FLOW, Some(TOKEN)).await;
    let browser = Browser::start(1280, 1000).await;
    open_console(&browser, &served).await;
    browser
        .click("#routes tr[data-name=\"sort\"] button.pause")
        .await;
    browser
        .wait_text("the pause", "#status", SHOWN, |t| t == "route sort paused")
        .await;
    browser
        .find("#routes tr.paused[data-name=\"sort\"] button.resume")
        .await;
    served.send("orders", json!({"total": 5})).await;
    browser
        .wait_text(
            "the message waiting",
            &channel_counter("orders"),
            SHOWN,
            |t| t == "in 1 · out 0 · 1 waiting",
        )
        .await;
    assert_eq!(api_count(&served, "small", "in").await, 0, "held");

    browser
        .click("#routes tr[data-name=\"sort\"] button.resume")
        .await;
    browser
        .wait_text("the resume", "#status", SHOWN, |t| {
            t == "route sort resumed"
        })
        .await;
    wait_in(&served, "small", 1).await;
    browser
        .wait_text("orders emptied", &channel_counter("orders"), SHOWN, |t| {
            t == "in 1 · out 1"
        })
        .await;
    browser.quit().await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_paused_in_the_console_is_paused_until_resumed() {
    // A flow with an `orders` channel, which the console is seen to draw.
    let flow = "
channels:
  orders: {kind: point-to-point}
adapters:
  clock: {kind: timer, to: orders, interval: 1h}
";
    let served = serve(flow, Some(TOKEN)).await;
    let browser = Browser::start(1280, 1000).await;
    open_console(&browser, &served).await;
    let row = "#adapters tr[data-name=\"clock\"]";
    browser.click(&format!("{row} button.pause")).await;
    browser
        .wait_text("the pause", "#status", SHOWN, |t| {
            t == "adapter clock paused"
        })
        .await;
    browser.find(&format!("{row}.paused button.resume")).await;
    let (_, adapters) = served.json("/api/adapters").await;
    assert_eq!(adapters[0]["paused"], true, "{adapters}");

    browser.click(&format!("{row} button.resume")).await;
    browser
        .wait_text("the resume", "#status", SHOWN, |t| {
            t == "adapter clock resumed"
        })
        .await;
    let (_, adapters) = served.json("/api/adapters").await;
    assert_eq!(adapters[0]["paused"], false, "{adapters}");
    browser.quit().await;
    served.stop().await;
}

/// The ids of the dead letters the API lists.
async fn dead_letter_ids(served: &Served) -> Vec<String> {
    let (status, page) = served.json("/api/dead-letters?offset=0&limit=50").await;
    assert_eq!(status, 200, "{page}");
    page["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect()
}

/// `FLOW` served and started as `eip run --admin` starts it: its dead letters kept for the
/// admin server, not output.
async fn serve_keeping_dead_letters() -> Served {
    let mut served = serve_unstarted(FLOW, Some(TOKEN)).await;
    let adapters = (served.flow.connect_adapters().await).expect("no adapters to connect");
    let output = Arc::new(|_: &str, _: &Message| {});
    let mut running = (served.flow).start_keeping(output, &["dead-letters".to_owned()]);
    running.attach(adapters);
    served.running = Some(running);
    served
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_is_replayed_and_deleted_from_the_console() {
    let served = serve_keeping_dead_letters().await;
    // `check` fails on it; `small` tries once, then dead-letters it.
    served
        .send("small", json!({"say": "fail <b>bold</b>"}))
        .await;
    support::admin::eventually("the dead letter", || async {
        dead_letter_ids(&served).await.len() == 1
    })
    .await;
    let id = dead_letter_ids(&served).await.remove(0);
    let browser = Browser::start(1280, 1000).await;
    open_console(&browser, &served).await;
    let row = format!("#dead-letters tr[data-id=\"{id}\"]");
    // The payload is shown as the text it is, markup and all.
    browser
        .wait_text("the payload", &format!("{row} td.payload"), SHOWN, |t| {
            t.contains("fail <b>bold</b>")
        })
        .await;
    let bold = browser
        .script(
            "return document.querySelector('#dead-letters b') !== null;",
            json!([]),
        )
        .await;
    assert_eq!(bold, false, "no markup from a payload");

    browser.click(&format!("{row} input.pick")).await;
    browser.click("#dead-replay").await;
    browser
        .wait_text("the replay", "#status", SHOWN, |t| {
            t.starts_with("replayed 1 (")
        })
        .await;
    // Back on `small` with its id; the check fails it again, so it is a dead letter again.
    wait_in(&served, "small", 2).await;
    support::admin::eventually("the dead letter again", || async {
        dead_letter_ids(&served).await == [id.clone()]
    })
    .await;

    browser.find(&format!("{row} input.pick")).await;
    browser.click(&format!("{row} input.pick")).await;
    browser.click("#dead-delete").await;
    browser
        .wait_text("the delete", "#status", SHOWN, |t| {
            t == "deleted 1 dead letter"
        })
        .await;
    assert!(dead_letter_ids(&served).await.is_empty());
    browser.quit().await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_console_reads_and_says_why_changes_are_refused() {
    let served = serve(FLOW, None).await;
    let browser = Browser::start(1280, 1000).await;
    browser.goto(&format!("{}/", served.base)).await;
    browser
        .wait_text("orders' counter", &channel_counter("orders"), SHOWN, |t| {
            t == "in 0 · out 0"
        })
        .await;
    let asked = browser
        .script(
            "return !document.getElementById('token-form').hidden;",
            json!([]),
        )
        .await;
    assert_eq!(asked, false, "no token asked for");
    browser
        .click("#routes tr[data-name=\"sort\"] button.pause")
        .await;
    browser
        .wait_text("the refusal", "#status.error", SHOWN, |t| {
            t.starts_with("changes need a token")
        })
        .await;
    let (_, sort) = served.json("/api/routes/sort").await;
    assert_eq!(sort["paused"], false, "{sort}");
    browser.quit().await;
    served.stop().await;
}
