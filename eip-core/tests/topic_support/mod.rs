//! What the topic exchange's test files share.

use eip_core::channel::{Channel, PointToPoint};
use eip_core::topic::TopicExchange;

/// A point-to-point channel called `name`, with room for every message a test sends.
pub fn channel(name: &str) -> Channel {
    PointToPoint::new(name, 10_000).unwrap().into()
}

/// The names of the targets `subject` is routed to.
pub fn names_of(exchange: &TopicExchange, subject: &str) -> Vec<String> {
    exchange
        .route(subject)
        .iter()
        .map(|c| c.name().to_owned())
        .collect()
}
