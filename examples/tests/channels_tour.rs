//! Runs the `channels_tour` example (built by `cargo test` next to this test) and checks that
//! every message went where the book says it goes.

mod support;

#[test]
fn channels_tour_sends_every_message_where_the_book_says() {
    let text = support::run_example("channels_tour");
    let section = |title: &str| -> String {
        let start = text
            .find(title)
            .unwrap_or_else(|| panic!("no section {title}:\n{text}"));
        let rest = &text[start + title.len()..];
        rest[..rest.find("\n== ").unwrap_or(rest.len())].to_owned()
    };

    let traders = section("== point-to-point");
    for trade in ["buy 100 IBM", "sell 50 VOD", "sell 7 ORCL"] {
        assert_eq!(
            traders.matches(trade).count(),
            1,
            "{trade} handled once:\n{traders}"
        );
    }
    assert!(traders.contains("rejects buy 1 XXX"));

    let subscribers = section("== publish-subscribe");
    for who in ["display", "risk"] {
        for symbol in ["IBM", "MSFT"] {
            let line = subscribers
                .lines()
                .filter(|l| l.starts_with(who) && l.contains(symbol))
                .count();
            assert_eq!(line, 1, "{who} gets {symbol} once:\n{subscribers}");
        }
    }
    assert!(
        !subscribers.contains("VOD"),
        "the expired quote is never delivered"
    );

    let invalid = section("== invalid message channel");
    assert!(invalid.contains(r#"{"side":"buy","symbol":"MSFT"} from `trades.requests`: payload is not a valid TradeRequest: missing field `qty`"#), "{invalid}");

    let dead = section("== dead letter channel");
    assert!(
        dead.contains("XXX") && dead.contains("rejected: unknown symbol XXX"),
        "{dead}"
    );
    assert_eq!(
        dead.matches("from `quotes`, expired").count(),
        2,
        "one per subscription:\n{dead}"
    );

    let counters = section("== counters");
    assert!(
        counters.contains("trades.requests  accepted  4  acked  3  dead-lettered  1  waiting  0"),
        "{counters}"
    );
    assert!(
        counters.contains("dead-letters     accepted  3  acked  3"),
        "{counters}"
    );
}
