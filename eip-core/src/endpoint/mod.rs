//! Consumer endpoints: a channel's receiver driving a `tower::Service<Message>`.
//!
//! A [`Consumer`] takes deliveries from a channel and calls its service with each message, up to
//! `concurrency` at a time (waiting on the service's `poll_ready`, so a limited service slows
//! the consumer instead of piling up work). `Ok` acks the delivery. `Err` applies the redelivery
//! policy (the channel's, unless the consumer sets its own): after a backoff the message is
//! nacked and delivered again, and once the attempts are used up it goes to the dead letter
//! channel with reason `max-redeliveries` and the last error's text. An error the consumer was told
//! is permanent ([`Consumer::permanent_errors`]) is not retried: the message is rejected to the
//! dead letter channel at once, with reason `rejected`.
//!
//! Shutting a consumer down is bounded whatever it waits for (see [`stop`]): it stops taking
//! deliveries, gives back at once a delivery waiting out its redelivery backoff, lets the calls
//! in progress settle (drain), and, past a limit, abandons those still running, their
//! deliveries given back to their channel unacknowledged. A consumer given a [`PauseGate`]
//! takes nothing new while its [`PauseSwitch`] is paused (see [`pause`]).

mod consumer;
pub mod pause;
pub mod stop;

pub use consumer::{Consumer, ConsumerHandle, Inbox};
pub use pause::{PauseGate, PauseSwitch};
pub use stop::Stopped;
// The policy is a channel's configuration; consumers apply it. Re-exported where users look.
pub use crate::channel::RedeliveryPolicy;
