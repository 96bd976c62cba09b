//! Reloading a flow file into the running flow (`eip run`'s SIGHUP and `--watch`).
//!
//! The file is read and checked as at start. A file with problems is refused with its
//! diagnostics, and the running flow goes on unchanged. A valid file is compared with the one
//! the flow runs, as data, part by part (module `diff`):
//!
//! - something that can not change while the flow runs differs (a channel declared
//!   differently, the store, an exchange beyond its bindings, ...): nothing is applied, and
//!   the answer names each such difference with the reason ([`NotReloaded::NeedsRestart`]);
//! - a channel it removes is used by a join or binding added at runtime: nothing is applied,
//!   the answer names them ([`NotReloaded::InUse`]);
//! - otherwise the whole difference is applied, or none of it: the new channels, routes,
//!   adapters and bridges are made ready first (built, compiled, connected); if one fails
//!   (a port in use, a broker not answering), what was made ready is let go and the answer
//!   says why ([`NotReloaded::Refused`]). Then the joins and bindings that differ are
//!   changed (module `joins`), and the running flow is reshaped: removed parts drained, then
//!   stopped; changed ones replaced (see [`crate::compile::RunningFlow::commit`]). The file
//!   becomes the one the flow runs;
//! - nothing differs: nothing to do.
//!
//! Joins and bindings added at runtime ([`RuntimeChanges`]) are not the file's: a reload
//! neither removes nor duplicates them.

mod diff;
mod joins;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::RuntimeChanges;
use crate::compile::{CompileError, ReshapeError, RunningFlow};
use crate::diagnostic::FlowErrors;
use crate::plan::Plan;

/// The flow file a running flow was made from, to reload.
pub struct FlowFile {
    path: PathBuf,
    document: Value,
    plan: Plan,
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reloaded {
    /// The file says what it said.
    Unchanged,
    /// Each change made, in words (`channel audit added`, `route billing replaced`, `join
    /// quotes -> audit added`), in the order made.
    Applied(Vec<String>),
}

/// Why a reload changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum NotReloaded {
    /// The file could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// The file has problems: every one, with its position.
    #[error("the flow file has problems:\n{}", .0.render())]
    Invalid(Box<FlowErrors>),
    /// Parts that can not change while the flow runs differ.
    #[error("the file changes {}: that needs a restart", .0.join("; "))]
    NeedsRestart(Vec<String>),
    /// A channel the file removes is used by joins or bindings added at runtime.
    #[error("{}", .0.join("; "))]
    InUse(Vec<String>),
    /// A new channel, route, adapter or bridge could not start (the flow is as it was).
    #[error("{0}")]
    Refused(#[from] ReshapeError),
    /// A checked join or binding could not be made (the flow is as it was before it).
    #[error(transparent)]
    Apply(#[from] CompileError),
}

impl FlowFile {
    /// The file at `path` whose checked `plan` the flow was compiled from (read again here, as
    /// data, to compare later versions with).
    pub fn new(path: &Path, plan: Plan) -> Result<FlowFile, NotReloaded> {
        Ok(FlowFile {
            document: document(&read(path)?),
            path: path.to_owned(),
            plan,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again and applies what changed to the `running` flow (see the module's
    /// rules), waiting at most `limit` for what drains; `runtime`'s own joins and bindings
    /// stay.
    pub async fn reload(
        &mut self,
        running: &mut RunningFlow,
        runtime: &RuntimeChanges,
        limit: Duration,
    ) -> Result<Reloaded, NotReloaded> {
        // Read once: the text checked is the text compared.
        let text = read(&self.path)?;
        let name = self.path.display().to_string();
        let base_dir = self.path.parent().unwrap_or_else(|| Path::new(""));
        let plan = crate::load::load_str(&text, &name, base_dir)
            .map_err(|e| NotReloaded::Invalid(Box::new(e)))?;
        let document = document(&text);
        let difference = diff::compare(&self.document, &document, &self.plan, &plan);
        if !difference.restart.is_empty() {
            return Err(NotReloaded::NeedsRestart(difference.restart));
        }
        let reshape = difference.reshape;
        let in_use = used_at_runtime(runtime, &reshape.channels_removed);
        if !in_use.is_empty() {
            return Err(NotReloaded::InUse(in_use));
        }
        let prepared = running.prepare(&plan, &reshape, limit).await?;
        let mut said = match joins::apply(&self.plan, &plan, running.flow().bus(), runtime) {
            Ok(said) => said,
            Err(e) => {
                running.abandon(prepared).await;
                return Err(e.into());
            }
        };
        said.extend(running.commit(prepared, limit).await);
        self.document = document;
        self.plan = plan;
        Ok(if said.is_empty() {
            Reloaded::Unchanged
        } else {
            Reloaded::Applied(said)
        })
    }
}

/// The runtime joins and bindings that use one of the channels `removed`, each said with
/// how to remove it.
fn used_at_runtime(runtime: &RuntimeChanges, removed: &[String]) -> Vec<String> {
    let gone = |name: &str| removed.iter().any(|r| r == name);
    let joins = runtime.joins().into_iter();
    let joins = joins
        .filter(|(_, join)| gone(&join.from) || gone(&join.to))
        .map(|(id, join)| {
            format!(
                "the file removes a channel of runtime join {id} ({}): remove the join first \
                 (DELETE /api/joins/{id})",
                join.describe()
            )
        });
    let bindings = runtime.bindings().into_iter();
    let bindings = bindings
        .filter(|(_, binding)| binding.to.iter().any(|to| gone(to)))
        .map(|(id, binding)| {
            format!(
                "the file removes a channel of runtime binding {id} ({}): remove the binding \
                 first (DELETE /api/bindings/{id})",
                binding.describe()
            )
        });
    joins.chain(bindings).collect()
}

fn read(path: &Path) -> Result<String, NotReloaded> {
    crate::load::read_text_file(path, crate::load::MAX_FLOW_FILE_BYTES as u64)
        .map_err(|e| NotReloaded::Unreadable(e.to_string()))
}

/// The text as data (a text that is not YAML never gets this far: the check refuses it).
fn document(text: &str) -> Value {
    crate::load::document(text).unwrap_or(Value::Null)
}
