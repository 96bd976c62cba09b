//! Datatype and invalid message channels: misfits diverted, and where a payload fails its JSON
//! Schema.

use eip_core::channel::{
    InvalidMessageChannel, JsonSchema, JsonType, PointToPoint, PublishSubscribe, TryRecvError,
};
use eip_core::message::DeathReason;
use eip_core::{Message, Outcome};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Trade {
    side: String,
    qty: u32,
}

#[tokio::test]
async fn a_datatype_channel_diverts_misfits_to_the_invalid_message_channel() {
    let invalid = InvalidMessageChannel::new("trades.invalid", 10).unwrap();
    let ch = PointToPoint::builder("trades")
        .datatype(JsonType::<Trade>::new(), invalid.clone())
        .build()
        .unwrap();
    assert_eq!(ch.datatype(), Some("Trade"));
    let ok = ch
        .send(Message::new(r#"{"side":"buy","qty":3}"#))
        .await
        .unwrap();
    assert_eq!(ok, Outcome::Accepted);
    let bad = ch.send(Message::new(r#"{"side":"buy"}"#)).await.unwrap();
    let Outcome::Invalid { reason } = bad else {
        panic!("expected Invalid")
    };
    assert!(reason.contains("missing field `qty`"), "{reason}");
    let text = ch
        .send(Message::builder("{}").content_type("text/plain").build())
        .await
        .unwrap();
    assert!(matches!(text, Outcome::Invalid { reason } if reason.contains("text/plain")));
    let stats = ch.stats();
    assert_eq!(
        (stats.accepted, stats.invalid),
        (1, 2),
        "misfits are counted"
    );

    let mut rx = ch.receiver();
    let d = rx.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some(r#"{"side":"buy","qty":3}"#));
    d.ack();
    assert_eq!(
        rx.try_recv().unwrap_err(),
        TryRecvError::Empty,
        "misfits never reach a consumer"
    );
    let inv = invalid.receiver().try_recv().unwrap();
    let death = inv.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Invalid);
    assert_eq!(death.channel, "trades");
    assert!(death.error.unwrap().contains("qty"));
}

#[tokio::test]
async fn a_json_schema_datatype_reports_where_the_payload_fails() {
    let schema = serde_json::json!({
        "type": "object",
        "required": ["side"],
        "properties": {"side": {"enum": ["buy", "sell"]}, "qty": {"type": "integer", "minimum": 1}}
    });
    let invalid = InvalidMessageChannel::new("quotes.invalid", 10).unwrap();
    let ch = PublishSubscribe::builder("quotes")
        .datatype(JsonSchema::new("trade", &schema).unwrap(), invalid.clone())
        .build()
        .unwrap();
    let mut sub = ch.subscribe();
    assert_eq!(
        ch.publish(Message::new(r#"{"side":"sell","qty":2}"#))
            .await
            .unwrap(),
        Outcome::Accepted
    );
    let Outcome::Invalid { reason } = ch
        .publish(Message::new(r#"{"side":"hold","qty":0}"#))
        .await
        .unwrap()
    else {
        panic!("expected Invalid")
    };
    assert!(
        reason.contains("/side") && reason.contains("/qty"),
        "{reason}"
    );
    let Outcome::Invalid { reason } = ch.publish(Message::new("not json")).await.unwrap() else {
        panic!("expected Invalid")
    };
    assert!(reason.contains("not JSON"), "{reason}");
    sub.recv().await.unwrap().ack();
    assert_eq!(sub.try_recv().unwrap_err(), TryRecvError::Empty);
    assert_eq!(invalid.stats().depth, 2);
    assert!(JsonSchema::new("broken", &serde_json::json!({"type": 12})).is_err());
}
