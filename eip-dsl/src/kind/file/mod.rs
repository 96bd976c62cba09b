//! The file adapters: `file-in` (the files of a directory become messages) and `file-out`
//! (messages become files, or JSON lines, in a directory).
//!
//! `dir` is relative to the flow file's directory; the claim, done and error directories of a
//! `file-in` adapter are relative to the directory it watches.

mod sink;
mod source;

pub(super) use self::sink::SINK;
pub(super) use self::source::SOURCE;
