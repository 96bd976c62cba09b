//! The Idempotent Receiver: the window and its edges, the bound on keys, keys and diversion.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{ChannelSender, PointToPoint, SendError};
use eip_steps::aggregate::Key;
use eip_steps::dedupe::{
    Decision, DedupeConfig, DedupeError, Deduped, IdempotentReceiver, OnDuplicate,
};
use tower::{Layer, Service, ServiceExt};

const WINDOW: Duration = Duration::from_secs(60);

type Result<T> = std::result::Result<T, DedupeError<SendError>>;

fn receiver(config: DedupeConfig) -> (IdempotentReceiver<ChannelSender>, PointToPoint) {
    let out = PointToPoint::new("orders", 1_000).unwrap();
    (IdempotentReceiver::new(out.sender(), config), out)
}

async fn send(
    r: &mut IdempotentReceiver<ChannelSender>,
    m: &Message,
) -> Result<Deduped<eip_core::Outcome>> {
    r.ready().await?.call(m.clone()).await
}

fn passed(d: &Deduped<eip_core::Outcome>) -> bool {
    matches!(d, Deduped::Passed(_))
}

#[tokio::test]
async fn a_message_id_seen_within_the_window_is_a_dropped_duplicate() {
    let (mut r, out) = receiver(DedupeConfig::new(WINDOW));
    let a = Message::new("a");
    let b = Message::new("b");
    assert!(passed(&send(&mut r, &a).await.unwrap()));
    assert!(passed(&send(&mut r, &b).await.unwrap()));
    assert_eq!(send(&mut r, &a).await.unwrap(), Deduped::Dropped);
    assert_eq!(out.stats().accepted, 2);
    let stats = r.stats();
    assert_eq!((stats.passed, stats.duplicates), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_key_seen_just_under_the_window_ago_is_a_duplicate() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW));
    let a = Message::new("a");
    send(&mut r, &a).await.unwrap();
    tokio::time::sleep(WINDOW - Duration::from_millis(1)).await;
    assert_eq!(send(&mut r, &a).await.unwrap(), Deduped::Dropped);
}

#[tokio::test(start_paused = true)]
async fn a_key_seen_exactly_the_window_ago_has_expired() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW));
    let a = Message::new("a");
    send(&mut r, &a).await.unwrap();
    tokio::time::sleep(WINDOW).await;
    assert!(passed(&send(&mut r, &a).await.unwrap()));
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_does_not_stretch_the_window() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW));
    let a = Message::new("a");
    send(&mut r, &a).await.unwrap();
    tokio::time::sleep(WINDOW / 2).await;
    assert_eq!(send(&mut r, &a).await.unwrap(), Deduped::Dropped);
    tokio::time::sleep(WINDOW / 2).await;
    assert!(
        passed(&send(&mut r, &a).await.unwrap()),
        "60 s since the original"
    );
}

#[tokio::test(start_paused = true)]
async fn past_the_key_limit_the_oldest_keys_expire_first() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW).max_keys(2));
    let [a, b, c] = ["a", "b", "c"].map(Message::new);
    for m in [&a, &b] {
        send(&mut r, m).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    send(&mut r, &c).await.unwrap();
    assert_eq!(r.keys(), 2);
    assert_eq!(
        send(&mut r, &b).await.unwrap(),
        Deduped::Dropped,
        "b is kept"
    );
    assert_eq!(
        send(&mut r, &c).await.unwrap(),
        Deduped::Dropped,
        "c is kept"
    );
    assert!(
        passed(&send(&mut r, &a).await.unwrap()),
        "a, the oldest, expired"
    );
}

#[tokio::test]
async fn a_header_key_dedupes_by_content_and_a_missing_one_is_invalid() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW).key(Key::header("order-id")));
    let first = Message::builder("x").header("order-id", "o-1").build();
    let resent = Message::builder("x again")
        .header("order-id", "o-1")
        .build();
    assert!(passed(&send(&mut r, &first).await.unwrap()));
    assert_eq!(send(&mut r, &resent).await.unwrap(), Deduped::Dropped);
    let err = send(&mut r, &Message::new("no key")).await.unwrap_err();
    assert!(err.is_permanent());
    assert!(err.to_string().contains("order-id"), "{err}");
    assert_eq!(r.stats().invalid, 1);
}

#[tokio::test]
async fn duplicates_can_be_diverted_to_a_channel_or_a_callback() {
    let dups = PointToPoint::new("duplicates", 10).unwrap();
    let config = DedupeConfig::new(WINDOW).on_duplicate(OnDuplicate::Divert(dups.clone().into()));
    let (mut r, _) = receiver(config);
    let a = Message::new("a");
    send(&mut r, &a).await.unwrap();
    assert!(matches!(
        send(&mut r, &a).await.unwrap(),
        Deduped::Diverted(_)
    ));
    assert_eq!(dups.stats().accepted, 1);

    let seen: Arc<Mutex<Vec<Message>>> = Arc::default();
    let sink = seen.clone();
    let handed = OnDuplicate::Callback(Arc::new(move |m| sink.lock().unwrap().push(m)));
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW).on_duplicate(handed));
    send(&mut r, &a).await.unwrap();
    assert_eq!(send(&mut r, &a).await.unwrap(), Deduped::HandedOver);
    assert_eq!(seen.lock().unwrap()[0].id(), a.id());
}

#[tokio::test]
async fn an_original_the_next_step_refused_is_not_a_duplicate_when_redelivered() {
    let (mut r, out) = receiver(DedupeConfig::new(WINDOW));
    out.delete().await;
    let a = Message::new("a");
    assert!(matches!(send(&mut r, &a).await, Err(DedupeError::Inner(_))));
    assert!(
        matches!(send(&mut r, &a).await, Err(DedupeError::Inner(_))),
        "not dropped"
    );
    assert_eq!(r.keys(), 0);
}

#[tokio::test]
async fn peek_tells_what_would_happen_and_records_nothing() {
    let (mut r, _) = receiver(DedupeConfig::new(WINDOW));
    let a = Message::new("a");
    assert_eq!(
        r.peek(&a),
        Decision::Passes {
            key: a.id().to_string()
        }
    );
    assert_eq!(r.keys(), 0);
    send(&mut r, &a).await.unwrap();
    assert!(matches!(r.peek(&a), Decision::Duplicate { .. }));
}

#[tokio::test]
async fn receivers_from_one_layer_share_their_seen_keys() {
    let layer = IdempotentReceiver::layer(DedupeConfig::new(WINDOW));
    let out = PointToPoint::new("orders", 10).unwrap();
    let mut one = layer.layer(out.sender());
    let mut two = layer.layer(out.sender());
    let a = Message::new("a");
    assert!(passed(&send(&mut one, &a).await.unwrap()));
    assert_eq!(send(&mut two, &a).await.unwrap(), Deduped::Dropped);
    assert_eq!(layer.stats().duplicates, 1);
}
