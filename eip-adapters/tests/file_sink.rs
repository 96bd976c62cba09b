//! The outbound file adapter against real directories: atomic writes, JSON-lines appends, and
//! the names it refuses.

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

#[tokio::test]
async fn the_sink_writes_each_message_atomically_under_its_template_name() {
    let dir = TempDir::new("sink");
    let config = FileSink::builder(dir.path())
        .name_template("{header.customer}/{yyyy}-{MM}-{dd}/{id}.json")
        .build()
        .unwrap();
    let mut sink = FileSink::new(config).unwrap();
    let msg = Message::builder("{\"qty\":2}")
        .header("customer", "acme")
        .build();
    let path = write(&mut sink, msg.clone()).await.unwrap();

    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"qty\":2}");
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{}.json", msg.id())
    );
    let day_dir = path.parent().unwrap();
    assert_eq!(day_dir.parent().unwrap().file_name().unwrap(), "acme");
    assert_eq!(
        names(day_dir).len(),
        1,
        "no temporary file left: {:?}",
        names(day_dir)
    );

    // Rewriting the same message replaces its file; refusing to overwrite says so.
    write(&mut sink, msg.clone()).await.unwrap();
    let config = FileSink::builder(dir.path())
        .name_template("{header.customer}/{yyyy}-{MM}-{dd}/{id}.json")
        .overwrite(false)
        .build()
        .unwrap();
    let mut strict = FileSink::new(config).unwrap();
    let exists = write(&mut strict, msg).await;
    assert!(
        matches!(exists, Err(FileError::Exists { .. })),
        "{exists:?}"
    );
    assert_eq!(names(day_dir).len(), 1);
}

#[tokio::test]
async fn names_that_would_leave_the_directory_are_refused() {
    let root = TempDir::new("escape");
    let out = root.join("out");
    let outside = root.join("outside");
    fs::create_dir_all(&outside).unwrap();

    for template in ["../x", "/etc/x", "a/../../b", "{id}/../x"] {
        let refused = FileSink::builder(&out).name_template(template).build();
        assert!(
            matches!(refused, Err(FileError::Template { .. })),
            "{template}: {refused:?}"
        );
    }

    let config = FileSink::builder(&out)
        .name_template("{header.name}")
        .build()
        .unwrap();
    let mut sink = FileSink::new(config).unwrap();
    for value in ["a/../../b", "..", "/etc/x", "a\\b", ""] {
        let msg = Message::builder("x").header("name", value).build();
        let refused = write(&mut sink, msg).await;
        assert!(
            matches!(refused, Err(FileError::Escape { .. })),
            "{value:?}: {refused:?}"
        );
    }

    std::os::unix::fs::symlink(&outside, out.join("link")).unwrap();
    let config = FileSink::builder(&out)
        .name_template("link/{id}/{id}")
        .build()
        .unwrap();
    let mut through_link = FileSink::new(config).unwrap();
    let refused = write(&mut through_link, Message::new("x")).await;
    assert!(
        matches!(refused, Err(FileError::Escape { .. })),
        "{refused:?}"
    );

    std::os::unix::fs::symlink(outside.join("victim.jsonl"), out.join("log.jsonl")).unwrap();
    let config = FileSink::builder(&out)
        .append_json_lines("log.jsonl")
        .build()
        .unwrap();
    let mut append = FileSink::new(config).unwrap();
    let refused = write(&mut append, Message::new("{}")).await;
    assert!(
        matches!(refused, Err(FileError::Escape { .. })),
        "{refused:?}"
    );

    assert!(names(&outside).is_empty(), "nothing written outside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_whose_name_would_escape_is_dead_lettered_with_the_reason() {
    let dir = TempDir::new("escape-dlc");
    let dead = DeadLetterChannel::new("files.dead", 10).unwrap();
    let orders = PointToPoint::builder("orders")
        .capacity(10)
        .dead_letter_channel(dead.clone())
        .redelivery(RedeliveryPolicy::fixed(5, Duration::from_secs(60)))
        .build()
        .unwrap();
    let config = FileSink::builder(dir.path())
        .name_template("{header.name}")
        .build()
        .unwrap();
    // Retrying would fail the same way: dead-lettered at once, not after five minutes.
    let consumer = Consumer::new(orders.receiver(), FileSink::new(config).unwrap())
        .permanent_errors(FileError::is_permanent)
        .spawn();
    let msg = Message::builder("x")
        .header("name", "../../etc/passwd")
        .build();
    orders.send(msg).await.unwrap();

    let buried = receive(&dead, 1).await.remove(0);
    let error = buried.death().unwrap().unwrap().error.unwrap();
    assert!(error.contains("would leave"), "{error}");
    consumer.shutdown().await;
    assert!(names(dir.path()).is_empty());
}

#[tokio::test]
async fn a_symlink_below_the_sink_s_directory_is_never_followed_even_one_leading_inside() {
    let root = TempDir::new("inner-link");
    let out = root.join("out");
    fs::create_dir_all(out.join("real")).unwrap();
    std::os::unix::fs::symlink(out.join("real"), out.join("inner")).unwrap();
    let config = FileSink::builder(&out)
        .name_template("inner/{id}")
        .build()
        .unwrap();
    let mut sink = FileSink::new(config).unwrap();
    let refused = write(&mut sink, Message::new("x")).await;
    match refused {
        Err(FileError::Escape { reason, .. }) => {
            assert!(reason.contains("`inner` is a symbolic link"), "{reason}")
        }
        other => panic!("not refused: {other:?}"),
    }
    assert!(
        names(&out.join("real")).is_empty(),
        "nothing written through the link"
    );
}

#[tokio::test]
async fn the_sink_appends_one_fsynced_json_line_per_message() {
    let dir = TempDir::new("append");
    let config = FileSink::builder(dir.path())
        .append_json_lines("orders-{yyyy}.jsonl")
        .build()
        .unwrap();
    let mut sink = FileSink::new(config).unwrap();
    let mut path = PathBuf::new();
    for payload in ["{\"n\": 1}", "{\n  \"n\": 2\n}", "[3]"] {
        path = write(&mut sink, Message::new(payload)).await.unwrap();
    }
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"n\":1}\n{\"n\":2}\n[3]\n"
    );
    let refused = write(&mut sink, Message::new("not json")).await;
    assert!(
        matches!(refused, Err(FileError::Content { .. })),
        "{refused:?}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_keep_the_id_the_headers_the_death_record_and_any_payload() {
    let dir = TempDir::new("envelopes");
    let config = FileSink::builder(dir.path())
        .append_envelopes("dead.jsonl")
        .build()
        .unwrap();
    let mut sink = FileSink::new(config).unwrap();
    let mut dead = Message::builder("7;widget;;")
        .subject("orders.eu")
        .header("priority", 3)
        .header("raw", bytes::Bytes::from_static(b"\x00\xff"))
        .build();
    let record = eip_core::message::DeathRecord::new(
        "orders",
        eip_core::message::DeathReason::Invalid,
        Some("line 3: expected 4 fields, found 3".into()),
    );
    dead.set_death(&record);
    let json = Message::new(r#"{"n": 1}"#);
    let binary = Message::new(bytes::Bytes::from_static(b"\xff\xfe"));
    let mut path = PathBuf::new();
    for msg in [dead.clone(), json.clone(), binary.clone()] {
        path = write(&mut sink, msg).await.unwrap();
    }
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["id"], dead.id().to_string());
    assert_eq!(lines[0]["headers"]["subject"], "orders.eu");
    assert_eq!(lines[0]["headers"]["priority"], 3);
    assert_eq!(
        lines[0]["headers"]["raw"],
        serde_json::json!({"hex": "00ff"})
    );
    assert!(
        lines[0]["headers"].get("death").is_none(),
        "the death record is its own key"
    );
    assert_eq!(lines[0]["death"]["reason"], "invalid");
    assert_eq!(lines[0]["death"]["channel"], "orders");
    assert_eq!(
        lines[0]["death"]["error"],
        "line 3: expected 4 fields, found 3"
    );
    assert_eq!(
        lines[0]["payload"], "7;widget;;",
        "text that is not JSON stays text"
    );
    assert_eq!(lines[1]["payload"], serde_json::json!({"n": 1}));
    assert!(lines[1].get("death").is_none());
    assert_eq!(lines[2]["payload-hex"], "fffe");
    assert!(lines[2].get("payload").is_none());
}
