//! What can go wrong in the database adapter, naming the statement or parameter concerned.
//!
//! No variant carries a password: connection strings appear only in their redacted form (see
//! [`Connection`](super::Connection)), and sqlx's own errors (the server's answer) do not
//! repeat the password they were given.

use eip_core::channel::SendError;

/// An error of the database adapter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The connection string could not be used.
    #[error("connection string `{url}`: {reason}")]
    Url {
        /// The connection string, its password replaced by `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An environment variable named by the configuration is not set.
    #[error("environment variable `{name}` is not set (named by the {setting})")]
    MissingEnv {
        /// The variable.
        name: String,
        /// Which setting named it.
        setting: &'static str,
    },
    /// The database could not be reached or refused the login.
    #[error("cannot connect to `{url}`: {reason}")]
    Connect {
        /// The connection string, its password replaced by `***`.
        url: String,
        /// The driver's error, any occurrence of the password replaced by `***`.
        reason: String,
    },
    /// A statement of the configuration is not valid for the adapter.
    #[error("statement `{statement}`, at byte {at}: {reason}")]
    Statement {
        /// The statement as configured.
        statement: String,
        /// Where in it (bytes from its start).
        at: usize,
        /// What is wrong there.
        reason: String,
    },
    /// Any other configuration error.
    #[error("configuration: {0}")]
    Config(String),
    /// A named parameter found no value in the message (or row).
    #[error("statement `{statement}`: parameter `{parameter}` found no value in the message")]
    MissingValue {
        /// The statement as configured.
        statement: String,
        /// The parameter as written, such as `:$.symbol` or `:header.trader`.
        parameter: String,
    },
    /// A JSONPath parameter selected several values where one is bound.
    #[error("statement `{statement}`: parameter `{parameter}` selects {count} values, not one")]
    ManyValues {
        /// The statement as configured.
        statement: String,
        /// The parameter as written.
        parameter: String,
        /// How many values it selected.
        count: usize,
    },
    /// A JSONPath parameter met a payload that is not JSON.
    #[error("statement `{statement}`: parameter `{parameter}` needs a JSON payload: {reason}")]
    NotJson {
        /// The statement as configured.
        statement: String,
        /// The parameter as written.
        parameter: String,
        /// Why the payload is not JSON.
        reason: String,
    },
    /// The database refused or failed a statement; nothing of its transaction was committed.
    #[error("statement `{statement}` failed: {source}")]
    Execute {
        /// The statement as configured (or as the adapter built it).
        statement: String,
        /// sqlx's error.
        source: sqlx::Error,
    },
    /// A column of a polled row has a type the adapter does not turn into JSON.
    #[error(
        "column `{column}` has type {type_name}, which is not read as JSON: cast it to text or a number in the query"
    )]
    ColumnType {
        /// The column.
        column: String,
        /// The database's name of its type.
        type_name: String,
    },
    /// Another message of the same batch made the transaction fail; this one was not written.
    #[error("not written: the batch it was part of failed: {reason}")]
    Batch {
        /// The batch's error.
        reason: String,
    },
    /// The adapter's writer task stopped (its runtime shut down) before it told this call:
    /// the message's transaction was rolled back, or not begun, unless the commit itself was
    /// under way.
    #[error("not written: the batch writer was cancelled")]
    Cancelled,
    /// The channel did not accept a polled row's message; the row stays unclaimed.
    #[error(transparent)]
    Send(#[from] SendError),
}
