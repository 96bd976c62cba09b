//! The inbound file adapter's splitting of a file into messages, through its public API: the
//! input is written as a file, a `FileSource` takes it, and what reaches the channels is
//! compared with a splitter written here.
//!
//! A leading `W` byte reads the rest as one whole file; any other input is itself a file read
//! in JSON-lines mode. The rules (the file adapter's documentation): a whole file is one
//! message, its bytes. In JSON-lines mode the file must be UTF-8, else it goes to the error
//! directory and nothing is sent; it is split on `\n` (a `\r` before it dropped), lines that
//! are blank are skipped, each other line, numbered from 1, is a message: on the channel, in
//! order, if it is JSON, otherwise on the invalid message channel. Every message carries the
//! file's name and, in JSON-lines mode, its line number. Once sent, the file is in the done
//! directory.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eip_adapters::file::{FileSource, ReadMode, headers};
use eip_core::Message;
use eip_core::channel::{InvalidMessageChannel, PointToPoint, Receiver};
use eip_core::message::{HeaderValue, names};
use libfuzzer_sys::fuzz_target;

/// The file's name in the watched directory.
const NAME: &str = "input.jsonl";
/// Inputs longer than this are skipped: each line may be a message, and the channels hold this
/// many.
const MAX_INPUT: usize = 16 * 1024;
/// How long the adapter gets to settle the file (far more than it needs).
const SETTLE_WITHIN: Duration = Duration::from_secs(20);

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let (mode, contents) = match data.split_first() {
        Some((b'W', rest)) => (ReadMode::WholeFile, rest),
        _ => (ReadMode::JsonLines, data),
    };
    let dir = TempDir::new();
    eip_fuzz::runtime().block_on(check(&dir.0, mode, contents));
});

/// A directory of its own for one input, removed whatever the outcome.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("eip-fuzz-lines-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the rules say comes of the file.
#[derive(Debug, PartialEq)]
enum Expected {
    /// These payloads on the channel (with their line numbers in JSON-lines mode), these on the
    /// invalid message channel; the file in the done directory.
    Sent {
        json: Vec<(Vec<u8>, Option<i64>)>,
        invalid: Vec<(Vec<u8>, i64)>,
    },
    /// Nothing sent; the file in the error directory.
    Failed,
}

fn expected(mode: ReadMode, contents: &[u8]) -> Expected {
    if mode == ReadMode::WholeFile {
        return Expected::Sent {
            json: vec![(contents.to_vec(), None)],
            invalid: vec![],
        };
    }
    let Ok(text) = std::str::from_utf8(contents) else {
        return Expected::Failed;
    };
    let (mut json, mut invalid) = (Vec::new(), Vec::new());
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let n = i as i64 + 1;
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(_) => json.push((line.as_bytes().to_vec(), Some(n))),
            Err(_) => invalid.push((line.as_bytes().to_vec(), n)),
        }
    }
    Expected::Sent { json, invalid }
}

async fn check(dir: &Path, mode: ReadMode, contents: &[u8]) {
    std::fs::write(dir.join(NAME), contents).expect("the input file written");
    let (done, failed) = (dir.join(".done"), dir.join(".error"));
    let config = FileSource::builder(dir)
        .mode(mode)
        .watch(false)
        .poll_interval(Duration::from_millis(5))
        .done_dir(".done")
        .error_dir(".error")
        .claim_dir(".claimed")
        .build()
        .expect("a valid configuration");
    let channel = PointToPoint::new("lines", MAX_INPUT).expect("a channel");
    let invalid = InvalidMessageChannel::new("lines.invalid", MAX_INPUT).expect("a channel");
    let source = FileSource::new(config, channel.sender()).invalid_message_channel(invalid.clone());
    let settled = {
        let (done, failed) = (done.join(NAME), failed.join(NAME));
        async move {
            let wait = async {
                while !done.exists() && !failed.exists() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            let _ = tokio::time::timeout(SETTLE_WITHIN, wait).await;
        }
    };
    source.run_until(settled).await.expect("the adapter ran");
    let got = if done.join(NAME).exists() {
        let json = drain(&mut channel.receiver(), mode);
        let invalid = drain(&mut invalid.receiver(), mode);
        let invalid = invalid
            .into_iter()
            .map(|(p, n)| (p, n.expect("a line number")))
            .collect();
        Expected::Sent { json, invalid }
    } else {
        assert!(failed.join(NAME).exists(), "the file was not settled");
        assert!(
            channel.receiver().try_recv().is_err(),
            "a failed file sent messages"
        );
        Expected::Failed
    };
    assert_eq!(got, expected(mode, contents));
}

/// Everything on a channel, in order: each payload and its line number, checking the headers
/// every message carries.
fn drain(receiver: &mut Receiver, mode: ReadMode) -> Vec<(Vec<u8>, Option<i64>)> {
    let mut got = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        let msg: &Message = delivery.message();
        let header = |name| msg.headers().get(name);
        assert_eq!(
            header(headers::NAME).and_then(HeaderValue::as_str),
            Some(NAME)
        );
        let line = header(headers::LINE).and_then(HeaderValue::as_int);
        assert_eq!(
            line.is_some(),
            mode == ReadMode::JsonLines,
            "line header in {mode:?}"
        );
        if mode == ReadMode::WholeFile {
            assert!(
                header(names::CONTENT_TYPE).is_none(),
                "`{NAME}` is not `.json`"
            );
        }
        got.push((msg.payload().to_vec(), line));
        delivery.ack();
    }
    got
}
