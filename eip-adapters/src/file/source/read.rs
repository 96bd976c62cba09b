//! Reading a claimed file, within the size limit, and making its messages.

use std::io::Read;
use std::path::Path;
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::names;

use super::claim::Claimed;
use super::dir::Dir;
use super::headers;
use crate::file::FileError;

/// A file's bytes and what the headers say of it.
pub(super) struct Contents {
    pub(super) bytes: Bytes,
    size: u64,
    modified_ms: i64,
}

/// Reads the claimed file (never through a symlink), refusing one larger than `limit` before
/// reading it.
pub(super) fn read(claims: &Dir, claimed: &Claimed, limit: u64) -> Result<Contents, FileError> {
    let path = &claimed.path;
    let file = claims
        .open_file(&claimed.file_name)
        .map_err(FileError::io(path, "open"))?;
    let meta = file.metadata().map_err(FileError::io(path, "stat"))?;
    if !meta.is_file() {
        return Err(FileError::Content {
            path: path.into(),
            reason: "not a regular file".into(),
        });
    }
    let too_large = |size| FileError::TooLarge {
        path: path.into(),
        size,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    // The file may grow while read: read one byte past the limit at most.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(FileError::io(path, "read"))?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(too_large(size));
    }
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Ok(Contents {
        bytes: bytes.into(),
        size,
        modified_ms,
    })
}

impl Contents {
    /// The whole file as one message.
    pub(super) fn whole(&self, name: &str) -> Message {
        let mut msg = Message::new(self.bytes.clone());
        self.describe(&mut msg, name);
        if name.ends_with(".json") {
            msg.headers_mut()
                .insert(names::CONTENT_TYPE, "application/json");
        }
        msg
    }

    /// Each non-blank line, numbered from 1: a message, or the line and why it is not JSON.
    pub(super) fn json_lines<'a>(
        &'a self,
        name: &'a str,
        path: &Path,
    ) -> Result<impl Iterator<Item = (usize, Line)> + 'a, FileError> {
        let text = std::str::from_utf8(&self.bytes).map_err(|e| FileError::Content {
            path: path.into(),
            reason: format!("JSON lines must be UTF-8: {e}"),
        })?;
        Ok(text
            .split('\n')
            .enumerate()
            .map(|(i, line)| (i + 1, line.strip_suffix('\r').unwrap_or(line)))
            .filter(|(_, line)| !line.trim().is_empty())
            .map(move |(n, line)| {
                let payload = self.bytes.slice_ref(line.as_bytes());
                let mut msg = Message::new(payload);
                self.describe(&mut msg, name);
                msg.headers_mut().insert(headers::LINE, n as i64);
                let line = match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(_) => {
                        msg.headers_mut()
                            .insert(names::CONTENT_TYPE, "application/json");
                        Line::Json(msg)
                    }
                    Err(e) => Line::Malformed {
                        msg,
                        reason: format!("line {n}: not JSON: {e}"),
                    },
                };
                (n, line)
            }))
    }

    fn describe(&self, msg: &mut Message, name: &str) {
        let h = msg.headers_mut();
        h.insert(headers::NAME, name);
        h.insert(headers::SIZE, i64::try_from(self.size).unwrap_or(i64::MAX));
        h.insert(headers::MODIFIED, self.modified_ms);
    }
}

/// One line of a JSON-lines file.
pub(super) enum Line {
    /// A JSON value, as a message.
    Json(Message),
    /// A line that is not JSON, as a message, and the reason.
    Malformed { msg: Message, reason: String },
}
