//! `file-out`: messages become files (or JSON lines) in a directory, each written atomically,
//! never outside it.

use eip_adapters::file::{FileError, FileSink, FileSinkConfig, NameTemplate, SinkMode};
use futures::future::BoxFuture;
use tower::BoxError;

use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction, Located};
use crate::template;

/// `file-out`
pub(crate) static SINK: Kind = Kind {
    id: AdapterKind::adapter("file-out", Direction::Outbound),
    feature: "file",
    keys: &[&["dir", "name", "append", "envelope", "overwrite"]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let dir =
        settings.required_path(check, "dir", entry.base_dir, "the directory to write into")?;
    let mut builder = FileSink::builder(dir);
    let name = settings.text(check, "name");
    let append = settings.text(check, "append");
    match (name, append) {
        (Some(name), Some(_)) => settings.report_value(
            check,
            "append",
            &name,
            "`name` and `append` contradict each other".to_owned(),
            Some(
                "`name` writes a file per message, `append` adds JSON lines to one file: keep one",
            ),
        ),
        (Some(name), None) => {
            if let Some(template) = name_template(check, settings, &name, "name") {
                builder = builder.mode(SinkMode::Write(template));
            }
        }
        (None, Some(append)) => {
            if let Some(template) = name_template(check, settings, &append, "append") {
                builder = builder.mode(match settings.boolean(check, "envelope") {
                    Some(true) => SinkMode::AppendEnvelopes(template),
                    _ => SinkMode::AppendJsonLines(template),
                });
            }
        }
        (None, None) => {}
    }
    if settings.get("envelope").is_some() && settings.get("append").is_none() {
        settings.report_entry(
            check,
            "`envelope` needs `append`: envelopes are written as JSON lines".to_owned(),
            Some("add `append: FILE`, or remove `envelope`"),
        );
    }
    if let Some(overwrite) = settings.boolean(check, "overwrite") {
        builder = builder.overwrite(overwrite);
    }
    match builder.build() {
        Ok(config) => Some(Box::new(config)),
        Err(e) => {
            settings.report_entry(check, e.to_string(), None);
            None
        }
    }
}

/// The file name template `text` (the value of `key`), or the problem reported.
fn name_template(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    text: &Located<String>,
    key: &str,
) -> Option<NameTemplate> {
    template::setting(
        check,
        settings,
        key,
        text,
        NameTemplate::SYNTAX,
        NameTemplate::new,
        "a file name relative to `dir`, with `{id}`, `{header.NAME}`, `{$.path}` and date parts \
         such as `{yyyy}-{MM}-{dd}` (see the book's Templates page)",
    )
}

impl AdapterConfig for FileSinkConfig {
    fn endpoint(&self) -> String {
        self.dir().display().to_string()
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let sink = FileSink::new(self.clone())?;
            Ok(Endpoint::outbound(sink, |e| {
                e.downcast_ref::<FileError>()
                    .is_some_and(FileError::is_permanent)
            }))
        })
    }
}
