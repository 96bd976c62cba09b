//! One component's reading of one message: the payload read as JSON at most once, lazily, and
//! only as far as the component's [`Demand`] goes.
//!
//! A router makes one [`Reading`] per message for all its clauses; a predicate or a template on
//! its own makes one per call. Nothing is read until a JSONPath is evaluated, so a test on
//! headers alone never touches the payload. When the message already holds a full parse (a
//! Datatype Channel checked it, or an earlier step asked for [`Message::json_value`]), that one
//! is used; a component that reads the whole payload parses it through `json_value` too, so the
//! parse is kept for the steps after it. Otherwise the payload is read by
//! [`projection`](super::projection), building only the demanded parts: the projection stays
//! with this reading and is dropped with it.

use std::cell::OnceCell;

use serde_json::Value;

use super::demand::Demand;
use super::projection::{Projection, project};
use super::tree::TreeNode;
use super::{BodyError, Message};

/// A message as read by one component; see the [module](self).
pub(crate) struct Reading<'m> {
    msg: &'m Message,
    demand: &'m Demand,
    json: OnceCell<Result<Json<'m>, BodyError>>,
}

/// The payload as JSON: the message's own full parse, or this reading's projection.
enum Json<'m> {
    Shared(&'m Value),
    Projected(Projection<'m>),
}

/// The payload as a reading holds it: parsed into `Value`s, or projected into a tree. Both are
/// read through [`JsonNode`], with the same answers.
#[derive(Clone, Copy)]
pub(crate) enum Doc<'a> {
    Value(&'a Value),
    Tree(TreeNode<'a>),
}

impl Doc<'_> {
    /// The document as a `Value` of its own (for tests).
    #[cfg(test)]
    pub(crate) fn to_value(self) -> Value {
        use super::json_node::JsonNode;
        match self {
            Doc::Value(value) => value.clone(),
            Doc::Tree(tree) => tree.to_value(),
        }
    }
}

impl<'m> Reading<'m> {
    /// `msg` as read by a component that reads what `demand` says of its payload (and anything
    /// of its headers).
    pub(crate) fn new(msg: &'m Message, demand: &'m Demand) -> Self {
        Reading {
            msg,
            demand,
            json: OnceCell::new(),
        }
    }

    /// The message.
    pub(crate) fn message(&self) -> &'m Message {
        self.msg
    }

    /// The payload as JSON, read on the first call: every path within the demand selects in it
    /// what it selects in the full parse. A payload that is not JSON is the same error as
    /// [`Message::json_value`] gives.
    pub(crate) fn json(&self) -> Result<Doc<'_>, &BodyError> {
        match self.json.get_or_init(|| self.read()) {
            Ok(Json::Shared(value)) => Ok(Doc::Value(value)),
            Ok(Json::Projected(Projection::Value(value))) => Ok(Doc::Value(value)),
            Ok(Json::Projected(Projection::Tree(tree))) => Ok(Doc::Tree(tree.root())),
            Err(e) => Err(e),
        }
    }

    fn read(&self) -> Result<Json<'m>, BodyError> {
        if self.msg.is_json_parsed() || self.demand.is_whole() {
            return self.msg.json_value().map(Json::Shared);
        }
        project(self.msg.payload(), self.demand)
            .map(Json::Projected)
            .map_err(|source| BodyError {
                id: self.msg.id(),
                format: "JSON",
                source,
            })
    }

    /// Whether the payload has been read by this reading (for tests).
    #[cfg(test)]
    pub(crate) fn has_read(&self) -> bool {
        self.json.get().is_some()
    }
}
