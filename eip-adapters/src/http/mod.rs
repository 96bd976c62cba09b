//! HTTP adapter (in progress).
