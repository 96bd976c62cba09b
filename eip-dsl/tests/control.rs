//! Runtime changes (the Control Bus's joins and bindings): checked with the flow file's
//! messages, applied to the running flow at once, removed by id, and, on a flow with a durable
//! store, kept across a restart and applied again (or dropped with the reason when the flow no
//! longer allows them).

mod support {
    pub mod scratch;
}

use std::path::Path;
use std::sync::Arc;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, Flow, StoreOptions};
use eip_dsl::control::{BindingChange, ControlError, JoinChange, Reapplied, RuntimeChanges};
use eip_dsl::load;
use support::scratch::Scratch;

const FLOW: &str = "
channels:
  quotes: {kind: publish-subscribe}
  quotes.nyse: {kind: point-to-point}
  quotes.archive: {kind: point-to-point, durable: true}
  unrouted: {kind: point-to-point}
exchanges:
  market:
    alternate: unrouted
    bindings:
      - {key: 'bond.#', to: [unrouted]}
";

fn flow_from(text: &str, data: Option<&Path>) -> Arc<Flow> {
    let plan = match load::load_str(text, "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    };
    let flow = match data {
        Some(dir) => compile::compile_with(
            &plan,
            &StoreOptions {
                data_dir: dir.to_owned(),
                max_bytes: None,
            },
        ),
        None => compile::compile(&plan),
    };
    Arc::new(flow.unwrap())
}

fn depth(flow: &Flow, name: &str) -> u64 {
    match flow.channels().iter().find(|c| c.name() == name) {
        Some(Channel::PointToPoint(c)) => c.stats().depth as u64,
        _ => panic!("no queue {name}"),
    }
}

/// A NYSE quote published on `quotes`, and another (a message of its own, or loop detection
/// would keep a queue from storing both) through the exchange.
async fn publish_quote(flow: &Flow, exchange: &str) {
    let quote = || {
        Message::builder(r#"{"exchange": "NYSE"}"#)
            .subject("stock.ibm.nyse")
            .build()
    };
    match flow.bus().channel("quotes").unwrap() {
        Channel::PublishSubscribe(quotes) => {
            quotes.publish(quote()).await.unwrap();
        }
        Channel::PointToPoint(_) => panic!("quotes is a channel"),
    }
    flow.bus()
        .exchange(exchange)
        .unwrap()
        .publish(quote())
        .await
        .unwrap();
}

fn nyse_join() -> JoinChange {
    JoinChange {
        from: "quotes".into(),
        to: "quotes.nyse".into(),
        filter: Some("$.exchange == \"NYSE\"".into()),
        hops: Some(5),
        archival: false,
    }
}

fn nyse_binding() -> BindingChange {
    BindingChange {
        exchange: "market".into(),
        key: Some("stock.*.nyse".into()),
        to: vec!["quotes.nyse".into()],
    }
}

fn refusal(result: Result<u64, ControlError>) -> String {
    match result {
        Err(ControlError::Refused(problems)) => problems.join("\n"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_join_added_at_runtime_forwards_until_it_is_removed() {
    let flow = flow_from(FLOW, None);
    let (changes, reapplied) = RuntimeChanges::open(flow.view()).await.unwrap();
    assert!(reapplied.is_empty());
    assert!(!changes.is_kept());

    publish_quote(&flow, "market").await;
    assert_eq!(depth(&flow, "quotes.nyse"), 0);

    let id = changes.add_join(nyse_join()).await.unwrap();
    assert_eq!(changes.joins(), [(id, nyse_join())]);
    publish_quote(&flow, "market").await;
    assert_eq!(
        depth(&flow, "quotes.nyse"),
        1,
        "the join forwards from now on"
    );

    assert_eq!(changes.remove_join(id).await.unwrap(), nyse_join());
    publish_quote(&flow, "market").await;
    assert_eq!(depth(&flow, "quotes.nyse"), 1, "and no longer once removed");
    assert!(changes.joins().is_empty());
    assert!(matches!(
        changes.remove_join(id).await,
        Err(ControlError::UnknownId { what: "join", .. })
    ));
}

#[tokio::test]
async fn a_binding_added_at_runtime_routes_until_it_is_removed() {
    let flow = flow_from(FLOW, None);
    let (changes, _) = RuntimeChanges::open(flow.view()).await.unwrap();
    publish_quote(&flow, "market").await;
    assert_eq!(
        depth(&flow, "unrouted"),
        1,
        "no binding matched: the alternate"
    );

    let id = changes.add_binding(nyse_binding()).await.unwrap();
    publish_quote(&flow, "market").await;
    assert_eq!(depth(&flow, "quotes.nyse"), 1);
    assert_eq!(depth(&flow, "unrouted"), 1);

    changes.remove_binding(id).await.unwrap();
    publish_quote(&flow, "market").await;
    assert_eq!(depth(&flow, "quotes.nyse"), 1);
    assert_eq!(depth(&flow, "unrouted"), 2);
}

#[tokio::test]
async fn a_change_is_refused_with_the_flow_file_s_message_and_changes_nothing() {
    let flow = flow_from(FLOW, None);
    let (changes, _) = RuntimeChanges::open(flow.view()).await.unwrap();

    let text = refusal(
        changes
            .add_join(JoinChange {
                to: "quotes.nyes".into(),
                ..nyse_join()
            })
            .await,
    );
    assert!(text.contains("quotes.nyes"), "{text}");
    assert!(text.contains("did you mean `quotes.nyse`?"), "{text}");

    let text = refusal(
        changes
            .add_join(JoinChange {
                from: "unrouted".into(),
                ..nyse_join()
            })
            .await,
    );
    assert!(text.contains("queue"), "{text}");

    let text = refusal(
        changes
            .add_join(JoinChange {
                hops: Some(-1),
                ..nyse_join()
            })
            .await,
    );
    assert!(
        text.contains("`hops` must not be negative, found -1"),
        "{text}"
    );

    let text = refusal(
        changes
            .add_join(JoinChange {
                filter: Some("$.exchange ==".into()),
                ..nyse_join()
            })
            .await,
    );
    assert!(
        text.contains("filter") || text.contains("predicate"),
        "{text}"
    );

    let text = refusal(
        changes
            .add_binding(BindingChange {
                key: Some("stock.#x".into()),
                ..nyse_binding()
            })
            .await,
    );
    assert!(text.contains("stock.#x") || text.contains("#x"), "{text}");

    let text = refusal(
        changes
            .add_binding(BindingChange {
                exchange: "markets".into(),
                ..nyse_binding()
            })
            .await,
    );
    assert_eq!(text, "unknown exchange `markets`; did you mean `market`?");

    assert!(changes.joins().is_empty() && changes.bindings().is_empty());
    publish_quote(&flow, "market").await;
    assert_eq!(depth(&flow, "quotes.nyse"), 0, "nothing was applied");
}

#[tokio::test]
async fn kept_changes_are_applied_again_after_a_restart() {
    let data = Scratch::new("control");
    let (join, binding) = {
        let flow = flow_from(FLOW, Some(&data.0));
        let (changes, _) = RuntimeChanges::open(flow.view()).await.unwrap();
        assert!(changes.is_kept());
        let join = changes.add_join(nyse_join()).await.unwrap();
        let removed = changes
            .add_join(JoinChange {
                to: "quotes.archive".into(),
                filter: None,
                hops: None,
                archival: true,
                ..nyse_join()
            })
            .await
            .unwrap();
        changes.remove_join(removed).await.unwrap();
        let binding = changes.add_binding(nyse_binding()).await.unwrap();
        (join, binding)
    };

    let flow = flow_from(FLOW, Some(&data.0));
    let (changes, reapplied) = RuntimeChanges::open(flow.view()).await.unwrap();
    assert_eq!(
        reapplied,
        [
            Reapplied::Join(join, nyse_join()),
            Reapplied::Binding(binding, nyse_binding())
        ]
    );
    assert_eq!(
        reapplied[0].to_string(),
        "join 1 (quotes -> quotes.nyse (hops 5, filter $.exchange == \"NYSE\")) re-applied"
    );
    publish_quote(&flow, "market").await;
    assert_eq!(
        depth(&flow, "quotes.nyse"),
        2,
        "the join's copy and the binding's"
    );
    let next = changes.add_join(nyse_join()).await.unwrap();
    assert!(next > binding, "ids are not given twice: {next}");
}

#[tokio::test]
async fn a_kept_change_the_flow_no_longer_allows_is_dropped_with_the_reason() {
    let data = Scratch::new("control-dropped");
    {
        let flow = flow_from(FLOW, Some(&data.0));
        let (changes, _) = RuntimeChanges::open(flow.view()).await.unwrap();
        changes.add_join(nyse_join()).await.unwrap();
        changes.add_binding(nyse_binding()).await.unwrap();
    }
    let renamed = FLOW.replace("quotes.nyse", "quotes.new-york");
    let flow = flow_from(&renamed, Some(&data.0));
    let (changes, reapplied) = RuntimeChanges::open(flow.view()).await.unwrap();
    assert_eq!(reapplied.len(), 2);
    for what in &reapplied {
        let Reapplied::Dropped { reason, .. } = what else {
            panic!("{what}")
        };
        assert!(reason.contains("quotes.nyse"), "{reason}");
    }
    assert!(changes.joins().is_empty());
    drop((changes, flow));
    let flow = flow_from(&renamed, Some(&data.0));
    let (_, reapplied) = RuntimeChanges::open(flow.view()).await.unwrap();
    assert!(
        reapplied.is_empty(),
        "dropped from the store too: {reapplied:?}"
    );
}
