//! Split then aggregate gives back the original set: parts with sequence headers, shuffled and
//! with some sent twice, aggregated by "all parts", come back as the original list.

use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_steps::aggregate::{Aggregator, SEQUENCE_NUMBER, SEQUENCE_SIZE};
use proptest::prelude::*;
use serde_json::Value;
use tower::{Service, ServiceExt};

/// The parts a splitter makes of `items`: the original's id as correlation id, 1-based
/// sequence numbers and the size on every part.
fn split(original: &str, items: &[Value]) -> Vec<Message> {
    let size = i64::try_from(items.len()).unwrap();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            Message::builder(serde_json::to_vec(item).unwrap())
                .correlation_id(original)
                .header(SEQUENCE_NUMBER, i64::try_from(i + 1).unwrap())
                .header(SEQUENCE_SIZE, size)
                .build()
        })
        .collect()
}

fn item() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[a-z ]{0,12}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        (any::<u32>(), "[a-z]{0,6}").prop_map(|(n, s)| serde_json::json!({"n": n, "s": s})),
    ]
}

proptest! {
    #[test]
    fn split_then_aggregate_gives_back_the_original(
        originals in prop::collection::vec(prop::collection::vec(item(), 1..20), 1..5),
        seed in any::<u64>(),
        dup_every in 2usize..7,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let out = PointToPoint::new("wholes", 100).unwrap();
        let config = Aggregator::builder().complete_with_all_parts().build().unwrap();
        let mut agg = Aggregator::new(out.sender(), config);
        let mut parts: Vec<Message> = originals
            .iter()
            .enumerate()
            .flat_map(|(n, items)| split(&format!("orig-{n}"), items))
            .collect();
        let dups: Vec<Message> = parts.iter().step_by(dup_every).cloned().collect();
        parts.extend(dups);
        shuffle(&mut parts, seed);
        let mut rx = out.receiver();
        let mut got: Vec<(String, Vec<Value>)> = rt.block_on(async {
            for p in parts {
                agg.ready().await.unwrap().call(p).await.unwrap();
            }
            let mut got = Vec::new();
            while let Ok(d) = rx.try_recv() {
                let m = d.message();
                got.push((m.correlation_id().unwrap().unwrap().to_owned(), m.json().unwrap()));
                d.ack();
            }
            got
        });
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<(String, Vec<Value>)> = originals
            .into_iter()
            .enumerate()
            .map(|(n, items)| (format!("orig-{n}"), items))
            .collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(agg.open_groups(), 0);
    }
}

/// A Fisher-Yates shuffle driven by a seed (xorshift), so a failing case replays.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..items.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap();
        items.swap(i, j);
    }
}
