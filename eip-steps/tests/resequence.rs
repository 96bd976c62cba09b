//! The Resequencer: order, gaps, the gap timeout, the bound on held messages, duplicates.

use std::time::Duration;

use eip_core::channel::{PointToPoint, Receiver};
use eip_core::{Message, channel::ChannelSender};
use eip_steps::resequence::{
    Decision, ResequenceError, Resequenced, Resequencer, ResequencerConfig,
};
use proptest::prelude::*;
use tower::{Service, ServiceExt};

fn numbered(n: i64) -> Message {
    Message::builder(n.to_string())
        .header("sequence-number", n)
        .build()
}

fn resequencer(config: ResequencerConfig) -> (Resequencer<ChannelSender>, Receiver) {
    let out = PointToPoint::new("ordered", 10_000).unwrap();
    (Resequencer::new(out.sender(), config), out.receiver())
}

async fn send(
    r: &mut Resequencer<ChannelSender>,
    n: i64,
) -> Result<Resequenced, ResequenceError<eip_core::channel::SendError>> {
    r.ready().await?.call(numbered(n)).await
}

/// The payloads sent on so far.
fn drained(rx: &mut Receiver) -> Vec<i64> {
    let mut got = Vec::new();
    while let Ok(d) = rx.try_recv() {
        got.push(d.message().payload_str().unwrap().parse().unwrap());
        d.ack();
    }
    got
}

#[tokio::test]
async fn a_gap_holds_later_numbers_until_it_fills() {
    let (mut r, mut rx) = resequencer(ResequencerConfig::new());
    assert_eq!(send(&mut r, 3).await.unwrap(), Resequenced::Held);
    assert_eq!(send(&mut r, 2).await.unwrap(), Resequenced::Held);
    assert_eq!(send(&mut r, 5).await.unwrap(), Resequenced::Held);
    assert!(drained(&mut rx).is_empty());
    assert_eq!(
        send(&mut r, 1).await.unwrap(),
        Resequenced::Released { count: 3 }
    );
    assert_eq!(drained(&mut rx), [1, 2, 3]);
    assert_eq!(r.held(), 1, "5 waits for 4");
    send(&mut r, 4).await.unwrap();
    assert_eq!(drained(&mut rx), [4, 5]);
}

#[tokio::test]
async fn duplicates_of_released_and_held_numbers_are_dropped_and_counted() {
    let (mut r, mut rx) = resequencer(ResequencerConfig::new());
    send(&mut r, 1).await.unwrap();
    send(&mut r, 3).await.unwrap();
    assert_eq!(send(&mut r, 1).await.unwrap(), Resequenced::Duplicate);
    assert_eq!(send(&mut r, 3).await.unwrap(), Resequenced::Duplicate);
    send(&mut r, 2).await.unwrap();
    assert_eq!(drained(&mut rx), [1, 2, 3]);
    assert_eq!(r.stats().duplicates, 2);
}

#[tokio::test(start_paused = true)]
async fn the_gap_timeout_releases_what_is_held_in_order_without_a_new_message() {
    let config = ResequencerConfig::new().gap_timeout(Duration::from_secs(10));
    let (mut r, mut rx) = resequencer(config);
    send(&mut r, 1).await.unwrap();
    for n in [4, 3, 7] {
        send(&mut r, n).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(9_999)).await;
    assert_eq!(drained(&mut rx), [1]);
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(drained(&mut rx), [3, 4, 7]);
    let stats = r.stats();
    assert_eq!((stats.gaps, stats.missing), (2, 3), "gaps 2 and 5..=6");
    assert_eq!(r.held(), 0);
    assert_eq!(
        send(&mut r, 8).await.unwrap(),
        Resequenced::Released { count: 1 }
    );
}

#[tokio::test(start_paused = true)]
async fn a_number_skipped_by_the_timeout_that_arrives_later_goes_on_late() {
    let config = ResequencerConfig::new().gap_timeout(Duration::from_secs(1));
    let (mut r, mut rx) = resequencer(config);
    send(&mut r, 2).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(drained(&mut rx), [2]);
    assert_eq!(send(&mut r, 1).await.unwrap(), Resequenced::Late);
    assert_eq!(send(&mut r, 2).await.unwrap(), Resequenced::Duplicate);
    assert_eq!(drained(&mut rx), [1]);
    assert_eq!(r.stats().late, 1);
}

#[tokio::test(start_paused = true)]
async fn a_gap_timeout_with_new_messages_arriving_still_strikes_once_due() {
    let config = ResequencerConfig::new().gap_timeout(Duration::from_secs(5));
    let (mut r, mut rx) = resequencer(config);
    send(&mut r, 2).await.unwrap();
    for n in 3..=6 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        send(&mut r, n).await.unwrap();
    }
    assert!(drained(&mut rx).is_empty(), "4 s in: still waiting for 1");
    tokio::time::sleep(Duration::from_millis(1_001)).await;
    assert_eq!(drained(&mut rx), [2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn beyond_the_bound_the_first_gap_is_given_up_in_order() {
    let (mut r, mut rx) = resequencer(ResequencerConfig::new().max_held(3));
    for n in [3, 4, 6] {
        send(&mut r, n).await.unwrap();
    }
    assert_eq!(
        send(&mut r, 8).await.unwrap(),
        Resequenced::Released { count: 2 }
    );
    assert_eq!(drained(&mut rx), [3, 4]);
    assert_eq!(r.held(), 2);
    let stats = r.stats();
    assert_eq!((stats.overflows, stats.gaps, stats.missing), (1, 1, 2));
}

#[tokio::test]
async fn a_message_without_a_sequence_number_is_handed_back_invalid() {
    let (mut r, _) = resequencer(ResequencerConfig::new());
    let err = r
        .ready()
        .await
        .unwrap()
        .call(Message::new("x"))
        .await
        .unwrap_err();
    assert!(err.is_permanent());
    assert!(err.to_string().contains("sequence-number"), "{err}");
    let zero = Message::builder("0")
        .header("sequence-number", 0_i64)
        .build();
    assert!(r.ready().await.unwrap().call(zero).await.is_err());
    assert_eq!(r.stats().invalid, 2);
}

#[tokio::test]
async fn peek_tells_what_would_happen_and_changes_nothing() {
    let (mut r, _) = resequencer(ResequencerConfig::new());
    send(&mut r, 2).await.unwrap();
    assert_eq!(
        r.peek(&numbered(1)),
        Decision::Releases {
            number: 1,
            count: 2
        }
    );
    assert_eq!(r.peek(&numbered(2)), Decision::Duplicate { number: 2 });
    assert_eq!(r.peek(&numbered(4)).to_string(), "holds 4, waiting for 1");
    assert_eq!(r.held(), 1);
}

#[tokio::test]
async fn batches_reach_the_inner_service_in_release_order_whoever_is_polled_first() {
    let (mut r, mut rx) = resequencer(ResequencerConfig::new());
    let first = r.ready().await.unwrap().call(numbered(1));
    let second = r.ready().await.unwrap().call(numbered(2));
    let (b, a) = futures::future::join(second, first).await;
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        (
            Resequenced::Released { count: 1 },
            Resequenced::Released { count: 1 }
        )
    );
    assert_eq!(drained(&mut rx), [1, 2]);
}

proptest! {
    #[test]
    fn any_arrival_order_goes_out_in_order(order in Just((1..=40_i64).collect::<Vec<_>>()).prop_shuffle()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(async {
            let (mut r, mut rx) = resequencer(ResequencerConfig::new());
            for n in order {
                send(&mut r, n).await.unwrap();
            }
            drained(&mut rx)
        });
        prop_assert_eq!(got, (1..=40).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn a_resequencer_from_a_layer_orders_like_one_made_directly() {
    use eip_steps::resequence::ResequencerLayer;
    use tower::Layer;
    let layer = ResequencerLayer::new(ResequencerConfig::new().starting_at(10));
    let out = PointToPoint::new("ordered", 10).unwrap();
    let mut rx = out.receiver();
    let mut r = layer.layer(out.sender());
    for n in [11, 10] {
        send(&mut r, n).await.unwrap();
    }
    assert_eq!(drained(&mut rx), [10, 11]);
    assert_eq!(layer.stats().released, 2);
}
