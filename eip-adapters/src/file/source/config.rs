//! The inbound adapter's configuration: plain data, parsed and checked once by the builder.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::records::{RecordFormat, Records};
use crate::file::FileError;

/// A glob over file names (not paths): `*`, `?`, `[abc]`, `{a,b}`; parsed once.
#[derive(Debug, Clone)]
pub struct FileGlob {
    source: String,
    matcher: globset::GlobMatcher,
}

impl FileGlob {
    /// Parses `glob`.
    pub fn parse(glob: &str) -> Result<Self, FileError> {
        let matcher = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| FileError::Glob {
                glob: glob.to_owned(),
                reason: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(FileGlob {
            source: glob.to_owned(),
            matcher,
        })
    }

    /// Whether a file name matches.
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for FileGlob {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl std::str::FromStr for FileGlob {
    type Err = FileError;
    fn from_str(s: &str) -> Result<Self, FileError> {
        FileGlob::parse(s)
    }
}

/// How a file becomes messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// The whole file is one message.
    #[default]
    WholeFile,
    /// Each non-blank line is a message and must be JSON; the file must be UTF-8.
    JsonLines,
}

/// What becomes of a file once the channel accepted its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhenDone {
    /// It is moved to this directory (relative paths are under the watched directory).
    MoveTo(PathBuf),
    /// It is deleted.
    Delete,
}

/// The checked configuration of a [`FileSource`](super::FileSource); made by
/// [`FileSourceBuilder`].
#[derive(Debug, Clone, PartialEq)]
pub struct FileSourceConfig {
    pub(super) dir: PathBuf,
    pub(super) glob: FileGlob,
    pub(super) mode: ReadMode,
    pub(super) records: Option<Records>,
    pub(super) when_done: WhenDone,
    pub(super) claim_dir: PathBuf,
    pub(super) error_dir: PathBuf,
    pub(super) max_size: u64,
    pub(super) poll_interval: Duration,
    pub(super) min_age: Duration,
    pub(super) watch: bool,
    pub(super) name: String,
}

impl FileSourceConfig {
    /// The watched directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The glob file names must match.
    pub fn glob(&self) -> &FileGlob {
        &self.glob
    }

    /// How a file becomes messages.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// The format a file is streamed in, a message per record, if one was given.
    pub fn records(&self) -> Option<&Arc<dyn RecordFormat>> {
        self.records.as_ref().map(|r| &r.0)
    }

    /// What becomes of a file once accepted.
    pub fn when_done(&self) -> &WhenDone {
        &self.when_done
    }

    /// Where claimed files wait while their messages are sent.
    pub fn claim_dir(&self) -> &Path {
        &self.claim_dir
    }

    /// Where failed files go, each with a `NAME.error` beside it.
    pub fn error_dir(&self) -> &Path {
        &self.error_dir
    }

    /// The largest file read, in bytes (streamed files: no limit unless one was given).
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    /// The adapter's name: the origin of what it puts in an invalid message channel.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Builds a [`FileSourceConfig`]; see [`FileSource::builder`](super::FileSource::builder).
#[derive(Debug)]
pub struct FileSourceBuilder {
    dir: PathBuf,
    glob: Result<FileGlob, FileError>,
    mode: ReadMode,
    records: Option<Arc<dyn RecordFormat>>,
    when_done: WhenDone,
    claim_dir: PathBuf,
    error_dir: PathBuf,
    max_size: Option<u64>,
    poll_interval: Duration,
    min_age: Duration,
    watch: bool,
    name: Option<String>,
}

/// The default size limit: 16 MiB.
pub const DEFAULT_MAX_SIZE: u64 = 16 << 20;

impl FileSourceBuilder {
    pub(super) fn new(dir: PathBuf) -> Self {
        FileSourceBuilder {
            dir,
            glob: FileGlob::parse("*"),
            mode: ReadMode::WholeFile,
            records: None,
            when_done: WhenDone::MoveTo(".done".into()),
            claim_dir: ".claimed".into(),
            error_dir: ".error".into(),
            max_size: None,
            poll_interval: Duration::from_secs(2),
            min_age: Duration::ZERO,
            watch: true,
            name: None,
        }
    }

    /// Only file names matching `glob` are taken (default `*`; names starting with `.` never).
    pub fn glob(mut self, glob: &str) -> Self {
        self.glob = FileGlob::parse(glob);
        self
    }

    /// How a file becomes messages (default [`ReadMode::WholeFile`]).
    pub fn mode(mut self, mode: ReadMode) -> Self {
        self.mode = mode;
        self
    }

    /// Streams each file in `format`, a message per record, as it is read: a file of any
    /// size, in bounded memory (see the [file module](crate::file)). Instead of a
    /// [`ReadMode`], which then must be left [`ReadMode::WholeFile`].
    pub fn records(mut self, format: Arc<dyn RecordFormat>) -> Self {
        self.records = Some(format);
        self
    }

    /// Moves accepted files to `dir` (default `.done` under the watched directory).
    pub fn done_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.when_done = WhenDone::MoveTo(dir.into());
        self
    }

    /// Deletes accepted files instead of moving them.
    pub fn delete_when_done(mut self) -> Self {
        self.when_done = WhenDone::Delete;
        self
    }

    /// Where claimed files wait (default `.claimed`). Adapters competing for one directory
    /// must share it, and it must be on the same file system as the directory.
    pub fn claim_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.claim_dir = dir.into();
        self
    }

    /// Where failed files go (default `.error`).
    pub fn error_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.error_dir = dir.into();
        self
    }

    /// Files larger than `bytes` go to the error directory unread (default
    /// [`DEFAULT_MAX_SIZE`]; no limit for files streamed by [`records`](Self::records),
    /// which are never held whole).
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    /// How often the directory is listed whatever the watcher says (default 2 s).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// Leaves files modified less than `age` ago for a later look, for writers that do not
    /// write under another name and rename (default zero).
    pub fn min_age(mut self, age: Duration) -> Self {
        self.min_age = age;
        self
    }

    /// Whether to watch the directory for prompt pick-up (default on); polling goes on
    /// either way.
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// The adapter's name (default `file:DIR`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The checked configuration: the glob parses, the limits are positive, and the claim,
    /// done and error directories are neither the watched directory nor one another.
    pub fn build(self) -> Result<FileSourceConfig, FileError> {
        let glob = self.glob?;
        let bad = |reason: String| FileError::Config {
            dir: self.dir.clone(),
            reason,
        };
        let under = |p: &Path| self.dir.join(p);
        let claim_dir = under(&self.claim_dir);
        let error_dir = under(&self.error_dir);
        let when_done = match self.when_done {
            WhenDone::MoveTo(d) => WhenDone::MoveTo(under(&d)),
            WhenDone::Delete => WhenDone::Delete,
        };
        let mut dirs = vec![("claim", &claim_dir), ("error", &error_dir)];
        if let WhenDone::MoveTo(d) = &when_done {
            dirs.push(("done", d));
        }
        for (i, (what, d)) in dirs.iter().enumerate() {
            if same_dir(d, &self.dir) {
                return Err(bad(format!(
                    "the {what} directory is the watched directory"
                )));
            }
            if let Some((other, _)) = dirs[..i].iter().find(|(_, o)| same_dir(o, d)) {
                return Err(bad(format!(
                    "the {what} and {other} directories are the same"
                )));
            }
        }
        let max_size = self.max_size.unwrap_or(match self.records {
            Some(_) => u64::MAX,
            None => DEFAULT_MAX_SIZE,
        });
        if max_size == 0 {
            return Err(bad("the size limit must be at least 1 byte".into()));
        }
        if self.poll_interval.is_zero() {
            return Err(bad("the poll interval must be positive".into()));
        }
        if self.records.is_some() && self.mode != ReadMode::WholeFile {
            return Err(bad(
                "a record format and JSON-lines mode contradict each other: a file is streamed \
                 by its format, or read whole"
                    .into(),
            ));
        }
        Ok(FileSourceConfig {
            name: self
                .name
                .unwrap_or_else(|| format!("file:{}", self.dir.display())),
            dir: self.dir,
            glob,
            mode: self.mode,
            records: self.records.map(Records),
            when_done,
            claim_dir,
            error_dir,
            max_size,
            poll_interval: self.poll_interval,
            min_age: self.min_age,
            watch: self.watch,
        })
    }
}

/// Lexical comparison, ignoring `.` components and trailing separators.
fn same_dir(a: &Path, b: &Path) -> bool {
    a.components().eq(b.components())
}
