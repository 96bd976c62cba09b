//! The NATS JetStream bridges: `nats-in` (a durable consumer feeds the channel) and
//! `nats-out` (messages are published to a subject, each acked once JetStream stored it).

mod inbound;
mod outbound;

use eip_adapters::nats::StreamDeclaration;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
use crate::diagnostic::Check;
use crate::settings::{Settings, broker_url};

/// The keys both kinds have: the server and the stream.
const SERVER: &[&str] = &["url", "connect-timeout", "stream", "stream-subjects"];

fn url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<String> {
    let help = "`nats://HOST:4222`, or `nats://USER:PASSWORD@HOST:4222`";
    broker_url(check, settings, "nats://", "NATS", help)
}

/// The stream: its name, and the subjects to create it with if it is missing.
fn stream(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    required: bool,
) -> Option<Option<StreamDeclaration>> {
    let name = if required {
        Some(settings.required_text(check, "stream", "add `stream: NAME`, the JetStream stream")?)
    } else {
        settings.text(check, "stream")
    };
    let subjects = settings.list(check, "stream-subjects");
    match (name, subjects) {
        (Some(name), Some(subjects)) => Some(Some(StreamDeclaration::new(
            name.value,
            subjects.into_iter().map(|s| s.value),
        ))),
        (Some(name), None) => Some(Some(StreamDeclaration::existing(name.value))),
        (None, Some(subjects)) => {
            if let Some(first) = subjects.first() {
                settings.report_value(
                    check,
                    "stream-subjects",
                    first,
                    "`stream-subjects` without `stream`: the subjects of which stream?".to_owned(),
                    Some("add `stream: NAME`"),
                );
            }
            None
        }
        (None, None) => Some(None),
    }
}
