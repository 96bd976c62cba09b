//! Names in a flow file: unknown channels and exchanges with the closest declared one, the
//! dead letter channel, names written as numbers, duplicate and invalid names.

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::queues::with_queues;
use support::validate::load;

#[test]
fn an_unknown_channel_is_reported_with_the_closest_declared_one() {
    let p = only(&[
        "channels:",
        "  trades.requests: {kind: point-to-point}",
        "  trades.buy: {kind: point-to-point}",
        "routes:",
        "  - from: trade.requests",
        "    to: trades.buy",
    ]);
    assert_eq!(p.message, "unknown channel `trade.requests`");
    assert_eq!(at(&p), (5, 11));
    assert_eq!(help(&p), "did you mean `trades.requests`?");
    assert_eq!(p.key.as_deref(), Some("routes[0].from"));
}

#[test]
fn where_an_exchange_may_go_the_suggestion_includes_exchanges() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: markt}",
        "exchanges:",
        "  market: {}",
    ]));
    assert_eq!(p.message, "unknown channel or exchange `markt`");
    assert_eq!((at(&p), help(&p)), ((6, 20), "did you mean `market`?"));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, choice: [{when: '$.a', to: out}], otherwise: nowhere.at.all}",
    ]));
    assert_eq!(p.message, "unknown channel or exchange `nowhere.at.all`");
    assert_eq!(help(&p), "declare it under `channels:` or `exchanges:`");
}

#[test]
fn a_choice_target_and_a_recipient_are_checked() {
    let ps = problems(&with_queues(&[
        "routes:",
        "  - {from: in, choice: [{when: '$.a == 1', to: oot}]}",
        "  - {from: news, recipient-list: [out, nws.x]}",
    ]));
    let found: Vec<(&str, (u32, u32), &str)> = ps
        .iter()
        .map(|p| (p.message.as_str(), at(p), help(p)))
        .collect();
    assert_eq!(
        found,
        [
            (
                "unknown channel or exchange `oot`",
                (6, 48),
                "did you mean `out`?"
            ),
            (
                "unknown channel or exchange `nws.x`",
                (7, 40),
                "declare it under `channels:` or `exchanges:`"
            ),
        ]
    );
}

#[test]
fn dead_letters_always_exists() {
    let plan = load(&[
        "channels:",
        "  q: {kind: point-to-point, dead-letter: dead-letters}",
    ])
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let names: Vec<&str> = plan.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["q", "dead-letters"]);

    let plan = load(&[
        "channels:",
        "  dead-letters: {kind: point-to-point, capacity: 9}",
        "  q: {kind: point-to-point}",
    ])
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let names: Vec<&str> = plan.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["dead-letters", "q"],
        "declared: kept where written, not added again"
    );

    let p = only(&["channels:", "  dead-letters: {kind: publish-subscribe}"]);
    assert_eq!(
        p.message,
        "`dead-letters` is the flow's dead letter channel: it must be point-to-point"
    );
}

#[test]
fn names_may_be_written_as_numbers() {
    let plan = load(&[
        "channels:",
        "  404: {kind: point-to-point}",
        "  2024.05: {kind: point-to-point}",
        "routes:",
        "  - {from: 404, to: 2024.05}",
    ])
    .unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(plan.channels[0].name, "404");
    assert_eq!(
        plan.channels[1].name, "2024.05",
        "the text as written, not the number 2024.05"
    );
    assert_eq!(plan.routes[0].from, "404");
}

#[test]
fn a_channel_declared_twice_is_reported_with_both_positions() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point}",
        "  q: {kind: point-to-point}",
    ]);
    assert_eq!(p.message, "channel `q` is declared twice");
    assert_eq!(at(&p), (3, 3));
    assert_eq!((p.labels[0].at.line, p.labels[0].at.column), (2, 3));
}

#[test]
fn an_exchange_declared_twice_is_reported() {
    let p = only(&["exchanges:", "  mx: {}", "  mx: {}"]);
    assert_eq!(p.message, "exchange `mx` is declared twice");
    assert_eq!(at(&p), (3, 3));
}

#[test]
fn a_channel_and_an_exchange_share_one_namespace() {
    let p = only(&[
        "exchanges:",
        "  market: {}",
        "channels:",
        "  market: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "`market` is declared as a channel and as an exchange"
    );
    assert_eq!(at(&p), (4, 3), "reported at the later of the two");
    assert_eq!(p.labels[0].at.line, 2);
    assert!(help(&p).contains("one namespace"));
}

#[test]
fn two_routes_with_the_same_name_are_reported() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {name: copy, from: in, to: out}",
        "  - {name: copy, from: news, to: out}",
    ]));
    assert_eq!(p.message, "two routes are named `copy`");
    assert_eq!(at(&p), (7, 12));
    assert_eq!(p.labels[0].at.line, 6);

    let p = only(&with_queues(&[
        "routes:",
        "  - {name: route-2, from: in, to: out}",
        "  - {from: news, to: out}",
    ]));
    assert_eq!(
        p.message,
        "two routes are named `route-2` (its default name)"
    );
    assert_eq!(at(&p), (7, 5));
}

#[test]
fn an_invalid_channel_name_is_reported() {
    let p = only(&["channels:", "  trades..nyse: {kind: point-to-point}"]);
    assert_eq!(
        p.message,
        "invalid channel name `trades..nyse`: a name is dot-separated words, and no word may be empty"
    );
    assert_eq!(at(&p), (2, 3));
    let p = only(&["channels:", "  'trades.*': {kind: publish-subscribe}"]);
    assert!(
        p.message.starts_with("invalid channel name `trades.*`"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (2, 4));
}
