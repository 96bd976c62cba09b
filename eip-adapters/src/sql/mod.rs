//! Database adapter (in progress).
