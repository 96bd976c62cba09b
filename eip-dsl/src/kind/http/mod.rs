//! The HTTP adapters: `http-in` (`POST` requests become messages, answered once their channel
//! accepted them) and `http-out` (messages are `POST`ed or `PUT` to a URL, retried on 5xx and
//! connect errors only).

mod inbound;
mod outbound;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
