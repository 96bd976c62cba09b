//! Database channel adapters: poll a table into a channel, write messages into a table.
//!
//! On sqlx, for SQLite (embedded, a file), PostgreSQL and MySQL/MariaDB (over the network, no
//! TLS yet: see [`Connection`]).
//!
//! - [`SqlOutbound`], a `tower::Service<Message>`, runs one parameterized statement per message,
//!   batching messages that arrive together into one transaction (a plain INSERT as one
//!   multi-row statement); `Ok` means committed.
//! - [`SqlInbound`] polls a query, claims the rows so that concurrent pollers never take the
//!   same one ([`Claim`]), sends each row as a JSON object and marks it done once the channel
//!   accepted it.
//!
//! **Never SQL built from message text.** Statements are parsed once, when the adapter is
//! built, into the database's SQL with placeholders and a list of named parameters whose values
//! are bound from each message:
//!
//! ```text
//! INSERT INTO trades(symbol, qty, trader) VALUES (:$.symbol, :$.quantity, :header.trader)
//! UPDATE orders SET done = true WHERE id = :id
//! ```
//!
//! `:$.…` is a JSONPath into the payload (it must select one value), `:header.NAME` a header,
//! `:name` a top-level field of the payload (for the inbound done statement: a column of the
//! row). A parameter that finds no value is an error naming it. Values are bound with the SQL
//! type of their JSON type (text, 64-bit integer, double, boolean, `NULL`; objects and arrays
//! as JSON text: write `CAST(:$.doc AS jsonb)` for a PostgreSQL `jsonb` column).
//!
//! Configuration types ([`Connection`], [`SqlOutboundConfig`], [`SqlInboundConfig`]) are
//! plain data, so a flow file can be read into them.

mod connection;
mod error;
pub mod inbound;
pub mod lookup;
mod multi_row;
pub mod outbound;
mod statement;
mod value;

pub use connection::Connection;
pub use error::SqlError;
pub use inbound::{Claim, ClaimColumns, SqlInbound, SqlInboundConfig, SqlInboundHandle};
pub use lookup::{SqlLookup, SqlLookupConfig};
pub use outbound::{SqlOutbound, SqlOutboundConfig};
pub use statement::Dialect;
