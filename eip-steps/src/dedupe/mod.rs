//! Idempotent Receiver.
