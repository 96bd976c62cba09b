//! CSV text to and from a JSON array: the unmarshal and marshal of a whole payload.

use bytes::Bytes;
use serde_json::Value;

use super::{CsvDecoder, CsvOptions};
use crate::format::json_text::type_name;
use crate::format::{Decoder, Malformed};

/// A CSV text that can not become JSON, or a JSON value that can not become CSV.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CsvError {
    /// A row of the CSV text could not be read.
    #[error("CSV {0}")]
    Malformed(#[from] Malformed),
    /// The JSON text does not parse (serde's reason, with line and column).
    #[error("not JSON: {0}")]
    Json(String),
    /// CSV is written from a JSON array only.
    #[error("CSV is written from a JSON array of objects or arrays, found {found}")]
    NotAnArray {
        /// The JSON type found.
        found: &'static str,
    },
    /// An element of the array is neither an object nor an array.
    #[error("row {row}: a row is an object or an array, found {found}")]
    NotARow {
        /// The element's place in the array, counted from 1.
        row: usize,
        /// The JSON type found.
        found: &'static str,
    },
    /// Objects and arrays mixed in one array.
    #[error("row {row}: rows are all objects or all arrays")]
    MixedRows {
        /// The element's place in the array, counted from 1.
        row: usize,
    },
    /// A value that is an object or an array: a CSV field holds text only.
    #[error(
        "row {row}, column `{column}`: a field holds a string, number, bool or null, found {found}"
    )]
    NotAField {
        /// The row, counted from 1.
        row: usize,
        /// The column's name (or its place, counted from 1, for arrays).
        column: String,
        /// The JSON type found.
        found: &'static str,
    },
    /// An object with a key the first object (which made the header) does not have.
    #[error("row {row}: column `{column}` is not in the header")]
    UnknownColumn {
        /// The row, counted from 1.
        row: usize,
        /// The key.
        column: String,
    },
    /// The CSV writer failed.
    #[error("writing CSV: {0}")]
    Write(String),
}

/// CSV text to a JSON array: of objects keyed by the header (or of arrays without one), every
/// value a string. The first malformed row is the error, with its line.
///
/// ```
/// use eip_steps::format::{CsvOptions, csv_to_json};
///
/// let json = csv_to_json(b"sku,qty\nA-1,3\n", &CsvOptions::new()).unwrap();
/// assert_eq!(json, br#"[{"sku":"A-1","qty":"3"}]"#);
/// ```
pub fn csv_to_json(csv: &[u8], options: &CsvOptions) -> Result<Vec<u8>, CsvError> {
    let mut decoder = CsvDecoder::new(options.clone());
    let mut rows = Vec::new();
    decoder.feed(csv, &mut rows);
    decoder.finish(&mut rows);
    let mut json = Vec::with_capacity(csv.len() * 2 + 2);
    json.push(b'[');
    for (i, row) in rows.into_iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        json.extend_from_slice(&row?.bytes);
    }
    json.push(b']');
    Ok(json)
}

/// A JSON array to CSV text. An array of objects writes a header of the first object's keys
/// (in serde_json's order: sorted by name) and then a row per object, a missing key an empty
/// field; an array of arrays writes each as a row, without a header. Strings are written as
/// they are, numbers and bools as their JSON text, null as an empty field.
///
/// ```
/// use eip_steps::format::{CsvOptions, json_to_csv};
///
/// let csv = json_to_csv(br#"[{"qty":3,"sku":"A,1"}]"#, &CsvOptions::new()).unwrap();
/// assert_eq!(csv, b"qty,sku\n3,\"A,1\"\n");
/// ```
pub fn json_to_csv(json: &[u8], options: &CsvOptions) -> Result<Vec<u8>, CsvError> {
    let value: Value = serde_json::from_slice(json).map_err(|e| CsvError::Json(e.to_string()))?;
    let Value::Array(rows) = value else {
        return Err(CsvError::NotAnArray {
            found: type_name(&value),
        });
    };
    let mut writer = ::csv::WriterBuilder::new()
        .delimiter(options.delimiter)
        .quote(options.quote)
        .flexible(true)
        .from_writer(Vec::new());
    let write_err = |e: ::csv::Error| CsvError::Write(e.to_string());
    match rows.first() {
        None => {}
        Some(Value::Object(first)) => {
            let header: Vec<&String> = first.keys().collect();
            if options.has_header {
                writer
                    .write_record(header.iter().map(|k| k.as_bytes()))
                    .map_err(write_err)?;
            }
            for (i, row) in rows.iter().enumerate() {
                let Value::Object(row_map) = row else {
                    return Err(not_a_row(i, row));
                };
                if let Some(extra) = row_map.keys().find(|k| !first.contains_key(*k)) {
                    return Err(CsvError::UnknownColumn {
                        row: i + 1,
                        column: extra.clone(),
                    });
                }
                let mut fields = Vec::with_capacity(header.len());
                for key in &header {
                    fields.push(field(row_map.get(*key), i, key)?);
                }
                writer.write_record(&fields).map_err(write_err)?;
            }
        }
        Some(_) => {
            for (i, row) in rows.iter().enumerate() {
                let Value::Array(values) = row else {
                    return Err(not_a_row(i, row));
                };
                let mut fields = Vec::with_capacity(values.len());
                for (j, v) in values.iter().enumerate() {
                    fields.push(field(Some(v), i, &(j + 1).to_string())?);
                }
                writer.write_record(&fields).map_err(write_err)?;
            }
        }
    }
    writer
        .into_inner()
        .map_err(|e| CsvError::Write(e.to_string()))
}

fn not_a_row(i: usize, row: &Value) -> CsvError {
    match row {
        Value::Object(_) | Value::Array(_) => CsvError::MixedRows { row: i + 1 },
        other => CsvError::NotARow {
            row: i + 1,
            found: type_name(other),
        },
    }
}

fn field(value: Option<&Value>, row: usize, column: &str) -> Result<Bytes, CsvError> {
    Ok(match value {
        None | Some(Value::Null) => Bytes::new(),
        Some(Value::String(s)) => Bytes::copy_from_slice(s.as_bytes()),
        Some(Value::Bool(b)) => Bytes::from(b.to_string()),
        Some(Value::Number(n)) => Bytes::from(n.to_string()),
        Some(other) => {
            return Err(CsvError::NotAField {
                row: row + 1,
                column: column.to_owned(),
                found: type_name(other),
            });
        }
    })
}
