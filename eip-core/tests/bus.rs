//! The Message Bus: named channels, wildcard subscriptions over the name hierarchy, unknown
//! channels, replay of dead letters, and Request-Reply.

use std::time::Duration;

use eip_core::bus::{BusError, DEAD_LETTERS, MessageBus, RequestError};
use eip_core::channel::{ChannelKind, TryRecvError};
use eip_core::message::{DeathReason, names};
use eip_core::router::Sent;
use eip_core::topic::{Binding, Routed, TopicExchange};
use eip_core::{Message, Outcome};

#[tokio::test]
async fn channels_are_found_by_name_and_unknown_names_are_errors_with_a_suggestion() {
    let bus = MessageBus::new();
    bus.create_point_to_point("trades.requests").unwrap();
    bus.create_publish_subscribe("quotes").unwrap();
    assert_eq!(
        bus.channel("quotes").unwrap().kind(),
        ChannelKind::PublishSubscribe
    );
    let err = bus
        .send("trade.requests", Message::new("x"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown channel `trade.requests`; did you mean `trades.requests`?"
    );
    let err = bus.channel("orders").unwrap_err();
    assert_eq!(err.to_string(), "unknown channel `orders`");
    assert!(matches!(
        bus.point_to_point("quotes"),
        Err(BusError::WrongKind { .. })
    ));
    assert!(matches!(
        bus.create_point_to_point("quotes"),
        Err(BusError::DuplicateChannel { .. })
    ));
    assert!(matches!(
        bus.create_point_to_point("bad name"),
        Err(BusError::Channel(_))
    ));
    assert_eq!(
        bus.channel_names(),
        [DEAD_LETTERS, "quotes", "trades.requests"]
    );
}

#[tokio::test]
async fn wildcard_subscribers_receive_from_matching_channels_created_later() {
    let bus = MessageBus::new();
    let nyse = bus.create_publish_subscribe("trades.nyse.ibm").unwrap();
    let mut one_level = bus.subscribe("trades.*").unwrap();
    let mut all = bus.subscribe("trades.#").unwrap();
    let mut exact = bus.subscribe("trades.lse.vod").unwrap();
    let lse = bus.create_publish_subscribe("trades.lse.vod").unwrap();
    let flat = bus.create_publish_subscribe("trades.summary").unwrap();
    bus.create_point_to_point("trades.queue").unwrap();

    nyse.publish(Message::new("ibm")).await.unwrap();
    lse.publish(Message::new("vod")).await.unwrap();
    flat.publish(Message::new("sum")).await.unwrap();
    bus.send("trades.queue", Message::new("queued"))
        .await
        .unwrap();

    let mut got = Vec::new();
    while let Ok(d) = all.try_recv() {
        got.push(d.message().payload_str().unwrap().to_owned());
        d.ack();
    }
    assert_eq!(
        got,
        ["ibm", "vod", "sum"],
        "point-to-point channels are not joined"
    );
    let d = one_level.try_recv().unwrap();
    assert_eq!(d.message().payload_str(), Some("sum"));
    d.ack();
    assert_eq!(one_level.try_recv().unwrap_err(), TryRecvError::Empty);
    let d = exact.try_recv().unwrap();
    assert_eq!(d.message().payload_str(), Some("vod"));
    d.ack();
}

#[tokio::test]
async fn a_dropped_wildcard_subscription_leaves_every_channel() {
    let bus = MessageBus::new();
    let a = bus.create_publish_subscribe("a.one").unwrap();
    let b = bus.create_publish_subscribe("a.two").unwrap();
    let sub = bus.subscribe("a.*").unwrap();
    assert_eq!((a.subscriber_count(), b.subscriber_count()), (1, 1));
    drop(sub);
    assert_eq!((a.subscriber_count(), b.subscriber_count()), (0, 0));
    let c = bus.create_publish_subscribe("a.three").unwrap();
    assert_eq!(c.subscriber_count(), 0);
}

#[tokio::test]
async fn deleting_one_channel_does_not_end_a_wildcard_subscription_spanning_others() {
    let bus = MessageBus::new();
    bus.create_publish_subscribe("trades.nyse").unwrap();
    let lse = bus.create_publish_subscribe("trades.lse").unwrap();
    let mut sub = bus.subscribe("trades.#").unwrap();
    lse.publish(Message::new("before")).await.unwrap();
    bus.remove("trades.nyse").await.unwrap();
    lse.publish(Message::new("after")).await.unwrap();
    for expected in ["before", "after"] {
        let d = sub.try_recv().unwrap();
        assert_eq!(d.message().payload_str(), Some(expected));
        d.ack();
    }
    assert!(bus.channel("trades.nyse").is_err());
}

#[test]
fn malformed_subscription_patterns_are_refused() {
    let bus = MessageBus::new();
    let err = bus.subscribe("trades.ny*").unwrap_err();
    assert!(err.to_string().contains("word 2"), "{err}");
}

#[tokio::test]
async fn removed_channels_dead_letter_their_messages_to_the_bus_dead_letter_channel() {
    let bus = MessageBus::new();
    bus.create_point_to_point("orders").unwrap();
    bus.send("orders", Message::new("pending")).await.unwrap();
    assert_eq!(bus.remove("orders").await.unwrap(), 1);
    let d = bus.dead_letter_channel().receiver().try_recv().unwrap();
    let death = d.message().death().unwrap().unwrap();
    assert_eq!(
        (death.channel.as_str(), death.reason),
        ("orders", DeathReason::ChannelDeleted)
    );
    assert!(matches!(
        bus.remove("orders").await,
        Err(BusError::UnknownChannel { .. })
    ));
}

#[tokio::test]
async fn a_dead_letter_replays_to_its_original_channel() {
    let bus = MessageBus::new();
    let orders = bus.create_point_to_point("orders").unwrap();
    orders.send(Message::new("retry me")).await.unwrap();
    let mut rx = orders.receiver();
    let d = rx.recv().await.unwrap();
    d.nack();
    let d = rx.recv().await.unwrap();
    d.reject("downstream was down").await;

    let dead = bus.dead_letter_channel().receiver().try_recv().unwrap();
    assert_eq!(bus.replay(dead).await.unwrap(), Outcome::Accepted);
    let again = rx.recv().await.unwrap();
    assert_eq!(again.message().payload_str(), Some("retry me"));
    assert_eq!(
        again.message().redelivery_count().unwrap(),
        0,
        "redelivery count starts over"
    );
    assert_eq!(
        again.message().death().unwrap().unwrap().reason,
        DeathReason::Rejected
    );
    again.ack();
    assert_eq!(bus.dead_letter_channel().stats().depth, 0);
}

#[tokio::test]
async fn a_failed_replay_hands_the_dead_letter_back() {
    let bus = MessageBus::new();
    bus.create_point_to_point("gone").unwrap();
    bus.send("gone", Message::new("x")).await.unwrap();
    bus.remove("gone").await.unwrap();
    let dead = bus.dead_letter_channel().receiver().try_recv().unwrap();
    let failed = bus.replay(dead).await.unwrap_err();
    assert!(matches!(failed.error, BusError::UnknownChannel { .. }));
    failed.delivery.ack();
    assert_eq!(bus.dead_letter_channel().stats().depth, 0);
    assert_eq!(bus.dead_letter_channel().stats().in_flight, 0);
}

#[tokio::test]
async fn request_reply_correlates_the_reply_through_the_return_address() {
    let bus = MessageBus::new();
    bus.create_point_to_point("prices.requests").unwrap();
    let replier = {
        let bus = bus.clone();
        tokio::spawn(async move {
            let mut rx = bus.receiver("prices.requests").unwrap();
            let d = rx.recv().await.unwrap();
            let ticker = d.message().payload_str().unwrap().to_owned();
            assert!(
                d.message()
                    .return_address()
                    .unwrap()
                    .unwrap()
                    .starts_with("reply.")
            );
            bus.reply(d.message(), Message::new(format!("{ticker}=142.10")))
                .await
                .unwrap();
            d.ack();
        })
    };
    let request = Message::new("IBM");
    let id = request.id().to_string();
    let reply = bus
        .request("prices.requests", request, Duration::from_secs(5))
        .await
        .unwrap();
    replier.await.unwrap();
    assert_eq!(reply.payload_str(), Some("IBM=142.10"));
    assert_eq!(reply.correlation_id().unwrap(), Some(id.as_str()));
    assert_eq!(
        bus.channel_names(),
        [DEAD_LETTERS, "prices.requests"],
        "the temporary reply channel is gone"
    );
}

#[tokio::test]
async fn a_request_without_reply_times_out_and_a_late_reply_finds_no_channel() {
    let bus = MessageBus::new();
    bus.create_point_to_point("slow").unwrap();
    let err = bus
        .request("slow", Message::new("?"), Duration::from_millis(30))
        .await
        .unwrap_err();
    assert!(matches!(err, RequestError::Timeout { .. }), "{err}");
    let d = bus.receiver("slow").unwrap().try_recv().unwrap();
    let late = bus
        .reply(d.message(), Message::new("late"))
        .await
        .unwrap_err();
    assert!(
        matches!(late, RequestError::Bus(BusError::UnknownChannel { .. })),
        "{late}"
    );
    d.ack();
}

#[tokio::test]
async fn replies_that_do_not_correlate_are_dead_lettered() {
    let bus = MessageBus::new();
    bus.create_point_to_point("svc").unwrap();
    let replier = {
        let bus = bus.clone();
        tokio::spawn(async move {
            let d = bus.receiver("svc").unwrap().recv().await.unwrap();
            let addr = d.message().return_address().unwrap().unwrap().to_owned();
            let stray = Message::builder("stray")
                .correlation_id("someone-else")
                .build();
            bus.send(&addr, stray).await.unwrap();
            bus.reply(d.message(), Message::new("right")).await.unwrap();
            d.ack();
        })
    };
    let reply = bus
        .request("svc", Message::new("q"), Duration::from_secs(5))
        .await
        .unwrap();
    replier.await.unwrap();
    assert_eq!(reply.payload_str(), Some("right"));
    let dead = bus.dead_letter_channel().receiver().try_recv().unwrap();
    assert_eq!(dead.message().payload_str(), Some("stray"));
    assert_eq!(
        dead.message().death().unwrap().unwrap().reason,
        DeathReason::Rejected
    );
}

#[tokio::test]
async fn a_request_without_return_address_cannot_be_replied_to() {
    let bus = MessageBus::new();
    let err = bus
        .reply(&Message::new("q"), Message::new("a"))
        .await
        .unwrap_err();
    assert!(matches!(err, RequestError::NoReturnAddress { .. }));
    let bad = Message::builder("q")
        .header(names::RETURN_ADDRESS, 5_i64)
        .build();
    assert!(matches!(
        bus.reply(&bad, Message::new("a")).await,
        Err(RequestError::Header(_))
    ));
}

#[tokio::test]
async fn exchanges_are_registered_by_name_beside_channels() {
    let bus = MessageBus::new();
    let nyse = bus.create_point_to_point("quotes.nyse").unwrap();
    let market = bus.create_exchange("market").unwrap();
    market.bind(Binding::new("stock.*.nyse", [nyse.clone()]).unwrap());
    assert_eq!(bus.exchange_names(), ["market"]);
    assert_eq!(bus.exchange("market").unwrap().binding_count(), 1);

    let quote = Message::builder("q").subject("stock.ibm.nyse").build();
    assert_eq!(
        bus.publish("market", quote).await.unwrap(),
        Sent::Exchange(Routed::Targets(1))
    );
    assert_eq!(
        bus.publish("quotes.nyse", Message::new("direct"))
            .await
            .unwrap(),
        Sent::Channel(Outcome::Accepted)
    );
    assert_eq!(nyse.stats().depth, 2);

    let err = bus.exchange("markt").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown exchange `markt`; did you mean `market`?"
    );
    let err = bus
        .publish("quotes.nyce", Message::new("x"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown channel or exchange `quotes.nyce`; did you mean `quotes.nyse`?"
    );
    let err = bus.publish("markte", Message::new("x")).await.unwrap_err();
    assert!(
        matches!(&err, BusError::UnknownName { suggestion: Some(s), .. } if s == "market"),
        "{err}"
    );
}

#[test]
fn a_name_is_a_channel_or_an_exchange_never_both() {
    let bus = MessageBus::new();
    bus.create_point_to_point("orders").unwrap();
    bus.create_exchange("market").unwrap();
    assert!(matches!(
        bus.create_exchange("orders"),
        Err(BusError::DuplicateChannel { name }) if name == "orders"
    ));
    assert!(matches!(
        bus.create_publish_subscribe("market"),
        Err(BusError::DuplicateExchange { name }) if name == "market"
    ));
    assert!(matches!(
        bus.register_exchange(TopicExchange::new("market")),
        Err(BusError::DuplicateExchange { .. })
    ));
    let removed = bus.remove_exchange("market").unwrap();
    assert_eq!(removed.name(), "market");
    assert!(matches!(
        bus.remove_exchange("market"),
        Err(BusError::UnknownExchange { .. })
    ));
    bus.create_publish_subscribe("market").unwrap();
}
