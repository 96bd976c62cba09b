//! Channel joins: hop counts (the seed's worked example), loop detection over cycles and
//! diamonds, archival joins, filters, runtime changes, and random graphs.

use std::collections::{BTreeMap, HashMap};

use eip_core::channel::{
    Channel, InvalidMessageChannel, JsonSchema, PointToPoint, PublishSubscribe, Selector,
    Subscriber,
};
use eip_core::join::{Join, JoinError, Traced, Tracer};
use eip_core::message::{DeathReason, names};
use eip_core::{Message, MessageBus, Outcome};
use proptest::prelude::*;

/// A publish-subscribe channel with a subscriber that counts what the channel stored.
struct Watched {
    channel: PublishSubscribe,
    subscriber: Subscriber,
}

impl Watched {
    fn new(name: &str) -> Self {
        let channel = PublishSubscribe::new(name, 1000).unwrap();
        let subscriber = channel.subscribe();
        Watched {
            channel,
            subscriber,
        }
    }

    /// The messages stored since the last look, acked.
    fn take(&mut self) -> Vec<Message> {
        std::iter::from_fn(|| self.subscriber.try_recv().ok())
            .map(|d| {
                let m = d.message().clone();
                d.ack();
                m
            })
            .collect()
    }
}

fn chain(n: usize) -> Vec<Watched> {
    (0..n)
        .map(|i| Watched::new(&format!("channel{i}")))
        .collect()
}

#[tokio::test]
async fn seed_join_chain_with_hop_count_5_stores_on_channel0_to_channel6_only() {
    // Ten channels joined in sequence; the join channel0 -> channel1 has hop count 5, the
    // others the default. A message published to channel0 is found on channel0 (the source),
    // channel1 to channel5 (the intermediate stores) and channel6 (the end point).
    let mut channels = chain(10);
    Join::builder(channels[0].channel.clone(), channels[1].channel.clone())
        .hops(5)
        .create()
        .unwrap();
    for i in 1..9 {
        Join::builder(channels[i].channel.clone(), channels[i + 1].channel.clone())
            .create()
            .unwrap();
    }
    let msg = Message::new("event");
    let id = msg.id();
    assert_eq!(
        channels[0].channel.publish(msg).await.unwrap(),
        Outcome::Accepted
    );
    let found: Vec<usize> = (0..10)
        .filter(|&i| {
            let got = channels[i].take();
            assert!(
                got.len() <= 1,
                "channel{i} stored the event {} times",
                got.len()
            );
            got.iter().any(|m| m.id() == id)
        })
        .collect();
    assert_eq!(found, [0, 1, 2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn hop_count_zero_reaches_the_destination_and_no_further() {
    let mut c = chain(3);
    Join::builder(c[0].channel.clone(), c[1].channel.clone())
        .hops(0)
        .create()
        .unwrap();
    Join::builder(c[1].channel.clone(), c[2].channel.clone())
        .create()
        .unwrap();
    c[0].channel.publish(Message::new("x")).await.unwrap();
    assert_eq!(c[1].take().len(), 1);
    assert_eq!(c[2].take().len(), 0);
}

#[tokio::test]
async fn a_later_join_can_shorten_the_trip_but_never_lengthen_it() {
    let mut c = chain(6);
    let hops = [3, 10, 0, 10, 10];
    for (i, h) in hops.into_iter().enumerate() {
        Join::builder(c[i].channel.clone(), c[i + 1].channel.clone())
            .hops(h)
            .create()
            .unwrap();
    }
    c[0].channel.publish(Message::new("x")).await.unwrap();
    let reached: Vec<usize> = (0..6).filter(|&i| !c[i].take().is_empty()).collect();
    // 0 -> 1 leaves 3; 1 -> 2 leaves min(2, 10) = 2; 2 -> 3 leaves min(1, 0) = 0: stop at 3.
    assert_eq!(reached, [0, 1, 2, 3]);
    let mut d = chain(4);
    Join::builder(d[0].channel.clone(), d[1].channel.clone())
        .hops(1)
        .create()
        .unwrap();
    Join::builder(d[1].channel.clone(), d[2].channel.clone())
        .hops(10)
        .create()
        .unwrap();
    Join::builder(d[2].channel.clone(), d[3].channel.clone())
        .hops(10)
        .create()
        .unwrap();
    d[0].channel.publish(Message::new("x")).await.unwrap();
    let reached: Vec<usize> = (0..4).filter(|&i| !d[i].take().is_empty()).collect();
    assert_eq!(
        reached,
        [0, 1, 2],
        "a larger hop count later does not extend the budget"
    );
}

#[tokio::test]
async fn the_remaining_budget_travels_in_the_hop_budget_header() {
    let mut c = chain(3);
    Join::builder(c[0].channel.clone(), c[1].channel.clone())
        .hops(4)
        .create()
        .unwrap();
    Join::builder(c[1].channel.clone(), c[2].channel.clone())
        .create()
        .unwrap();
    c[0].channel.publish(Message::new("x")).await.unwrap();
    assert_eq!(c[0].take()[0].hop_budget().unwrap(), None);
    assert_eq!(c[1].take()[0].hop_budget().unwrap(), Some(4));
    assert_eq!(c[2].take()[0].hop_budget().unwrap(), Some(3));
}

#[tokio::test]
async fn a_cycle_stores_once_on_each_channel() {
    let mut c = chain(2);
    Join::builder(c[0].channel.clone(), c[1].channel.clone())
        .create()
        .unwrap();
    Join::builder(c[1].channel.clone(), c[0].channel.clone())
        .create()
        .unwrap();
    c[0].channel.publish(Message::new("x")).await.unwrap();
    assert_eq!(c[0].take().len(), 1);
    assert_eq!(c[1].take().len(), 1);
    // Published again with the same id (a replay): the channels remember it.
    let again = Message::new("y");
    let copy = again.clone();
    c[1].channel.publish(again).await.unwrap();
    assert_eq!(
        c[0].channel.publish(copy).await.unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(c[1].take().len(), 1);
    assert_eq!(c[0].take().len(), 1);
    assert!(c[0].channel.stats().duplicates >= 1);
}

#[tokio::test]
async fn a_diamond_stores_once_on_the_far_corner() {
    let mut a = Watched::new("a");
    let mut b = Watched::new("b");
    let mut c = Watched::new("c");
    let mut d = Watched::new("d");
    for (from, to) in [(&a, &b), (&a, &c), (&b, &d), (&c, &d)] {
        Join::builder(from.channel.clone(), to.channel.clone())
            .create()
            .unwrap();
    }
    a.channel.publish(Message::new("x")).await.unwrap();
    for w in [&mut a, &mut b, &mut c, &mut d] {
        assert_eq!(w.take().len(), 1, "{}", w.channel.name());
    }
}

#[tokio::test]
async fn archival_joins_keep_every_copy_in_the_queue() {
    let a = Watched::new("a");
    let b = Watched::new("b");
    let audit = PointToPoint::new("audit", 100).unwrap();
    let normal = PointToPoint::new("normal", 100).unwrap();
    Join::builder(a.channel.clone(), b.channel.clone())
        .create()
        .unwrap();
    for source in [&a, &b] {
        Join::builder(source.channel.clone(), audit.clone())
            .archival(true)
            .create()
            .unwrap();
        Join::builder(source.channel.clone(), normal.clone())
            .create()
            .unwrap();
    }
    let msg = Message::new("trade");
    let expected = Channel::from(a.channel.clone()).trace(&msg);
    a.channel.publish(msg).await.unwrap();
    assert_eq!(audit.stats().depth, 2, "both routes' copies are kept");
    assert_eq!(
        normal.stats().depth,
        1,
        "a non-archival queue stores the message once"
    );
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(sorted, ["a", "audit", "audit", "b", "normal"]);
}

#[test]
fn a_queue_can_not_be_a_join_source() {
    let queue = PointToPoint::new("orders", 10).unwrap();
    let channel = PublishSubscribe::new("events", 10).unwrap();
    let err = Join::builder(queue, channel).create().unwrap_err();
    assert_eq!(
        err,
        JoinError::QueueAsSource {
            channel: "orders".into()
        }
    );
    assert!(err.to_string().contains("`orders` is a queue"));
}

#[test]
fn an_archival_join_must_end_at_a_queue() {
    let a = PublishSubscribe::new("a", 10).unwrap();
    let b = PublishSubscribe::new("b", 10).unwrap();
    let err = Join::builder(a, b).archival(true).create().unwrap_err();
    assert!(matches!(err, JoinError::ArchivalToChannel { .. }), "{err}");
}

#[tokio::test]
async fn a_filter_forwards_only_what_it_accepts() {
    let mut quotes = Watched::new("quotes");
    let mut nyse = Watched::new("quotes.nyse");
    Join::builder(quotes.channel.clone(), nyse.channel.clone())
        .filter(Selector::header_equals("exchange", "NYSE"))
        .create()
        .unwrap();
    for ex in ["NYSE", "LSE", "NYSE"] {
        let msg = Message::builder("q").header("exchange", ex).build();
        quotes.channel.publish(msg).await.unwrap();
    }
    assert_eq!(quotes.take().len(), 3);
    assert_eq!(nyse.take().len(), 2);
}

#[tokio::test]
async fn joins_are_added_and_removed_at_runtime_without_loss_or_duplicates() {
    let source = PublishSubscribe::new("src", 10_000).unwrap();
    let dest = PublishSubscribe::new("dst", 10_000).unwrap();
    let mut watched = dest.subscribe();
    let publisher = {
        let source = source.clone();
        tokio::spawn(async move {
            for i in 0..3000u32 {
                let m = Message::builder("x").header("seq", i64::from(i)).build();
                source.publish(m).await.unwrap();
                if i % 100 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let mut ids = Vec::new();
    for _ in 0..20 {
        let id = Join::builder(source.clone(), dest.clone())
            .create()
            .unwrap();
        tokio::task::yield_now().await;
        assert!(source.remove_join(id));
        ids.push(id);
    }
    publisher.await.unwrap();
    let mut seen: HashMap<i64, usize> = HashMap::new();
    while let Ok(d) = watched.try_recv() {
        let seq = d
            .message()
            .headers()
            .get("seq")
            .and_then(|v| v.as_int())
            .unwrap();
        *seen.entry(seq).or_default() += 1;
        d.ack();
    }
    assert!(seen.values().all(|&n| n == 1), "no message forwarded twice");
    assert!(
        !source.remove_join(ids[0]),
        "removing twice reports it was gone"
    );
    // After the last removal completes, nothing more is forwarded.
    source.publish(Message::new("after")).await.unwrap();
    assert!(watched.try_recv().is_err());
}

#[tokio::test]
async fn the_bus_makes_joins_by_name_and_suggests_names() {
    let bus = MessageBus::new();
    bus.create_publish_subscribe("quotes").unwrap();
    bus.create_point_to_point("trades.audit").unwrap();
    let id = bus
        .join("quotes", "trades.audit")
        .unwrap()
        .archival(true)
        .create()
        .unwrap();
    bus.send("quotes", Message::new("q")).await.unwrap();
    assert_eq!(bus.point_to_point("trades.audit").unwrap().stats().depth, 1);
    assert!(bus.remove_join("quotes", id).unwrap());
    let err = bus.join("quotes", "trade.audit").unwrap_err();
    assert!(
        err.to_string().contains("did you mean `trades.audit`"),
        "{err}"
    );
    let err = bus
        .join("trades.audit", "quotes")
        .unwrap()
        .create()
        .unwrap_err();
    assert!(matches!(err, JoinError::QueueAsSource { .. }));
}

#[tokio::test]
async fn a_malformed_hop_budget_crosses_no_further() {
    let mut c = chain(2);
    Join::builder(c[0].channel.clone(), c[1].channel.clone())
        .create()
        .unwrap();
    let msg = Message::builder("x")
        .header(names::HOP_BUDGET, "lots")
        .build();
    c[0].channel.publish(msg).await.unwrap();
    assert_eq!(c[0].take().len(), 1);
    assert_eq!(c[1].take().len(), 0);
}

// ---- random graphs ----

#[derive(Debug, Clone)]
struct Edge {
    from: usize,
    to: usize,
    hops: u32,
    to_queue: bool,
    archival: bool,
}

fn edges(channels: usize, queues: usize) -> impl Strategy<Value = Vec<Edge>> {
    proptest::collection::vec(
        (
            0..channels,
            0..channels.max(queues),
            0u32..4,
            any::<bool>(),
            any::<bool>(),
        ),
        0..14,
    )
    .prop_map(move |raw| {
        raw.into_iter()
            .map(|(from, to, hops, to_queue, archival)| {
                let to_queue = to_queue && queues > 0;
                Edge {
                    from,
                    to: if to_queue { to % queues } else { to % channels },
                    hops,
                    to_queue,
                    archival: archival && to_queue,
                }
            })
            .collect()
    })
}

/// Whether some path of joins from `entry` reaches `target` within the hop rules (exhaustive).
fn reachable(edges: &[Edge], entry: usize, target: (bool, usize)) -> bool {
    fn walk(
        edges: &[Edge],
        at: usize,
        budget: Option<u32>,
        target: (bool, usize),
        depth: usize,
    ) -> bool {
        if depth > 16 {
            return false;
        }
        edges.iter().filter(|e| e.from == at).any(|e| {
            let next = match budget {
                Some(0) => return false,
                Some(b) => (b - 1).min(e.hops),
                None => e.hops,
            };
            (e.to_queue, e.to) == target
                || (!e.to_queue && walk(edges, e.to, Some(next), target, depth + 1))
        })
    }
    walk(edges, entry, None, target, 0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn random_join_graphs_store_each_id_once_within_hop_limits(
        graph in edges(5, 2),
        entry in 0usize..5,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut channels: Vec<Watched> = (0..5).map(|i| Watched::new(&format!("c{i}"))).collect();
            let queues: Vec<PointToPoint> = (0..2).map(|i| PointToPoint::new(&format!("q{i}"), 1000).unwrap()).collect();
            for e in &graph {
                let to: Channel = if e.to_queue { queues[e.to].clone().into() } else { channels[e.to].channel.clone().into() };
                Join::builder(channels[e.from].channel.clone(), to).hops(e.hops).archival(e.archival).create().unwrap();
            }
            let msg = Message::new("m");
            let mut traced = Channel::from(channels[entry].channel.clone()).trace(&msg);
            channels[entry].channel.publish(msg).await.unwrap();

            let mut stored: BTreeMap<String, usize> = BTreeMap::new();
            for (i, w) in channels.iter_mut().enumerate() {
                let n = w.take().len();
                prop_assert!(n <= 1, "channel c{} stored the id {} times", i, n);
                if n == 1 {
                    stored.insert(format!("c{i}"), 1);
                    prop_assert!(i == entry || reachable(&graph, entry, (false, i)), "c{} stored but unreachable", i);
                }
            }
            for (i, q) in queues.iter().enumerate() {
                let n = q.stats().depth;
                let archival_paths = graph.iter().filter(|e| e.to_queue && e.to == i && e.archival).count();
                prop_assert!(n <= 1 + archival_paths, "q{} stored {} copies", i, n);
                if n > 0 {
                    stored.insert(format!("q{i}"), n);
                    prop_assert!(reachable(&graph, entry, (true, i)), "q{} stored but unreachable", i);
                }
            }
            let entry_name = format!("c{entry}");
            prop_assert!(stored.contains_key(&entry_name));
            traced.sort();
            let actual: Vec<String> = stored.iter().flat_map(|(k, n)| std::iter::repeat_n(k.clone(), *n)).collect();
            prop_assert_eq!(traced, actual, "the dry run agrees with the real publish");
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn a_join_filter_can_be_a_json_path_predicate() {
    let mut quotes = Watched::new("quotes");
    let mut nyse = Watched::new("quotes.nyse");
    let filter = eip_core::predicate::Predicate::parse(r#"$.exchange == "NYSE""#).unwrap();
    Join::builder(quotes.channel.clone(), nyse.channel.clone())
        .filter(filter)
        .hops(5)
        .create()
        .unwrap();
    for body in [
        r#"{"exchange":"NYSE"}"#,
        r#"{"exchange":"LSE"}"#,
        "not json",
    ] {
        quotes.channel.publish(Message::new(body)).await.unwrap();
    }
    assert_eq!(quotes.take().len(), 3);
    let crossed = nyse.take();
    assert_eq!(crossed.len(), 1);
    assert_eq!(crossed[0].payload_str(), Some(r#"{"exchange":"NYSE"}"#));
}

/// The names a traced send would store at, in order.
fn stored_names(traced: &Traced) -> Vec<&str> {
    traced.stored.iter().map(|(c, _)| c.name()).collect()
}

#[tokio::test]
async fn a_tracer_follows_joins_like_a_publish_and_changes_nothing() {
    let quotes = PublishSubscribe::new("quotes", 10).unwrap();
    let nyse = PublishSubscribe::new("quotes.nyse", 10).unwrap();
    let audit = PointToPoint::new("audit", 10).unwrap();
    let invalid = InvalidMessageChannel::new("invalid", 10).unwrap();
    let schema = serde_json::json!({"type": "object", "required": ["price"]});
    let priced = PublishSubscribe::builder("priced")
        .datatype(JsonSchema::new("quote", &schema).unwrap(), invalid.clone())
        .build()
        .unwrap();
    Join::builder(quotes.clone(), nyse.clone())
        .hops(1)
        .create()
        .unwrap();
    Join::builder(quotes.clone(), audit.clone())
        .archival(true)
        .create()
        .unwrap();
    Join::builder(nyse.clone(), audit.clone())
        .archival(true)
        .create()
        .unwrap();
    Join::builder(quotes.clone(), priced.clone())
        .create()
        .unwrap();

    let msg = Message::new(r#"{"symbol": "IBM"}"#);
    let mut tracer = Tracer::new();
    let traced = tracer.send(&quotes.clone().into(), &msg);
    assert_eq!(
        stored_names(&traced),
        ["quotes", "quotes.nyse", "audit", "audit"],
        "the archival queue keeps both copies"
    );
    let (_, at_nyse) = &traced.stored[1];
    assert!(
        at_nyse.hop_budget().unwrap().is_some(),
        "stored as crossed, with its budget"
    );
    assert_eq!(traced.invalid.len(), 1);
    let refused = &traced.invalid[0];
    assert_eq!(
        (refused.channel.as_str(), refused.invalid_channel.name()),
        ("priced", "invalid")
    );
    let death = refused.message.death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Invalid);
    assert!(refused.reason.contains("price"), "{}", refused.reason);

    // A second send of the same message in the same dry run meets the loop memory.
    let again = tracer.send(&nyse.clone().into(), &msg);
    assert!(again.stored.is_empty());
    assert_eq!(again.duplicates, ["quotes.nyse"]);
    // A new dry run starts afresh, and nothing was really stored.
    assert_eq!(
        stored_names(&Tracer::new().send(&nyse.clone().into(), &msg)),
        ["quotes.nyse", "audit"]
    );
    for channel in [&quotes, &nyse, &priced] {
        assert_eq!(channel.stats().accepted, 0, "{}", channel.name());
    }
    assert_eq!((audit.stats().depth, invalid.stats().depth), (0, 0));
}

// ---- the dry run against the real publish ----

/// A channel of a join graph, with a consumer that sees every copy it stores.
struct Node {
    channel: Channel,
    seen: Seen,
}

enum Seen {
    Subscription(Subscriber),
    Queue(eip_core::channel::Receiver),
}

impl Node {
    fn channel(name: &str) -> Node {
        let channel = PublishSubscribe::new(name, 100).unwrap();
        let seen = Seen::Subscription(channel.subscribe());
        Node {
            channel: channel.into(),
            seen,
        }
    }

    fn queue(name: &str) -> Node {
        let queue = PointToPoint::new(name, 100).unwrap();
        let seen = Seen::Queue(queue.receiver());
        Node {
            channel: queue.into(),
            seen,
        }
    }

    /// Each copy stored since the last look, as (channel, hop budget), acked.
    fn take(&mut self) -> Vec<(String, Option<u32>)> {
        let receiver = match &mut self.seen {
            Seen::Subscription(s) => &mut **s,
            Seen::Queue(r) => r,
        };
        std::iter::from_fn(|| receiver.try_recv().ok())
            .map(|d| {
                let budget = d.message().hop_budget().unwrap();
                d.ack();
                (self.channel.name().to_owned(), budget)
            })
            .collect()
    }
}

/// Joins `nodes[from] -> nodes[to]` with `hops`, archival if `archival`.
fn join(nodes: &[Node], from: usize, to: usize, hops: u32, archival: bool) {
    Join::builder(nodes[from].channel.clone(), nodes[to].channel.clone())
        .hops(hops)
        .archival(archival)
        .create()
        .unwrap();
}

/// What a dry run says sending `msg` to `nodes[entry]` stores, and what the real send then
/// stores: each copy as (channel, hop budget), sorted.
async fn dry_and_real(
    nodes: &mut [Node],
    entry: usize,
    msg: Message,
) -> [Vec<(String, Option<u32>)>; 2] {
    let traced = Tracer::new().send(&nodes[entry].channel, &msg);
    let mut dry: Vec<(String, Option<u32>)> = traced
        .stored
        .iter()
        .map(|(c, m)| (c.name().to_owned(), m.hop_budget().unwrap()))
        .collect();
    nodes[entry].channel.send(msg).await.unwrap();
    let mut real: Vec<(String, Option<u32>)> = nodes.iter_mut().flat_map(Node::take).collect();
    dry.sort();
    real.sort();
    [dry, real]
}

#[tokio::test]
async fn the_dry_run_stores_what_a_chain_with_hop_counts_stores() {
    let mut nodes: Vec<Node> = (0..6).map(|i| Node::channel(&format!("c{i}"))).collect();
    for (i, hops) in [3, 10, 0, 10, 10].into_iter().enumerate() {
        join(&nodes, i, i + 1, hops, false);
    }
    let [dry, real] = dry_and_real(&mut nodes, 0, Message::new("x")).await;
    let c = |n: &str, b| (n.to_owned(), b);
    assert_eq!(
        real,
        [
            c("c0", None),
            c("c1", Some(3)),
            c("c2", Some(2)),
            c("c3", Some(0))
        ]
    );
    assert_eq!(dry, real);
}

#[tokio::test]
async fn the_dry_run_stores_what_a_cycle_stores_and_knows_a_replay() {
    let mut nodes: Vec<Node> = (0..2).map(|i| Node::channel(&format!("c{i}"))).collect();
    join(&nodes, 0, 1, 10, false);
    join(&nodes, 1, 0, 10, false);
    let msg = Message::new("x");
    let [dry, real] = dry_and_real(&mut nodes, 0, msg.clone()).await;
    assert_eq!(real.len(), 2, "{real:?}");
    assert_eq!(dry, real);
    // The same id again: the loop memory of both channels refuses it, and the dry run says so.
    let [dry, real] = dry_and_real(&mut nodes, 1, msg).await;
    assert!(real.is_empty(), "{real:?}");
    assert_eq!(dry, real);
}

#[tokio::test]
async fn the_dry_run_stores_what_a_diamond_stores() {
    let mut nodes: Vec<Node> = ["a", "b", "c", "d"].map(Node::channel).into();
    for (from, to) in [(0, 1), (0, 2), (1, 3), (2, 3)] {
        join(&nodes, from, to, 10, false);
    }
    let [dry, real] = dry_and_real(&mut nodes, 0, Message::new("x")).await;
    let names: Vec<&str> = real.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    assert_eq!(dry, real);
}

#[tokio::test]
async fn the_dry_run_stores_what_archival_joins_store() {
    let mut nodes = vec![
        Node::channel("a"),
        Node::channel("b"),
        Node::queue("audit"),
        Node::queue("normal"),
    ];
    join(&nodes, 0, 1, 10, false);
    for source in [0, 1] {
        join(&nodes, source, 2, 10, true);
        join(&nodes, source, 3, 10, false);
    }
    let [dry, real] = dry_and_real(&mut nodes, 0, Message::new("x")).await;
    let names: Vec<&str> = real.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "audit", "audit", "b", "normal"]);
    assert_eq!(dry, real);
}

#[tokio::test]
async fn the_dry_run_gives_each_copy_the_expiration_its_store_gives() {
    use std::time::Duration;
    // `a` and the queue `q` expire what they store; `b` has no time-to-live of its own, so its
    // copy keeps the expiration it got at `a`, and `q` keeps the earlier of the two.
    let a = PublishSubscribe::builder("a")
        .time_to_live(Duration::from_secs(3600))
        .build()
        .unwrap();
    let b = PublishSubscribe::new("b", 10).unwrap();
    let q = PointToPoint::builder("q")
        .time_to_live(Duration::from_secs(60))
        .build()
        .unwrap();
    let (mut at_a, mut at_b) = (a.subscribe(), b.subscribe());
    let mut at_q = q.receiver();
    Join::builder(a.clone(), b.clone()).create().unwrap();
    Join::builder(b.clone(), q.clone()).create().unwrap();

    let msg = Message::new("x");
    let traced = Tracer::new().send(&a.clone().into(), &msg);
    a.publish(msg).await.unwrap();
    let mut real = Vec::new();
    for receiver in [&mut *at_a, &mut *at_b, &mut at_q] {
        let delivery = receiver.try_recv().unwrap();
        real.push(delivery.message().expires_at().unwrap().unwrap());
        delivery.ack();
    }
    let dry: Vec<u64> = traced
        .stored
        .iter()
        .map(|(_, m)| m.expires_at().unwrap().expect("the dry copy expires too"))
        .collect();
    assert_eq!(stored_names(&traced), ["a", "b", "q"]);
    assert_eq!(dry[0], dry[1], "b keeps the expiration a gave");
    assert!(dry[2] < dry[1], "q keeps the earlier of the two");
    for (dry, real) in dry.iter().zip(&real) {
        // The dry run ran first: the same deadlines, a few milliseconds earlier.
        assert!(dry <= real && real - dry < 5_000, "dry {dry}, real {real}");
    }
}
