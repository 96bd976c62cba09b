//! Resequencer.
