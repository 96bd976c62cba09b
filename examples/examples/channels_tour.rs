//! A tour of eip's channels, printing what went where.
//!
//! A small stock-trading setup on one message bus:
//! - `trades.requests`: a point-to-point Datatype Channel of `TradeRequest`s; two competing
//!   traders share its work, and malformed requests go to the invalid message channel
//!   `trades.invalid` instead;
//! - `quotes`: a publish-subscribe channel with two subscribers (a ticker display and a durable
//!   risk engine that is away for a while);
//! - the bus's dead letter channel, which receives an expired quote and a trade a trader rejects.
//!
//! Run it with `cargo run -p examples --example channels_tour`.

use std::collections::BTreeMap;
use std::time::Duration;

use eip_core::channel::{InvalidMessageChannel, JsonType, PointToPoint, PublishSubscribe};
use eip_core::{Message, MessageBus, Outcome};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct TradeRequest {
    side: String,
    symbol: String,
    qty: u32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bus = MessageBus::new();

    // Trade requests: a datatype channel with its invalid message channel.
    let invalid = InvalidMessageChannel::new("trades.invalid", 100)?;
    bus.register((*invalid).clone())?;
    let requests = bus
        .builder::<PointToPoint>("trades.requests")
        .datatype(JsonType::<TradeRequest>::new(), invalid.clone())
        .build()?;
    bus.register(requests.clone())?;

    // Quotes: publish-subscribe, with a live display and a durable risk engine.
    let quotes = bus.builder::<PublishSubscribe>("quotes").build()?;
    bus.register(quotes.clone())?;
    let mut display = quotes.subscribe();
    drop(quotes.durable_subscribe("risk")); // the risk engine subscribes, then goes away

    println!("== sending");
    let trades = [
        r#"{"side":"buy","symbol":"IBM","qty":100}"#,
        r#"{"side":"sell","symbol":"VOD","qty":50}"#,
        r#"{"side":"buy","symbol":"MSFT"}"#, // no qty: does not fit the datatype
        r#"{"side":"sell","symbol":"ORCL","qty":7}"#,
        r#"{"side":"buy","symbol":"XXX","qty":1}"#, // a trader will reject this one
    ];
    for t in trades {
        match bus.send("trades.requests", Message::new(t)).await? {
            Outcome::Accepted => println!("trades.requests  <- {t}"),
            Outcome::Invalid { reason } => {
                println!("trades.invalid   <- {t}\n                    ({reason})")
            }
            other => println!("trades.requests  ?? {t}: {other:?}"),
        }
    }
    for (symbol, price, ttl_ms) in [
        ("IBM", "142.10", 60_000),
        ("VOD", "0.71", 0),
        ("MSFT", "410.5", 60_000),
    ] {
        let quote = Message::builder(format!(r#"{{"symbol":"{symbol}","price":{price}}}"#))
            .subject(format!("stock.{symbol}.quote"))
            .time_to_live(Duration::from_millis(ttl_ms))
            .build();
        quotes.publish(quote).await?;
        println!("quotes           <- {symbol} {price} (ttl {ttl_ms} ms)");
    }

    println!("\n== point-to-point: two traders compete for the requests");
    let mut handled: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut traders = [
        ("trader-a", requests.receiver()),
        ("trader-b", requests.receiver()),
    ];
    let mut turn = 0;
    loop {
        let (name, rx) = &mut traders[turn % 2];
        turn += 1;
        let Ok(delivery) = rx.try_recv() else { break };
        let trade: TradeRequest = delivery.message().json()?;
        if trade.symbol == "XXX" {
            println!(
                "{name} rejects {} {} {}",
                trade.side, trade.qty, trade.symbol
            );
            delivery.reject("unknown symbol XXX").await;
        } else {
            handled
                .entry(name)
                .or_default()
                .push(format!("{} {} {}", trade.side, trade.qty, trade.symbol));
            delivery.ack();
        }
    }
    for (name, trades) in &handled {
        println!("{name} handled {trades:?}");
    }

    println!("\n== publish-subscribe: every subscriber gets each quote");
    while let Ok(d) = display.try_recv() {
        println!(
            "display  got {}",
            d.message().payload_str().unwrap_or("<binary>")
        );
        d.ack();
    }
    let mut risk = quotes.durable_subscribe("risk");
    while let Ok(d) = risk.try_recv() {
        println!(
            "risk     got {} (kept while it was away)",
            d.message().payload_str().unwrap_or("<binary>")
        );
        d.ack();
    }

    println!("\n== invalid message channel `trades.invalid`");
    let mut rx = invalid.receiver();
    while let Ok(d) = rx.try_recv() {
        let death = d
            .message()
            .death()?
            .ok_or("an invalid message without death record")?;
        println!(
            "{} from `{}`: {}",
            d.message().payload_str().unwrap_or("<binary>"),
            death.channel,
            death.error.unwrap_or_default()
        );
        d.ack();
    }

    println!(
        "\n== dead letter channel `{}`",
        bus.dead_letter_channel().name()
    );
    let mut rx = bus.dead_letter_channel().receiver();
    while let Ok(d) = rx.try_recv() {
        let death = d
            .message()
            .death()?
            .ok_or("a dead letter without death record")?;
        let error = death.error.map(|e| format!(": {e}")).unwrap_or_default();
        println!(
            "{} from `{}`, {}{error}",
            d.message().payload_str().unwrap_or("<binary>"),
            death.channel,
            death.reason
        );
        d.ack();
    }

    println!("\n== counters");
    for name in bus.channel_names() {
        let s = bus.channel(&name)?.stats();
        println!(
            "{name:<16} accepted {:>2}  acked {:>2}  dead-lettered {:>2}  waiting {:>2}",
            s.accepted, s.acked, s.dead_lettered, s.depth
        );
    }
    Ok(())
}
