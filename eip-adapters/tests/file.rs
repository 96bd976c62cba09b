//! The inbound file adapter against real directories: what it takes, when it settles, what it
//! refuses, and that nothing is taken twice or lost (outbound: `file_sink.rs`).

#![cfg(feature = "file")]

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eip_adapters::file::{FileError, FileSource, MAX_BATCH_FILES, ReadMode, headers};
use eip_core::Message;
use eip_core::channel::{InvalidMessageChannel, PointToPoint};
use eip_core::message::DeathReason;
use eip_core::store::durable::{Durable, StoreConfig};
use tower::Service;

mod support;
use support::{TempDir, names, receive};

/// Waits until `cond` holds, for 10 s at most.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 10 s: {what}");
}

fn channel(capacity: usize) -> PointToPoint {
    PointToPoint::new("files", capacity).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_file_becomes_one_message_with_file_headers_and_moves_to_done() {
    let dir = TempDir::new("whole");
    let channel = channel(10);
    let config = FileSource::builder(dir.path())
        .glob("*.json")
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    fs::write(dir.join("order.json"), r#"{"qty": 3}"#).unwrap();
    fs::write(dir.join("skip.txt"), "not matched").unwrap();

    let msg = receive(&channel, 1).await.remove(0);
    assert_eq!(msg.payload_str(), Some(r#"{"qty": 3}"#));
    let h = msg.headers();
    assert_eq!(
        h.get(headers::NAME).and_then(|v| v.as_str()),
        Some("order.json")
    );
    assert_eq!(h.get(headers::SIZE).and_then(|v| v.as_int()), Some(10));
    let modified = h.get(headers::MODIFIED).and_then(|v| v.as_int()).unwrap();
    assert!(
        modified > 1_600_000_000_000,
        "ms since the epoch: {modified}"
    );
    assert_eq!(msg.content_type().unwrap(), Some("application/json"));

    eventually("order.json in .done", || {
        names(&dir.join(".done")) == ["order.json"]
    })
    .await;
    assert_eq!(names(&dir.join(".claimed")), Vec::<String>::new());
    assert!(
        dir.join("skip.txt").exists(),
        "a name the glob does not match stays"
    );
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_become_one_message_per_line_and_malformed_lines_go_to_the_invalid_message_channel()
 {
    let dir = TempDir::new("lines");
    let channel = channel(10);
    let invalid = InvalidMessageChannel::new("files.invalid", 10).unwrap();
    fs::write(
        dir.join("batch.jsonl"),
        "{\"n\":1}\n\n{\"n\":2}\r\nnot json\n{\"n\":3}",
    )
    .unwrap();
    let config = FileSource::builder(dir.path())
        .mode(ReadMode::JsonLines)
        .delete_when_done()
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender())
        .invalid_message_channel(invalid.clone())
        .spawn();

    let got = receive(&channel, 3).await;
    let payloads: Vec<_> = got.iter().map(|m| m.payload_str().unwrap()).collect();
    assert_eq!(payloads, [r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#]);
    let lines: Vec<_> = got
        .iter()
        .map(|m| {
            m.headers()
                .get(headers::LINE)
                .and_then(|v| v.as_int())
                .unwrap()
        })
        .collect();
    assert_eq!(lines, [1, 3, 5]);

    let bad = receive(&invalid, 1).await.remove(0);
    assert_eq!(bad.payload_str(), Some("not json"));
    let death = bad.death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Invalid);
    assert!(death.error.unwrap().starts_with("line 4: not JSON"));

    eventually("the file deleted", || !dir.join("batch.jsonl").exists()).await;
    eventually("nothing left claimed", || {
        names(&dir.join(".claimed")).is_empty()
    })
    .await;
    assert!(names(&dir.join(".done")).is_empty(), "deleted, not moved");
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_invalid_message_channel_malformed_lines_go_to_the_error_directory_with_reasons()
{
    let dir = TempDir::new("lines-error");
    let channel = channel(10);
    fs::write(dir.join("b.jsonl"), "{\"n\":1}\n{oops\n[1,2]\n{\"n\":\n").unwrap();
    let config = FileSource::builder(dir.path())
        .mode(ReadMode::JsonLines)
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();

    assert_eq!(receive(&channel, 2).await.len(), 2);
    eventually("b.jsonl done", || names(&dir.join(".done")) == ["b.jsonl"]).await;
    let errors = dir.join(".error");
    assert_eq!(names(&errors), ["b.jsonl", "b.jsonl.error"]);
    assert_eq!(
        fs::read_to_string(errors.join("b.jsonl")).unwrap(),
        "{oops\n{\"n\":\n"
    );
    let reasons = fs::read_to_string(errors.join("b.jsonl.error")).unwrap();
    assert!(reasons.contains("line 2: not JSON"), "{reasons}");
    assert!(reasons.contains("line 4: not JSON"), "{reasons}");
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_files_go_to_the_error_directory_with_the_reason_beside_them() {
    let dir = TempDir::new("errors");
    let channel = channel(10);
    fs::write(dir.join("big.jsonl"), vec![b'x'; 2048]).unwrap();
    fs::write(dir.join("latin1.jsonl"), [0x7b, 0xe9, 0x7d]).unwrap();
    fs::write(dir.join("fine.jsonl"), "{}\n").unwrap();
    let config = FileSource::builder(dir.path())
        .mode(ReadMode::JsonLines)
        .max_size(1024)
        .error_dir("failed")
        .done_dir("archive")
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();

    assert_eq!(receive(&channel, 1).await[0].payload_str(), Some("{}"));
    let failed = dir.join("failed");
    eventually("two failures", || names(&failed).len() == 4).await;
    let too_big = fs::read_to_string(failed.join("big.jsonl.error")).unwrap();
    assert!(
        too_big.contains("2048 bytes, more than the limit of 1024"),
        "{too_big}"
    );
    let not_utf8 = fs::read_to_string(failed.join("latin1.jsonl.error")).unwrap();
    assert!(not_utf8.contains("must be UTF-8"), "{not_utf8}");
    assert_eq!(fs::read(failed.join("big.jsonl")).unwrap().len(), 2048);
    eventually("fine.jsonl archived", || {
        names(&dir.join("archive")) == ["fine.jsonl"]
    })
    .await;
    assert_eq!(channel.stats().depth, 0);
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competing_adapters_on_one_directory_take_each_file_once() {
    for run in 0..4 {
        let dir = TempDir::new("compete");
        let files = 150;
        for i in 0..files {
            fs::write(dir.join(&format!("f{i:03}.txt")), format!("{run}:{i}")).unwrap();
        }
        let channel = channel(files * 2);
        let config = || {
            FileSource::builder(dir.path())
                .poll_interval(Duration::from_millis(20))
                .build()
                .unwrap()
        };
        let a = FileSource::new(config(), channel.sender()).spawn();
        let b = FileSource::new(config(), channel.sender()).spawn();
        let got = receive(&channel, files).await;
        eventually("all settled", || names(&dir.join(".done")).len() == files).await;
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();

        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for msg in &got {
            *count
                .entry(msg.payload_str().unwrap().to_owned())
                .or_default() += 1;
        }
        assert_eq!(count.len(), files, "run {run}: every file sent");
        assert!(
            count.values().all(|&n| n == 1),
            "run {run}: a file sent twice"
        );
        assert_eq!(channel.stats().depth, 0, "run {run}: nothing more sent");
        assert!(names(dir.path()).iter().all(|n| n.starts_with('.')));
    }
}

/// The id of a process that has exited.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_left_by_a_dead_process_is_taken_again_at_start() {
    let dir = TempDir::new("abandoned");
    let claimed = dir.join(".claimed");
    fs::create_dir_all(&claimed).unwrap();
    // What a process killed between claim and settle leaves behind.
    fs::write(claimed.join(format!("{}-1-7.left.txt", dead_pid())), "left").unwrap();
    // A claim of a live process (this test's parent shell, say) is not ours to take.
    let live = std::os::unix::process::parent_id();
    fs::write(claimed.join(format!("{live}-1-8.busy.txt")), "busy").unwrap();

    let channel = channel(10);
    let config = FileSource::builder(dir.path()).build().unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    let msg = receive(&channel, 1).await.remove(0);
    assert_eq!(msg.payload_str(), Some("left"));
    assert_eq!(
        msg.headers().get(headers::NAME).and_then(|v| v.as_str()),
        Some("left.txt")
    );
    eventually("left.txt done", || {
        names(&dir.join(".done")) == ["left.txt"]
    })
    .await;
    source.shutdown().await.unwrap();
    assert_eq!(names(&claimed), [format!("{live}-1-8.busy.txt")]);
    assert_eq!(channel.stats().depth, 0);
}

/// Set for the child process of the SIGKILL test: the directory its adapter watches.
const CHILD_DIR: &str = "EIP_FILE_TEST_CHILD_DIR";

/// In the child process of `a_file_claimed_by_a_process_killed_before_settling_is_taken_again`
/// only: claims files and never settles them, as a process stuck in a send would. Elsewhere it
/// does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_that_claims_and_never_settles() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let stuck =
        tower::service_fn(|_msg: Message| std::future::pending::<Result<(), std::io::Error>>());
    let config = FileSource::builder(PathBuf::from(dir)).build().unwrap();
    let _ = FileSource::new(config, stuck)
        .run_until(std::future::pending())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_claimed_by_a_process_killed_before_settling_is_taken_again() {
    let dir = TempDir::new("sigkill");
    fs::write(dir.join("order.txt"), "order").unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_that_claims_and_never_settles"])
        .env(CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    eventually("the child claimed the file", || {
        names(&dir.join(".claimed")).len() == 1
    })
    .await;
    child.kill().unwrap(); // SIGKILL: no chance to settle or clean up
    child.wait().unwrap();
    assert!(!dir.join("order.txt").exists());

    let channel = channel(10);
    let config = FileSource::builder(dir.path()).build().unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    let msg = receive(&channel, 1).await.remove(0);
    assert_eq!(msg.payload_str(), Some("order"));
    eventually("order.txt done", || {
        names(&dir.join(".done")) == ["order.txt"]
    })
    .await;
    assert!(names(&dir.join(".claimed")).is_empty());
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_stops_the_adapter_and_leaves_the_other_files_in_the_directory() {
    let dir = TempDir::new("backpressure");
    for i in 0..5 {
        fs::write(dir.join(&format!("f{i}.txt")), format!("{i}")).unwrap();
    }
    let channel = channel(1);
    let config = FileSource::builder(dir.path())
        .poll_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    eventually("one file done", || names(&dir.join(".done")).len() == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(channel.stats().depth, 1);
    assert_eq!(names(&dir.join(".done")), ["f0.txt"]);
    assert!(
        names(&dir.join(".claimed")).is_empty(),
        "nothing claimed while full"
    );
    let waiting: Vec<_> = names(dir.path())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(waiting, ["f1.txt", "f2.txt", "f3.txt", "f4.txt"]);

    // A consumer makes room: the rest follow, in name order.
    let got = receive(&channel, 5).await;
    let payloads: Vec<_> = got.iter().map(|m| m.payload_str().unwrap()).collect();
    assert_eq!(payloads, ["0", "1", "2", "3", "4"]);
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_holds_at_most_two_batches_claimed_and_the_rest_follow_in_name_order_once() {
    let dir = TempDir::new("batches");
    let files = 300;
    for i in 0..files {
        fs::write(dir.join(&format!("f{i:03}.txt")), format!("{i}")).unwrap();
    }
    let channel = channel(8);
    let config = FileSource::builder(dir.path())
        .poll_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    eventually("the channel full and its files done", || {
        channel.stats().depth == 8 && names(&dir.join(".done")).len() == 8
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let claimed = names(&dir.join(".claimed")).len();
    assert!(
        claimed <= 2 * MAX_BATCH_FILES,
        "{claimed} claimed while the channel is full"
    );
    let waiting = names(dir.path())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .count();
    assert_eq!(waiting, files - 8 - claimed, "the others stay unread");

    let got = receive(&channel, files).await;
    let payloads: Vec<usize> = got
        .iter()
        .map(|m| m.payload_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        payloads,
        (0..files).collect::<Vec<_>>(),
        "each once, in name order"
    );
    eventually("all done", || names(&dir.join(".done")).len() == files).await;
    assert!(names(&dir.join(".claimed")).is_empty());
    source.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_claimed_but_not_sent_go_back_into_the_directory_at_shutdown() {
    let dir = TempDir::new("release");
    for i in 0..20 {
        fs::write(dir.join(&format!("f{i:02}.txt")), format!("{i}")).unwrap();
    }
    let channel = channel(8);
    let config = FileSource::builder(dir.path())
        .poll_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    eventually("the channel full and a batch claimed beyond it", || {
        channel.stats().depth == 8 && !names(&dir.join(".claimed")).is_empty()
    })
    .await;
    source.shutdown().await.unwrap();

    assert!(
        names(&dir.join(".claimed")).is_empty(),
        "nothing left claimed"
    );
    let done = names(&dir.join(".done"));
    assert_eq!(done.len(), 8, "{done:?}");
    let back: Vec<_> = names(dir.path())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    let expected: Vec<_> = (8..20).map(|i| format!("f{i:02}.txt")).collect();
    assert_eq!(back, expected);

    // The next run sends them, once each.
    let config = FileSource::builder(dir.path()).build().unwrap();
    let again = FileSource::new(config, channel.sender()).spawn();
    let got = receive(&channel, 20).await;
    let payloads: Vec<usize> = got
        .iter()
        .map(|m| m.payload_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(payloads, (0..20).collect::<Vec<_>>());
    again.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_taken_in_the_done_directory_is_kept_and_the_new_file_gets_its_claim_tag() {
    let dir = TempDir::new("done-taken");
    fs::create_dir_all(dir.join(".done")).unwrap();
    fs::write(dir.join(".done/a.txt"), "old").unwrap();
    fs::write(dir.join("a.txt"), "new").unwrap();
    let channel = channel(10);
    let config = FileSource::builder(dir.path()).build().unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    assert_eq!(receive(&channel, 1).await[0].payload_str(), Some("new"));
    eventually("a.txt done under its tag", || {
        names(&dir.join(".done")).len() == 2
    })
    .await;
    source.shutdown().await.unwrap();
    let done = names(&dir.join(".done"));
    assert_eq!(fs::read_to_string(dir.join(".done/a.txt")).unwrap(), "old");
    let tagged = done.iter().find(|n| n.starts_with("a.txt.")).unwrap();
    assert_eq!(
        fs::read_to_string(dir.join(".done").join(tagged)).unwrap(),
        "new"
    );
}

/// A sender whose sends wait for a go-ahead, to look at the directories meanwhile.
#[derive(Clone)]
struct Gated<S> {
    inner: S,
    gate: Arc<tokio::sync::Semaphore>,
}

impl<S> Service<Message> for Gated<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let gate = self.gate.clone();
        let send = self.inner.call(msg);
        Box::pin(async move {
            gate.acquire().await.unwrap().forget();
            send.await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn into_a_durable_channel_a_file_is_settled_only_after_the_send_completed() {
    let dir = TempDir::new("durable");
    let data = TempDir::new("durable-data");
    let open = || Arc::new(Durable::open(data.path(), StoreConfig::default()).unwrap());
    let build = |store: &Arc<Durable>| {
        PointToPoint::builder("orders")
            .capacity(10)
            .store(store.clone())
            .build()
            .unwrap()
    };
    let store = open();
    let orders = build(&store);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let sender = Gated {
        inner: orders.sender(),
        gate: gate.clone(),
    };
    fs::write(dir.join("o.json"), "{\"id\":1}").unwrap();
    let config = FileSource::builder(dir.path()).build().unwrap();
    let source = FileSource::new(config, sender).spawn();

    eventually("o.json claimed", || names(&dir.join(".claimed")).len() == 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        names(&dir.join(".done")).is_empty(),
        "settled before the send completed"
    );
    assert_eq!(orders.stats().depth, 0);

    gate.add_permits(1);
    eventually("o.json done", || names(&dir.join(".done")) == ["o.json"]).await;
    source.shutdown().await.unwrap();
    drop(orders);
    drop(store);

    // The file is gone from the directory: the message must be on disk.
    let store = open();
    let orders = build(&store);
    let got = receive(&orders, 1).await;
    assert_eq!(got[0].payload_str(), Some("{\"id\":1}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_channel_stops_the_adapter_and_the_file_goes_to_the_error_directory() {
    let dir = TempDir::new("closed");
    let channel = channel(10);
    channel.delete().await;
    fs::write(dir.join("a.txt"), "a").unwrap();
    let config = FileSource::builder(dir.path()).build().unwrap();
    let ended = FileSource::new(config, channel.sender())
        .run_until(std::future::pending())
        .await;
    assert!(
        matches!(ended, Err(FileError::ChannelClosed { .. })),
        "{ended:?}"
    );
    assert_eq!(names(&dir.join(".error")), ["a.txt", "a.txt.error"]);
    let reason = fs::read_to_string(dir.join(".error/a.txt.error")).unwrap();
    assert!(reason.contains("closed"), "{reason}");
}

#[test]
fn source_settings_that_can_not_work_are_refused() {
    let done_is_dir = FileSource::builder("/in").done_dir(".").build();
    assert!(matches!(done_is_dir, Err(FileError::Config { .. })));
    let same = FileSource::builder("/in")
        .error_dir("x")
        .done_dir("x")
        .build();
    assert!(matches!(same, Err(FileError::Config { .. })));
    let glob = FileSource::builder("/in").glob("[a").build();
    assert!(matches!(glob, Err(FileError::Glob { .. })));
}
