//! An eip message's headers as MQTT v5 publish properties, and back (see the
//! [module](super) for the mapping).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::{HeaderValue, names};
use rumqttc::v5::mqttbytes::v5::PublishProperties;

use crate::bridge::envelope::{self, EnvelopeError};

/// The properties carrying `msg`'s id and headers.
pub(crate) fn to_properties(msg: &Message) -> PublishProperties {
    let mut properties = PublishProperties {
        user_properties: envelope::to_text(msg),
        ..PublishProperties::default()
    };
    if let Ok(Some(content_type)) = msg.content_type() {
        properties.content_type = Some(content_type.to_owned());
    }
    if let Ok(Some(correlation)) = msg.correlation_id() {
        properties.correlation_data = Some(Bytes::copy_from_slice(correlation.as_bytes()));
    }
    if let Ok(Some(reply_to)) = msg.return_address()
        && !reply_to.is_empty()
        && !reply_to.contains(['+', '#', '\0'])
    {
        properties.response_topic = Some(reply_to.to_owned());
    }
    if let Ok(Some(at)) = msg.expires_at() {
        let left_ms = at.saturating_sub(now_ms());
        // Rounded up, and at least a second: 0 would mean "never expires" to nobody, but
        // some brokers read it as expired at once.
        let secs = left_ms.div_ceil(1000).max(1);
        properties.message_expiry_interval = Some(u32::try_from(secs).unwrap_or(u32::MAX));
    }
    properties
}

/// The message a publish carries: its user properties through [`envelope::from_text`], then
/// the v5 fields for the well-known headers no user property gave, then `subject` from the
/// topic when it has none.
pub(crate) fn to_message(
    topic: &str,
    properties: Option<&PublishProperties>,
    payload: Bytes,
) -> Result<Message, EnvelopeError> {
    let pairs = properties
        .map(|p| {
            p.user_properties
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let mut msg = envelope::from_text(pairs, payload)?;
    if let Some(p) = properties {
        fill_from_fields(&mut msg, p);
    }
    if !msg.headers().contains(names::SUBJECT) && !topic.is_empty() {
        msg.headers_mut().insert(
            names::SUBJECT,
            HeaderValue::Str(super::topic_to_subject(topic)),
        );
    }
    Ok(msg)
}

fn fill_from_fields(msg: &mut Message, p: &PublishProperties) {
    let headers = msg.headers_mut();
    if let Some(content_type) = &p.content_type
        && !headers.contains(names::CONTENT_TYPE)
    {
        headers.insert(names::CONTENT_TYPE, HeaderValue::Str(content_type.clone()));
    }
    if let Some(data) = &p.correlation_data
        && !headers.contains(names::CORRELATION_ID)
    {
        let value = match std::str::from_utf8(data) {
            Ok(text) => HeaderValue::Str(text.to_owned()),
            Err(_) => HeaderValue::Bytes(data.clone()),
        };
        headers.insert(names::CORRELATION_ID, value);
    }
    if let Some(topic) = &p.response_topic
        && !headers.contains(names::RETURN_ADDRESS)
    {
        headers.insert(names::RETURN_ADDRESS, HeaderValue::Str(topic.clone()));
    }
    if let Some(secs) = p.message_expiry_interval
        && !headers.contains(names::EXPIRES_AT)
    {
        msg.expire_within(Duration::from_secs(u64::from(secs)));
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_travel_as_user_properties_and_the_well_known_ones_as_fields_too() {
        let msg = Message::builder("x")
            .subject("a.b")
            .correlation_id("c-1")
            .return_address("replies")
            .content_type("text/plain")
            .time_to_live(Duration::from_secs(30))
            .priority(3)
            .header("n", 7_i64)
            .build();
        let p = to_properties(&msg);
        assert_eq!(p.content_type.as_deref(), Some("text/plain"));
        assert_eq!(p.correlation_data.as_deref(), Some(&b"c-1"[..]));
        assert_eq!(p.response_topic.as_deref(), Some("replies"));
        assert!(matches!(p.message_expiry_interval, Some(29..=30)));
        let back = to_message("other/topic", Some(&p), msg.payload().clone()).unwrap();
        assert_eq!(back.id(), msg.id());
        assert_eq!(back.headers().get("n"), Some(&HeaderValue::Int(7)));
        assert_eq!(back.subject().unwrap(), Some("a.b"));
        assert_eq!(back.expires_at().unwrap(), msg.expires_at().unwrap());
    }

    #[test]
    fn a_foreign_publish_gets_its_headers_from_the_fields_and_its_subject_from_the_topic() {
        let p = PublishProperties {
            content_type: Some("application/json".into()),
            correlation_data: Some(Bytes::from_static(b"req-9")),
            response_topic: Some("replies/me".into()),
            message_expiry_interval: Some(60),
            ..PublishProperties::default()
        };
        let msg = to_message("sensors/room1/temp", Some(&p), Bytes::from_static(b"1")).unwrap();
        assert_eq!(msg.subject().unwrap(), Some("sensors.room1.temp"));
        assert_eq!(msg.content_type().unwrap(), Some("application/json"));
        assert_eq!(msg.correlation_id().unwrap(), Some("req-9"));
        assert_eq!(msg.return_address().unwrap(), Some("replies/me"));
        assert!(msg.expires_at().unwrap().is_some());
        let bare = to_message("a/b", None, Bytes::new()).unwrap();
        assert_eq!(bare.subject().unwrap(), Some("a.b"));
    }
}
