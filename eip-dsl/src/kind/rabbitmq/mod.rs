//! The RabbitMQ bridges: `rabbitmq-in` (a queue feeds the channel, each delivery acked once
//! the channel accepted it) and `rabbitmq-out` (messages are published to an exchange, with
//! publisher confirms). Their runtime is eip-adapters' `amqp` module (the protocol's name).

mod inbound;
mod outbound;

use eip_adapters::amqp::AmqpUrl;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
use crate::diagnostic::Check;
use crate::settings::{Settings, broker_url};

/// The keys both kinds have: the broker.
const BROKER: &[&str] = &["url", "connect-timeout"];

fn url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AmqpUrl> {
    let help = "`amqp://USER:PASSWORD@HOST:5672/VHOST` (`%2f` is the default vhost); name the \
                password as `${VARIABLE}`";
    broker_url(check, settings, "amqp://", "RabbitMQ", help).map(AmqpUrl)
}
