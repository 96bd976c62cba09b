//! Formats besides JSON.
