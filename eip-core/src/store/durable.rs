//! The durable store (in progress).
