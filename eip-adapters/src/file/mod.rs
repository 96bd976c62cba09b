//! File adapter (in progress).
