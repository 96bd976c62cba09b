//! Runs the `trading_flow` example (built by `cargo test` next to this test) and checks that
//! the dry run and the running flow agree on where every message goes.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test executable under target/<profile>/deps");
    profile_dir.join("examples").join(name)
}

#[test]
fn trading_flow_delivers_every_message_where_its_dry_run_said() {
    let path = example("trading_flow");
    let out = Command::new(&path)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
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
