//! The outbound file adapter and long file names: every name the file system can hold is
//! written, and one it can never hold is dead-lettered at once, its reason stated and the
//! name shortened in what is said of it.

#![cfg(feature = "file")]

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use eip_adapters::file::{FileError, FileSink};
use eip_core::Message;
use eip_core::channel::{DeadLetterChannel, PointToPoint, RedeliveryPolicy};
use eip_core::endpoint::Consumer;
use tower::Service;

mod support;
use support::{TempDir, names, receive};

async fn write(sink: &mut FileSink, msg: Message) -> Result<PathBuf, FileError> {
    std::future::poll_fn(|cx| sink.poll_ready(cx)).await?;
    sink.call(msg).await
}

fn named(name: &str) -> Message {
    Message::builder("x").header("name", name).build()
}

fn sink(dir: &TempDir) -> FileSink {
    let config = FileSink::builder(dir.path())
        .name_template("{header.name}")
        .build()
        .unwrap();
    FileSink::new(config).unwrap()
}

#[tokio::test]
async fn names_up_to_the_file_system_s_limit_of_255_bytes_are_written() {
    let dir = TempDir::new("long-names");
    let mut sink = sink(&dir);
    for len in 240..=255 {
        let name = "n".repeat(len);
        let path = write(&mut sink, named(&name))
            .await
            .unwrap_or_else(|e| panic!("{len} bytes: {e}"));
        assert_eq!(path, dir.join(&name));
        assert_eq!(fs::read(&path).unwrap(), b"x");
    }
    assert_eq!(names(dir.path()).len(), 16, "no temporary file left behind");
}

#[tokio::test]
async fn a_name_too_long_for_the_file_system_is_permanent_and_shown_shortened() {
    let dir = TempDir::new("too-long");
    let mut sink = sink(&dir);
    for len in [256, 10_000] {
        let error = write(&mut sink, named(&"n".repeat(len))).await.unwrap_err();
        assert!(error.is_permanent(), "{len} bytes: {error:?}");
        let text = error.to_string();
        assert!(text.contains(&format!("({len} bytes)")), "{text}");
        assert!(text.contains("too long"), "{text}");
        assert!(
            text.len() < 600,
            "the name is shortened: {} bytes",
            text.len()
        );
    }
    assert!(names(dir.path()).is_empty(), "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_too_long_for_the_file_system_is_dead_lettered_at_once_with_the_reason() {
    let dir = TempDir::new("too-long-dlc");
    let dead = DeadLetterChannel::new("files.dead", 10).unwrap();
    let orders = PointToPoint::builder("orders")
        .capacity(10)
        .dead_letter_channel(dead.clone())
        .redelivery(RedeliveryPolicy::fixed(5, Duration::from_secs(60)))
        .build()
        .unwrap();
    // Five retries a minute apart would outlast `receive`'s 10 s: only "at once" passes.
    let consumer = Consumer::new(orders.receiver(), sink(&dir))
        .permanent_errors(FileError::is_permanent)
        .spawn();
    orders.send(named(&"n".repeat(10_000))).await.unwrap();

    let buried = receive(&dead, 1).await.remove(0);
    let death = buried.death().unwrap().unwrap();
    let error = death.error.unwrap();
    assert!(
        error.contains("too long") && error.contains("(10000 bytes)"),
        "{error}"
    );
    assert!(error.len() < 600, "{} bytes", error.len());
    consumer.shutdown().await;
    assert!(names(dir.path()).is_empty());
}
