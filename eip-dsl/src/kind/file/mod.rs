//! The file adapters: `file-in` (the files of a directory become messages) and `file-out`
//! (messages become files, or JSON lines, in a directory).
//!
//! `dir` is relative to the flow file's directory; the claim, done and error directories of a
//! `file-in` adapter are relative to the directory it watches. `file-in` with `format:` streams
//! each file a message per record ([`SplitRecords`]).

mod records;
mod sink;
mod source;

pub use self::records::SplitRecords;
pub(super) use self::sink::SINK;
pub(super) use self::source::SOURCE;
