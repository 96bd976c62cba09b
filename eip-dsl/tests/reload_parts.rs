//! Reloading a flow file whose channels, routes and adapters changed, into the running flow:
//! what is new starts at once, what is removed is drained and then stopped, what changed is
//! replaced and takes over what its predecessor left; messages waiting on a removed channel
//! that nothing drains go to the dead letter channel, said; a reload whose new parts do not
//! start changes nothing; the flow's view shows the new parts.

mod support {
    pub mod reloading;
    pub mod scratch;
}

use std::time::Duration;

use eip_dsl::control::JoinChange;
use eip_dsl::control::reload::{NotReloaded, Reloaded};
use support::reloading::running;

const FLOW: &str = "
channels:
  orders: {kind: point-to-point}
  billing: {kind: point-to-point}
  shipping: {kind: point-to-point}
routes:
  - name: bill
    from: orders
    to: billing
";

/// [`FLOW`] with a channel `audit` and a route `copy` from `billing` to it.
fn with_audit() -> String {
    FLOW.replace(
        "  shipping: {kind: point-to-point}\n",
        "  shipping: {kind: point-to-point}\n  audit: {kind: point-to-point}\n",
    ) + "  - name: copy\n    from: billing\n    to: audit\n"
}

/// What a reload applied; panics if it applied nothing.
fn applied(reloaded: Result<Reloaded, NotReloaded>) -> Vec<String> {
    match reloaded {
        Ok(Reloaded::Applied(said)) => said,
        other => panic!("not applied: {other:?}"),
    }
}

fn names<T>(all: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
    all.iter().map(|x| name(x).to_owned()).collect()
}

#[tokio::test]
async fn an_added_channel_and_route_carry_messages_at_once() {
    let mut flow = running(FLOW).await;
    let view = flow.flow.view();
    let said = applied(flow.reload(&with_audit()).await);
    assert_eq!(said, ["channel audit added", "route copy added"]);
    for n in 0..3 {
        flow.send("orders", &n.to_string()).await;
    }
    assert_eq!(flow.wait_outputs("audit", 3).await.len(), 3);
    assert!(
        flow.outputs_on("billing").is_empty(),
        "billing is no output any more"
    );
    let channels = view.channels();
    assert!(names(&channels, |(c, _)| c.name()).contains(&"audit".to_owned()));
    assert_eq!(names(&view.routes(), |r| r.name()), ["bill", "copy"]);
    assert_eq!(view.generation(), 1);
}

#[tokio::test]
async fn a_removed_route_leaves_its_channel_an_output() {
    let mut flow = running(FLOW).await;
    let without = FLOW.replace(
        "routes:\n  - name: bill\n    from: orders\n    to: billing\n",
        "",
    );
    assert_eq!(applied(flow.reload(&without).await), ["route bill removed"]);
    flow.send("orders", "1").await;
    flow.send("orders", "2").await;
    assert_eq!(flow.wait_outputs("orders", 2).await.len(), 2);
    assert!(flow.outputs_on("billing").is_empty());
    assert!(flow.flow.view().routes().is_empty());
}

#[tokio::test]
async fn a_changed_route_takes_the_messages_waiting_for_the_old_one() {
    let mut flow = running(FLOW).await;
    let view = flow.flow.view();
    assert!(view.routes()[0].pause());
    for n in 0..20 {
        flow.send("orders", &n.to_string()).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(flow.outputs_on("billing").is_empty(), "the route is paused");
    let to_shipping = FLOW.replace("    to: billing", "    to: shipping");
    assert_eq!(
        applied(flow.reload(&to_shipping).await),
        ["route bill replaced"]
    );
    let shipped = flow.wait_outputs("shipping", 20).await;
    let payloads: Vec<String> = shipped
        .iter()
        .map(|m| m.payload_str().unwrap().to_owned())
        .collect();
    let sent: Vec<String> = (0..20).map(|n: i32| n.to_string()).collect();
    assert_eq!(payloads, sent, "every waiting message, once, in order");
    assert!(flow.outputs_on("billing").is_empty());
}

#[tokio::test]
async fn a_removed_channel_s_messages_nothing_drains_are_dead_lettered_and_said() {
    let mut flow = running(FLOW).await;
    // The route that drains `orders` is paused: its messages stay there.
    assert!(flow.flow.view().routes()[0].pause());
    for n in 0..5 {
        flow.send("orders", &n.to_string()).await;
    }
    let without = FLOW
        .replace("  orders: {kind: point-to-point}\n", "")
        .replace(
            "routes:\n  - name: bill\n    from: orders\n    to: billing\n",
            "",
        );
    let said = applied(flow.reload(&without).await);
    assert_eq!(
        said,
        [
            "route bill removed",
            "channel orders removed: 5 messages still waiting there dead-lettered \
             (channel-deleted)"
        ]
    );
    let dead = flow.wait_outputs("dead-letters", 5).await;
    assert_eq!(dead.len(), 5, "none lost");
    let record = dead[0].death().unwrap().unwrap();
    assert_eq!(record.channel, "orders");
    assert!(flow.flow.bus().channel("orders").is_err());
}

#[tokio::test]
async fn a_removed_channel_empties_into_where_it_goes_first() {
    let mut flow = running(&with_audit()).await;
    for n in 0..200 {
        flow.send("orders", &n.to_string()).await;
    }
    // `billing` goes: `copy` (which drains it) with it, and `bill` sends to `shipping`.
    let changed = FLOW
        .replace("  billing: {kind: point-to-point}\n", "")
        .replace("to: billing", "to: shipping");
    let changed = changed.replace(
        "  shipping: {kind: point-to-point}\n",
        "  shipping: {kind: point-to-point}\n  audit: {kind: point-to-point}\n",
    );
    let said = applied(flow.reload(&changed).await);
    assert_eq!(
        said,
        [
            "route bill replaced",
            "route copy removed",
            "channel billing removed"
        ]
    );
    for n in 200..210 {
        flow.send("orders", &n.to_string()).await;
    }
    let audited = flow.outputs_on("audit").len();
    let shipped = flow.wait_outputs("shipping", 210 - audited).await.len();
    assert_eq!(
        audited + shipped,
        210,
        "{audited} audited, {shipped} shipped"
    );
    assert!(flow.outputs_on("dead-letters").is_empty());
}

#[tokio::test]
async fn an_added_http_adapter_takes_requests_and_a_removed_one_stops() {
    let mut flow = running(FLOW).await;
    let with_api = format!(
        "{FLOW}adapters:\n  api: {{kind: http-in, to: orders, listen: '127.0.0.1:0', path: /orders}}\n"
    );
    assert_eq!(applied(flow.reload(&with_api).await), ["adapter api added"]);
    let view = flow.flow.view();
    let endpoint = view.connected("api").expect("connected");
    let url = endpoint
        .split(' ')
        .find(|w| w.starts_with("http://"))
        .expect("a URL")
        .to_owned();
    let client = reqwest::Client::new();
    let answer = client
        .post(&url)
        .body("{}")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    assert_eq!(flow.wait_outputs("billing", 1).await.len(), 1);
    assert_eq!(names(&view.adapters(), |a| &a.name), ["api"]);

    assert_eq!(applied(flow.reload(FLOW).await), ["adapter api removed"]);
    assert!(
        client.post(&url).body("{}").send().await.is_err(),
        "nobody listens"
    );
    assert!(view.connected("api").is_none());
    assert!(view.adapters().is_empty());
}

#[tokio::test]
async fn a_reload_whose_adapter_can_not_start_changes_nothing() {
    let mut flow = running(FLOW).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let with_api = format!(
        "{}adapters:\n  api: {{kind: http-in, to: orders, listen: '127.0.0.1:{port}', path: /orders}}\n",
        with_audit()
    );
    let Err(NotReloaded::Refused(refused)) = flow.reload(&with_api).await else {
        panic!("refused")
    };
    assert!(
        refused.to_string().starts_with("adapter `api`: "),
        "{refused}"
    );
    let view = flow.flow.view();
    assert_eq!(view.generation(), 0, "the flow is as it was");
    assert!(
        flow.flow.bus().channel("audit").is_err(),
        "the new channel is gone again"
    );
    flow.send("orders", "1").await;
    assert_eq!(
        flow.wait_outputs("billing", 1).await.len(),
        1,
        "billing is still an output"
    );

    drop(taken);
    let said = applied(flow.reload(&with_api).await);
    assert_eq!(
        said,
        [
            "channel audit added",
            "route copy added",
            "adapter api added"
        ]
    );
}

#[tokio::test]
async fn a_channel_declared_differently_needs_a_restart() {
    let mut flow = running(FLOW).await;
    let bigger = FLOW.replace(
        "shipping: {kind: point-to-point}",
        "shipping: {kind: point-to-point, capacity: 5}",
    );
    let err = flow.reload(&bigger).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("channel `shipping` declared differently"),
        "{err}"
    );
    assert!(err.to_string().ends_with("that needs a restart"), "{err}");
}

#[tokio::test]
async fn a_channel_a_runtime_join_uses_is_not_removed() {
    let with_quotes = FLOW.replace(
        "channels:\n",
        "channels:\n  quotes: {kind: publish-subscribe}\n",
    );
    let mut flow = running(&with_quotes).await;
    let join = JoinChange {
        from: "quotes".into(),
        to: "shipping".into(),
        filter: None,
        hops: None,
        archival: false,
    };
    flow.runtime.add_join(join).await.unwrap();
    let without = with_quotes.replace("  shipping: {kind: point-to-point}\n", "");
    let err = flow.reload(&without).await.unwrap_err();
    assert!(matches!(err, NotReloaded::InUse(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "the file removes a channel of runtime join 1 (quotes -> shipping): remove the join \
         first (DELETE /api/joins/1)"
    );
    assert!(flow.flow.bus().channel("shipping").is_ok());
}
