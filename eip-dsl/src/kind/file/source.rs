//! `file-in`: the files of a directory become messages, each claimed by a rename so two
//! adapters never take the same file: a message per file, or, with `format:` (`lines`,
//! `json-lines`, `csv` and the CSV options of the `split` step, read by the same code), a
//! message per record, the file streamed.

use eip_adapters::file::{FileGlob, FileSource, FileSourceConfig, FileSourceHandle, ReadMode};
use eip_core::channel::Channel;
use eip_core::log::Escaped;
use futures::future::BoxFuture;
use tower::BoxError;

use eip_steps::split::Split;

use super::SplitRecords;
use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Inbound, Kind, Rejects, Site, Started};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `file-in`
pub(crate) static SOURCE: Kind = Kind {
    id: AdapterKind::adapter("file-in", Direction::Inbound),
    feature: "file",
    keys: &[&[
        "to",
        "dir",
        "glob",
        "mode",
        "done-dir",
        "delete-when-done",
        "claim-dir",
        "error-dir",
        "max-size",
        "poll-interval",
        "min-age",
        "watch",
        "format",
        "delimiter",
        "quote",
        "header",
        "max-record",
    ]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let dir = settings.required_path(check, "dir", entry.base_dir, "the directory to watch")?;
    let mut builder = FileSource::builder(dir).name(entry.name);
    if let Some(glob) = settings.text(check, "glob") {
        match FileGlob::parse(&glob.value) {
            Ok(_) => builder = builder.glob(&glob.value),
            Err(e) => settings.report_value(check, "glob", &glob, e.to_string(), None),
        }
    }
    let mode = settings.one_of(
        check,
        "mode",
        &[
            ("whole-file", ReadMode::WholeFile),
            ("json-lines", ReadMode::JsonLines),
        ],
    );
    let format = crate::step::split::read_format(check, settings);
    match (mode, format) {
        (Some(_), Some(_)) => settings.report_entry(
            check,
            "`mode` and `format` contradict each other".to_owned(),
            Some(
                "`mode` reads a file whole (or its JSON lines, the file in memory); `format` \
                 streams it a message per record, in any size: keep one",
            ),
        ),
        (Some(mode), None) => builder = builder.mode(mode),
        (None, Some(format)) => builder = builder.records(SplitRecords::shared(Split::new(format))),
        (None, None) => {}
    }
    let done = settings.text(check, "done-dir");
    let delete = settings.boolean(check, "delete-when-done");
    match (done, delete) {
        (Some(done), Some(true)) => settings.report_value(
            check,
            "done-dir",
            &done,
            "`done-dir` and `delete-when-done: true` contradict each other".to_owned(),
            Some("keep one: move accepted files, or delete them"),
        ),
        (Some(done), _) => builder = builder.done_dir(&done.value),
        (None, Some(true)) => builder = builder.delete_when_done(),
        (None, _) => {}
    }
    if let Some(dir) = settings.text(check, "claim-dir") {
        builder = builder.claim_dir(&dir.value);
    }
    if let Some(dir) = settings.text(check, "error-dir") {
        builder = builder.error_dir(&dir.value);
    }
    if let Some(size) = settings.size(check, "max-size") {
        builder = builder.max_size(size);
    }
    if let Some(every) = settings.positive_duration(check, "poll-interval") {
        builder = builder.poll_interval(every);
    }
    if let Some(age) = settings.duration(check, "min-age") {
        builder = builder.min_age(age);
    }
    if let Some(watch) = settings.boolean(check, "watch") {
        builder = builder.watch(watch);
    }
    match builder.build() {
        Ok(config) => Some(Box::new(config)),
        Err(e) => {
            settings.report_entry(check, e.to_string(), None);
            None
        }
    }
}

impl AdapterConfig for FileSourceConfig {
    fn endpoint(&self) -> String {
        format!("{}/{}", self.dir().display(), self.glob().as_str())
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        let ready = Ready {
            name: site.name.to_owned(),
            config: self.clone(),
            channel: site.channel.clone(),
            pause: site.pause.clone(),
            rejects: site.rejects(),
        };
        Box::pin(async move { Ok(Endpoint::Inbound(Box::new(ready))) })
    }
}

/// A `file-in` adapter about to watch its directory (nothing to connect beforehand).
struct Ready {
    /// Its pause switch: its sends wait while paused.
    pause: eip_core::endpoint::PauseGate,
    name: String,
    config: FileSourceConfig,
    channel: Channel,
    /// Where a malformed record (or a JSON line that is not JSON) goes.
    rejects: Option<Rejects>,
}

impl Inbound for Ready {
    fn start(self: Box<Self>) -> Box<dyn Started> {
        let mut source = FileSource::new(self.config, self.channel.sender().pause_gate(self.pause));
        source = match self.rejects {
            Some(Rejects::Invalid(invalid)) => source.invalid_message_channel(invalid),
            Some(Rejects::DeadLetters(dead_letters)) => source.dead_letter_channel(dead_letters),
            None => source,
        };
        Box::new(Watching {
            name: self.name,
            handle: source.spawn(),
        })
    }
}

struct Watching {
    name: String,
    handle: FileSourceHandle,
}

impl Started for Watching {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Err(error) = self.handle.shutdown().await {
                tracing::warn!(adapter = %self.name, error = %Escaped(&error), "file adapter stopped with an error");
            }
        })
    }
}
