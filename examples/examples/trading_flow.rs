//! The book's stock-trading flow, written in Rust with the builder instead of a flow file.
//!
//! The flow is `examples/flows/trading.yaml` line for line: trade requests checked against a
//! JSON Schema, routed by size and side with a wire tap to the audit queue, and quotes
//! published to a topic exchange and joined from `quotes` to `quotes.nyse` and an archive.
//! The example compiles it, asks where a few messages would go (a dry run: nothing is sent),
//! then runs the flow, sends the same messages, and prints what reached each output channel.
//!
//! Run it with `cargo run -p examples --example trading_flow`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_dsl::builder::{FlowBuilder, channel, exchange, join, route};
use eip_dsl::compile::{InputMessage, Output};
use eip_dsl::core::Message;

/// The trading flow: channels, the trade router, two joins and the `market` exchange.
fn trading_flow() -> FlowBuilder {
    let queue = channel::point_to_point;
    FlowBuilder::new()
        .channel(
            "trades.requests",
            queue()
                .datatype("schemas/trade.json")
                .invalid("trades.invalid"),
        )
        .channel("trades.invalid", queue())
        .channel("trades.buy", queue())
        .channel("trades.sell", queue())
        .channel("trades.approval", queue().durable())
        .channel("trades.audit", queue())
        .channel("quotes", channel::publish_subscribe())
        .channel("quotes.nyse", channel::publish_subscribe())
        .channel("quotes.archive", queue())
        .channel("unrouted", queue())
        .route(
            route::from("trades.requests")
                .name("trade-router")
                .wire_tap("trades.audit")
                .choice()
                .when("$.quantity > 10000", "trades.approval")
                .when(r#"$.side == "buy""#, "trades.buy")
                .when(r#"$.side == "sell""#, "trades.sell"),
        )
        .join(
            join::from("quotes")
                .to("quotes.nyse")
                .filter(r#"$.exchange == "NYSE""#)
                .hops(5),
        )
        .join(join::from("quotes").to("quotes.archive").archival())
        .exchange(
            "market",
            exchange::topic()
                .alternate("unrouted")
                .bind("stock.*.nyse", ["quotes.nyse"])
                .bind("stock.#", ["quotes"]),
        )
}

/// A few messages, in the input format of `eip route` and `eip run`.
const MESSAGES: [&str; 6] = [
    r#"{"to": "trades.requests", "payload": {"side": "buy", "symbol": "IBM", "quantity": 100}}"#,
    r#"{"to": "trades.requests", "payload": {"side": "buy", "symbol": "AAPL", "quantity": 50000}}"#,
    r#"{"to": "trades.requests", "payload": {"side": "short", "symbol": "GME", "quantity": 10}}"#,
    r#"{"to": "trades.requests", "payload": {"side": "sell", "quantity": 5}}"#,
    r#"{"to": "market", "subject": "stock.ibm.nyse", "payload": {"symbol": "IBM", "exchange": "NYSE"}}"#,
    r#"{"to": "market", "subject": "bond.ust10y", "payload": {"symbol": "UST10Y"}}"#,
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The schema path is relative to the flow's base directory, as in a flow file.
    let base_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("flows");
    let flow = trading_flow().compile(&base_dir)?;
    let messages = MESSAGES
        .iter()
        .map(|line| InputMessage::parse(line))
        .collect::<Result<Vec<_>, _>>()?;

    println!("== dry run: where each message would go");
    for input in &messages {
        let report = flow.dry_run(input)?;
        println!("{}", describe(input));
        println!("    stored on {}", report.stored.join(", "));
        if let Some(dead) = &report.dead_letter {
            println!("    dead-lettered on {}: {}", dead.channel, dead.reason);
        }
        if let Some(invalid) = &report.invalid {
            println!("    invalid, on {}: {}", invalid.channel, invalid.reason);
        }
    }

    println!("\n== running: what reaches each output channel");
    // Outputs arrive from several consumers at once; collect them and print them sorted.
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    let output: Output = Arc::new(move |channel: &str, msg: &Message| {
        let payload = msg.payload_str().unwrap_or("<binary payload>");
        if let Ok(mut delivered) = sink.lock() {
            delivered.push(format!("{channel:<16} {payload}"));
        }
    });
    let running = flow.start(output);
    for input in messages {
        let to = input.to.clone();
        if let Err(e) = flow.bus().publish(&to, input.message).await {
            println!("sending to {to} failed: {e}");
        }
    }
    let left = running.stop(Duration::from_secs(5)).await;
    let mut lines = delivered.lock().map(|d| d.clone()).unwrap_or_default();
    lines.sort();
    for line in &lines {
        println!("{line}");
    }
    if !left.is_empty() {
        println!("still waiting when stopped: {left:?}");
    }
    Ok(())
}

/// `to <- payload (subject)`, for the dry-run listing.
fn describe(input: &InputMessage) -> String {
    let payload = input.message.payload_str().unwrap_or("<binary payload>");
    match input.message.subject() {
        Ok(Some(subject)) => format!("{} <- {payload} (subject {subject})", input.to),
        _ => format!("{} <- {payload}", input.to),
    }
}
