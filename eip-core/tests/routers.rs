//! Behaviour of the routing patterns: content-based router, message filter and
//! wire tap, with predicates, on real channels.

use std::time::Duration;

use eip_core::channel::{DeadLetterChannel, PointToPoint, PublishSubscribe, Receiver, SendError};
use eip_core::endpoint::Consumer;
use eip_core::message::{DeathReason, DeathRecord};
use eip_core::predicate::Predicate;
use eip_core::router::{
    ContentBasedRouter, Decision, FilterError, FilterLayer, Filtered, MessageFilter, RecipientList,
    RouteError, Routed, RouterError, RouterStats, Sent, WireTap, WireTapLayer,
};
use eip_core::topic::{Binding, Routed as TopicRouted, TopicExchange};
use eip_core::{Message, MessageBus, Outcome};
use tokio::time::timeout;
use tower::{Service, ServiceBuilder, ServiceExt};

const WAIT: Duration = Duration::from_secs(5);

fn p(expr: &str) -> Predicate {
    Predicate::parse(expr).unwrap()
}

fn channel(name: &str) -> PointToPoint {
    PointToPoint::new(name, 100).unwrap()
}

fn dlc() -> DeadLetterChannel {
    DeadLetterChannel::new("dead-letters", 100).unwrap()
}

/// The payloads waiting on a channel, acked.
fn drain(rx: &mut Receiver) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(d) = rx.try_recv() {
        out.push(d.message().payload_str().unwrap_or_default().to_owned());
        d.ack();
    }
    out
}

/// The next dead letter's death record, and the message.
fn next_death(rx: &mut Receiver) -> (DeathRecord, Message) {
    let d = rx.try_recv().expect("a dead letter");
    let msg = d.message().clone();
    d.ack();
    (msg.death().unwrap().expect("a death record"), msg)
}

fn trade(kind: &str, price: u32) -> Message {
    Message::new(format!(r#"{{"kind": "{kind}", "price": {price}}}"#))
}

#[tokio::test]
async fn first_matching_when_clause_wins() {
    let (big, buys, rest) = (channel("big"), channel("buys"), channel("rest"));
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big.clone())
        .when(p(r#"$.kind == "buy""#), buys.clone())
        .otherwise(rest.clone())
        .build()
        .unwrap();
    let routed = router.route(trade("buy", 500)).await.unwrap();
    assert_eq!(
        routed,
        Routed::When {
            index: 0,
            sent: Sent::Channel(Outcome::Accepted)
        }
    );
    router.route(trade("buy", 5)).await.unwrap();
    router.route(trade("sell", 5)).await.unwrap();
    let (mut big_rx, mut buys_rx, mut rest_rx) = (big.receiver(), buys.receiver(), rest.receiver());
    assert_eq!(
        drain(&mut big_rx).len(),
        1,
        "the buy at 500 went to the first clause only"
    );
    assert_eq!(drain(&mut buys_rx), vec![r#"{"kind": "buy", "price": 5}"#]);
    assert_eq!(drain(&mut rest_rx), vec![r#"{"kind": "sell", "price": 5}"#]);
    assert_eq!(
        router.stats(),
        RouterStats {
            when: vec![1, 1],
            otherwise: 1,
            dead_lettered: 0
        }
    );
}

#[tokio::test]
async fn no_match_without_otherwise_dead_letters_with_no_route() {
    let (big, dead) = (channel("big"), dlc());
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big.clone())
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let msg = trade("sell", 5);
    let id = msg.id();
    assert_eq!(router.route(msg).await.unwrap(), Routed::DeadLettered);
    let (record, msg) = next_death(&mut dead.receiver());
    assert_eq!(msg.id(), id);
    assert_eq!(record.reason, DeathReason::NoRoute);
    assert_eq!(record.channel, "trades");
    assert!(record.error.unwrap().contains("no `when` clause"));
    assert_eq!(big.stats().accepted, 0);
    assert_eq!(router.stats().dead_lettered, 1);
}

#[tokio::test]
async fn a_router_that_could_lose_a_message_does_not_build() {
    let err = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), channel("big"))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        RouterError::Unroutable {
            router: "trades".into()
        }
    );
    assert!(err.to_string().contains("would be lost"));
    let err = ContentBasedRouter::builder("trades")
        .otherwise(channel("rest"))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        RouterError::NoClauses {
            router: "trades".into()
        }
    );
}

#[tokio::test]
async fn otherwise_takes_precedence_over_the_dead_letter_channel() {
    let (rest, dead) = (channel("rest"), dlc());
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), channel("big"))
        .otherwise(rest.clone())
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    assert!(router.dead_letter_channel().is_none());
    assert_eq!(
        router.route(trade("sell", 1)).await.unwrap(),
        Routed::Otherwise {
            sent: Sent::Channel(Outcome::Accepted)
        }
    );
    assert_eq!(rest.stats().accepted, 1);
    assert_eq!(dead.stats().accepted, 0);
}

#[tokio::test]
async fn select_decides_without_side_effects() {
    let (big, rest) = (channel("big"), channel("rest"));
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big.clone())
        .otherwise(rest.clone())
        .build()
        .unwrap();
    let msg = trade("buy", 500);
    let decision = router.select(&msg);
    assert!(matches!(decision, Decision::When { index: 0, .. }));
    assert_eq!(decision.target().map(|t| t.name()), Some("big"));
    assert!(matches!(
        router.select(&trade("buy", 1)),
        Decision::Otherwise { .. }
    ));
    assert_eq!(big.stats().accepted + rest.stats().accepted, 0);
    assert_eq!(router.stats().when, vec![0]);
    let strict = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big)
        .dead_letter_channel(dlc())
        .build()
        .unwrap();
    assert!(matches!(strict.select(&trade("buy", 1)), Decision::NoRoute));
    assert!(strict.select(&trade("buy", 1)).target().is_none());
}

#[tokio::test]
async fn non_json_payloads_match_no_json_clause() {
    let (json, by_header, rest) = (channel("json"), channel("header"), channel("rest"));
    let router = ContentBasedRouter::builder("in")
        .when(p("exists($.kind)"), json.clone())
        .when(p(r#"header("type") == "csv""#), by_header.clone())
        .otherwise(rest.clone())
        .build()
        .unwrap();
    router
        .route(Message::builder("a,b,c").header("type", "csv").build())
        .await
        .unwrap();
    router.route(Message::new("{ not json")).await.unwrap();
    assert_eq!(json.stats().accepted, 0);
    assert_eq!(by_header.stats().accepted, 1);
    assert_eq!(rest.stats().accepted, 1);
}

#[tokio::test]
async fn payload_is_read_once_per_step_and_a_full_parse_is_reused() {
    let target = channel("target");
    let router = ContentBasedRouter::builder("in")
        .when(p("$.a == 1"), channel("one"))
        .when(p("exists($.missing)"), channel("two"))
        .when(p("$.b.c[*] > 2"), target.clone())
        .dead_letter_channel(dlc())
        .build()
        .unwrap();
    let mut flow = MessageFilter::new(router, p("$.a == 2 and exists($.b)"));

    // Not parsed before: the filter reads `a` and `b`, the router its three paths, each once
    // for all its predicates; neither keeps a full parse on the message.
    let msg = Message::new(r#"{"a": 2, "b": {"c": [1, 2, 3]}}"#);
    assert!(!msg.is_json_parsed());
    flow.ready().await.unwrap().call(msg).await.unwrap();
    let mut rx = target.receiver();
    let d = rx.try_recv().unwrap();
    assert!(
        !d.message().is_json_parsed(),
        "only the parts the predicates read were built, and not kept"
    );
    d.ack();

    // Parsed before: every predicate reads that one value.
    let msg = Message::new(r#"{"a": 2, "b": {"c": [5]}}"#);
    let parsed = msg.json_value().unwrap() as *const serde_json::Value;
    flow.ready().await.unwrap().call(msg).await.unwrap();
    let d = rx.try_recv().unwrap();
    assert!(std::ptr::eq(parsed, d.message().json_value().unwrap()));
    d.ack();
}

#[tokio::test]
async fn a_closed_target_hands_the_message_back() {
    let big = channel("big");
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big.clone())
        .dead_letter_channel(dlc())
        .build()
        .unwrap();
    big.delete().await;
    let msg = trade("buy", 500);
    let id = msg.id();
    let err = router.route(msg).await.unwrap_err();
    assert!(matches!(err, RouteError::Send(SendError::Closed { .. })));
    assert_eq!(err.into_message().id(), id);
}

#[tokio::test]
async fn a_closed_dead_letter_channel_hands_the_message_back() {
    let dead = dlc();
    let router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), channel("big"))
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    dead.delete().await;
    let msg = trade("buy", 1);
    let id = msg.id();
    let err = router.route(msg).await.unwrap_err();
    assert!(matches!(err, RouteError::DeadLetterClosed { .. }), "{err}");
    assert_eq!(err.into_message().id(), id);
}

#[tokio::test]
async fn router_service_waits_for_room_in_its_target() {
    let big = PointToPoint::new("big", 1).unwrap();
    let mut router = ContentBasedRouter::builder("trades")
        .when(p("$.price > 100"), big.clone())
        .dead_letter_channel(dlc())
        .build()
        .unwrap();
    router
        .ready()
        .await
        .unwrap()
        .call(trade("buy", 500))
        .await
        .unwrap();
    let second = router.ready().await.unwrap().call(trade("buy", 600));
    let second = tokio::spawn(second);
    tokio::task::yield_now().await;
    assert!(!second.is_finished(), "the target is full");
    let mut rx = big.receiver();
    rx.recv().await.unwrap().ack();
    let routed = timeout(WAIT, second).await.unwrap().unwrap().unwrap();
    assert!(matches!(routed, Routed::When { index: 0, .. }));
}

#[tokio::test]
async fn a_consumer_drives_the_router_and_acks_what_it_routed() {
    let (orders, big, dead) = (channel("orders"), channel("big"), dlc());
    let router = ContentBasedRouter::builder("orders")
        .when(p("$.price > 100"), big.clone())
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let handle = Consumer::new(orders.receiver(), router).spawn();
    for price in [500, 5, 700] {
        orders.send(trade("buy", price)).await.unwrap();
    }
    let mut big_rx = big.receiver();
    for _ in 0..2 {
        timeout(WAIT, big_rx.recv()).await.unwrap().unwrap().ack();
    }
    let mut dead_rx = dead.receiver();
    let d = timeout(WAIT, dead_rx.recv()).await.unwrap().unwrap();
    assert_eq!(
        d.message().death().unwrap().unwrap().reason,
        DeathReason::NoRoute
    );
    d.ack();
    handle.shutdown().await;
    assert_eq!(orders.stats().acked, 3);
}

#[tokio::test]
async fn a_when_clause_or_otherwise_can_send_through_an_exchange() {
    let nyse = channel("quotes.nyse");
    let unrouted = channel("unrouted");
    let other = channel("other");
    let market = TopicExchange::new("market").with_alternate(unrouted.clone());
    market.bind(Binding::new("stock.*.nyse", [nyse.clone()]).unwrap());
    let router = ContentBasedRouter::builder("quotes")
        .when(p("$.kind == \"stock\""), market.clone())
        .otherwise(other.clone())
        .build()
        .unwrap();
    let stock = |subject: &str| {
        Message::builder(r#"{"kind": "stock"}"#)
            .subject(subject)
            .build()
    };
    let decision = router.select(&stock("stock.ibm.nyse"));
    assert_eq!(decision.target().map(|t| t.name()), Some("market"));
    assert!(decision.target().unwrap().as_exchange().is_some());
    assert_eq!(
        router.route(stock("stock.ibm.nyse")).await.unwrap(),
        Routed::When {
            index: 0,
            sent: Sent::Exchange(TopicRouted::Targets(1))
        }
    );
    assert_eq!(
        router.route(stock("bond.x")).await.unwrap(),
        Routed::When {
            index: 0,
            sent: Sent::Exchange(TopicRouted::Alternate)
        }
    );
    assert_eq!(
        router
            .route(Message::new(r#"{"kind": "fx"}"#))
            .await
            .unwrap(),
        Routed::Otherwise {
            sent: Sent::Channel(Outcome::Accepted)
        }
    );
    assert_eq!(
        (
            nyse.stats().depth,
            unrouted.stats().depth,
            other.stats().depth
        ),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn a_recipient_header_may_name_exchanges() {
    let bus = MessageBus::new();
    let nyse = bus.create_point_to_point("quotes.nyse").unwrap();
    let audit = bus.create_point_to_point("audit").unwrap();
    let market = bus.create_exchange("market").unwrap();
    market.bind(Binding::new("stock.#", [nyse.clone()]).unwrap());
    let list = RecipientList::from_header("in", "to", &bus);
    let msg = Message::builder("q")
        .subject("stock.ibm")
        .header("to", "market, audit, markte")
        .build();
    let names: Vec<String> = list
        .resolve(&msg)
        .targets
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["market", "audit"]);
    let done = list.distribute(msg).await.unwrap();
    assert_eq!((done.sent, done.dead_lettered), (2, 1));
    assert_eq!((nyse.stats().depth, audit.stats().depth), (1, 1));
    let (death, _) = next_death(&mut bus.dead_letter_channel().receiver());
    assert_eq!(death.channel, "markte");
    assert!(
        death
            .error
            .as_deref()
            .is_some_and(|e| e.contains("did you mean `market`?")),
        "{death:?}"
    );
}

#[tokio::test]
async fn filter_passes_matches_and_drops_and_counts_the_rest() {
    let out = channel("out");
    let mut filter = MessageFilter::new(out.sender(), p(r#"$.kind == "buy""#));
    for (kind, want_passed) in [("buy", true), ("sell", false), ("buy", true)] {
        let r = filter
            .ready()
            .await
            .unwrap()
            .call(trade(kind, 1))
            .await
            .unwrap();
        assert_eq!(matches!(r, Filtered::Passed(_)), want_passed);
    }
    let stats = filter.stats();
    assert_eq!((stats.passed, stats.dropped, stats.discarded), (2, 1, 0));
    assert_eq!(out.stats().accepted, 2);
}

#[tokio::test]
async fn filter_diverts_rejects_to_the_discard_channel() {
    let (out, discard) = (channel("out"), channel("discarded"));
    let mut filter =
        MessageFilter::new(out.sender(), p("$.price >= 10")).discard_to(discard.clone());
    let r = filter
        .ready()
        .await
        .unwrap()
        .call(trade("buy", 1))
        .await
        .unwrap();
    assert_eq!(r, Filtered::Discarded(Outcome::Accepted));
    assert_eq!(discard.stats().accepted, 1);
    assert_eq!(filter.stats().discarded, 1);
    discard.delete().await;
    let err = filter
        .ready()
        .await
        .unwrap()
        .call(trade("buy", 2))
        .await
        .unwrap_err();
    assert!(matches!(err, FilterError::Discard(_)), "{err}");
}

#[tokio::test]
async fn filter_passes_inner_errors_through() {
    let out = channel("out");
    let mut filter = MessageFilter::new(out.sender(), p("true"));
    out.delete().await;
    let err = filter
        .ready()
        .await
        .unwrap()
        .call(Message::new("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, FilterError::Inner(SendError::Closed { .. })));
}

#[tokio::test]
async fn layers_compose_with_tower() {
    let (out, audit) = (channel("out"), channel("audit"));
    let filter = FilterLayer::new(p("$.price > 10"));
    let tap = WireTapLayer::new(audit.clone());
    let mut svc = ServiceBuilder::new()
        .layer(tap.clone())
        .layer(filter.clone())
        .service(out.sender());
    for price in [5, 50, 500] {
        svc.ready()
            .await
            .unwrap()
            .call(trade("buy", price))
            .await
            .unwrap();
    }
    assert_eq!(audit.stats().accepted, 3, "the tap sees everything");
    assert_eq!(out.stats().accepted, 2);
    assert_eq!(filter.stats().dropped, 1);
    assert_eq!(tap.stats().tapped, 3);
    assert_eq!(svc.get_ref().get_ref().get_ref().name(), "out");
}

#[tokio::test]
async fn wire_tap_copies_every_message_and_leaves_the_main_flow_alone() {
    let (orders, audit) = (channel("orders"), channel("audit"));
    let mut tapped = WireTap::new(orders.sender(), audit.clone());
    let msg = Message::builder(vec![7u8; 1024]).header("k", "v").build();
    let outcome = tapped
        .ready()
        .await
        .unwrap()
        .call(msg.clone())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Accepted);
    let (main, copy) = (
        orders.receiver().try_recv().unwrap(),
        audit.receiver().try_recv().unwrap(),
    );
    assert_eq!(main.message(), &msg);
    assert_eq!(copy.message(), &msg);
    assert_eq!(
        main.message().payload().as_ptr(),
        copy.message().payload().as_ptr(),
        "the copy shares the payload"
    );
    main.ack();
    copy.ack();
}

#[tokio::test]
async fn a_full_or_closed_tap_never_blocks_or_fails_the_main_path() {
    let orders = channel("orders");
    let audit = PointToPoint::new("audit", 1).unwrap();
    let mut tapped = WireTap::new(orders.sender(), audit.clone());
    for n in 0..5 {
        let call = tapped
            .ready()
            .await
            .unwrap()
            .call(Message::new(format!("m{n}")));
        timeout(WAIT, call).await.unwrap().unwrap();
    }
    audit.delete().await;
    tapped
        .ready()
        .await
        .unwrap()
        .call(Message::new("m5"))
        .await
        .unwrap();
    assert_eq!(orders.stats().accepted, 6);
    let stats = tapped.stats();
    assert_eq!((stats.tapped, stats.dropped), (1, 5));
}

#[tokio::test]
async fn wire_tap_passes_the_main_flows_errors_through_unchanged() {
    let (orders, audit) = (channel("orders"), channel("audit"));
    let mut tapped = WireTap::new(orders.sender(), audit.clone());
    orders.delete().await;
    let err = tapped
        .ready()
        .await
        .unwrap()
        .call(Message::new("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Closed { .. }));
    assert_eq!(audit.stats().accepted, 1, "the tap saw it anyway");
}

#[tokio::test]
async fn wire_tap_to_a_publish_subscribe_channel_reaches_every_subscriber_with_room() {
    let orders = channel("orders");
    let audit = PublishSubscribe::new("audit", 1).unwrap();
    let (mut a, mut b) = (audit.subscribe(), audit.subscribe());
    let mut tapped = WireTap::new(orders.sender(), audit.clone());
    for n in 0..2 {
        tapped
            .ready()
            .await
            .unwrap()
            .call(Message::new(format!("m{n}")))
            .await
            .unwrap();
    }
    assert_eq!(drain(&mut a), vec!["m0"]);
    assert_eq!(drain(&mut b), vec!["m0"]);
    assert_eq!((tapped.stats().tapped, tapped.stats().dropped), (1, 1));
    assert_eq!(orders.stats().accepted, 2);
}

#[tokio::test]
async fn a_predicate_selects_for_a_selective_consumer() {
    let orders = channel("orders");
    let mut big = orders.selective_receiver(p("$.price > 100").into());
    orders.send(trade("buy", 5)).await.unwrap();
    orders.send(trade("buy", 500)).await.unwrap();
    let d = big.try_recv().unwrap();
    assert_eq!(
        d.message().payload_str(),
        Some(r#"{"kind": "buy", "price": 500}"#)
    );
    d.ack();
    assert!(big.try_recv().is_err());
    assert_eq!(
        orders.stats().depth,
        1,
        "the small one waits for another consumer"
    );
}
