//! `unmarshal` and `marshal`: a whole payload changes format. `unmarshal` reads XML or CSV
//! into JSON, so that the steps after it (a transform, a router's predicates) see JSON;
//! `marshal` writes JSON out as XML or CSV, for a system that wants those.
//!
//! ```yaml
//! steps:
//!   - unmarshal: xml          # <order id="7"><line>A</line></order> → {"order": {"@id": "7", "line": "A"}}
//!   - transform: '{id: .order."@id"}'
//!   - marshal: csv            # [{"id": "7"}] → id\n7\n
//! ```
//!
//! The XML mapping: the document is an object whose one key is the root element's name;
//! attributes are `"@name"`, an element's text is its value when it has nothing else and
//! `"#text"` when it has, an element name that repeats is an array, every value is a string.
//! CSV: the header line names the fields; a CSV payload becomes an array of objects, and an
//! array of objects (or of arrays) becomes CSV, its columns sorted by name. A payload that can not be read goes to the dead
//! letter channel with reason `invalid` and the reason, with its line (and column for XML).
//! XML needs the cargo feature `xml`, CSV the feature `csv`.

use bytes::Bytes;
use eip_core::MessageBus;
use eip_core::message::{Message, names};

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, suggest_key};
use crate::settings::Settings;

pub(super) static UNMARSHAL: StepKind = StepKind {
    name: "unmarshal",
    feature: None,
    main: "format",
    keys: &["format"],
    check: check_unmarshal,
};

pub(super) static MARSHAL: StepKind = StepKind {
    name: "marshal",
    feature: None,
    main: "format",
    keys: &["format"],
    check: check_marshal,
};

/// A payload format other than JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// XML (cargo feature `xml`).
    Xml,
    /// CSV with a header line (cargo feature `csv`).
    Csv,
}

/// Which way a conversion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the format into JSON.
    Unmarshal,
    /// From JSON into the format.
    Marshal,
}

/// A checked `unmarshal` or `marshal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertConfig {
    /// Which way.
    pub direction: Direction,
    /// The format other than JSON.
    pub format: Format,
}

fn check_unmarshal(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    checked(check, settings, Direction::Unmarshal)
}

fn check_marshal(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    checked(check, settings, Direction::Marshal)
}

fn checked(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    direction: Direction,
) -> Option<Box<dyn StepConfig>> {
    let name = settings.required_text(check, "format", "add `format:`, `xml` or `csv`")?;
    let (format, feature) = match name.value.as_str() {
        "xml" => (Format::Xml, "xml"),
        "csv" => (Format::Csv, "csv"),
        other => {
            settings.report_value(
                check,
                "format",
                &name,
                format!("`format` can not be `{other}`"),
                Some(&suggest_key(other, &["xml", "csv"])),
            );
            return None;
        }
    };
    let built = match format {
        Format::Xml => cfg!(feature = "xml"),
        Format::Csv => cfg!(feature = "csv"),
    };
    if !built {
        settings.report_value(
            check,
            "format",
            &name,
            format!(
                "`{feature}` needs the cargo feature `{feature}`, which this eip is built without"
            ),
            Some(&format!(
                "build eip with it: `cargo build -p eip-dsl --features {feature}`"
            )),
        );
        return None;
    }
    Some(Box::new(ConvertConfig { direction, format }))
}

impl StepConfig for ConvertConfig {
    fn describe(&self) -> String {
        let verb = match self.direction {
            Direction::Unmarshal => "unmarshal",
            Direction::Marshal => "marshal",
        };
        let format = match self.format {
            Format::Xml => "xml",
            Format::Csv => "csv",
        };
        format!("{verb} {format}")
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        Ok(Box::new(*self))
    }
}

impl ConvertConfig {
    /// The payload converted, and its content type; or why it could not be.
    #[cfg_attr(not(any(feature = "xml", feature = "csv")), allow(unused_variables))]
    fn convert(&self, payload: &[u8]) -> Result<(Vec<u8>, &'static str), String> {
        match (self.direction, self.format) {
            #[cfg(feature = "xml")]
            (Direction::Unmarshal, Format::Xml) => eip_steps::format::xml_to_json(payload)
                .map(|json| (json, "application/json"))
                .map_err(|e| e.to_string()),
            #[cfg(feature = "xml")]
            (Direction::Marshal, Format::Xml) => eip_steps::format::json_to_xml(payload)
                .map(|xml| (xml, "application/xml"))
                .map_err(|e| e.to_string()),
            #[cfg(feature = "csv")]
            (Direction::Unmarshal, Format::Csv) => {
                let options = eip_steps::format::CsvOptions::new();
                eip_steps::format::csv_to_json(payload, &options)
                    .map(|json| (json, "application/json"))
                    .map_err(|e| e.to_string())
            }
            #[cfg(feature = "csv")]
            (Direction::Marshal, Format::Csv) => {
                let options = eip_steps::format::CsvOptions::new();
                eip_steps::format::json_to_csv(payload, &options)
                    .map(|csv| (csv, "text/csv"))
                    .map_err(|e| e.to_string())
            }
            // Refused when the flow was checked.
            #[allow(unreachable_patterns)]
            _ => Err(format!("{} is not built into this eip", self.describe())),
        }
    }
}

impl RouteStep for ConvertConfig {
    fn decide(&self, msg: Message) -> Made {
        match self.convert(msg.payload()) {
            Ok((payload, content_type)) => {
                let (id, mut headers, _) = msg.into_parts();
                headers.insert(names::CONTENT_TYPE, content_type);
                Made::next(Message::from_parts(id, headers, Bytes::from(payload)))
            }
            Err(error) => Made::instead(Side::Invalid {
                error: format!("{}: {error}", self.describe()),
                msg,
            }),
        }
    }
}
