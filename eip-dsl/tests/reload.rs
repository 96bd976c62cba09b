//! Reloading a flow file into a running flow: joins and bindings that changed are applied at
//! once; a file with problems, or one that changes what needs a restart, changes nothing and
//! says why; a change of comments or layout is no change; what was added at runtime stays.
//! (Channels, routes and adapters changing: `reload_parts.rs`.)

mod support {
    pub mod reloading;
    pub mod scratch;
}

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::control::JoinChange;
use eip_dsl::control::reload::{NotReloaded, Reloaded};
use support::reloading::{Running, running};

const FLOW: &str = "
channels:
  quotes: {kind: publish-subscribe}
  nyse: {kind: point-to-point}
  archive: {kind: point-to-point}
  unrouted: {kind: point-to-point}
joins:
  - {from: quotes, to: archive, archival: true}
exchanges:
  market:
    alternate: unrouted
    bindings:
      - {key: 'stock.#', to: [archive]}
";

/// How many messages the queue `name` took.
fn taken(flow: &Running, name: &str) -> u64 {
    match flow.flow.bus().channel(name) {
        Ok(Channel::PointToPoint(c)) => c.stats().accepted,
        _ => panic!("no queue {name}"),
    }
}

/// A quote published on `quotes`, and one through `market`.
async fn quote(flow: &Running) {
    let msg = || Message::builder("{}").subject("stock.ibm.nyse").build();
    flow.flow.bus().publish("quotes", msg()).await.unwrap();
    flow.flow.bus().publish("market", msg()).await.unwrap();
}

#[tokio::test]
async fn changed_joins_and_bindings_are_applied_at_once() {
    let mut flow = running(FLOW).await;
    quote(&flow).await;
    assert_eq!((taken(&flow, "archive"), taken(&flow, "nyse")), (2, 0));

    let changed = FLOW
        .replace(
            "  - {from: quotes, to: archive, archival: true}",
            "  - {from: quotes, to: nyse}",
        )
        .replace(
            "{key: 'stock.#', to: [archive]}",
            "{key: 'stock.*.nyse', to: [nyse]}",
        );
    let Ok(Reloaded::Applied(said)) = flow.reload(&changed).await else {
        panic!("applied")
    };
    assert_eq!(
        said,
        [
            "join quotes -> archive removed",
            "join quotes -> nyse added",
            "binding market: stock.# -> archive removed",
            "binding market: stock.*.nyse -> nyse added",
        ]
    );
    quote(&flow).await;
    assert_eq!((taken(&flow, "archive"), taken(&flow, "nyse")), (2, 2));
    assert!(matches!(
        flow.reload(&changed).await,
        Ok(Reloaded::Unchanged)
    ));
}

#[tokio::test]
async fn a_file_with_problems_changes_nothing() {
    let mut flow = running(FLOW).await;
    let broken = FLOW.replace("to: archive, archival", "to: archve, archival");
    let Err(NotReloaded::Invalid(errors)) = flow.reload(&broken).await else {
        panic!("refused")
    };
    assert!(
        errors.render().contains("did you mean `archive`?"),
        "{}",
        errors.render()
    );
    quote(&flow).await;
    assert_eq!(
        taken(&flow, "archive"),
        2,
        "the old join and binding are in place"
    );
    // Once the file is mended, reloading it is no change.
    assert!(matches!(flow.reload(FLOW).await, Ok(Reloaded::Unchanged)));
}

#[tokio::test]
async fn changing_what_runs_declared_needs_a_restart_and_changes_nothing() {
    let mut flow = running(FLOW).await;
    let more = FLOW.replace(
        "  unrouted: {kind: point-to-point}",
        "  unrouted: {kind: point-to-point, capacity: 5}",
    );
    let more = more.replace(
        "{from: quotes, to: archive, archival: true}",
        "{from: quotes, to: nyse}",
    );
    let err = flow.reload(&more).await.unwrap_err();
    assert!(matches!(err, NotReloaded::NeedsRestart(ref what) if what.len() == 1));
    assert_eq!(
        err.to_string(),
        "the file changes channel `unrouted` declared differently (a channel is added or \
         removed while the flow runs, never changed: declare one under another name and route \
         to it): that needs a restart"
    );
    quote(&flow).await;
    assert_eq!(
        (taken(&flow, "archive"), taken(&flow, "nyse")),
        (2, 0),
        "the join was not applied"
    );

    let other_alternate = FLOW.replace("alternate: unrouted", "alternate: nyse");
    let err = flow.reload(&other_alternate).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("`exchanges` beyond their bindings"),
        "{err}"
    );
}

#[tokio::test]
async fn comments_and_layout_are_no_change() {
    let mut flow = running(FLOW).await;
    let relaid = format!(
        "# the same flow, written otherwise\n{}",
        FLOW.replace("{kind: point-to-point}", "\n    kind: point-to-point")
    );
    assert!(matches!(
        flow.reload(&relaid).await,
        Ok(Reloaded::Unchanged)
    ));
}

#[tokio::test]
async fn a_join_added_at_runtime_outlives_the_file_s_twin() {
    let with_nyse = FLOW.replace(
        "  - {from: quotes, to: archive, archival: true}",
        "  - {from: quotes, to: archive, archival: true}\n  - {from: quotes, to: nyse}",
    );
    let mut flow = running(&with_nyse).await;
    let twin = JoinChange {
        from: "quotes".into(),
        to: "nyse".into(),
        filter: None,
        hops: None,
        archival: false,
    };
    flow.runtime.add_join(twin).await.unwrap();
    let Ok(Reloaded::Applied(said)) = flow.reload(FLOW).await else {
        panic!("applied")
    };
    assert_eq!(said, ["join quotes -> nyse removed"]);
    quote(&flow).await;
    assert_eq!(taken(&flow, "nyse"), 1, "the runtime join still forwards");
    assert_eq!(flow.runtime.joins().len(), 1);
}
