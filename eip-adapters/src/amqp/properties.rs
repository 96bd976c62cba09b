//! How an eip message's id and headers map onto AMQP properties and the headers table, and
//! back.
//!
//! Out: the eip message id is the AMQP `message_id`; `correlation-id`, `return-address`
//! (`reply_to`), `content-type` and `priority` are the AMQP properties of the same meaning;
//! `expires-at` travels in the headers table and as the per-message TTL (`expiration`, the
//! milliseconds left when published) so RabbitMQ drops what expires while queued; every other
//! header (`subject`, `hop-budget`, your own) is a typed entry of the headers table (strings,
//! 64-bit integers, doubles, booleans, byte arrays).
//!
//! In: the same, the other way; the routing key becomes the `subject` when the message has
//! none.

use eip_core::message::{HeaderValue, Message, MessageId, names, now_millis};
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString};

/// The AMQP properties carrying `msg`'s id and headers.
pub(super) fn properties(msg: &Message, broker_expiration: bool) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_message_id(msg.id().to_string().into());
    let mut table = FieldTable::default();
    for (name, value) in msg.headers().iter() {
        match (name, value) {
            (names::CORRELATION_ID, HeaderValue::Str(s)) => {
                props = props.with_correlation_id(s.as_str().into());
            }
            (names::RETURN_ADDRESS, HeaderValue::Str(s)) => {
                props = props.with_reply_to(s.as_str().into());
            }
            (names::CONTENT_TYPE, HeaderValue::Str(s)) => {
                props = props.with_content_type(s.as_str().into());
            }
            (names::PRIORITY, HeaderValue::Int(p)) if (0..=255).contains(p) => {
                props = props.with_priority(*p as u8);
            }
            _ => {
                if broker_expiration
                    && name == names::EXPIRES_AT
                    && let HeaderValue::Int(at) = value
                {
                    let left = at.saturating_sub(now_millis() as i64).max(0);
                    props = props.with_expiration(left.to_string().into());
                }
                table.insert(name.into(), amqp_value(value));
            }
        }
    }
    props.with_headers(table)
}

fn amqp_value(value: &HeaderValue) -> AMQPValue {
    match value {
        HeaderValue::Str(s) => AMQPValue::LongString(s.as_str().into()),
        HeaderValue::Int(i) => AMQPValue::LongLongInt(*i),
        HeaderValue::Float(f) => AMQPValue::Double(*f),
        HeaderValue::Bool(b) => AMQPValue::Boolean(*b),
        HeaderValue::Bytes(b) => AMQPValue::ByteArray(b.to_vec().into()),
    }
}

/// The eip message a delivery carries.
pub(super) fn message(delivery: &lapin::message::Delivery, subject_header: bool) -> Message {
    let props = &delivery.properties;
    let id = props
        .message_id()
        .as_ref()
        .and_then(|id| id.as_str().parse::<MessageId>().ok())
        .unwrap_or_default();
    let mut msg = Message::builder(delivery.data.clone()).id(id).build();
    let headers = msg.headers_mut();
    if let Some(table) = props.headers() {
        for (name, value) in table.inner() {
            headers.insert(name.as_str().to_owned(), header_value(value));
        }
    }
    if let Some(v) = props.correlation_id() {
        headers.insert(names::CORRELATION_ID, v.as_str());
    }
    if let Some(v) = props.reply_to() {
        headers.insert(names::RETURN_ADDRESS, v.as_str());
    }
    if let Some(v) = props.content_type() {
        headers.insert(names::CONTENT_TYPE, v.as_str());
    }
    if let Some(p) = props.priority() {
        headers.insert(names::PRIORITY, i64::from(*p));
    }
    if !headers.contains(names::EXPIRES_AT)
        && let Some(ttl) = props
            .expiration()
            .as_ref()
            .and_then(|e| e.as_str().parse::<u64>().ok())
    {
        headers.insert(names::EXPIRES_AT, (now_millis() + ttl) as i64);
    }
    if subject_header
        && !headers.contains(names::SUBJECT)
        && !delivery.routing_key.as_str().is_empty()
    {
        headers.insert(names::SUBJECT, delivery.routing_key.as_str());
    }
    if delivery.redelivered {
        msg.mark_redelivered();
    }
    msg
}

fn header_value(value: &AMQPValue) -> HeaderValue {
    match value {
        AMQPValue::Boolean(b) => HeaderValue::Bool(*b),
        AMQPValue::ShortShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongLongInt(i) => HeaderValue::Int(*i),
        AMQPValue::Float(f) => HeaderValue::Float(f64::from(*f)),
        AMQPValue::Double(f) => HeaderValue::Float(*f),
        AMQPValue::ShortString(s) => HeaderValue::Str(s.as_str().to_owned()),
        AMQPValue::LongString(s) => HeaderValue::Str(long_string(s)),
        AMQPValue::ByteArray(b) => HeaderValue::Bytes(bytes::Bytes::copy_from_slice(b.as_slice())),
        other => HeaderValue::Str(format!("{other:?}")),
    }
}

fn long_string(s: &LongString) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    #[test]
    fn headers_map_onto_properties_and_the_table_and_back() {
        let msg = Message::builder(&b"x"[..])
            .subject("orders.eu")
            .correlation_id("c-1")
            .return_address("replies")
            .content_type("application/json")
            .priority(5)
            .hop_budget(3)
            .time_to_live(Duration::from_secs(60))
            .header("urgent", true)
            .header("ratio", 0.5)
            .header("raw", bytes::Bytes::from_static(&[1, 2]))
            .build();
        let props = properties(&msg, true);
        assert_eq!(
            props.message_id().as_ref().map(|s| s.as_str().to_owned()),
            Some(msg.id().to_string())
        );
        assert_eq!(props.delivery_mode(), &Some(2));
        let ttl: u64 = props
            .expiration()
            .as_ref()
            .and_then(|e| e.as_str().parse().ok())
            .expect("a TTL");
        assert!(ttl > 59_000 && ttl <= 60_000, "{ttl}");
        let delivery = lapin::message::Delivery::mock(
            1,
            "ex".into(),
            "other.key".into(),
            false,
            b"x".to_vec(),
        );
        let delivery = lapin::message::Delivery {
            properties: props,
            ..delivery
        };
        let back = message(&delivery, true);
        assert_eq!(back.id(), msg.id());
        let mut want: Vec<_> = msg.headers().iter().collect();
        let mut got: Vec<_> = back.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        got.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(got, want, "the subject header wins over the routing key");
    }

    #[test]
    fn a_foreign_message_gets_an_id_its_routing_key_as_subject_and_its_ttl_as_expiry() {
        let delivery =
            lapin::message::Delivery::mock(1, "ex".into(), "stock.ibm".into(), true, b"x".to_vec());
        let props = BasicProperties::default().with_expiration("1000".into());
        let delivery = lapin::message::Delivery {
            properties: props,
            ..delivery
        };
        let msg = message(&delivery, true);
        assert_eq!(msg.subject().unwrap(), Some("stock.ibm"));
        assert_eq!(
            msg.redelivery_count().unwrap(),
            1,
            "the broker said redelivered"
        );
        let expires = msg.expires_at().unwrap().expect("an expiry");
        assert!(expires > now_millis() && expires <= now_millis() + 1000);
    }
}
