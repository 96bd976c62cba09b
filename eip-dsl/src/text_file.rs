//! Reading a file that a flow names (the flow file itself, a datatype's schema): outside data,
//! so what it is and how large it is are checked before its content is read.
//!
//! A flow file or a schema is a page or two of text; a path can name anything else. So
//! [`read_text_file`] refuses, naming what it found, a path that is not a regular file: a FIFO
//! (whose `open` would wait for a writer for ever), a device such as `/dev/zero` (which never
//! ends), a directory or a socket. It looks before it opens, opens without waiting (so a file
//! swapped for a FIFO in between can not block it either), and checks the opened file is
//! still a regular file and the one it looked at. A regular file larger than the limit is
//! refused by its size, unread (a sparse 3 GB file costs nothing), and at most `limit + 1`
//! bytes are ever read, so a file that grows while read, or reports a size it does not have
//! (like the files of `/proc`), can not pass the limit either.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// Why a file named by a flow could not be read. The text continues a sentence naming the
/// file: "can not read the flow file `f.yaml`: it is a FIFO (named pipe), not a regular file".
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names something other than a regular file.
    #[error("it is {0}, not a regular file")]
    NotAFile(&'static str),
    /// The file is larger than the limit, by its size on disk.
    #[error("it is {size} bytes long; at most {limit} are read")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The most that is read.
        limit: u64,
    },
    /// More than the limit could be read, whatever size the file reported.
    #[error("it holds more than {limit} bytes; at most {limit} are read")]
    GrewPastLimit {
        /// The most that is read.
        limit: u64,
    },
    /// The content is not UTF-8 text.
    #[error("it is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The offset of the first byte that is not UTF-8.
        offset: usize,
    },
    /// The path named another file when opened than when looked at.
    #[error("it was replaced by another file while being opened")]
    Replaced,
    /// The operating system refused to open or read it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The text of the regular file at `path`, at most `limit` bytes of UTF-8.
///
/// Refused, each with its [`ReadError`]: a path that is not a regular file (a FIFO, a device,
/// a directory, a socket), checked before opening and again on the opened file, which is
/// opened without waiting; a file larger than `limit` by its size, unread; a file that yields
/// more than `limit` bytes whatever its size said (at most `limit + 1` are read); text that
/// is not UTF-8.
///
/// ```
/// use eip_dsl::load::{ReadError, read_text_file};
///
/// let refused = read_text_file("/dev/zero".as_ref(), 1024).unwrap_err();
/// assert!(matches!(refused, ReadError::NotAFile("a character device")));
/// ```
pub fn read_text_file(path: &Path, limit: u64) -> Result<String, ReadError> {
    let looked = std::fs::metadata(path)?;
    regular_within(&looked, limit)?;
    let file = open_without_waiting(path)?;
    let opened = file.metadata()?;
    regular_within(&opened, limit)?;
    if !same_file(&looked, &opened) {
        return Err(ReadError::Replaced);
    }
    let bytes = read_at_most(file, limit)?;
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

/// At most `limit` bytes from `reader`; more is an error, found by reading one byte past it.
pub(crate) fn read_at_most(reader: impl Read, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::GrewPastLimit { limit });
    }
    Ok(bytes)
}

/// Refuses what is not a regular file, or is one larger than `limit`.
fn regular_within(metadata: &Metadata, limit: u64) -> Result<(), ReadError> {
    if !metadata.is_file() {
        return Err(ReadError::NotAFile(kind_of(metadata)));
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge {
            size: metadata.len(),
            limit,
        });
    }
    Ok(())
}

/// What a path that is not a regular file names, for the error.
fn kind_of(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "an unknown kind of file"
}

/// Opens `path` for reading; on Unix without waiting, as opening a FIFO would (for a regular
/// file the flag changes nothing).
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Whether two looks at a path saw the same file.
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        // No inode to compare; the second look's checks stand alone.
        let _ = (a, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_that_never_ends_is_cut_one_byte_past_the_limit() {
        let refused = read_at_most(std::io::repeat(b'a'), 1000);
        assert!(
            matches!(refused, Err(ReadError::GrewPastLimit { limit: 1000 })),
            "{refused:?}"
        );
    }

    #[test]
    fn exactly_the_limit_is_read() {
        let bytes = read_at_most(std::io::repeat(b'a').take(1000), 1000);
        assert_eq!(bytes.map(|b| b.len()).ok(), Some(1000));
    }

    #[test]
    fn a_directory_is_refused_by_its_kind() {
        let refused = read_text_file(Path::new("."), 10);
        assert!(
            matches!(refused, Err(ReadError::NotAFile("a directory"))),
            "{refused:?}"
        );
    }
}
