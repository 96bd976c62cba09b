//! Flows for eip: the Rust builder, the flow-file format, the compiler, and the `eip` tool.
//!
//! A flow is declared in Rust ([`builder`]) or in a YAML flow file ([`load`]). Either way it
//! becomes a [`spec::FlowSpec`] (plain data, as written), is checked as a whole by
//! [`validate`] into a [`plan::Plan`] (every problem collected and reported with its position
//! and a suggestion), and is [compiled](compile) into a running flow of eip-core channels,
//! routers, joins and exchanges. The `eip` binary (`run`, `validate`, `graph`, `route`) is a thin
//! shell over these steps.

pub mod builder;
pub mod compile;
pub mod diagnostic;
pub mod flow_file;
pub mod graph;
pub mod kind;
pub mod load;
pub mod plan;
mod settings;
pub mod spec;
pub mod validate;

pub use eip_adapters as adapters;
pub use eip_core as core;
