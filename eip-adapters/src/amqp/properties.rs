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
//! none. A producer that is not eip may set a `message_id` that is not an eip id: the message
//! gets an id of its own, and the producer's is kept in the header `external-id` so a consumer
//! can correlate. Its TTL counts from when it was published (its `timestamp`), not from when
//! eip received it; see [`expires_at`]. Header values of AMQP's other types: see
//! [`values`](super::values).

use eip_core::message::{HeaderValue, Headers, Message, MessageId, names, now_millis};
use lapin::BasicProperties;
use lapin::types::FieldTable;

use super::values::{amqp_value, header_value};
use crate::bridge::envelope::EXTERNAL_ID;

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

/// The eip message a delivery carries.
pub(super) fn message(delivery: &lapin::message::Delivery, subject_header: bool) -> Message {
    let props = &delivery.properties;
    let foreign_id = props.message_id().as_ref().map(|id| id.as_str());
    let id = foreign_id.and_then(|id| id.parse::<MessageId>().ok());
    let mut msg = Message::builder(delivery.data.clone())
        .id(id.unwrap_or_default())
        .build();
    let headers = msg.headers_mut();
    if let Some(table) = props.headers() {
        for (name, value) in table.inner() {
            headers.insert(name.as_str().to_owned(), header_value(value));
        }
    }
    if id.is_none()
        && let Some(foreign_id) = foreign_id
        && !headers.contains(EXTERNAL_ID)
    {
        headers.insert(EXTERNAL_ID, foreign_id);
    }
    read_properties(props, headers);
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

/// The headers the AMQP properties of the same meaning give, and `expires-at` from the TTL
/// when the headers table did not carry it.
fn read_properties(props: &BasicProperties, headers: &mut Headers) {
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
        && let Some(at) = expires_at(props, now_millis())
    {
        headers.insert(names::EXPIRES_AT, i64::try_from(at).unwrap_or(i64::MAX));
    }
}

/// When a message with a per-message TTL (`expiration`) expires: its TTL after it was
/// published, which is its AMQP `timestamp` (seconds) when it has one that is not later than
/// `now`, else `now` (when eip received it). A timestamp in the future (a clock ahead of
/// eip's, or one written in milliseconds) is not trusted: it would make the message live
/// longer than its TTL.
fn expires_at(props: &BasicProperties, now: u64) -> Option<u64> {
    let ttl = props.expiration().as_ref()?.as_str().parse::<u64>().ok()?;
    let published = match props.timestamp() {
        Some(seconds) => seconds.saturating_mul(1000).min(now),
        None => now,
    };
    Some(published.saturating_add(ttl))
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

    #[test]
    fn a_ttl_counts_from_the_timestamp_unless_it_is_missing_or_in_the_future() {
        let now = 1_700_000_060_000;
        let ttl = BasicProperties::default().with_expiration("60000".into());
        assert_eq!(expires_at(&ttl, now), Some(now + 60_000), "no timestamp");
        let published = ttl.clone().with_timestamp(1_700_000_054);
        assert_eq!(expires_at(&published, now), Some(1_700_000_114_000));
        let ahead = ttl.clone().with_timestamp(1_700_000_070);
        assert_eq!(expires_at(&ahead, now), Some(now + 60_000), "a clock ahead");
        let millis = ttl.with_timestamp(1_700_000_054_000);
        assert_eq!(expires_at(&millis, now), Some(now + 60_000), "milliseconds");
        let no_ttl = BasicProperties::default().with_timestamp(1_700_000_054);
        assert_eq!(expires_at(&no_ttl, now), None);
        let bad = BasicProperties::default().with_expiration("soon".into());
        assert_eq!(expires_at(&bad, now), None);
    }
}
