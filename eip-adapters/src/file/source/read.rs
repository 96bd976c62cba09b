//! Reading a claimed file, within the size limit, and making its messages.
//!
//! A file is delivered only as it was when opened: the bytes read must be as many as its size
//! at open, and its size and modification time the same after the read. A file truncated,
//! grown or rewritten while read is [`FileError::Changed`] (and goes to the error directory
//! with that reason), never a partial message.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::names;

use super::claim::Claimed;
use super::headers;
use crate::file::FileError;
use crate::file::dir::Dir;

/// A file's bytes and what the headers say of it.
pub(super) struct Contents {
    pub(super) bytes: Bytes,
    size: u64,
    modified_ms: i64,
}

/// Reads the claimed file (never through a symlink), refusing one larger than `limit` before
/// reading it and one that changed while it was read.
pub(super) fn read(claims: &Dir, claimed: &Claimed, limit: u64) -> Result<Contents, FileError> {
    let path = &claimed.path;
    let file = claims
        .open_file(&claimed.file_name)
        .map_err(|e| not_opened(path, e))?;
    read_open(&file, &mut &file, path, limit)
}

/// Why a claimed file could not be opened; a symlink is named as such (it is not followed).
fn not_opened(path: &Path, e: std::io::Error) -> FileError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return FileError::Content {
            path: path.into(),
            reason: "is a symbolic link: eip does not follow links it did not make".into(),
        };
    }
    FileError::io(path, "open")(e)
}

/// Reads `file`, open, through `reader` (the file itself, but for tests), and checks that what
/// was read is the file as it was at open: as many bytes as its size then, and its size and
/// modification time unchanged after the read.
fn read_open(
    file: &File,
    reader: &mut impl Read,
    path: &Path,
    limit: u64,
) -> Result<Contents, FileError> {
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
    let at_open = meta.len();
    if at_open > limit {
        return Err(too_large(at_open));
    }
    // One byte past the size at open (never past the limit): a file that grew shows.
    let mut bytes = Vec::with_capacity(usize::try_from(at_open).unwrap_or(0));
    reader
        .take(at_open + 1)
        .read_to_end(&mut bytes)
        .map_err(FileError::io(path, "read"))?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(too_large(size));
    }
    let after = file.metadata().map_err(FileError::io(path, "stat"))?;
    let rewritten = after.modified().ok() != meta.modified().ok();
    if size != at_open || after.len() != at_open || rewritten {
        let mut reason = format!("{at_open} bytes at open, {size} read, {} now", after.len());
        if rewritten {
            reason.push_str(", modified meanwhile");
        }
        return Err(FileError::Changed {
            path: path.into(),
            reason,
        });
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

#[cfg(test)]
mod tests {
    use std::fs::{self, OpenOptions};
    use std::io::Write;
    use std::path::PathBuf;
    use std::time::{Duration, SystemTime};

    use super::*;

    /// Reads the file, having first done `change` to it: a writer racing the read, made
    /// deterministic.
    struct Racing<'a> {
        file: &'a File,
        change: Option<Box<dyn FnOnce()>>,
    }

    impl Read for Racing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if let Some(change) = self.change.take() {
                change();
            }
            let mut file = self.file;
            file.read(buf)
        }
    }

    fn scratch(label: &str, size: usize) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "eip-file-read-{label}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        fs::write(&path, vec![7u8; size]).unwrap();
        path
    }

    fn read_racing(path: &Path, change: impl FnOnce() + 'static) -> Result<Contents, FileError> {
        let file = File::open(path).unwrap();
        let mut reader = Racing {
            file: &file,
            change: Some(Box::new(change)),
        };
        let read = read_open(&file, &mut reader, path, 16 << 20);
        fs::remove_file(path).unwrap();
        read
    }

    fn changed_reason(read: Result<Contents, FileError>) -> String {
        match read {
            Err(FileError::Changed { reason, .. }) => reason,
            Err(other) => panic!("not Changed: {other}"),
            Ok(contents) => panic!("accepted {} bytes", contents.bytes.len()),
        }
    }

    #[test]
    fn a_file_truncated_while_read_is_refused_as_changed() {
        let path = scratch("truncated", 1 << 20);
        let writer = path.clone();
        let read = read_racing(&path, move || {
            let file = OpenOptions::new().write(true).open(writer).unwrap();
            file.set_len(4096).unwrap();
        });
        let reason = changed_reason(read);
        assert!(
            reason.starts_with("1048576 bytes at open, 4096 read"),
            "{reason}"
        );
    }

    #[test]
    fn a_file_grown_while_read_is_refused_as_changed() {
        let path = scratch("grown", 4096);
        let writer = path.clone();
        let read = read_racing(&path, move || {
            let mut file = OpenOptions::new().append(true).open(writer).unwrap();
            file.write_all(b"more").unwrap();
        });
        let reason = changed_reason(read);
        assert!(
            reason.starts_with("4096 bytes at open, 4097 read, 4100 now"),
            "{reason}"
        );
    }

    #[test]
    fn a_file_rewritten_in_place_while_read_is_refused_as_changed() {
        let path = scratch("rewritten", 4096);
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let writer = path.clone();
        let read = read_racing(&path, move || {
            let mut file = OpenOptions::new().write(true).open(writer).unwrap();
            file.write_all(&[8u8; 4096]).unwrap();
        });
        let reason = changed_reason(read);
        assert!(reason.ends_with("modified meanwhile"), "{reason}");
    }

    #[test]
    fn a_file_left_alone_while_read_is_read_whole() {
        let path = scratch("whole", 100_000);
        let read = read_racing(&path, || {}).unwrap();
        assert_eq!(read.bytes.len(), 100_000);
        assert_eq!(read.size, 100_000);
    }
}
