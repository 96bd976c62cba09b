//! Reading a claimed file, within the size limit, and making its messages.
//!
//! A file is delivered only as it was when opened: the bytes read must be as many as its size
//! at open, and its size and modification time the same after the read. A file truncated,
//! grown or rewritten while read is [`FileError::Changed`] (and goes to the error directory
//! with that reason), never a partial message.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::names;

use super::claim::Claimed;
use super::headers;
use super::records::Record;
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

/// A file opened to be streamed, and what it was at open.
pub(super) struct Opened {
    pub(super) file: File,
    pub(super) at_open: AtOpen,
}

/// A file's size and modification time when it was opened.
#[derive(Debug, Clone, Copy)]
pub(super) struct AtOpen {
    pub(super) size: u64,
    modified: Option<SystemTime>,
}

impl AtOpen {
    /// What `meta`, a file's metadata at its open, says.
    pub(super) fn of(meta: &std::fs::Metadata) -> AtOpen {
        AtOpen {
            size: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    /// The modification time in milliseconds since the Unix epoch (0 when unknown).
    pub(super) fn modified_ms(&self) -> i64 {
        self.modified
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The message standing for the file `name`: no payload, the file's headers.
    pub(super) fn file_message(&self, name: &str) -> Message {
        let mut msg = Message::new(Bytes::new());
        describe(&mut msg, name, self.size, self.modified_ms());
        msg
    }
}

/// Opens the claimed file to be streamed (never through a symlink), refusing one larger than
/// `limit`; its bytes are read later, chunk by chunk.
pub(super) fn open(claims: &Dir, claimed: &Claimed, limit: u64) -> Result<Opened, FileError> {
    let path = &claimed.path;
    let file = claims
        .open_file(&claimed.file_name)
        .map_err(|e| not_opened(path, e))?;
    let at_open = at_open(&file, path, limit)?;
    Ok(Opened { file, at_open })
}

/// What `file` is at open: a regular file within `limit`.
fn at_open(file: &File, path: &Path, limit: u64) -> Result<AtOpen, FileError> {
    let meta = file.metadata().map_err(FileError::io(path, "stat"))?;
    if !meta.is_file() {
        return Err(FileError::Content {
            path: path.into(),
            reason: "not a regular file".into(),
        });
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge {
            path: path.into(),
            size: meta.len(),
            limit,
        });
    }
    Ok(AtOpen::of(&meta))
}

/// Checks that a file of which `read` bytes were read is as it was at open: as many bytes as
/// its size then, and its size and modification time unchanged now (`after`).
pub(super) fn check_unchanged(
    path: &Path,
    at_open: AtOpen,
    read: u64,
    after: &std::fs::Metadata,
) -> Result<(), FileError> {
    let rewritten = after.modified().ok() != at_open.modified;
    if read != at_open.size || after.len() != at_open.size || rewritten {
        let mut reason = format!(
            "{} bytes at open, {read} read, {} now",
            at_open.size,
            after.len()
        );
        if rewritten {
            reason.push_str(", modified meanwhile");
        }
        return Err(FileError::Changed {
            path: path.into(),
            reason,
        });
    }
    Ok(())
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
    let at_open = at_open(file, path, limit)?;
    // One byte past the size at open (never past the limit): a file that grew shows.
    let mut bytes = Vec::with_capacity(usize::try_from(at_open.size).unwrap_or(0));
    reader
        .take(at_open.size + 1)
        .read_to_end(&mut bytes)
        .map_err(FileError::io(path, "read"))?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(FileError::TooLarge {
            path: path.into(),
            size,
            limit,
        });
    }
    let after = file.metadata().map_err(FileError::io(path, "stat"))?;
    check_unchanged(path, at_open, size, &after)?;
    Ok(Contents {
        bytes: bytes.into(),
        size,
        modified_ms: at_open.modified_ms(),
    })
}

/// Puts the file's headers on `msg`.
fn describe(msg: &mut Message, name: &str, size: u64, modified_ms: i64) {
    let h = msg.headers_mut();
    h.insert(headers::NAME, name);
    h.insert(headers::SIZE, i64::try_from(size).unwrap_or(i64::MAX));
    h.insert(headers::MODIFIED, modified_ms);
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
    ) -> Result<impl Iterator<Item = (usize, Record)> + 'a, FileError> {
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
                        Record::Part(msg)
                    }
                    Err(e) => Record::Malformed {
                        message: msg,
                        reason: format!("line {n}: not JSON: {e}"),
                    },
                };
                (n, line)
            }))
    }

    fn describe(&self, msg: &mut Message, name: &str) {
        describe(msg, name, self.size, self.modified_ms);
    }
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
