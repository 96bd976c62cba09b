//! Errors of the file adapter: each names the file or setting and what went wrong.

use std::path::PathBuf;

/// What went wrong in the file adapter, naming the file (or the setting) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// A file system operation failed.
    #[error("`{}`: could not {op}: {source}", path.display())]
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
    #[error("name `{name}` would leave `{}`: {reason}", dir.display())]
    Escape {
        /// The adapter's directory.
        dir: PathBuf,
        /// The name as far as it was made.
        name: String,
        /// What gave it away (`..`, a path separator in a header, a symlink, ...).
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
    #[error("`{}`: {reason}", path.display())]
    Content {
        /// The file.
        path: PathBuf,
        /// What is wrong with the content.
        reason: String,
    },
    /// The target file exists and the sink does not overwrite.
    #[error("`{}` exists already", path.display())]
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
    /// Whether trying again would fail the same way: a name that escapes or can not be made,
    /// content that is not what the mode asks for, a file that exists. For
    /// [`Consumer::permanent_errors`](eip_core::endpoint::Consumer::permanent_errors), so
    /// such messages are dead-lettered at once; I/O errors (a full disk) are worth a retry.
    pub fn is_permanent(&self) -> bool {
        !matches!(self, FileError::Io { .. } | FileError::ChannelClosed { .. })
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| FileError::Io { path, op, source }
    }
}
