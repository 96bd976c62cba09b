//! `split`: the Splitter. One message becomes several, its parts, each going on through the
//! rest of the route: by a format (`lines`, `json-lines`, `csv`) over the payload, or by a jq
//! program whose every output is a part (`.items[]`).
//!
//! ```yaml
//! steps:
//!   - split: lines
//!   - split: {format: csv, delimiter: ';'}
//!   - split: {jq: '.items[]'}
//! ```
//!
//! Every part has a new id, the original's headers, its id as `correlation-id`, and its
//! `sequence-number` (from 1) and `sequence-size`: an aggregator can put them together again.
//! A record that can not be read (a CSV row with the wrong number of fields, a line that is
//! not JSON) goes to the dead letter channel with reason `invalid` and its line and reason
//! (`line 3: expected 4 fields, found 3`) as the error, holding the record's text; the other
//! records go on. The original is acknowledged when every part was accepted downstream.

use eip_core::MessageBus;
use eip_core::message::Message;
#[cfg(feature = "csv")]
use eip_steps::format::CsvOptions;
use eip_steps::format::{Format, LineOptions};
use eip_steps::split::Split;

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::Check;
use crate::settings::Settings;

pub(super) static SPLIT: StepKind = StepKind {
    name: "split",
    feature: None,
    main: "format",
    keys: &["format", "jq", "delimiter", "quote", "header", "max-record"],
    check,
};

/// A checked split.
#[derive(Debug, Clone)]
pub struct SplitConfig {
    how: How,
    described: String,
}

#[derive(Debug, Clone)]
enum How {
    Format(Split),
    #[cfg(feature = "jq")]
    Jq(eip_steps::expr::Jq),
}

/// The formats, with the feature each needs.
const FORMATS: &[&str] = &["lines", "json-lines", "csv"];

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    match (settings.get("format"), settings.get("jq")) {
        (Some(_), Some(_)) => {
            settings.report_entry(
                check,
                "`format` and `jq` contradict each other".to_owned(),
                Some("split by a format of the payload, or by a jq program's outputs: keep one"),
            );
            None
        }
        (None, None) => {
            settings.missing(
                check,
                "format",
                "add `format:` (`lines`, `json-lines` or `csv`), or `jq:` with a program whose \
                 every output is a part, such as `.items[]`",
            );
            None
        }
        (None, Some(_)) => by_jq(check, settings),
        (Some(_), None) => by_format(check, settings),
    }
}

#[cfg(feature = "jq")]
fn by_jq(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Box<dyn StepConfig>> {
    let text = settings.required_text(check, "jq", super::transform::JQ_HELP)?;
    let jq = super::transform::compile(check, &text, &settings.key("jq"))?;
    Some(Box::new(SplitConfig {
        described: format!("split {}", text.value),
        how: How::Jq(jq),
    }))
}

#[cfg(not(feature = "jq"))]
fn by_jq(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Box<dyn StepConfig>> {
    settings.report_entry(
        check,
        "splitting by `jq` needs the cargo feature `jq`, which this eip is built without"
            .to_owned(),
        Some("build eip with it: `cargo build -p eip-dsl --features jq`"),
    );
    None
}

fn by_format(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Box<dyn StepConfig>> {
    let format = read_format(check, settings)?;
    Some(Box::new(SplitConfig {
        described: format!("split {}", format.name()),
        how: How::Format(Split::new(format)),
    }))
}

/// The keys of a format besides `format` itself, which [`read_format`] reads too.
pub(crate) const FORMAT_KEYS: &[&str] = &["delimiter", "quote", "header", "max-record"];

/// Reads `format:` (`lines`, `json-lines`, `csv`) and its options ([`FORMAT_KEYS`]): the one
/// reader of them, for the `split` step and for `file-in`. `None` when `format` is missing
/// (an option without it is reported) or wrong.
pub(crate) fn read_format(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Format> {
    let Some(name) = settings.text(check, "format") else {
        for key in FORMAT_KEYS {
            if settings.get(key).is_some() {
                settings.report_entry(
                    check,
                    format!("`{key}` is an option of `format`, which is not given"),
                    Some("add `format:` (`lines`, `json-lines` or `csv`), or remove it"),
                );
            }
        }
        return None;
    };
    let max = settings.size(check, "max-record");
    let lines = |max: Option<u64>| {
        let options = LineOptions::default();
        match max {
            Some(max) => options.max_line_len(usize::try_from(max).unwrap_or(usize::MAX)),
            None => options,
        }
    };
    let format = match name.value.as_str() {
        "lines" => Format::Lines(lines(max)),
        "json-lines" => Format::JsonLines(lines(max)),
        "csv" => csv(check, settings, max)?,
        other => {
            settings.report_value(
                check,
                "format",
                &name,
                format!("`format` can not be `{other}`"),
                Some(&crate::diagnostic::suggest_key(other, FORMATS)),
            );
            return None;
        }
    };
    if name.value != "csv" {
        refuse_csv_keys(check, settings);
    }
    Some(format)
}

/// Reports each CSV option (`delimiter`, `quote`, `header`) given to a format that is not CSV.
pub(crate) fn refuse_csv_keys(check: &mut Check<'_>, settings: &Settings<'_>) {
    for key in ["delimiter", "quote", "header"] {
        if settings.get(key).is_some() {
            settings.report_entry(
                check,
                format!("`{key}` is for `format: csv`"),
                Some("remove it, or use `format: csv`"),
            );
        }
    }
}

#[cfg(feature = "csv")]
fn csv(check: &mut Check<'_>, settings: &Settings<'_>, max: Option<u64>) -> Option<Format> {
    Some(Format::csv(csv_options(check, settings, max)))
}

/// Reads the CSV options `delimiter`, `quote` and `header` (a wrong one is reported and left
/// at its default), with `max` as the longest row: for `split`, `file-in`, `unmarshal` and
/// `marshal`.
#[cfg(feature = "csv")]
pub(crate) fn csv_options(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    max: Option<u64>,
) -> CsvOptions {
    let mut options = CsvOptions::new();
    if let Some(d) = one_byte(check, settings, "delimiter") {
        options = options.delimiter(d);
    }
    if let Some(q) = one_byte(check, settings, "quote") {
        options = options.quote(q);
    }
    if let Some(header) = settings.boolean(check, "header") {
        options = options.has_header(header);
    }
    if let Some(max) = max {
        options = options.max_record_len(usize::try_from(max).unwrap_or(usize::MAX));
    }
    options
}

#[cfg(not(feature = "csv"))]
fn csv(check: &mut Check<'_>, settings: &Settings<'_>, _max: Option<u64>) -> Option<Format> {
    settings.report_entry(
        check,
        "`format: csv` needs the cargo feature `csv`, which this eip is built without".to_owned(),
        Some("build eip with it: `cargo build -p eip-dsl --features csv`"),
    );
    None
}

/// A one-character setting (`delimiter: ';'`), as the byte it is.
#[cfg(feature = "csv")]
fn one_byte(check: &mut Check<'_>, settings: &Settings<'_>, key: &str) -> Option<u8> {
    let text = settings.text(check, key)?;
    match text.value.as_bytes() {
        [b] if b.is_ascii() && !b.is_ascii_control() || *b == b'\t' => Some(*b),
        _ => {
            settings.report_value(
                check,
                key,
                &text,
                format!(
                    "`{key}` must be one ASCII character, found `{}`",
                    text.value
                ),
                Some("such as `,`, `;` or a tab"),
            );
            None
        }
    }
}

impl StepConfig for SplitConfig {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        Ok(Box::new(Splitter {
            how: self.how.clone(),
        }))
    }
}

#[derive(Debug)]
struct Splitter {
    how: How,
}

impl RouteStep for Splitter {
    fn decide(&self, msg: Message) -> Made {
        match &self.how {
            How::Format(split) => {
                let mut made = Made::default();
                for part in split.parts(&msg) {
                    match part {
                        Ok(part) => made.next.push(part),
                        Err(malformed) => made.side.push(Side::Invalid {
                            msg: split.malformed_message(&msg, &malformed),
                            error: malformed.to_string(),
                        }),
                    }
                }
                made
            }
            #[cfg(feature = "jq")]
            How::Jq(jq) => match jq.all(&msg) {
                Ok(values) => Made {
                    next: Split::parts_of(&msg, values.iter().map(|v| v.to_string().into())),
                    ..Made::default()
                },
                Err(error) => Made::instead(Side::Invalid {
                    msg,
                    error: error.to_string(),
                }),
            },
        }
    }
}
