//! A source of messages made on a timer: Camel's `timer`, Benthos's `generate`.
//!
//! A [`Timer`] sends a message into its channel every `interval` (the first after `delay`),
//! forever or `count` times, its payload made from a [`PayloadTemplate`]: fixed text or JSON
//! with the message's sequence number, the time it fired, its id and the timer's name filled
//! in. For tests, heartbeats and flows that poll on their own.
//!
//! Like every inbound adapter it honours its channel's capacity: a full channel makes the
//! timer wait (a tick that comes while it waits is not made up later, so a slow flow gets
//! fewer messages, never a burst). Every message carries the headers [`SEQUENCE`],
//! [`FIRED_AT`] and [`TIMER_NAME`], and the subject and content type it is configured with.
//! A timer that sent its `count` stops by itself; [`TimerHandle::shutdown`] stops it sooner.

mod source;
mod template;

pub use self::source::{Timer, TimerConfig, TimerHandle};
pub use self::template::{Fill, PayloadTemplate, TemplateError};

/// Header: the message's sequence number, from 1 (an integer).
pub const SEQUENCE: &str = "timer-sequence";
/// Header: when the timer fired, in milliseconds since the Unix epoch (an integer).
pub const FIRED_AT: &str = "timer-fired-at";
/// Header: the timer's name.
pub const TIMER_NAME: &str = "timer-name";
