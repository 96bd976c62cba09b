//! `eip`'s log output: standard error, at the level `-v` or `RUST_LOG` asks for, with every
//! field escaped. Libraries (lapin, async-nats, rumqttc, hyper, ...) are heard from `-vv` on:
//! by default only eip speaks, once per event, in its own words.
//!
//! Log lines quote what came from outside (a header value in an error, a broker's error text,
//! a file name). Each event's fields, its message included, are written through
//! [`eip_core::log::EscapingWriter`], so that no such text can end a line or start a forged one,
//! or reach the terminal as an escape sequence, whichever call site logged it.

use std::fmt;

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};

/// Logs to standard error: `RUST_LOG` if set, else [`default_filter`].
pub fn init(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter(verbose)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .fmt_fields(EscapedFields::default())
        .init();
}

/// eip's own crates log from their targets; everything else is a library.
const EIP_TARGETS: &[&str] = &["eip", "eip_core", "eip_adapters", "eip_dsl"];

/// The filter without `RUST_LOG`: eip's own events from warnings (and more with `-v`), and
/// the libraries' only from `-vv` on. A library's view of a fault comes before eip's own and
/// says less: lapin logs three ERROR lines per cut connection, and every message RabbitMQ
/// returns as unroutable in full, bytes and all, where eip warns once, naming the broker and
/// what it does next.
pub fn default_filter(verbose: u8) -> String {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    if verbose >= 2 {
        return level.to_owned();
    }
    let mut directives = vec!["off".to_owned()];
    directives.extend(EIP_TARGETS.iter().map(|target| format!("{target}={level}")));
    directives.join(",")
}

/// The default field format (`message key=value ...`), with control characters escaped.
#[derive(Debug, Default)]
struct EscapedFields {
    plain: DefaultFields,
}

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut plain = String::new();
        self.plain.format_fields(Writer::new(&mut plain), fields)?;
        fmt::Write::write_str(&mut eip_core::log::EscapingWriter::new(&mut writer), &plain)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::Level;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::{Context, SubscriberExt};

    use super::*;

    /// The targets and levels of the events that pass a filter.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<(String, Level)>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let meta = event.metadata();
            if let Ok(mut seen) = self.0.lock() {
                seen.push((meta.target().to_owned(), *meta.level()));
            }
        }
    }

    fn passing(verbose: u8) -> Vec<(String, Level)> {
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new(default_filter(verbose)))
            .with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "lapin::channels", "Connection error");
            tracing::warn!(target: "lapin::returned_messages", "Server returned us a message");
            tracing::debug!(target: "async_nats", "reconnecting");
            tracing::warn!(target: "eip_adapters::bridge::inbound", "bridge reconnected");
            tracing::info!(target: "eip_adapters::bridge::inbound", "bridge connected");
            tracing::warn!(target: "eip::run", "stopping");
        });
        seen.0.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn targets(events: &[(String, Level)]) -> Vec<&str> {
        events.iter().map(|(t, _)| t.as_str()).collect()
    }

    #[test]
    fn by_default_only_eip_speaks_and_libraries_from_vv_on() {
        assert_eq!(
            targets(&passing(0)),
            ["eip_adapters::bridge::inbound", "eip::run"],
            "warnings of eip only"
        );
        let info = passing(1);
        assert_eq!(info.len(), 3, "{info:?}");
        assert!(info.iter().all(|(t, _)| t.starts_with("eip")), "{info:?}");
        let debug = passing(2);
        assert!(targets(&debug).contains(&"lapin::channels"), "{debug:?}");
        assert!(targets(&debug).contains(&"async_nats"), "{debug:?}");
    }
}
