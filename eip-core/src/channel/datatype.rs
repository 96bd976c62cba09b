//! Datatype Channel: a channel that carries one type of data.
//!
//! A channel built with a [`Datatype`] checks every message when it is sent. A message that fits
//! goes on as usual; one that does not never reaches a consumer: it goes to the channel's
//! [`InvalidMessageChannel`] with the reason (what did not parse, which schema rule failed and
//! where), and the send reports [`Outcome::Invalid`](super::Outcome::Invalid). Two datatypes come
//! with eip: [`JsonType`], a Rust type the JSON payload must deserialize into, and
//! [`JsonSchema`], a JSON Schema (what flow files use). Implement [`Datatype`] for anything else.
//! A message whose `content-type` header says it is not JSON does not fit either JSON datatype.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::dead_letter::InvalidMessageChannel;
use super::error::ChannelError;
use crate::log::Escaped;
use crate::message::Message;

/// The type of data a channel carries.
pub trait Datatype: Send + Sync + 'static {
    /// The datatype's name, for errors and diagrams.
    fn name(&self) -> &str;
    /// `Ok` if the message fits, else why not.
    fn check(&self, message: &Message) -> Result<(), String>;
}

/// A Rust type the payload must deserialize into (from JSON).
pub struct JsonType<T> {
    name: String,
    _type: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + 'static> JsonType<T> {
    /// The datatype of `T`, named after the type.
    pub fn new() -> Self {
        let full = std::any::type_name::<T>();
        JsonType {
            name: full.rsplit("::").next().unwrap_or(full).to_owned(),
            _type: PhantomData,
        }
    }
}

impl<T: DeserializeOwned + 'static> Default for JsonType<T> {
    fn default() -> Self {
        JsonType::new()
    }
}

impl<T: DeserializeOwned + 'static> Datatype for JsonType<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, message: &Message) -> Result<(), String> {
        check_json_content_type(message)?;
        message
            .json::<T>()
            .map(drop)
            .map_err(|e| format!("payload is not a valid {}: {}", self.name, e.source))
    }
}

/// A JSON Schema the payload must satisfy.
///
/// The schema is compiled once, by [boon](https://docs.rs/boon): drafts 4, 6, 7, 2019-09 and
/// 2020-12, chosen by `$schema` (2020-12 when it names none). A `$ref` reaches only the schema
/// itself (`#/$defs/...`, anchors, an `$id` inside it) and the drafts' own metaschemas: nothing
/// is read from files or the network, so a flow file's schema can not make eip open a path or a
/// URL. `format` is checked as each draft says (an assertion up to draft 7, an annotation
/// after).
pub struct JsonSchema {
    name: String,
    schemas: boon::Schemas,
    root: boon::SchemaIndex,
}

/// Where a datatype's schema is filed while it compiles: a name of its own, so a relative `$ref`
/// resolves against it and finds nothing outside the schema.
const SCHEMA_URL: &str = "https://eip.invalid/datatype.json";

/// Reasons given per message at most: enough to see what is wrong, bounded however badly the
/// payload misses.
const MAX_REASONS: usize = 5;

impl JsonSchema {
    /// Compiles `schema` (draft detected from `$schema`, 2020-12 by default).
    pub fn new(name: impl Into<String>, schema: &serde_json::Value) -> Result<Self, ChannelError> {
        let name = name.into();
        let invalid = |reason: String| ChannelError::InvalidSchema {
            datatype: name.clone(),
            reason,
        };
        let mut compiler = boon::Compiler::new();
        // No loader: a reference outside the schema is an error, never a read.
        compiler.use_loader(Box::new(boon::SchemeUrlLoader::new()));
        compiler
            .add_resource(SCHEMA_URL, schema.clone())
            .map_err(|e| invalid(e.to_string()))?;
        let mut schemas = boon::Schemas::new();
        let root = compiler
            .compile(SCHEMA_URL, &mut schemas)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(JsonSchema {
            name,
            schemas,
            root,
        })
    }
}

impl Datatype for JsonSchema {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, message: &Message) -> Result<(), String> {
        check_json_content_type(message)?;
        // Parsed once and kept with the message: the routes and predicates after the channel
        // read the same value instead of parsing the payload again.
        let value = message
            .json_value()
            .map_err(|e| format!("payload is not JSON: {}", e.source))?;
        let Err(error) = self.schemas.validate(value, self.root) else {
            return Ok(());
        };
        let mut problems = Vec::new();
        reasons(&error, &mut problems);
        Err(format!(
            "does not match schema {}: {}",
            self.name,
            problems.join("; ")
        ))
    }
}

/// The leaves of a failed validation (the rules that failed, not the `allOf` or `$ref` that
/// led to them), each as `at POINTER: what`, at most [`MAX_REASONS`].
fn reasons(error: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if out.len() == MAX_REASONS {
        return;
    }
    if error.causes.is_empty() {
        let at = error.instance_location.to_string();
        let at = if at.is_empty() { "/" } else { &at };
        out.push(format!("at {at}: {}", explain(&error.kind)));
        return;
    }
    for cause in &error.causes {
        reasons(cause, out);
    }
}

/// A failed rule in words: the common ones our own, the rest as boon says them.
fn explain(kind: &boon::ErrorKind<'_, '_>) -> String {
    use boon::ErrorKind;
    let quoted = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{:?}", n))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match kind {
        ErrorKind::Required { want } if want.len() == 1 => {
            format!("required property {} is missing", quoted(want))
        }
        ErrorKind::Required { want } => format!("required properties {} are missing", quoted(want)),
        ErrorKind::Type { got, want } => {
            let want: Vec<String> = want.iter().map(|t| t.to_string()).collect();
            format!("is {} {got}, not {}", article(got), want.join(" or "))
        }
        ErrorKind::FalseSchema => "is not allowed here".to_owned(),
        other => other.to_string(),
    }
}

/// "a" or "an" before a JSON type's name.
fn article(t: &boon::Type) -> &'static str {
    match t {
        boon::Type::Integer | boon::Type::Array | boon::Type::Object => "an",
        _ => "a",
    }
}

fn check_json_content_type(message: &Message) -> Result<(), String> {
    match message.content_type() {
        Ok(None) => Ok(()),
        Ok(Some(ct)) if ct.contains("json") => Ok(()),
        Ok(Some(ct)) => Err(format!("content type `{ct}` is not JSON")),
        Err(e) => Err(e.to_string()),
    }
}

/// A channel's datatype and where misfits go.
#[derive(Clone)]
pub(crate) struct DatatypeCheck {
    pub(crate) datatype: Arc<dyn Datatype>,
    pub(crate) invalid: InvalidMessageChannel,
    /// Messages diverted to `invalid` so far (shared by the channel's clones).
    pub(crate) diverted: Arc<std::sync::atomic::AtomicU64>,
}

impl DatatypeCheck {
    /// Counts one message diverted to the invalid message channel.
    fn count_diverted(&self) {
        self.diverted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Messages diverted so far.
    pub(crate) fn diverted(&self) -> u64 {
        self.diverted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Diverts `msg`, which does not fit for `reason`, to the invalid message channel, waiting
    /// for room there; counts it.
    pub(crate) async fn divert(&self, channel: &str, msg: Message, reason: String) {
        self.count_diverted();
        if let Err(msg) = self.invalid.put(msg, channel, reason.clone()).await {
            tracing::warn!(%channel, message = %msg.id(), reason = %Escaped(&reason), "invalid message channel closed: message discarded");
        }
    }

    /// Diverts `msg` as [`divert`](Self::divert) does, without waiting (forcing it in).
    pub(crate) fn divert_now(&self, channel: &str, msg: Message, reason: String) {
        self.count_diverted();
        self.invalid.put_now(msg, channel, reason);
    }
}

impl fmt::Debug for DatatypeCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatatypeCheck")
            .field("datatype", &self.datatype.name())
            .field("invalid", &self.invalid.name())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: serde_json::Value, payload: &str) -> Result<(), String> {
        JsonSchema::new("order", &schema)
            .map_err(|e| e.to_string())?
            .check(&Message::new(payload.to_owned()))
    }

    #[test]
    fn a_missing_property_and_a_wrong_type_are_said_with_where() {
        let schema = json!({
            "type": "object",
            "required": ["sku", "quantity"],
            "properties": {"quantity": {"type": "integer"}, "tags": {"type": "array"}}
        });
        assert_eq!(
            check(schema.clone(), r#"{"quantity": "many"}"#).unwrap_err(),
            "does not match schema order: at /: required property \"sku\" is missing; \
             at /quantity: is a string, not integer"
        );
        assert_eq!(
            check(schema.clone(), r#"{"tags": {}}"#).unwrap_err(),
            "does not match schema order: at /: required properties \"sku\", \"quantity\" are missing; \
             at /tags: is an object, not array"
        );
        assert_eq!(check(schema, r#"{"sku": "A", "quantity": 3}"#), Ok(()));
    }

    #[test]
    fn reasons_are_the_failed_rules_under_combinators_and_references() {
        let schema = json!({
            "$defs": {"positive": {"type": "number", "exclusiveMinimum": 0}},
            "allOf": [{"properties": {"price": {"$ref": "#/$defs/positive"}}}]
        });
        let reason = check(schema, r#"{"price": -2}"#).unwrap_err();
        assert!(
            reason.starts_with("does not match schema order: at /price: must be > 0"),
            "{reason}"
        );
        assert!(!reason.contains("allOf"), "{reason}");
    }

    #[test]
    fn the_payload_is_parsed_once_and_kept_for_whoever_reads_it_next() {
        let schema = JsonSchema::new("order", &json!({"type": "object"})).unwrap();
        let msg = Message::new(r#"{"total": 3}"#);
        assert!(!msg.is_json_parsed());
        assert_eq!(schema.check(&msg), Ok(()));
        assert!(msg.is_json_parsed());
        assert_eq!(msg.json_value().unwrap()["total"], 3);
    }

    #[test]
    fn at_most_five_reasons_are_given() {
        let schema = json!({"items": {"type": "string"}});
        let reason = check(schema, "[1, 2, 3, 4, 5, 6, 7, 8]").unwrap_err();
        assert_eq!(reason.matches("at /").count(), MAX_REASONS, "{reason}");
    }

    #[test]
    fn a_reference_outside_the_schema_is_refused_and_nothing_is_read() {
        let dir = std::env::temp_dir().join(format!("eip-schema-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let other = dir.join("other.json");
        std::fs::write(&other, r#"{"type": "string"}"#).unwrap();
        let url = format!("file://{}", other.display());
        for reference in [url.as_str(), "other.json", "https://example.com/s.json"] {
            let schema = json!({"properties": {"a": {"$ref": reference}}});
            let err = JsonSchema::new("order", &schema)
                .err()
                .unwrap_or_else(|| panic!("{reference} compiled"));
            assert!(
                matches!(err, ChannelError::InvalidSchema { ref datatype, .. } if datatype == "order"),
                "{err}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_draft_comes_from_dollar_schema_and_format_follows_it() {
        let date = json!({"format": "date-time"});
        // 2020-12 (the default): format is an annotation.
        assert_eq!(check(date.clone(), r#""yesterday""#), Ok(()));
        let mut draft7 = date;
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let reason = check(draft7, r#""yesterday""#).unwrap_err();
        assert!(reason.contains("date-time"), "{reason}");
    }

    #[test]
    fn a_broken_schema_is_an_error_naming_the_datatype() {
        for schema in [
            json!({"type": 12}),
            json!({"pattern": "(unclosed"}),
            json!({"$ref": "#/$defs/none"}),
        ] {
            let err = JsonSchema::new("order", &schema).err().expect("refused");
            assert!(err.to_string().contains("order"), "{err}");
        }
    }

    #[test]
    fn a_payload_that_is_not_json_or_says_another_type_does_not_fit() {
        let schema = json!({});
        assert!(
            check(schema.clone(), "{oops")
                .unwrap_err()
                .starts_with("payload is not JSON")
        );
        let xml = Message::builder("<a/>")
            .header(crate::message::names::CONTENT_TYPE, "application/xml")
            .build();
        let reason = JsonSchema::new("order", &schema)
            .unwrap()
            .check(&xml)
            .unwrap_err();
        assert!(reason.contains("not JSON"), "{reason}");
    }
}
