//! # eip-store
//!
//! The embedded durable store under eip's durable channels (work in progress).
