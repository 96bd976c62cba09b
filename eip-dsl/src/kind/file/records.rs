//! `file-in`'s `format:`: the splitter of a `split` step (`eip_steps::split`) as the record
//! format the file adapter streams a file in.

use std::sync::Arc;

use eip_adapters::file::{Record, RecordFormat, RecordSplitter};
use eip_core::Message;
use eip_steps::format::Malformed;
use eip_steps::split::{Split, SplitFeed};

/// A [`Split`] as a [`RecordFormat`]: each record of a streamed file a part of the split,
/// with its Message Sequence headers (the file's id as correlation id, the number, the size
/// on the last part) and its `line`; each malformed record a message holding its text, with
/// the file's headers and its `line`, for the invalid message channel (or the dead letter
/// channel), its reason naming the line too (`line 3: expected 2 fields, found 1`).
///
/// ```
/// use std::sync::Arc;
/// use eip_adapters::file::FileSource;
/// use eip_dsl::kind::file::SplitRecords;
/// use eip_steps::split::Split;
///
/// let config = FileSource::builder("/var/spool/orders")
///     .records(Arc::new(SplitRecords::new(Split::json_lines())))
///     .build()
///     .unwrap();
/// assert!(config.records().is_some());
/// ```
#[derive(Debug, Clone)]
pub struct SplitRecords {
    split: Split,
}

impl SplitRecords {
    /// Streams files as `split` splits a payload.
    pub fn new(split: Split) -> Self {
        SplitRecords { split }
    }

    /// The same, shared, as the file adapter's builder takes it.
    pub fn shared(split: Split) -> Arc<dyn RecordFormat> {
        Arc::new(SplitRecords::new(split))
    }

    /// The split.
    pub fn split(&self) -> &Split {
        &self.split
    }
}

impl RecordFormat for SplitRecords {
    fn describe(&self) -> String {
        format!("{:?}", self.split.format())
    }

    fn splitter(&self, file: &Message) -> Box<dyn RecordSplitter> {
        Box::new(Splitter {
            feed: self.split.feed(file),
            parts: Vec::new(),
        })
    }
}

/// One file's split.
struct Splitter {
    feed: SplitFeed,
    parts: Vec<Result<Message, Malformed>>,
}

impl Splitter {
    fn hand_on(&mut self, out: &mut Vec<Record>) {
        let feed = &self.feed;
        out.extend(self.parts.drain(..).map(|part| match part {
            Ok(message) => Record::Part(message),
            Err(malformed) => Record::Malformed {
                message: feed.malformed_message(&malformed),
                reason: malformed.to_string(),
            },
        }));
    }
}

impl RecordSplitter for Splitter {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Record>) {
        self.feed.feed(chunk, &mut self.parts);
        self.hand_on(out);
    }

    fn finish(&mut self, out: &mut Vec<Record>) {
        self.feed.finish(&mut self.parts);
        self.hand_on(out);
    }
}
