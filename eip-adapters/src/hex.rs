//! Bytes as lowercase hexadecimal text, the way eip writes a bytes header (or payload) where
//! only text fits: a bridge's text headers, an AMQP value eip can not map, a file envelope.

/// `bytes` as two lowercase hexadecimal digits each.
#[cfg_attr(
    not(any(
        feature = "file",
        feature = "amqp",
        feature = "nats",
        feature = "mqtt",
        feature = "redis"
    )),
    allow(dead_code)
)]
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    text
}
