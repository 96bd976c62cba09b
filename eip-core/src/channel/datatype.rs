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
pub struct JsonSchema {
    name: String,
    validator: jsonschema::Validator,
}

impl JsonSchema {
    /// Compiles `schema` (draft detected from `$schema`, 2020-12 by default).
    pub fn new(name: impl Into<String>, schema: &serde_json::Value) -> Result<Self, ChannelError> {
        let name = name.into();
        let validator =
            jsonschema::validator_for(schema).map_err(|e| ChannelError::InvalidSchema {
                datatype: name.clone(),
                reason: e.to_string(),
            })?;
        Ok(JsonSchema { name, validator })
    }
}

impl Datatype for JsonSchema {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, message: &Message) -> Result<(), String> {
        check_json_content_type(message)?;
        let value: serde_json::Value = message
            .json()
            .map_err(|e| format!("payload is not JSON: {}", e.source))?;
        let problems: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(5)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("at {at}: {e}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "does not match schema {}: {}",
                self.name,
                problems.join("; ")
            ))
        }
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
