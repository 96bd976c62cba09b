//! Errors of the file adapter: each names the file or setting and what went wrong.
//!
//! Names can come from outside (a header, a file dropped in a directory) and be thousands of
//! bytes long: what an error says shows each path component of more than [`SHOWN_BYTES`]
//! bytes shortened, with its length, so a log line stays a line.

use std::path::{Component, Path, PathBuf};

/// The longest name component an error shows whole; longer ones are cut after this many bytes
/// (at a character boundary) and given with their length.
const SHOWN_BYTES: usize = 100;

/// What went wrong in the file adapter, naming the file (or the setting) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// A file system operation failed.
    #[error("`{}`: could not {op}: {source}", shown(path))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done ("read", "rename into the claim directory", ...).
        op: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A glob that does not parse.
    #[error("invalid glob `{glob}`: {reason}")]
    Glob {
        /// The glob given.
        glob: String,
        /// Why it does not parse.
        reason: String,
    },
    /// A name template that does not parse, or would leave its directory whatever it is given.
    #[error("invalid name template `{template}`: {reason}")]
    Template {
        /// The template given.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An adapter setting that can not work (say, a done directory that is the watched one).
    #[error("file adapter on `{}`: {reason}", dir.display())]
    Config {
        /// The adapter's directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file name made from a message would leave the adapter's directory: refused.
    #[error("name `{}` would leave `{}`: {reason}", shortened(name), dir.display())]
    Escape {
        /// The adapter's directory.
        dir: PathBuf,
        /// The name as far as it was made.
        name: String,
        /// What gave it away (`..`, a path separator in a header, a symlink, ...).
        reason: String,
    },
    /// A name made from a message that the file system can never hold (too long, or not a
    /// valid name there): trying again would fail the same way.
    #[error("name `{}` can never be written in `{}`: {reason}", shortened(name), dir.display())]
    Name {
        /// The sink's directory.
        dir: PathBuf,
        /// The name made from the message, relative to `dir`.
        name: String,
        /// The file system's answer, and the length of the name's longest component.
        reason: String,
    },
    /// A directory the adapter was to use is not one it trusts: a symbolic link, not a
    /// directory, or owned by another user. Nothing was moved into it or created there.
    #[error("`{}` is refused: {reason}", shown(path))]
    Untrusted {
        /// The directory.
        path: PathBuf,
        /// Why ("is a symbolic link", "is owned by uid 65534, not eip's uid 0").
        reason: String,
    },
    /// A file that changed while it was read (truncated, grown or rewritten): what was read is
    /// not the file as it was when opened, so it is not delivered.
    #[error("`{}` changed while read: {reason}", shown(path))]
    Changed {
        /// The file.
        path: PathBuf,
        /// What changed ("1048576 bytes at open, 4096 read").
        reason: String,
    },
    /// The template names a header the message does not carry, or one that can not be a name.
    #[error("name template `{template}`: header `{header}` {reason}")]
    Header {
        /// The template.
        template: String,
        /// The header.
        header: String,
        /// What is wrong with it ("is missing", "holds bytes").
        reason: &'static str,
    },
    /// The template needs what the message does not have (a subject, a path that selects
    /// something, a jq expression that succeeds on it).
    #[error("name template `{template}`: {reason}")]
    Render {
        /// The template.
        template: String,
        /// Why the message could not fill it in.
        reason: String,
    },
    /// A file larger than the adapter's limit: it was not read.
    #[error("`{}` is {size} bytes, more than the limit of {limit}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Content that is not what the mode asks for (JSON lines that are not UTF-8, a payload to
    /// append as a JSON line that is not JSON).
    #[error("`{}`: {reason}", shown(path))]
    Content {
        /// The file.
        path: PathBuf,
        /// What is wrong with the content.
        reason: String,
    },
    /// The target file exists and the sink does not overwrite.
    #[error("`{}` exists already", shown(path))]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The channel did not accept the file's message.
    #[error("`{}`: not accepted by the channel: {reason}", path.display())]
    NotAccepted {
        /// The file.
        path: PathBuf,
        /// The channel's answer.
        reason: String,
    },
    /// The channel is closed: the inbound adapter stopped.
    #[error("`{}`: channel closed: {reason}", path.display())]
    ChannelClosed {
        /// The file being sent when the channel was found closed.
        path: PathBuf,
        /// The channel's answer.
        reason: String,
    },
}

impl FileError {
    /// Whether trying again would fail the same way: a name that escapes, can not be made or
    /// that the file system can never hold, content that is not what the mode asks for, a
    /// file that exists. For
    /// [`Consumer::permanent_errors`](eip_core::endpoint::Consumer::permanent_errors), so
    /// such messages are dead-lettered at once; I/O errors (a full disk) are worth a retry.
    pub fn is_permanent(&self) -> bool {
        !matches!(
            self,
            FileError::Io { .. } | FileError::ChannelClosed { .. } | FileError::Untrusted { .. }
        )
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| FileError::Io { path, op, source }
    }
}

/// `name` whole if it is at most [`SHOWN_BYTES`] long, else its start and its length:
/// `nnnn… (10000 bytes)`.
pub(crate) fn shortened(name: &str) -> String {
    if name.len() <= SHOWN_BYTES {
        return name.to_owned();
    }
    let mut end = SHOWN_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &name[..end], name.len())
}

/// `path` for an error message, each overlong component [`shortened`].
fn shown(path: &Path) -> String {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(shortened(&part.to_string_lossy())),
            other => out.push(other),
        }
    }
    out.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_shown_shortened_with_their_length() {
        assert_eq!(shortened("short"), "short");
        let long = "é".repeat(3000);
        let shown_name = shortened(&long);
        assert!(shown_name.ends_with("… (6000 bytes)"), "{shown_name}");
        assert!(shown_name.len() < SHOWN_BYTES + 20);
        let path = Path::new("/out").join("x".repeat(5000)).join("y");
        let text = shown(&path);
        assert!(
            text.starts_with("/out/xxx") && text.ends_with("(5000 bytes)/y"),
            "{text}"
        );
    }
}
