//! Flows for eip: the Rust builder, the flow-file format, the compiler, and the `eip` tool.
//!
//! A flow is declared in Rust ([`builder`]) or in a YAML flow file ([`load`]). Either way it
//! becomes a [`spec::FlowSpec`] (plain data, as written), is checked as a whole by
//! [`validate`] into a [`plan::Plan`] (every problem collected and reported with its position
//! and a suggestion), and is [compiled](compile) into a running flow of eip-core channels,
//! routers, joins and exchanges. The `eip` binary (`run`, `validate`, `graph`, `route`) is a thin
//! shell over these steps.
//!
//! Modules depend one way: [`spec`] and [`diagnostic`] at the bottom; the settings reader and
//! the [`kind`]s of adapter and bridge (one module each, listed in one table) above them, then
//! the [`plan`]; [`load`] (reading only) and [`validate`] (checking only) beside each other,
//! both asking the kinds; [`flow_file`] does one then the other; [`compile`], [`graph`] and
//! [`builder`] on top; [`control`] changes a compiled flow while it runs (joins and bindings),
//! and the admin server (`admin`, cargo feature `admin`) serves a running flow.

#[cfg(feature = "admin")]
pub mod admin;
pub mod builder;
pub mod compile;
pub mod control;
pub mod diagnostic;
pub mod flow_file;
pub mod graph;
pub mod kind;
pub mod load;
pub mod plan;
mod settings;
pub mod spec;
pub mod step;
mod template;
pub mod text_file;
pub mod validate;

pub use eip_adapters as adapters;
pub use eip_core as core;
