//! Behaviour of the topic exchange: RabbitMQ's topic rules with their edge cases, once per
//! target, the alternate target and the dropped count, bindings changed while messages flow.
//! Agreement with the rules on many bindings and on random ones: `topic_exchange_rules.rs`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eip_core::channel::{Channel, PointToPoint, TryRecvError};
use eip_core::message::names;
use eip_core::topic::{
    Binding, BindingChanges, ExchangeError, Route, Routed, TopicError, TopicExchange,
};
use eip_core::{Message, MessageId};
use tower::{Service, ServiceExt};

mod topic_support;
use topic_support::{channel, names_of};

fn msg(subject: &str) -> Message {
    Message::builder("x").subject(subject).build()
}

/// An exchange with one binding per pattern, each to a channel named after its pattern (see
/// [`channel_name`]).
fn exchange_of(patterns: &[&str]) -> TopicExchange {
    let exchange = TopicExchange::new("x");
    for p in patterns {
        exchange.bind(Binding::new(p, [channel(&channel_name(p))]).unwrap());
    }
    exchange
}

/// A channel name standing for a pattern (names can not hold wildcards or empty words).
fn channel_name(pattern: &str) -> String {
    if pattern.is_empty() {
        return "nothing".into();
    }
    let word = |w| match w {
        "*" => "star",
        "#" => "hash",
        "" => "empty",
        w => w,
    };
    pattern.split('.').map(word).collect::<Vec<_>>().join(".")
}

/// The patterns of the bindings `subject` is routed through, sorted, in an exchange made by
/// [`exchange_of`].
fn patterns_of(exchange: &TopicExchange, subject: &str) -> Vec<String> {
    let word = |w| match w {
        "star" => "*",
        "hash" => "#",
        "empty" => "",
        w => w,
    };
    let mut patterns: Vec<String> = names_of(exchange, subject)
        .iter()
        .map(|name| match name.as_str() {
            "nothing" => String::new(),
            name => name.split('.').map(word).collect::<Vec<_>>().join("."),
        })
        .collect();
    patterns.sort();
    patterns
}

fn drain(channel: &Channel) -> Vec<MessageId> {
    let Channel::PointToPoint(c) = channel else {
        panic!("a point-to-point channel")
    };
    let mut rx = c.receiver();
    let mut ids = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(d) => {
                ids.push(d.message().id());
                d.ack();
            }
            Err(TryRecvError::Empty | TryRecvError::Closed) => return ids,
        }
    }
}

#[test]
fn star_matches_exactly_one_word_and_hash_zero_or_more() {
    let x = exchange_of(&["stock.*.nyse", "stock.#", "#.nyse"]);
    assert_eq!(
        patterns_of(&x, "stock.ibm.nyse"),
        ["#.nyse", "stock.#", "stock.*.nyse"]
    );
    assert_eq!(patterns_of(&x, "stock.nyse"), ["#.nyse", "stock.#"]);
    assert_eq!(patterns_of(&x, "stock"), ["stock.#"]);
    assert_eq!(patterns_of(&x, "nyse"), ["#.nyse"]);
    assert_eq!(patterns_of(&x, "stock.a.b.nyse"), ["#.nyse", "stock.#"]);
    assert!(patterns_of(&x, "bond.ibm.lse").is_empty());
}

#[tokio::test]
async fn the_empty_subject_is_zero_words() {
    let x = exchange_of(&["#", "", "*", "#.#", "*.#"]);
    assert_eq!(patterns_of(&x, ""), ["", "#", "#.#"]);
    // A message without a subject header has the empty subject.
    let none = Message::new("no subject");
    assert!(none.subject().unwrap().is_none());
    match x.route_message(&none) {
        Route::Targets(t) => assert_eq!(t.len(), 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(x.publish(none).await.unwrap(), Routed::Targets(3));
}

#[test]
fn empty_words_between_and_after_dots_are_words() {
    let x = exchange_of(&["a.*.b", "a..b", "a.b", "a.*", "a", "*.*", "a.#"]);
    assert_eq!(patterns_of(&x, "a..b"), ["a.#", "a.*.b", "a..b"]);
    assert_eq!(patterns_of(&x, "a."), ["*.*", "a.#", "a.*"]);
    assert_eq!(patterns_of(&x, "."), ["*.*"]);
    assert_eq!(patterns_of(&x, "a"), ["a", "a.#"]);
}

#[test]
fn patterns_with_mixed_wildcard_words_or_over_255_bytes_are_refused() {
    let t = channel("t");
    assert_eq!(
        Binding::new("stock.ny*", [t.clone()]).unwrap_err(),
        ExchangeError::Pattern(TopicError::MixedWildcard {
            pattern: "stock.ny*".into(),
            word: "ny*".into(),
            word_index: 2,
        })
    );
    assert!(matches!(
        Binding::new("#a", [t.clone()]),
        Err(ExchangeError::Pattern(_))
    ));
    assert_eq!(
        Binding::new(&"a".repeat(256), [t.clone()]).unwrap_err(),
        ExchangeError::Pattern(TopicError::TooLong { len: 256 })
    );
    assert!(Binding::new(&"a".repeat(255), [t]).is_ok());
}

#[test]
fn a_binding_needs_at_least_one_target() {
    let err = Binding::new("a.#", Vec::<Channel>::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "binding `a.#` has no target; a binding needs at least one"
    );
    assert!(matches!(
        Binding::with_key(None, Vec::<Channel>::new()),
        Err(ExchangeError::NoTarget { .. })
    ));
}

#[tokio::test]
async fn a_message_goes_once_to_a_target_bound_twice() {
    let audit = channel("audit");
    let nyse = channel("nyse");
    let x = TopicExchange::new("stocks");
    let same = Binding::new("stock.#", [audit.clone()]).unwrap();
    x.bind(same.clone());
    x.bind(same);
    x.bind(Binding::new("stock.*.nyse", [audit.clone(), nyse.clone()]).unwrap());
    x.bind(Binding::new("#", [audit.clone(), audit.clone()]).unwrap());
    x.bind(Binding::with_key(None, [nyse.clone()]).unwrap());
    assert_eq!(x.binding_count(), 5);

    assert_eq!(
        x.publish(msg("stock.ibm.nyse")).await.unwrap(),
        Routed::Targets(2)
    );
    assert_eq!(x.stats().deliveries, 2);
    assert_eq!(drain(&audit).len(), 1);
    assert_eq!(drain(&nyse).len(), 1);
}

#[test]
fn a_target_named_twice_in_one_binding_is_one_target() {
    let t = channel("t");
    let b = Binding::new("a", [t.clone(), t.clone(), channel("t")]).unwrap();
    assert_eq!(b.targets().len(), 1);
}

#[tokio::test]
async fn every_target_of_every_matching_binding_gets_the_message() {
    let (a, b, c, d) = (channel("a"), channel("b"), channel("c"), channel("d"));
    let x = TopicExchange::new("x");
    x.bind(Binding::new("order.*", [a.clone(), b.clone()]).unwrap());
    x.bind(Binding::new("#.created", [c.clone()]).unwrap());
    x.bind(Binding::new("invoice.#", [d.clone()]).unwrap());
    let m = msg("order.created");
    let id = m.id();
    assert_eq!(x.publish(m).await.unwrap(), Routed::Targets(3));
    for ch in [&a, &b, &c] {
        assert_eq!(drain(ch), [id], "{}", ch.name());
    }
    assert!(drain(&d).is_empty());
}

#[tokio::test]
async fn unmatched_messages_go_to_the_alternate_target() {
    let alternate = channel("unrouted");
    let x = TopicExchange::new("x").with_alternate(alternate.clone());
    x.bind(Binding::new("a.b", [channel("t")]).unwrap());
    let m = msg("a.c");
    let id = m.id();
    assert!(matches!(x.route_message(&m), Route::Alternate(c) if c.name() == "unrouted"));
    assert!(
        x.route("a.c").is_empty(),
        "route lists bindings' targets only"
    );
    assert_eq!(x.publish(m).await.unwrap(), Routed::Alternate);
    assert_eq!(drain(&alternate), [id]);
    let stats = x.stats();
    assert_eq!((stats.alternate, stats.dropped, stats.routed), (1, 0, 0));
    // A matched message does not go to the alternate.
    assert_eq!(x.publish(msg("a.b")).await.unwrap(), Routed::Targets(1));
    assert!(drain(&alternate).is_empty());
    x.set_alternate(None);
    assert_eq!(x.publish(msg("a.c")).await.unwrap(), Routed::Dropped);
}

#[tokio::test]
async fn unmatched_messages_without_an_alternate_are_counted_as_dropped() {
    let x = exchange_of(&["a.*"]);
    assert!(matches!(x.route_message(&msg("b")), Route::Dropped));
    for subject in ["b", "a", "a.b.c", ""] {
        assert_eq!(x.publish(msg(subject)).await.unwrap(), Routed::Dropped);
    }
    let stats = x.stats();
    assert_eq!((stats.published, stats.dropped, stats.routed), (4, 4, 0));
    assert_eq!(stats.unroutable, 0);
}

#[tokio::test]
async fn a_binding_without_a_key_matches_every_routable_subject() {
    let all = channel("all");
    let x = TopicExchange::new("x");
    let id = x.bind(Binding::with_key(None, [all.clone()]).unwrap());
    assert!(x.binding(id).unwrap().key().is_none());
    for subject in ["", "a", "a..b", ".", "x.y.z", &"w".repeat(255)] {
        assert_eq!(names_of(&x, subject), ["all"], "{subject:?}");
    }
    assert_eq!(
        x.publish(Message::new("no subject")).await.unwrap(),
        Routed::Targets(1)
    );
    assert!(x.route(&"w".repeat(256)).is_empty());
}

#[tokio::test]
async fn subjects_over_255_bytes_match_nothing_and_take_the_alternate() {
    let alternate = channel("alt");
    let x = exchange_of(&["#", "*"]).with_alternate(alternate.clone());
    let long = "a".repeat(256);
    assert!(x.route(&long).is_empty());
    assert!(matches!(x.route_message(&msg(&long)), Route::Alternate(_)));
    assert_eq!(x.publish(msg(&long)).await.unwrap(), Routed::Alternate);
    assert_eq!(x.stats().unroutable, 1);
    // 255 bytes of dots is 256 empty words, and still routable.
    let dots = ".".repeat(255);
    assert_eq!(patterns_of(&x, &dots), ["#"]);
}

#[tokio::test]
async fn a_subject_header_that_is_not_text_matches_nothing() {
    let x = exchange_of(&["#"]);
    let m = Message::builder("x").header(names::SUBJECT, 42_i64).build();
    assert!(matches!(x.route_message(&m), Route::Dropped));
    assert_eq!(x.publish(m).await.unwrap(), Routed::Dropped);
    let stats = x.stats();
    assert_eq!((stats.unroutable, stats.dropped), (1, 1));
    let alternate = channel("alt");
    x.set_alternate(Some(alternate.clone()));
    let m = Message::builder("x").header(names::SUBJECT, true).build();
    assert_eq!(x.publish(m).await.unwrap(), Routed::Alternate);
    assert_eq!(drain(&alternate).len(), 1);
}

#[tokio::test]
async fn unbinding_stops_routing_and_returns_the_binding() {
    let t = channel("t");
    let x = TopicExchange::new("x");
    let a = x.bind(Binding::new("a.*", [t.clone()]).unwrap());
    let b = x.bind(Binding::new("a.#", [t.clone()]).unwrap());
    assert_eq!(names_of(&x, "a.b"), ["t"]);
    let removed = x.unbind(a).unwrap();
    assert_eq!(removed.key().unwrap().as_str(), "a.*");
    assert_eq!(names_of(&x, "a.b"), ["t"], "still bound through a.#");
    x.unbind(b).unwrap();
    assert!(x.route("a.b").is_empty());
    assert_eq!(x.publish(msg("a.b")).await.unwrap(), Routed::Dropped);
    assert!(x.bindings().is_empty());
}

#[test]
fn unbinding_a_binding_that_is_not_there_is_an_error_and_changes_nothing() {
    let x = TopicExchange::new("stocks");
    let id = x.bind(Binding::new("a", [channel("t")]).unwrap());
    x.unbind(id).unwrap();
    let err = x.unbind(id).unwrap_err();
    assert_eq!(
        err,
        ExchangeError::UnknownBinding {
            exchange: "stocks".into(),
            id
        }
    );
    assert_eq!(
        err.to_string(),
        format!("exchange `stocks` has no binding {id}")
    );

    // A batch with one bad unbind is refused whole.
    let keep = x.bind(Binding::new("b", [channel("t")]).unwrap());
    let refused = x.update(
        BindingChanges::new()
            .unbind(keep)
            .bind(Binding::new("c", [channel("u")]).unwrap())
            .unbind(id),
    );
    assert!(matches!(refused, Err(ExchangeError::UnknownBinding { id: bad, .. }) if bad == id));
    assert_eq!(names_of(&x, "b"), ["t"]);
    assert!(x.route("c").is_empty());
    // So is unbinding the same binding twice in one batch.
    let twice = x.update(BindingChanges::new().unbind(keep).unbind(keep));
    assert!(twice.is_err());
    assert_eq!(x.binding_count(), 1);
}

#[tokio::test]
async fn route_answers_without_sending_or_counting() {
    let t = channel("t");
    let x = TopicExchange::new("x");
    x.bind(Binding::new("a.#", [t.clone()]).unwrap());
    assert_eq!(names_of(&x, "a.b"), ["t"]);
    assert!(matches!(x.route_message(&msg("a")), Route::Targets(ref c) if c.len() == 1));
    assert_eq!(x.stats(), Default::default());
    assert!(drain(&t).is_empty());
}

#[tokio::test]
async fn a_closed_target_does_not_stop_the_others_and_the_message_comes_back() {
    let (open, closed) = (channel("open"), channel("closed"));
    let x = TopicExchange::new("x");
    x.bind(Binding::new("#", [closed.clone(), open.clone()]).unwrap());
    closed.delete().await;
    let m = msg("a");
    let id = m.id();
    let err = x.publish(m).await.unwrap_err();
    assert_eq!(err.failed, ["closed"]);
    assert_eq!(err.delivered, 1);
    assert_eq!(
        err.to_string(),
        "exchange `x`: closed refused the message (closed); 1 accepted it"
    );
    assert_eq!(err.into_message().id(), id);
    assert_eq!(drain(&open), [id]);
    assert_eq!(x.stats().failed, 1);
}

#[tokio::test]
async fn the_exchange_is_a_tower_service() {
    let t = channel("t");
    let x = TopicExchange::new("x").with_alternate(channel("alt"));
    x.bind(Binding::new("a.*", [t.clone()]).unwrap());
    let mut svc = x.clone();
    let routed = svc.ready().await.unwrap().call(msg("a.b")).await.unwrap();
    assert_eq!(routed, Routed::Targets(1));
    assert_eq!(
        x.clone().oneshot(msg("b")).await.unwrap(),
        Routed::Alternate
    );
    assert_eq!(drain(&t).len(), 1);
}

#[tokio::test]
async fn a_message_being_routed_keeps_the_bindings_it_started_with() {
    // A full target holds the first message's publish mid-route while bindings change.
    let small: Channel = PointToPoint::new("small", 1).unwrap().into();
    let other = channel("other");
    let x = TopicExchange::new("x");
    let id = x.bind(Binding::new("#", [small.clone(), other.clone()]).unwrap());
    small.send(msg("filler")).await.unwrap();
    let publish = tokio::spawn({
        let x = x.clone();
        async move { x.publish(msg("a")).await }
    });
    tokio::task::yield_now().await;
    x.unbind(id).unwrap();
    assert!(x.route("a").is_empty());
    assert_eq!(drain(&small).len(), 1, "frees room for the waiting copy");
    assert_eq!(publish.await.unwrap().unwrap(), Routed::Targets(2));
    assert_eq!(drain(&small).len(), 1);
    assert_eq!(drain(&other).len(), 1);
}

/// Two binding sets swapped back and forth in single updates while a publisher and two
/// routing threads run: every message must see one set whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bindings_swapped_atomically_are_never_seen_half_applied() {
    const MOST: usize = 100_000;
    let roomy = |name| -> Channel { PointToPoint::new(name, MOST).unwrap().into() };
    let (a1, a2, b1, b2) = (roomy("a1"), roomy("a2"), roomy("b1"), roomy("b2"));
    let x = TopicExchange::new("x");
    let set_a = {
        let (a1, a2) = (a1.clone(), a2.clone());
        move || {
            BindingChanges::new()
                .bind(Binding::new("x.#", [a1.clone()]).unwrap())
                .bind(Binding::new("x.*", [a2.clone()]).unwrap())
        }
    };
    let set_b = {
        let (b1, b2) = (b1.clone(), b2.clone());
        move || {
            BindingChanges::new()
                .bind(Binding::new("#.y", [b1.clone()]).unwrap())
                .bind(Binding::with_key(None, [b2.clone()]).unwrap())
        }
    };
    let mut current = x.update(set_a()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));

    let swapper = std::thread::spawn({
        let (x, stop) = (x.clone(), stop.clone());
        move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let next = if swaps.is_multiple_of(2) {
                    set_b()
                } else {
                    set_a()
                };
                let changes = current.iter().fold(next, |c, id| c.unbind(*id));
                current = x.update(changes).unwrap();
                swaps += 1;
            }
            swaps
        }
    });
    let routers: Vec<_> = (0..2)
        .map(|_| {
            let (x, stop) = (x.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = BTreeSet::new();
                // Routes at least once even when the scheduler starts this thread late.
                loop {
                    let names = names_of(&x, "x.y");
                    assert!(names == ["a1", "a2"] || names == ["b1", "b2"], "{names:?}");
                    seen.insert(names);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                seen.len()
            })
        })
        .collect();

    let mut published = 0;
    // Publish until both sets have been seen (almost always the first batch); a loaded
    // machine may start the swapper late, so the bound is time, not a batch count.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        for _ in 0..500 {
            assert_eq!(x.publish(msg("x.y")).await.unwrap(), Routed::Targets(2));
            published += 1;
        }
        let (sa, sb) = (a1.stats().accepted, b1.stats().accepted);
        let enough = published >= MOST || std::time::Instant::now() > deadline;
        if (sa > 0 && sb > 0) || enough {
            break;
        }
        tokio::task::yield_now().await;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0);
    for r in routers {
        assert!(r.join().unwrap() >= 1);
    }

    let mut got: HashMap<MessageId, BTreeSet<&str>> = HashMap::new();
    for ch in [&a1, &a2, &b1, &b2] {
        for id in drain(ch) {
            assert!(
                got.entry(id).or_default().insert(ch.name()),
                "twice to {}",
                ch.name()
            );
        }
    }
    assert_eq!(got.len(), published);
    let (mut in_a, mut in_b) = (0, 0);
    for set in got.values() {
        let set: Vec<&str> = set.iter().copied().collect();
        match set[..] {
            ["a1", "a2"] => in_a += 1,
            ["b1", "b2"] => in_b += 1,
            _ => panic!("a message saw a half-applied change: {set:?}"),
        }
    }
    assert!(in_a > 0 && in_b > 0, "both sets seen: {in_a} / {in_b}");
}
