//! The outbound file adapter: a `tower::Service<Message>` that writes each message to a file.

use std::fs;
use std::future::Future;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::SystemTime;

use eip_core::Message;

use super::dir::{Dir, Missing};
use super::error::shortened;
use super::{FileError, NameTemplate, blocking};

/// How the sink writes messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkMode {
    /// One file per message, named by the template, written atomically.
    Write(NameTemplate),
    /// One JSON line per message, appended to the file the template names.
    AppendJsonLines(NameTemplate),
    /// One JSON line per message holding its envelope (id, headers, death record, payload),
    /// appended to the file the template names: see [`envelope_line`].
    AppendEnvelopes(NameTemplate),
}

/// The parsed configuration of a [`FileSink`]: plain data, made by [`FileSinkBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSinkConfig {
    dir: PathBuf,
    mode: SinkMode,
    overwrite: bool,
}

impl FileSinkConfig {
    /// The directory files are written in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How messages are written.
    pub fn mode(&self) -> &SinkMode {
        &self.mode
    }

    /// Whether [`SinkMode::Write`] replaces a file of the same name.
    pub fn overwrite(&self) -> bool {
        self.overwrite
    }
}

/// Builds a [`FileSinkConfig`]; see [`FileSink::builder`].
#[derive(Debug)]
pub struct FileSinkBuilder {
    dir: PathBuf,
    mode: Result<SinkMode, FileError>,
    overwrite: bool,
}

impl FileSinkBuilder {
    /// One file per message, named by `template` (see [`NameTemplate`]); the default is
    /// `{id}`.
    pub fn name_template(mut self, template: &str) -> Self {
        self.mode = NameTemplate::parse(template).map(SinkMode::Write);
        self
    }

    /// Appends each message as a JSON line to the file `template` names (which may hold date
    /// parts for a file a day, say `orders-{yyyy}-{MM}-{dd}.jsonl`).
    pub fn append_json_lines(mut self, template: &str) -> Self {
        self.mode = NameTemplate::parse(template).map(SinkMode::AppendJsonLines);
        self
    }

    /// Appends each message's envelope as a JSON line to the file `template` names: the
    /// message id, its headers, its death record (for a dead letter: why and where it died)
    /// and its payload, whatever the payload is (see [`envelope_line`]).
    pub fn append_envelopes(mut self, template: &str) -> Self {
        self.mode = NameTemplate::parse(template).map(SinkMode::AppendEnvelopes);
        self
    }

    /// How messages are written, with a template already parsed (one parsed with more kinds,
    /// such as jq: see [`NameTemplate::new`]).
    pub fn mode(mut self, mode: SinkMode) -> Self {
        self.mode = Ok(mode);
        self
    }

    /// Whether writing a file whose name exists replaces it (the default: a redelivered
    /// message rewrites its own file) or fails with [`FileError::Exists`].
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// The configuration, or the template's error.
    pub fn build(self) -> Result<FileSinkConfig, FileError> {
        Ok(FileSinkConfig {
            dir: self.dir,
            mode: self.mode?,
            overwrite: self.overwrite,
        })
    }
}

/// The outbound file channel adapter. Cheap to clone: clones share the directory and the
/// append lock.
///
/// Two modes. **Write** makes one file per message, atomically: the payload goes to a
/// temporary file in the target directory (a dot name the inbound adapter never takes), which
/// is fsynced, renamed to its name and the directory fsynced; a reader sees the whole file or
/// none. Every directory below the sink's own is opened without following a symlink (and made
/// if missing), and the file is created, renamed and appended to relative to that handle, so
/// nothing swapped in on the way can lead a write elsewhere. **Append** adds the payload, which must be JSON, as one line to a JSON-lines file,
/// fsynced before the call answers `Ok`. Names come from a [`NameTemplate`]; a name that would
/// leave the directory (through `..`, an absolute path, a separator in a header value, or a
/// symlink in the directory pointing elsewhere) is refused with [`FileError::Escape`], and the
/// consumer driving the sink dead-letters the message with that error.
///
/// The temporary file's name, `.eip-PID-SEQ.tmp`, is at most 40 bytes whatever the final name,
/// so every name the file system can hold can be written. A name it can never hold (a
/// component longer than its limit, 255 bytes on most; a name it calls invalid) is
/// [`FileError::Name`]: permanent, so the message is dead-lettered at once with the reason,
/// not retried.
#[derive(Debug, Clone)]
pub struct FileSink {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: FileSinkConfig,
    /// The directory, symlinks resolved: every file is written below it, through no symlink.
    root: PathBuf,
    /// Serializes appends within the process, so lines never interleave.
    append: Mutex<()>,
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl FileSink {
    /// A builder writing into `dir`.
    pub fn builder(dir: impl Into<PathBuf>) -> FileSinkBuilder {
        FileSinkBuilder {
            dir: dir.into(),
            mode: Ok(SinkMode::Write(
                NameTemplate::parse("{id}").expect("a valid template"),
            )),
            overwrite: true,
        }
    }

    /// A sink for `config`, creating its directory if need be.
    pub fn new(config: FileSinkConfig) -> Result<Self, FileError> {
        fs::create_dir_all(&config.dir).map_err(FileError::io(&config.dir, "create"))?;
        let root = fs::canonicalize(&config.dir).map_err(FileError::io(&config.dir, "resolve"))?;
        Ok(FileSink {
            inner: Arc::new(Inner {
                config,
                root,
                append: Mutex::new(()),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FileSinkConfig {
        &self.inner.config
    }

    /// Writes `msg` as configured, on the calling thread; the path written.
    pub fn write_blocking(&self, msg: &Message) -> Result<PathBuf, FileError> {
        self.inner.write(msg)
    }
}

impl tower::Service<Message> for FileSink {
    type Response = PathBuf;
    type Error = FileError;
    type Future = Pin<Box<dyn Future<Output = Result<PathBuf, FileError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), FileError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(blocking(move || inner.write(&msg)))
    }
}

impl Inner {
    fn write(&self, msg: &Message) -> Result<PathBuf, FileError> {
        let (template, append) = match &self.config.mode {
            SinkMode::Write(t) => (t, false),
            SinkMode::AppendJsonLines(t) | SinkMode::AppendEnvelopes(t) => (t, true),
        };
        let relative = template.render(msg, SystemTime::now(), &self.config.dir)?;
        let dir = self.open_parent(&relative)?;
        let name = relative
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| self.escape(&relative, "no file name".into()))?;
        let path = self.root.join(&relative);
        if append {
            self.append(msg, &relative, &dir, name, &path)?;
        } else {
            self.write_atomically(msg.payload(), &relative, &dir, name, &path)?;
        }
        Ok(path)
    }

    /// The directory `relative`'s file goes in, opened component by component below the root
    /// without following a symlink, and made where missing: nothing on the way can lead out.
    fn open_parent(&self, relative: &Path) -> Result<Dir, FileError> {
        let mut dir = Dir::by_path(&self.root, Missing::Refuse)?;
        let Some(parent) = relative.parent() else {
            return Ok(dir);
        };
        for component in parent.components() {
            let Some(name) = Some(component)
                .filter(|c| matches!(c, Component::Normal(_)))
                .and_then(|c| c.as_os_str().to_str())
            else {
                return Err(self.escape(relative, "not a plain relative path".into()));
            };
            dir = dir.subdir(name, Missing::Create).map_err(|e| match e {
                FileError::Untrusted { reason, .. } => self.escape(
                    relative,
                    format!("`{}` {reason}: not followed", shortened(name)),
                ),
                FileError::Io { source, path, op } => self.name_error(relative, &path, op)(source),
                other => other,
            })?;
        }
        Ok(dir)
    }

    fn escape(&self, relative: &Path, reason: String) -> FileError {
        FileError::Escape {
            dir: self.config.dir.clone(),
            name: relative.display().to_string(),
            reason,
        }
    }

    /// For an operation on `relative` (at `path`): an error no retry can mend (the name is too
    /// long or invalid for the file system) is [`FileError::Name`], others [`FileError::Io`].
    fn name_error<'a>(
        &'a self,
        relative: &'a Path,
        path: &'a Path,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> FileError + 'a {
        move |e| {
            if !is_name_error(&e) {
                return FileError::io(path, op)(e);
            }
            let longest = relative
                .components()
                .map(|c| c.as_os_str().len())
                .max()
                .unwrap_or(0);
            FileError::Name {
                dir: self.config.dir.clone(),
                name: relative.display().to_string(),
                reason: format!("{e}; its longest component is {longest} bytes"),
            }
        }
    }

    /// Writes `payload` to a temporary file in `dir`, fsyncs it, renames (or links) it to
    /// `name` and fsyncs `dir`.
    fn write_atomically(
        &self,
        payload: &[u8],
        relative: &Path,
        dir: &Dir,
        name: &str,
        path: &Path,
    ) -> Result<(), FileError> {
        // Short and of bounded length: it fits wherever the final name fits.
        let temp = format!(
            ".eip-{}-{}.tmp",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let result = (|| {
            let temp_path = dir.join(&temp);
            let mut file = dir
                .create_new(&temp)
                .map_err(FileError::io(&temp_path, "create"))?;
            file.write_all(payload)
                .map_err(FileError::io(&temp_path, "write"))?;
            file.sync_all()
                .map_err(FileError::io(&temp_path, "fsync"))?;
            if self.config.overwrite {
                // rename replaces a symlink at `name` itself, never what it points to.
                dir.rename(&temp, dir, name).map_err(self.name_error(
                    relative,
                    path,
                    "rename into place",
                ))
            } else {
                match dir.link(&temp, name) {
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        Err(FileError::Exists { path: path.into() })
                    }
                    other => other.map_err(self.name_error(relative, path, "link into place")),
                }
            }
        })();
        // After a rename the temporary name is gone already; after a link it must go.
        let _ = dir.remove(&temp);
        result?;
        let parent = path.parent().unwrap_or(path);
        dir.sync().map_err(FileError::io(parent, "fsync directory"))
    }

    fn append(
        &self,
        msg: &Message,
        relative: &Path,
        dir: &Dir,
        name: &str,
        path: &Path,
    ) -> Result<(), FileError> {
        let value: serde_json::Value = match self.config.mode {
            SinkMode::AppendEnvelopes(_) => envelope_line(msg),
            _ => serde_json::from_slice(msg.payload()).map_err(|e| FileError::Content {
                path: path.into(),
                reason: format!("message {} is not JSON: {e}", msg.id()),
            })?,
        };
        let mut line = value.to_string().into_bytes();
        line.push(b'\n');
        let _serial = self.append.lock().unwrap_or_else(|e| e.into_inner());
        // A symlink put where the file should be is refused, not followed out.
        let mut file = dir.open_append(name).map_err(|e| {
            if is_symlink_refused(&e) {
                self.escape(relative, "the file is a symlink".into())
            } else {
                self.name_error(relative, path, "open for append")(e)
            }
        })?;
        file.write_all(&line)
            .map_err(FileError::io(path, "append to"))?;
        file.sync_data().map_err(FileError::io(path, "fsync"))
    }
}

/// Whether `e` says the name itself can never work here, whatever is retried.
#[cfg(unix)]
fn is_name_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENAMETOOLONG | libc::EILSEQ | libc::EINVAL)
    )
}

#[cfg(not(unix))]
fn is_name_error(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::InvalidFilename
}

/// Whether an open with `O_NOFOLLOW` found a symlink.
#[cfg(unix)]
fn is_symlink_refused(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_symlink_refused(_e: &std::io::Error) -> bool {
    false
}

/// A message's envelope, as [`SinkMode::AppendEnvelopes`] writes it: a JSON object with
/// - `id`: the message id;
/// - `headers`: every header but the death record, strings, numbers and booleans as
///   themselves, bytes as `{"hex": "..."}`;
/// - `death`: the death record, for a dead letter (channel, reason, count, first and last
///   time, error, host), as an object;
/// - `payload`: the payload as JSON when it is JSON, else as text when it is UTF-8; a payload
///   that is neither is written as `payload-hex` instead.
pub fn envelope_line(msg: &Message) -> serde_json::Value {
    use eip_core::message::{HeaderValue, names};
    use serde_json::{Map, Value};

    use crate::hex::hex;

    let mut headers = Map::new();
    for (name, value) in msg.headers().iter() {
        if name == names::DEATH {
            continue;
        }
        let value = match value {
            HeaderValue::Str(s) => Value::String(s.clone()),
            HeaderValue::Int(i) => Value::from(*i),
            HeaderValue::Float(f) => Value::from(*f),
            HeaderValue::Bool(b) => Value::Bool(*b),
            HeaderValue::Bytes(b) => serde_json::json!({ "hex": hex(b) }),
        };
        headers.insert(name.to_owned(), value);
    }
    let mut envelope = Map::new();
    envelope.insert("id".into(), Value::String(msg.id().to_string()));
    envelope.insert("headers".into(), Value::Object(headers));
    match msg.death() {
        Ok(Some(death)) => {
            let death = serde_json::to_value(&death).unwrap_or(Value::Null);
            envelope.insert("death".into(), death);
        }
        Ok(None) => {}
        // A death header that does not read is kept as it was written.
        Err(_) => {
            if let Some(raw) = msg.headers().get(names::DEATH) {
                envelope.insert("death".into(), Value::String(raw.to_string()));
            }
        }
    }
    match serde_json::from_slice::<Value>(msg.payload()) {
        Ok(json) => envelope.insert("payload".into(), json),
        Err(_) => match std::str::from_utf8(msg.payload()) {
            Ok(text) => envelope.insert("payload".into(), Value::String(text.to_owned())),
            Err(_) => envelope.insert("payload-hex".into(), Value::String(hex(msg.payload()))),
        },
    };
    Value::Object(envelope)
}
