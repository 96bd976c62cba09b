//! `unmarshal` and `marshal`: a whole payload changes format. `unmarshal` reads XML or CSV
//! into JSON, so that the steps after it (a transform, a router's predicates) see JSON;
//! `marshal` writes JSON out as XML or CSV, for a system that wants those.
//!
//! ```yaml
//! steps:
//!   - unmarshal: xml          # <order id="7"><line>A</line></order> → {"order": {"@id": "7", "line": "A"}}
//!   - transform: '{id: .order."@id"}'
//!   - marshal: csv            # [{"id": "7"}] → id\n7\n
//!   - marshal: {format: csv, delimiter: ';', header: false}
//! ```
//!
//! The XML mapping: the document is an object whose one key is the root element's name;
//! attributes are `"@name"`, an element's text is its value when it has nothing else and
//! `"#text"` when it has, an element name that repeats is an array, every value is a string.
//! CSV: the header line names the fields; a CSV payload becomes an array of objects, and an
//! array of objects (or of arrays) becomes CSV, its columns sorted by name. The `split` step's
//! CSV options apply, read by its code: `delimiter`, `quote`, and `header: false` (no header
//! line: rows read as arrays of strings, and written without the header of names). A payload that can not be read goes to the dead
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
    keys: &["format", "delimiter", "quote", "header"],
    check: check_unmarshal,
};

pub(super) static MARSHAL: StepKind = StepKind {
    name: "marshal",
    feature: None,
    main: "format",
    keys: &["format", "delimiter", "quote", "header"],
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertConfig {
    /// Which way.
    pub direction: Direction,
    /// The format other than JSON.
    pub format: Format,
    /// For CSV: the delimiter, quote and header (the `split` step's options, read by its code).
    #[cfg(feature = "csv")]
    csv: eip_steps::format::CsvOptions,
}

impl ConvertConfig {
    /// The CSV options a CSV conversion reads or writes with.
    #[cfg(feature = "csv")]
    pub fn csv_options(&self) -> &eip_steps::format::CsvOptions {
        &self.csv
    }
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
    match format {
        #[cfg(feature = "csv")]
        Format::Csv => {
            let csv = super::split::csv_options(check, settings, None);
            Some(Box::new(ConvertConfig {
                direction,
                format,
                csv,
            }))
        }
        _ => {
            super::split::refuse_csv_keys(check, settings);
            Some(Box::new(ConvertConfig {
                direction,
                format,
                #[cfg(feature = "csv")]
                csv: eip_steps::format::CsvOptions::new(),
            }))
        }
    }
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
        Ok(Box::new(self.clone()))
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
                eip_steps::format::csv_to_json(payload, &self.csv)
                    .map(|json| (json, "application/json"))
                    .map_err(|e| e.to_string())
            }
            #[cfg(feature = "csv")]
            (Direction::Marshal, Format::Csv) => eip_steps::format::json_to_csv(payload, &self.csv)
                .map(|csv| (csv, "text/csv"))
                .map_err(|e| e.to_string()),
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

#[cfg(all(test, feature = "csv"))]
mod tests {
    use std::path::Path;

    use super::*;
    use eip_steps::format::CsvOptions;

    fn convert(direction: Direction, csv: CsvOptions, payload: &str) -> Made {
        let config = ConvertConfig {
            direction,
            format: Format::Csv,
            csv,
        };
        config.decide(Message::new(payload.to_owned()))
    }

    #[test]
    fn csv_options_change_how_a_payload_is_read_and_written() {
        let semi = CsvOptions::new().delimiter(b';').quote(b'\'');
        let made = convert(Direction::Unmarshal, semi.clone(), "a;b\n'1;2';3\n");
        assert_eq!(made.next[0].payload_str(), Some(r#"[{"a":"1;2","b":"3"}]"#));
        let made = convert(Direction::Marshal, semi, r#"[{"a":"1;2","b":3}]"#);
        assert_eq!(made.next[0].payload_str(), Some("a;b\n'1;2';3\n"));
        let bare = CsvOptions::new().has_header(false);
        let made = convert(Direction::Unmarshal, bare.clone(), "1,2\n3,4\n");
        assert_eq!(made.next[0].payload_str(), Some(r#"[["1","2"],["3","4"]]"#));
        let made = convert(Direction::Marshal, bare, r#"[{"a":1,"b":2}]"#);
        assert_eq!(made.next[0].payload_str(), Some("1,2\n"));
    }

    fn problems(step: &str) -> String {
        let yaml = format!(
            "channels:\n  a: {{kind: point-to-point}}\n  b: {{kind: point-to-point}}\n\
             routes:\n  - from: a\n    steps:\n      - {step}\n    to: b\n"
        );
        match crate::load::load_str(&yaml, "flow.yaml", Path::new(".")) {
            Ok(_) => panic!("`{step}` validated"),
            Err(errors) => errors.render(),
        }
    }

    #[test]
    fn csv_options_are_checked_and_refused_for_xml() {
        let text = problems("unmarshal: {format: xml, delimiter: ';'}");
        assert!(text.contains("`delimiter` is for `format: csv`"), "{text}");
        let text = problems("marshal: {format: csv, quote: '<<'}");
        assert!(
            text.contains("`quote` must be one ASCII character"),
            "{text}"
        );
        let text = problems("marshal: {format: csv, headr: false}");
        assert!(text.contains("header"), "the closest key: {text}");
    }
}
