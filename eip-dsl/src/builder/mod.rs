//! The Rust builder. (Stub: being written.)
