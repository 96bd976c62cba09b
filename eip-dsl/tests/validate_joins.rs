//! Joins in a flow file: their source is a publish-subscribe channel, an archival join ends at
//! a queue, hop counts are whole numbers from zero, and a join goes to another channel.

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, only};
use support::queues::with_queues;
use support::validate::load;

#[test]
fn a_join_from_a_queue_is_refused() {
    let p = only(&with_queues(&["joins:", "  - {from: in, to: news}"]));
    assert_eq!(
        p.message,
        "`in` is a queue (point-to-point channel); a queue can not be the source of a join, only its destination"
    );
    assert_eq!(at(&p), (6, 12));
}

#[test]
fn an_archival_join_must_end_at_a_queue() {
    let p = only(&with_queues(&[
        "  news.eu: {kind: publish-subscribe}",
        "joins:",
        "  - {from: news, to: news.eu, archival: true}",
    ]));
    assert!(
        p.message
            .starts_with("archival join from `news` to `news.eu`: the destination must be a queue"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (7, 22));
    assert_eq!(p.labels[0].at.column, 41);
}

#[test]
fn hop_counts_must_be_whole_numbers_from_zero() {
    let join = |hops: &str| {
        let line = format!("  - {{from: news, to: out, hops: {hops}}}");
        load(&with_queues(&["joins:", &line]))
    };
    let plan = join("0").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(
        plan.joins[0].hops, 0,
        "0 is valid: to the destination and no further"
    );
    assert_eq!(
        join("4294967295").map(|p| p.joins[0].hops).ok(),
        Some(u32::MAX)
    );

    for (hops, message) in [
        ("-1", "`hops` must not be negative, found -1"),
        ("2.5", "`hops` must be a whole number, found 2.5"),
        (
            "4294967296",
            "`hops` must be at most 4294967295, found 4294967296",
        ),
        (
            "99999999999999999999",
            "`hops` must be at most 4294967295, found 100000000000000000000",
        ),
    ] {
        let errors = join(hops).expect_err("refused");
        assert_eq!(errors.problems.len(), 1, "{}", errors.render());
        assert_eq!(errors.problems[0].message, message);
        assert_eq!(at(&errors.problems[0]), (6, 33));
    }
    let p = join("many").expect_err("refused").problems.remove(0);
    assert_eq!(p.message, "`hops` must be a number, found a string");
}

#[test]
fn a_join_to_an_exchange_or_itself_is_refused() {
    let p = only(&with_queues(&[
        "joins:",
        "  - {from: news, to: mx}",
        "exchanges:",
        "  mx: {}",
    ]));
    assert_eq!(
        p.message,
        "`to` must name a channel, and `mx` is an exchange"
    );
    let p = only(&with_queues(&["joins:", "  - {from: news, to: news}"]));
    assert_eq!(p.message, "join from `news` to itself");
}
