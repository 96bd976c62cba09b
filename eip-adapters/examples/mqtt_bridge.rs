//! Sensor readings bridged out of a channel to MQTT and back into another channel, at QoS 1.
//!
//! Ten readings with subjects `sensors.room<n>.temp` go through a channel to [`MqttOutbound`],
//! which publishes each to `eip-example/sensors/room<n>/temp` (the subject's dots become the
//! topic's slashes) and acks it once the broker's PUBACK came. [`MqttSource`] subscribed to
//! `eip-example/sensors/#` feeds a second channel, acknowledging each publish once the channel
//! took it; its consumer prints each reading with its id and headers, the same as they left.
//!
//! ```text
//! cargo run -p eip-adapters --example mqtt_bridge
//! ```
//!
//! The broker is `MQTT_HOST` and `MQTT_PORT` (defaults 127.0.0.1 and 1883), anonymous, MQTT v5
//! (Mosquitto 2 or later).

#[cfg(feature = "mqtt")]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Duration;

    use eip_adapters::bridge::{BridgeError, InboundBridge, Source};
    use eip_adapters::mqtt::{
        MqttBroker, MqttOutbound, MqttOutboundConfig, MqttSource, MqttSourceConfig,
    };
    use eip_core::Message;
    use eip_core::channel::PointToPoint;
    use eip_core::endpoint::Consumer;

    let host = std::env::var("MQTT_HOST").unwrap_or_else(|_| "127.0.0.1".to_owned());
    let port = match std::env::var("MQTT_PORT") {
        Ok(port) => port.parse()?,
        Err(_) => 1883,
    };
    let broker = MqttBroker::new(host, port);

    // The way in: a persistent session, subscribed before anything is published.
    let config = MqttSourceConfig::new(
        broker.clone(),
        "eip-example-bridge-in",
        "eip-example/sensors/#",
    )
    .session_expiry(Duration::from_secs(60));
    let mut source = MqttSource::new(config);
    source.connect(16).await?;
    let readings = PointToPoint::new("readings", 100)?;
    let inbound = InboundBridge::new(source, readings.clone(), 16).spawn();

    // The way out: `sensors.room1.temp` is published to `eip-example/sensors/room1/temp`.
    let config = MqttOutboundConfig::new(
        broker,
        "eip-example-bridge-out",
        "eip-example/{subject}".parse()?,
    );
    let outbound = MqttOutbound::connect(config).await?;
    let outgoing = PointToPoint::new("outgoing", 100)?;
    let publisher = Consumer::new(outgoing.receiver(), outbound)
        .concurrency(8)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();

    for i in 0..10 {
        let reading = Message::builder(format!("{}", 20.0 + f64::from(i) / 4.0))
            .subject(format!("sensors.room{}.temp", i % 3))
            .content_type("text/plain")
            .header("seq", i64::from(i))
            .build();
        outgoing.send(reading).await?;
    }

    let mut receiver = readings.receiver();
    for _ in 0..10 {
        let Some(delivery) = tokio::time::timeout(Duration::from_secs(10), receiver.recv()).await?
        else {
            break;
        };
        let msg = delivery.message();
        println!(
            "{} {} = {} (seq {:?})",
            msg.id(),
            msg.subject()?.unwrap_or("?"),
            msg.payload_str().unwrap_or("?"),
            msg.headers().get("seq"),
        );
        delivery.ack();
    }
    publisher.shutdown().await;
    inbound.shutdown().await?;
    println!("10 readings bridged out to MQTT and back");
    Ok(())
}

#[cfg(not(feature = "mqtt"))]
fn main() {
    eprintln!("this example needs the `mqtt` feature of eip-adapters");
}
