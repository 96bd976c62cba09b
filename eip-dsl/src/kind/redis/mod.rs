//! The Redis Streams bridges: `redis-in` (a consumer group feeds the channel, each entry
//! acknowledged once the channel accepted it) and `redis-out` (messages are appended to a
//! stream with `XADD`).

mod inbound;
mod outbound;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
use crate::diagnostic::Check;
use crate::settings::{Settings, broker_url};

/// The keys both kinds have: the server and the stream.
const SERVER: &[&str] = &["url", "stream", "connect-timeout"];

fn url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<String> {
    let help = "`redis://HOST:6379`, or `redis://:PASSWORD@HOST:6379/DB` (plain TCP: no TLS yet)";
    broker_url(check, settings, "redis://", "Redis", help)
}
