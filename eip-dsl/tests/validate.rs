//! Reading and validating flow files: every rule reports its problem at the offending value,
//! with the key and a suggestion; good files become the expected plan; no input panics.

use std::path::{Path, PathBuf};

use eip_core::channel::{ChannelKind, Overflow};
use eip_core::predicate::Predicate;
use eip_dsl::diagnostic::{FlowErrors, Problem};
use eip_dsl::load::{load_file, load_str, parse_str};
use eip_dsl::plan::{ActionPlan, Plan, RecipientsPlan, TargetRef};
use proptest::prelude::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validate")
}

/// The lines joined, so that line N of the flow is `lines[N - 1]`.
fn flow(lines: &[&str]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn load(lines: &[&str]) -> Result<Plan, FlowErrors> {
    load_str(&flow(lines), "flow.yaml", &fixtures())
}

fn problems(lines: &[&str]) -> Vec<Problem> {
    match load(lines) {
        Ok(_) => panic!("the flow validated:\n{}", flow(lines)),
        Err(errors) => errors.problems,
    }
}

/// The one problem of a flow, failing (with the rendered report) if there are others.
fn only(lines: &[&str]) -> Problem {
    let errors = load(lines).expect_err("the flow validated");
    assert_eq!(errors.problems.len(), 1, "{}", errors.render());
    errors.problems.into_iter().next().expect("one problem")
}

fn at(problem: &Problem) -> (u32, u32) {
    let at = problem.at.expect("a position");
    (at.line, at.column)
}

fn help(problem: &Problem) -> &str {
    problem.help.as_deref().unwrap_or("")
}

const QUEUES: &[&str] = &[
    "channels:",
    "  in:  {kind: point-to-point}",
    "  out: {kind: point-to-point}",
    "  news: {kind: publish-subscribe}",
];

/// `QUEUES` and then `more`.
fn with_queues<'a>(more: &[&'a str]) -> Vec<&'a str> {
    QUEUES.iter().copied().chain(more.iter().copied()).collect()
}

// ---------------------------------------------------------------- the canonical example

#[test]
fn the_issue_example_validates_to_the_expected_plan() {
    let plan =
        load_file(&fixtures().join("trades.yaml")).unwrap_or_else(|e| panic!("{}", e.render()));

    let kinds: Vec<(&str, ChannelKind)> = plan
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    use ChannelKind::{PointToPoint as P2p, PublishSubscribe as PubSub};
    assert_eq!(
        kinds,
        [
            ("trades.requests", P2p),
            ("trades.invalid", P2p),
            ("trades.buy", P2p),
            ("trades.other", P2p),
            ("trades.audit", P2p),
            ("unrouted", P2p),
            ("quotes", PubSub),
            ("quotes.nyse", PubSub),
            ("dead-letters", P2p),
        ]
    );
    let requests = plan.channel("trades.requests").expect("trades.requests");
    let datatype = requests.datatype.as_ref().expect("a datatype");
    assert_eq!(datatype.path, "schemas/trade.json");
    assert_eq!(datatype.invalid, "trades.invalid");
    assert_eq!(datatype.schema["required"][0], "side");

    assert_eq!(plan.routes.len(), 1);
    let route = &plan.routes[0];
    assert_eq!(route.name, "route-1");
    assert_eq!(route.from, "trades.requests");
    assert!(route.filter.is_none() && route.discard.is_none() && route.wire_tap.is_none());
    match &route.action {
        ActionPlan::Choice { when, otherwise } => {
            assert_eq!(when.len(), 1);
            assert_eq!(when[0].1, TargetRef::Channel("trades.buy".into()));
            let buy = eip_core::Message::new(r#"{"side": "buy"}"#);
            let sell = eip_core::Message::new(r#"{"side": "sell"}"#);
            assert!(when[0].0.matches(&buy) && !when[0].0.matches(&sell));
            assert_eq!(otherwise, &Some(TargetRef::Channel("trades.other".into())));
        }
        other => panic!("expected a choice, got {other:?}"),
    }

    let joins: Vec<(&str, &str, u32, bool, bool)> = plan
        .joins
        .iter()
        .map(|j| {
            (
                j.from.as_str(),
                j.to.as_str(),
                j.hops,
                j.archival,
                j.filter.is_some(),
            )
        })
        .collect();
    assert_eq!(
        joins,
        [
            ("quotes", "quotes.nyse", 5, false, true),
            ("quotes", "trades.audit", 10, true, false),
        ]
    );

    let market = plan.exchange("market").expect("market");
    assert_eq!(market.alternate.as_deref(), Some("unrouted"));
    let bindings: Vec<(Option<&str>, Vec<&str>)> = market
        .bindings
        .iter()
        .map(|b| {
            (
                b.key.as_ref().map(|k| k.as_str()),
                b.to.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            (Some("stock.*.nyse"), vec!["quotes.nyse"]),
            (Some("stock.#"), vec!["quotes", "trades.audit"]),
        ]
    );
}

#[test]
fn an_empty_file_is_an_empty_flow_with_its_dead_letter_channel() {
    for text in ["", "\n", "# nothing yet\n", "channels:\nroutes:\n"] {
        let plan = load_str(text, "empty.yaml", Path::new("."))
            .unwrap_or_else(|e| panic!("{}", e.render()));
        assert_eq!(plan.channels.len(), 1, "{text:?}");
        assert_eq!(plan.channels[0].name, "dead-letters");
        assert_eq!(plan.channels[0].kind, ChannelKind::PointToPoint);
        assert!(plan.routes.is_empty() && plan.joins.is_empty() && plan.exchanges.is_empty());
    }
}

#[test]
fn every_key_is_read_into_the_plan() {
    let plan = load(&with_queues(&[
        "  fast:",
        "    kind: publish-subscribe",
        "    capacity: 64",
        "    dead-letter: out",
        "    time-to-live: 1500ms",
        "    overflow: drop-oldest",
        "    redelivery: {max-attempts: 3, initial-backoff: 10ms, max-backoff: 1s, multiplier: 3, jitter: 0.5}",
        "  taps: {kind: point-to-point}",
        "routes:",
        "  - name: sort",
        "    from: in",
        "    filter: 'exists($.id)'",
        "    discard: out",
        "    wire-tap: taps",
        "    recipient-list: [fast, mx]",
        "  - {from: news, recipient-list: {header: to}}",
        "  - {from: fast, to: [out, mx]}",
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - to: out",
    ]))
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let fast = plan.channel("fast").expect("fast");
    assert_eq!(fast.capacity, Some(64));
    assert_eq!(fast.dead_letter.as_deref(), Some("out"));
    assert_eq!(
        fast.time_to_live,
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!(fast.overflow, Some(Overflow::DropOldest));
    let redelivery = fast.redelivery.as_ref().expect("redelivery");
    assert_eq!(redelivery.max_attempts, 3);
    assert_eq!(
        redelivery.initial_backoff,
        std::time::Duration::from_millis(10)
    );
    assert_eq!(redelivery.max_backoff, std::time::Duration::from_secs(1));
    assert_eq!((redelivery.multiplier, redelivery.jitter), (3.0, 0.5));

    let names: Vec<&str> = plan.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["sort", "route-2", "route-3"]);
    let sort = &plan.routes[0];
    assert!(sort.filter.is_some());
    assert_eq!(sort.discard.as_deref(), Some("out"));
    assert_eq!(sort.wire_tap.as_deref(), Some("taps"));
    match &sort.action {
        ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)) => assert_eq!(
            targets,
            &[
                TargetRef::Channel("fast".into()),
                TargetRef::Exchange("mx".into())
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &plan.routes[1].action,
        ActionPlan::RecipientList(RecipientsPlan::Header(h)) if h == "to"
    ));
    assert!(matches!(&plan.routes[2].action, ActionPlan::To(t) if t.len() == 2));
    let mx = plan.exchange("mx").expect("mx");
    assert!(mx.bindings[0].key.is_none(), "no key matches every subject");
}

// ---------------------------------------------------------------- reading

#[test]
fn an_unknown_key_is_reported_with_the_closest_valid_one() {
    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-lve: 30s}"]);
    assert_eq!(p.message, "unknown key `time-to-lve` in channel `q`");
    assert_eq!(at(&p), (2, 29));
    assert_eq!(help(&p), "did you mean `time-to-live`?");
    assert_eq!(p.key.as_deref(), Some(r#"channels["q"].time-to-lve"#));

    let p = only(&["chanels:", "  q: {kind: point-to-point}"]);
    assert_eq!(p.message, "unknown key `chanels` in the flow file");
    assert_eq!((at(&p), help(&p)), ((1, 1), "did you mean `channels`?"));
}

#[test]
fn an_unknown_key_far_from_any_lists_the_valid_ones() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, xyzzy: 1}",
    ]));
    assert_eq!(p.message, "unknown key `xyzzy` in route 1");
    assert_eq!(at(&p), (6, 25));
    assert!(
        help(&p).starts_with("expected one of `name`, `from`"),
        "{}",
        help(&p)
    );
}

#[test]
fn unknown_keys_are_found_at_every_level() {
    let ps = problems(&with_queues(&[
        "  r: {kind: point-to-point, redelivery: {max-attempt: 3}}",
        "routes:",
        "  - from: in",
        "    choice:",
        "      - {when: '$.a == 1', to: out, then: x}",
        "    recipient-list: {headr: x}",
        "joins:",
        "  - {from: news, to: out, hop: 2}",
        "exchanges:",
        "  mx: {alternat: out, bindings: [{key: a, to: out, ky: b}]}",
    ]));
    let found: Vec<(&str, (u32, u32))> = ps
        .iter()
        .filter(|p| p.message.starts_with("unknown key"))
        .map(|p| (p.message.as_str(), at(p)))
        .collect();
    assert_eq!(
        found,
        [
            (
                "unknown key `max-attempt` in `redelivery` of channel `r`",
                (5, 42)
            ),
            ("unknown key `then` in `choice` clause 1", (9, 37)),
            ("unknown key `headr` in `recipient-list`", (10, 22)),
            ("unknown key `hop` in join 1", (12, 27)),
            ("unknown key `alternat` in exchange `mx`", (14, 8)),
            ("unknown key `ky` in binding 1 of exchange `mx`", (14, 52)),
        ]
    );
}

#[test]
fn a_value_of_the_wrong_type_says_what_was_expected_and_found() {
    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: ten}"]);
    assert_eq!(
        p.message,
        "`capacity` must be a whole number, found a string"
    );
    assert_eq!(at(&p), (2, 39));

    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: 2.5}"]);
    assert_eq!(p.message, "`capacity` must be a whole number, found 2.5");

    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: -1}"]);
    assert_eq!(p.message, "`capacity` must be at least 1, found -1");

    let p = only(&with_queues(&[
        "joins:",
        "  - {from: news, to: out, archival: yes please}",
    ]));
    assert_eq!(
        p.message,
        "`archival` must be `true` or `false`, found a string"
    );
    assert_eq!(at(&p), (6, 37));

    let p = only(&["routes: {from: in}"]);
    assert_eq!(p.message, "`routes` must be a list, found a mapping");
}

#[test]
fn an_unknown_channel_kind_is_a_problem_with_a_suggestion() {
    let p = only(&["channels:", "  q: {kind: point-to-pont}"]);
    assert_eq!(p.message, "`kind` can not be `point-to-pont`");
    assert_eq!(
        (at(&p), help(&p)),
        ((2, 13), "did you mean `point-to-point`?")
    );
}

#[test]
fn a_missing_required_key_is_reported_at_its_entry() {
    let p = only(&["channels:", "  q: {capacity: 5}"]);
    assert_eq!(p.message, "channel `q` has no `kind`");
    assert_eq!(at(&p), (2, 3));
    assert!(help(&p).contains("kind: point-to-point"));

    let p = only(&with_queues(&["routes:", "  - {to: out}"]));
    assert_eq!(p.message, "route 1 has no `from`");
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&["joins:", "  - from: news"]));
    assert_eq!(p.message, "join 1 has no `to`");
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    choice:",
        "      - to: out",
    ]));
    assert_eq!(p.message, "`choice` clause 1 has no `when`");
    assert_eq!(at(&p), (8, 9));
}

#[test]
fn a_key_written_twice_is_reported_with_both_positions() {
    let p = only(&[
        "channels:",
        "  q:",
        "    kind: point-to-point",
        "    capacity: 5",
        "    capacity: 6",
    ]);
    assert_eq!(p.message, "`capacity` is written twice in channel `q`");
    assert_eq!(at(&p), (5, 5));
    assert_eq!(p.labels.len(), 1);
    assert_eq!((p.labels[0].at.line, p.labels[0].at.column), (4, 5));
    assert_eq!(p.labels[0].message, "first written here");
}

#[test]
fn a_yaml_syntax_error_is_one_problem_with_its_position() {
    let p = only(&["channels:", "  q: {kind: point-to-point", "routes: []"]);
    assert!(p.message.starts_with("invalid YAML: "), "{}", p.message);
    let (line, _) = at(&p);
    assert!((2..=3).contains(&line), "{p:?}");
}

#[test]
fn several_documents_are_refused() {
    let p = only(&["channels: {}", "---", "routes: []"]);
    assert!(p.message.starts_with("invalid YAML: "), "{}", p.message);
}

#[test]
fn a_file_that_is_not_a_mapping_is_refused() {
    let p = only(&["- from: in"]);
    assert!(
        p.message.starts_with("a flow file is a mapping"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (1, 1));
}

#[test]
fn adapters_and_bridges_are_reserved() {
    let ps = problems(&["adapters:", "  - file: x", "bridges: {}"]);
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`adapters` are not supported by this version of eip yet",
                (1, 1)
            ),
            (
                "`bridges` are not supported by this version of eip yet",
                (3, 1)
            ),
        ]
    );
    let spec = parse_str(&flow(&["adapters: []"]), "f").expect("reading accepts the reserved keys");
    assert_eq!(spec.reserved[0].value, "adapters");
}

#[test]
fn a_quoted_value_is_located_at_its_first_character() {
    let spec = parse_str(
        &flow(&[
            "channels:",
            "  q: {kind: point-to-point, invalid: \"bad\", dead-letter: 'dl'}",
        ]),
        "f",
    )
    .expect("reads");
    let q = &spec.channels[0].1;
    let invalid = q.invalid.as_ref().and_then(|v| v.at).expect("position");
    assert_eq!((invalid.line, invalid.column, invalid.len), (2, 39, 3));
    let dead = q.dead_letter.as_ref().and_then(|v| v.at).expect("position");
    assert_eq!((dead.line, dead.column, dead.len), (2, 59, 2));
}

// ---------------------------------------------------------------- names

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

// ---------------------------------------------------------------- joins

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

// ---------------------------------------------------------------- predicates and patterns

#[test]
fn a_predicate_that_does_not_parse_points_inside_the_string() {
    // Single quotes: the expression starts one column after the quote.
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, filter: '$.price >> 100', to: out}",
    ]));
    assert!(
        p.message.starts_with("invalid predicate: "),
        "{}",
        p.message
    );
    // `$.price >> 100` fails at byte 9 (the second `>`): column 26 + 9.
    assert_eq!(at(&p), (6, 34));
    assert_eq!(p.key.as_deref(), Some("routes[0].filter"));

    // Plain scalar in block style.
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    filter: $.price >> 100",
        "    to: out",
    ]));
    assert_eq!(at(&p), (7, 22));

    // Escapes in double quotes are followed: `\"` takes two columns for one byte.
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    choice:",
        r#"      - when: "$.side == \"buy\" >> 1""#,
        "        to: out",
    ]));
    // The value starts at column 16; the parser stops at byte `offset` of it, after the
    // string literal, so two backslashes of the file come before that place.
    let offset = Predicate::parse(r#"$.side == "buy" >> 1"#)
        .err()
        .map(|e| e.offset)
        .expect("does not parse");
    assert!(offset > 15, "{offset}");
    assert_eq!(at(&p), (8, 16 + offset as u32 + 2));
    assert_eq!(p.key.as_deref(), Some("routes[0].choice[0].when"));
}

#[test]
fn a_join_filter_is_a_predicate_too() {
    let p = only(&with_queues(&[
        "joins:",
        "  - {from: news, to: out, filter: '$.a =='}",
    ]));
    assert!(
        p.message.starts_with("invalid predicate: expected"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (6, 36 + 6));
}

#[test]
fn a_topic_pattern_that_does_not_parse_points_at_the_word() {
    let p = only(&with_queues(&[
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - {key: \"stock.ny*.ibm\", to: out}",
    ]));
    assert!(
        p.message.contains("word 2 (`ny*`) mixes a wildcard"),
        "{}",
        p.message
    );
    // The key starts at column 16 (after the quote); `ny*` is 6 bytes in.
    assert_eq!(at(&p), (8, 22));
    assert_eq!(p.at.map(|a| a.len), Some(3));
    assert_eq!(p.key.as_deref(), Some(r#"exchanges["mx"].bindings[0].key"#));
}

#[test]
fn an_unquoted_hash_key_is_explained() {
    let p = only(&with_queues(&[
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - key: #",
        "        to: out",
    ]));
    assert_eq!(
        p.message,
        "`key` must be a topic pattern, found nothing (null)"
    );
    assert!(help(&p).contains("quote it"), "{}", help(&p));
}

// ---------------------------------------------------------------- channels

#[test]
fn a_missing_schema_file_names_the_path_tried() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/nope.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert!(
        p.message
            .starts_with("can not read the schema file `schemas/nope.json`"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (2, 39));
    let tried = fixtures().join("schemas/nope.json");
    assert!(
        help(&p).contains(&tried.display().to_string()),
        "{}",
        help(&p)
    );
}

#[test]
fn a_schema_file_that_is_not_json_or_not_a_schema_is_refused() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/broken.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "the schema file `schemas/broken.json` is not JSON"
    );
    assert!(help(&p).contains("line 5"), "{}", help(&p));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/not-a-schema.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "the schema file `schemas/not-a-schema.json` is not a valid JSON Schema"
    );
}

#[test]
fn a_datatype_and_an_invalid_channel_go_together() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json}",
    ]);
    assert_eq!(
        p.message,
        "channel `q` has a `datatype` but no `invalid` channel"
    );
    assert_eq!(at(&p), (2, 39));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "channel `q` has an `invalid` channel but no `datatype`"
    );
    assert_eq!(at(&p), (2, 38));
}

#[test]
fn invalid_and_dead_letter_channels_must_be_queues() {
    let ps = problems(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json, invalid: news, dead-letter: news}",
        "  news: {kind: publish-subscribe}",
    ]);
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`invalid` must be a point-to-point channel, and `news` is publish-subscribe",
                (2, 68)
            ),
            (
                "`dead-letter` must be a point-to-point channel, and `news` is publish-subscribe",
                (2, 87)
            ),
        ]
    );
    let p = only(&["channels:", "  q: {kind: point-to-point, dead-letter: q}"]);
    assert_eq!(p.message, "channel `q` is its own dead letter channel");
}

#[test]
fn overflow_is_for_publish_subscribe_channels_only() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, overflow: drop-oldest}",
    ]);
    assert_eq!(
        p.message,
        "`overflow` applies to publish-subscribe channels only, and `q` is point-to-point"
    );
    assert_eq!(at(&p), (2, 39));
}

#[test]
fn durations_are_whole_numbers_with_a_unit() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, time-to-live: 1.5s}",
    ]);
    assert_eq!(
        p.message,
        "invalid `time-to-live`: `1.5s` is not a duration"
    );
    assert_eq!(at(&p), (2, 43));
    assert!(help(&p).ends_with("write `1500ms`"), "{}", help(&p));

    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-live: 30}"]);
    assert_eq!(
        p.message,
        "`time-to-live` must be a duration such as `30s`, found a whole number"
    );
    assert!(help(&p).contains("`30s`?"), "{}", help(&p));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, redelivery: {initial-backoff: 3d}}",
    ]);
    assert_eq!(
        p.message,
        "invalid `initial-backoff`: `3d`: unknown unit `d`"
    );

    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-live: 0s}"]);
    assert_eq!(p.message, "`time-to-live` must be longer than 0");
}

#[test]
fn redelivery_values_are_checked() {
    let ps = problems(&[
        "channels:",
        "  q:",
        "    kind: point-to-point",
        "    redelivery:",
        "      max-attempts: 0",
        "      initial-backoff: 2s",
        "      max-backoff: 1s",
        "      multiplier: 0.5",
        "      jitter: 2",
    ]);
    let found: Vec<(&str, u32)> = ps.iter().map(|p| (p.message.as_str(), at(p).0)).collect();
    assert_eq!(
        found,
        [
            ("`max-attempts` must be at least 1, found 0", 5),
            ("`max-backoff` is shorter than `initial-backoff`", 7),
            ("`multiplier` must be at least 1.0, found 0.5", 8),
            ("`jitter` must be from 0.0 to 1.0, found 2", 9),
        ]
    );
}

#[test]
fn capacity_zero_is_refused() {
    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: 0}"]);
    assert_eq!(p.message, "`capacity` must be at least 1, found 0");
    assert_eq!(at(&p), (2, 39));
}

// ---------------------------------------------------------------- routes

#[test]
fn a_route_consumes_a_channel_not_an_exchange() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: mx, to: out}",
        "exchanges:",
        "  mx: {}",
    ]));
    assert_eq!(
        p.message,
        "`from` must name a channel, and `mx` is an exchange"
    );
    assert_eq!(at(&p), (6, 12));
}

#[test]
fn two_routes_consuming_one_queue_are_refused() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out}",
        "  - {from: in, to: news}",
    ]));
    assert_eq!(
        p.message,
        "routes 1 and 2 both consume the point-to-point channel `in`: each message would reach only one of them"
    );
    assert_eq!(at(&p), (7, 12));
    assert!(help(&p).contains("publish-subscribe"));
    // A publish-subscribe channel gives each route every message: allowed.
    assert!(
        load(&with_queues(&[
            "routes:",
            "  - {from: news, to: out}",
            "  - {from: news, to: in}"
        ]))
        .is_ok()
    );
}

#[test]
fn taps_discards_bindings_and_alternates_take_channels_only() {
    let ps = problems(&with_queues(&[
        "routes:",
        "  - {from: in, filter: 'exists($.a)', discard: mx, wire-tap: mx, to: out}",
        "exchanges:",
        "  mx:",
        "    alternate: mx",
        "    bindings: [{key: a, to: mx}]",
    ]));
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`discard` must name a channel, and `mx` is an exchange",
                (6, 48)
            ),
            (
                "`wire-tap` must name a channel, and `mx` is an exchange",
                (6, 62)
            ),
            (
                "`alternate` must name a channel, and `mx` is an exchange",
                (9, 16)
            ),
            (
                "`to` must name a channel, and `mx` is an exchange",
                (10, 29)
            ),
        ]
    );
}

#[test]
fn a_route_can_not_send_to_the_channel_it_consumes() {
    let p = only(&with_queues(&["routes:", "  - {from: in, to: [out, in]}"]));
    assert_eq!(
        p.message,
        "the route sends to `in`, the channel it consumes"
    );
    assert_eq!(at(&p), (6, 26));
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: news, wire-tap: news, to: out}",
    ]));
    assert_eq!(
        p.message,
        "the route sends to `news`, the channel it consumes"
    );
}

#[test]
fn a_route_sends_by_exactly_one_of_to_choice_and_recipient_list() {
    let p = only(&with_queues(&["routes:", "  - {from: in}"]));
    assert_eq!(
        p.message,
        "route `route-1` sends nowhere: it needs `to`, `choice` or `recipient-list`"
    );
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, recipient-list: [news]}",
    ]));
    assert_eq!(
        p.message,
        "route `route-1` has both `to` and `recipient-list`: a route sends by exactly one of them"
    );
    assert_eq!(at(&p), (6, 41));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, otherwise: news}",
    ]));
    assert_eq!(p.message, "`otherwise` without `choice`");
    assert_eq!(at(&p), (6, 36));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, discard: news}",
    ]));
    assert_eq!(
        p.message,
        "`discard` without `filter`: no message is ever discarded"
    );

    let p = only(&with_queues(&["routes:", "  - {from: in, to: [out, out]}"]));
    assert_eq!(p.message, "`out` is listed twice in `to`");
    assert_eq!(at(&p), (6, 26));
}

// ---------------------------------------------------------------- the whole file

#[test]
fn every_problem_of_a_file_is_reported_in_file_order() {
    let errors = load(&[
        "channels:",
        "  trades.in: {kind: point-to-point, capacity: many}",
        "  trades.out: {kind: point-to-point}",
        "  quotes: {kind: publish-subscribe}",
        "routes:",
        "  - from: trades.inn",
        "    filter: '$.a >'",
        "    to: trades.out",
        "joins:",
        "  - {from: trades.in, to: quotes, hops: -2}",
        "exchanges:",
        "  mx:",
        "    bindings: [{key: 'a.b#', to: trades.out}]",
        "    colour: blue",
    ])
    .expect_err("refused");
    let found: Vec<(u32, &str)> = errors
        .problems
        .iter()
        .map(|p| (at(p).0, p.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (2, "`capacity` must be a whole number, found a string"),
            (6, "unknown channel `trades.inn`"),
            (
                7,
                "invalid predicate: expected a literal (a number, a quoted string, `true`, `false` or `null`), found the end of the predicate"
            ),
            (
                10,
                "`trades.in` is a queue (point-to-point channel); a queue can not be the source of a join, only its destination"
            ),
            (10, "`hops` must not be negative, found -2"),
            (
                13,
                "invalid topic pattern `a.b#`: word 2 (`b#`) mixes a wildcard with other characters; use `*` or `#` as a whole word"
            ),
            (14, "unknown key `colour` in exchange `mx`"),
        ],
        "{}",
        errors.render()
    );
}

#[test]
fn a_reading_problem_does_not_cascade_into_unknown_names() {
    // The channel whose kind is misspelt is still declared: routes naming it are not reported.
    let p = only(&with_queues(&[
        "  sink: {kind: queue}",
        "routes:",
        "  - {from: in, to: sink}",
    ]));
    assert_eq!(p.message, "`kind` can not be `queue`");
    // A value of the wrong type does not also make "datatype without invalid".
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json, invalid: [x]}",
    ]);
    assert_eq!(p.message, "`invalid` must be a name, found a list");
}

#[test]
fn render_shows_the_line_a_marker_and_the_help() {
    let errors = load(&[
        "channels:",
        "  trades.requests: {kind: point-to-point}",
        "  trades.buy: {kind: point-to-point}",
        "routes:",
        "  - from: trade.requests",
        "    to: trades.buy",
    ])
    .expect_err("refused");
    let expected = "\
error: unknown channel `trade.requests`
 --> flow.yaml:5:11
  |
5 |   - from: trade.requests
  |           ^^^^^^^^^^^^^^
  = key: routes[0].from
  = help: did you mean `trades.requests`?

flow.yaml: 1 problem
";
    assert_eq!(errors.render(), expected);
    assert_eq!(
        errors.to_string(),
        "flow.yaml:5:11: unknown channel `trade.requests`"
    );
}

#[test]
fn render_shows_the_first_place_of_a_duplicate() {
    let errors = load(&[
        "channels:",
        "  q: {kind: point-to-point}",
        "  q: {kind: point-to-point}",
    ])
    .expect_err("refused");
    let text = errors.render();
    assert!(
        text.contains("3 |   q: {kind: point-to-point}\n  |   ^\n"),
        "{text}"
    );
    assert!(
        text.contains("2 |   q: {kind: point-to-point}\n  |   - first declared here\n"),
        "{text}"
    );
}

#[test]
fn the_miette_report_lists_every_problem() {
    use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
    let errors = load(&with_queues(&["routes:", "  - {from: inn, to: ot}"])).expect_err("refused");
    assert_eq!(errors.related().map(Iterator::count), Some(2));
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, &errors)
        .expect("renders");
    assert!(
        out.contains("unknown channel `inn`") && out.contains("unknown channel or exchange `ot`"),
        "{out}"
    );
    assert!(out.contains("did you mean `in`?"), "{out}");
}

#[test]
fn an_unreadable_flow_file_is_one_problem() {
    let errors = load_file(&fixtures().join("no-such-flow.yaml")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
    assert!(
        errors.problems[0]
            .message
            .starts_with("can not read the flow file")
    );
}

// ---------------------------------------------------------------- hostile input

#[test]
fn deep_nesting_is_refused_with_a_problem() {
    let deep = format!("channels: {}{}", "[".repeat(10_000), "]".repeat(10_000));
    let errors = load_str(&deep, "deep.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
    assert!(
        errors.problems[0].message.starts_with("invalid YAML"),
        "{}",
        errors.problems[0].message
    );

    let mut block = String::new();
    for depth in 0..300 {
        block.push_str(&" ".repeat(depth));
        block.push_str("a:\n");
    }
    let errors = load_str(&block, "deep.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
}

#[test]
fn a_billion_laughs_is_refused_with_a_problem() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    text.push_str("channels: *a9\n");
    let errors = load_str(&text, "lol.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1, "{}", errors.render());
    assert!(
        errors.problems[0].message.starts_with("invalid YAML"),
        "{}",
        errors.problems[0].message
    );
}

#[test]
fn an_oversized_file_is_refused_without_parsing() {
    let big = "#".repeat(eip_dsl::load::MAX_FLOW_FILE_BYTES + 1);
    let errors = load_str(&big, "big.yaml", Path::new(".")).expect_err("refused");
    assert!(errors.problems[0].message.contains("bytes long"));
}

const VALID: &str = include_str!("fixtures/validate/trades.yaml");

/// Loads `text` and checks the outcome is coherent: it never panics (the property), and a
/// refusal always says something, with positions inside the text.
fn load_never_panics(text: &str) {
    if let Err(errors) = load_str(text, "fuzz.yaml", &fixtures()) {
        assert!(!errors.problems.is_empty());
        for p in &errors.problems {
            if let Some(at) = p.at {
                assert!(at.offset <= text.len(), "{p:?}");
            }
        }
        let _ = errors.render();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_the_loader(text in "\\PC{0,200}") {
        load_never_panics(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        load_never_panics(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn yaml_like_text_never_panics_the_loader(
        text in "([a-z:{}\\[\\],'\"&*!#|>. -]|\n|  |-1|1.5|0x1){0,120}"
    ) {
        load_never_panics(&text);
    }

    #[test]
    fn mutations_of_a_valid_flow_never_panic_the_loader(
        edits in proptest::collection::vec((0u8..4, any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<char>()), 1..6)
    ) {
        let mut lines: Vec<String> = VALID.lines().map(str::to_owned).collect();
        for (op, a, b, c) in edits {
            if lines.is_empty() {
                break;
            }
            let i = a.index(lines.len());
            match op {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let line = lines[i].clone();
                    lines.insert(b.index(lines.len() + 1), line);
                }
                2 => {
                    // Swap two characters of a line.
                    let mut chars: Vec<char> = lines[i].chars().collect();
                    if chars.len() > 1 {
                        let x = b.index(chars.len());
                        let y = (x + 1) % chars.len();
                        chars.swap(x, y);
                        lines[i] = chars.into_iter().collect();
                    }
                }
                _ => {
                    // Replace a character.
                    let mut chars: Vec<char> = lines[i].chars().collect();
                    if !chars.is_empty() {
                        let x = b.index(chars.len());
                        chars[x] = c;
                        lines[i] = chars.into_iter().collect();
                    }
                }
            }
        }
        load_never_panics(&lines.join("\n"));
    }
}
