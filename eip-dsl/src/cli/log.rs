//! `eip`'s log output: standard error, at the level `-v` or `RUST_LOG` asks for, with every
//! field escaped.
//!
//! Log lines quote what came from outside (a header value in an error, a broker's error text,
//! a file name). Each event's fields, its message included, are written through
//! [`eip_core::log::EscapingWriter`], so that no such text can end a line or start a forged one,
//! or reach the terminal as an escape sequence, whichever call site logged it.

use std::fmt;

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};

/// Logs to standard error: `RUST_LOG` if set, else warnings, or more with `-v`.
pub fn init(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .fmt_fields(EscapedFields::default())
        .init();
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
