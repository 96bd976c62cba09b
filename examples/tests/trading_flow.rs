//! Runs the `trading_flow` example (built by `cargo test` next to this test) and checks that
//! the dry run and the running flow agree on where every message goes.

mod support;

#[test]
fn trading_flow_delivers_every_message_where_its_dry_run_said() {
    let text = support::run_example("trading_flow");
    let (dry, run) = text
        .split_once("== running")
        .unwrap_or_else(|| panic!("no running section:\n{text}"));

    for expected in [
        "stored on trades.audit, trades.buy, trades.requests",
        "stored on trades.approval, trades.audit, trades.requests",
        "dead-lettered on dead-letters: no-route",
        "invalid, on trades.invalid: does not match schema schemas/trade.json",
        "stored on quotes, quotes.archive, quotes.nyse",
        "stored on unrouted",
    ] {
        assert!(dry.contains(expected), "dry run lacks `{expected}`:\n{dry}");
    }

    // Each output channel got exactly the messages the dry run stored there.
    let on = |channel: &str| -> Vec<&str> {
        run.lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(c, _)| *c == channel)
            .map(|(_, payload)| payload.trim())
            .collect()
    };
    assert_eq!(
        on("trades.buy"),
        [r#"{"quantity":100,"side":"buy","symbol":"IBM"}"#]
    );
    assert_eq!(on("trades.approval").len(), 1, "{run}");
    assert_eq!(on("trades.sell").len(), 0, "{run}");
    assert_eq!(
        on("trades.audit").len(),
        3,
        "a wire-tap copy per valid request:\n{run}"
    );
    assert_eq!(
        on("dead-letters"),
        [r#"{"quantity":10,"side":"short","symbol":"GME"}"#]
    );
    assert_eq!(on("trades.invalid"), [r#"{"quantity":5,"side":"sell"}"#]);
    for quote_channel in ["quotes", "quotes.nyse", "quotes.archive"] {
        assert_eq!(on(quote_channel).len(), 1, "{quote_channel}:\n{run}");
    }
    assert_eq!(on("unrouted"), [r#"{"symbol":"UST10Y"}"#]);
    assert!(!run.contains("still waiting"), "{run}");
}
