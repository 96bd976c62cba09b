//! Behaviour of the recipient list: fixed recipients, recipients named by a header and resolved
//! through the bus, unknown and closed recipients, a message naming none.

use eip_core::channel::{DeadLetterChannel, PointToPoint, Receiver, TryRecvError};
use eip_core::message::{DeathReason, DeathRecord};
use eip_core::router::{RecipientList, RouteError, RouterError};
use eip_core::{Message, MessageBus};
use tower::{Service, ServiceExt};

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

#[tokio::test]
async fn recipient_list_sends_one_copy_to_each_fixed_recipient() {
    let (a, b) = (channel("a"), channel("b"));
    let list = RecipientList::new("orders", [a.clone(), b.clone(), a.clone()]).unwrap();
    let done = list.distribute(Message::new("x")).await.unwrap();
    assert_eq!((done.sent, done.dead_lettered), (2, 0));
    assert_eq!(drain(&mut a.receiver()), vec!["x"]);
    assert_eq!(drain(&mut b.receiver()), vec!["x"]);
    let empty: [PointToPoint; 0] = [];
    assert_eq!(
        RecipientList::new("orders", empty).unwrap_err(),
        RouterError::NoRecipients {
            name: "orders".into()
        }
    );
}

#[tokio::test]
async fn recipient_list_from_a_header_resolves_names_through_the_bus() {
    let bus = MessageBus::new();
    let a = bus.create_point_to_point("billing").unwrap();
    let b = bus.create_publish_subscribe("audit.orders").unwrap();
    let mut sub = b.subscribe();
    let mut list = RecipientList::from_header("orders", "to", &bus);
    let msg = Message::builder("x")
        .header("to", " billing ,, audit.orders,billing ")
        .build();
    let done = list.ready().await.unwrap().call(msg).await.unwrap();
    assert_eq!((done.sent, done.dead_lettered), (2, 0));
    assert_eq!(drain(&mut a.receiver()), vec!["x"], "named twice, one copy");
    assert_eq!(drain(&mut sub), vec!["x"]);
}

#[tokio::test]
async fn unknown_recipient_dead_letters_a_copy_with_no_route_and_the_error() {
    let bus = MessageBus::new();
    let billing = bus.create_point_to_point("billing").unwrap();
    let list = RecipientList::from_header("orders", "to", &bus);
    let msg = Message::builder("x").header("to", "billing,biling").build();
    let id = msg.id();
    let done = list.distribute(msg).await.unwrap();
    assert_eq!((done.sent, done.dead_lettered), (1, 1));
    assert_eq!(billing.stats().accepted, 1);
    let mut dead = bus.dead_letter_channel().receiver();
    let (record, dead_msg) = next_death(&mut dead);
    assert_eq!(dead_msg.id(), id);
    assert_eq!(record.reason, DeathReason::NoRoute);
    assert_eq!(record.channel, "biling");
    let error = record.error.unwrap();
    assert!(
        error.contains("unknown channel or exchange `biling`"),
        "{error}"
    );
    assert!(error.contains("did you mean `billing`?"), "{error}");
}

#[tokio::test]
async fn a_dead_letter_for_an_unknown_recipient_replays_to_that_channel_once_created() {
    let bus = MessageBus::new();
    let billing = bus.create_point_to_point("billing").unwrap();
    let list = RecipientList::from_header("orders", "to", &bus);
    list.distribute(
        Message::builder("x")
            .header("to", "billing,shipping")
            .build(),
    )
    .await
    .unwrap();
    let shipping = bus.create_point_to_point("shipping").unwrap();
    let mut dead = bus.dead_letter_channel().receiver();
    let d = dead.try_recv().unwrap();
    bus.replay(d).await.unwrap();
    assert_eq!(drain(&mut shipping.receiver()), vec!["x"]);
    assert_eq!(billing.stats().accepted, 1, "billing got no second copy");
}

#[tokio::test]
async fn a_message_naming_no_recipient_is_dead_lettered() {
    let bus = MessageBus::new();
    let list = RecipientList::from_header("orders", "to", &bus);
    for msg in [
        Message::new("missing"),
        Message::builder("empty").header("to", " , ").build(),
        Message::builder("typed").header("to", 3_i64).build(),
    ] {
        let done = list.distribute(msg).await.unwrap();
        assert_eq!((done.sent, done.dead_lettered), (0, 1));
    }
    let mut dead = bus.dead_letter_channel().receiver();
    let errors: Vec<String> = (0..3)
        .map(|_| {
            let (record, _) = next_death(&mut dead);
            assert_eq!(record.reason, DeathReason::NoRoute);
            assert_eq!(record.channel, "orders");
            record.error.unwrap()
        })
        .collect();
    assert!(errors[0].contains("missing"), "{}", errors[0]);
    assert!(errors[1].contains("lists no channel"), "{}", errors[1]);
    assert!(errors[2].contains("integer"), "{}", errors[2]);
    assert!(matches!(dead.try_recv(), Err(TryRecvError::Empty)));
}

#[tokio::test]
async fn a_closed_recipient_gets_its_copy_dead_lettered_and_the_others_theirs() {
    let (a, b, dead) = (channel("a"), channel("b"), dlc());
    let list = RecipientList::new("orders", [a.clone(), b.clone()])
        .unwrap()
        .dead_letter_channel(dead.clone());
    a.delete().await;
    let done = list.distribute(Message::new("x")).await.unwrap();
    assert_eq!((done.sent, done.dead_lettered), (1, 1));
    assert_eq!(b.stats().accepted, 1);
    let (record, _) = next_death(&mut dead.receiver());
    assert_eq!(record.reason, DeathReason::ChannelDeleted);
    assert_eq!(record.channel, "a");

    let plain = RecipientList::new("orders", [a.clone(), b.clone()]).unwrap();
    let err = plain.distribute(Message::new("y")).await.unwrap_err();
    assert!(matches!(err, RouteError::Send(_)), "{err}");
    assert_eq!(b.stats().accepted, 2, "b still got its copy");
}
