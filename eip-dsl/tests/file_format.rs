//! `file-in` with `format:`: a file streamed a message per record, with the Message Sequence
//! headers, its malformed records in the invalid message channel, and a large file read in
//! flat memory (an `eip run` child's peak RSS, for a small file and a file 25 times larger).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eip_core::Message;
use eip_dsl::compile::{Flow, Output, RunningFlow, compile};
use eip_dsl::load::load_str;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// The flow `text` (paths relative to `dir`), compiled.
fn compiled(text: &str, dir: &Path) -> Flow {
    let plan = load_str(text, "flow.yaml", dir).unwrap_or_else(|e| panic!("{}", e.render()));
    compile(&plan).expect("the flow compiles")
}

/// What `text` is refused with.
fn refused(text: &str) -> String {
    match load_str(text, "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("the flow validated:\n{text}"),
        Err(errors) => errors.render(),
    }
}

/// `flow` running with its adapters; what reaches its outputs is gathered, by channel.
async fn run(flow: &Flow) -> (RunningFlow, Arc<Mutex<Vec<(String, Message)>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let outputs = seen.clone();
    let output: Output = Arc::new(move |channel: &str, msg: &Message| {
        outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((channel.to_owned(), msg.clone()));
    });
    let adapters = flow.connect_adapters().await.expect("the adapters connect");
    let mut running = flow.start(output);
    running.attach(adapters);
    (running, seen)
}

/// Waits up to 20 s for `done` to hold.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Puts a whole file into a watched directory at once (written under a dot name, renamed).
fn place(path: &Path, contents: impl AsRef<[u8]>) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name");
    let partial = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&partial, contents).expect("a file written");
    std::fs::rename(&partial, path).expect("a file put in place");
}

fn count(seen: &Mutex<Vec<(String, Message)>>) -> usize {
    seen.lock().unwrap_or_else(|p| p.into_inner()).len()
}

fn header_i64(msg: &Message, name: &str) -> Option<i64> {
    msg.headers().get(name).and_then(|v| v.as_int())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_file_becomes_a_message_per_row_with_its_sequence_and_its_bad_row_is_invalid() {
    let scratch = Scratch::new("file-format-csv");
    std::fs::create_dir_all(scratch.0.join("in")).expect("the inbox");
    std::fs::write(scratch.0.join("row.json"), r#"{"type": "object"}"#).expect("the schema");
    let flow = compiled(
        "
channels:
  rows: {kind: point-to-point, datatype: row.json, invalid: rows.invalid}
  rows.invalid: {kind: point-to-point}
adapters:
  inbox: {kind: file-in, to: rows, dir: in, format: csv, poll-interval: 50ms}
",
        &scratch.0,
    );
    let (running, seen) = run(&flow).await;
    place(
        &scratch.0.join("in/orders.csv"),
        "sku,qty\nA-1,3\nB-2\n\"C,3\",\"1\"\nD-4,7\n",
    );
    eventually("four messages", || count(&seen) == 4).await;
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let rows: Vec<&Message> = seen
        .iter()
        .filter(|(c, _)| c == "rows")
        .map(|(_, m)| m)
        .collect();
    let payloads: Vec<&str> = rows.iter().filter_map(|m| m.payload_str()).collect();
    assert_eq!(
        payloads,
        [
            r#"{"sku":"A-1","qty":"3"}"#,
            r#"{"sku":"C,3","qty":"1"}"#,
            r#"{"sku":"D-4","qty":"7"}"#
        ]
    );
    let correlation = rows[0]
        .correlation_id()
        .expect("a readable header")
        .expect("a correlation id")
        .to_owned();
    for (n, row) in rows.iter().enumerate() {
        assert_eq!(
            row.correlation_id().unwrap(),
            Some(correlation.as_str()),
            "one id per file"
        );
        assert_eq!(row.sequence_number().unwrap(), Some(n as u64 + 1));
        let size = row.sequence_size().unwrap();
        assert_eq!(
            size,
            (n == 2).then_some(3),
            "the size on the last part only"
        );
        assert_eq!(
            row.headers().get("file-name").and_then(|v| v.as_str()),
            Some("orders.csv")
        );
        assert_eq!(
            row.headers().get("content-type").and_then(|v| v.as_str()),
            Some("application/json")
        );
    }
    let lines: Vec<Option<i64>> = rows.iter().map(|m| header_i64(m, "line")).collect();
    assert_eq!(lines, [Some(2), Some(4), Some(5)]);
    let invalid: Vec<&Message> = seen
        .iter()
        .filter(|(c, _)| c == "rows.invalid")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(invalid.len(), 1);
    assert_eq!(invalid[0].payload_str(), Some("B-2"), "the row's text");
    assert_eq!(header_i64(invalid[0], "line"), Some(3), "the row's line");
    assert_eq!(
        invalid[0]
            .headers()
            .get("file-name")
            .and_then(|v| v.as_str()),
        Some("orders.csv")
    );
    assert_eq!(
        invalid[0].correlation_id().unwrap(),
        Some(correlation.as_str())
    );
    let death = invalid[0].death().unwrap().expect("a death record");
    assert_eq!(death.reason.as_str(), "invalid");
    assert_eq!(
        death.error.as_deref(),
        Some("line 3: expected 2 fields, found 1")
    );
    assert!(
        scratch.0.join("in/.done/orders.csv").exists(),
        "the file is done once every row was accepted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_options_and_the_line_formats_are_those_of_the_split_step() {
    let scratch = Scratch::new("file-format-options");
    for dir in ["semi", "lines", "json"] {
        std::fs::create_dir_all(scratch.0.join(dir)).expect("an inbox");
    }
    std::fs::write(scratch.0.join("any.json"), "{}").expect("the schema");
    let flow = compiled(
        "
channels:
  semi: {kind: point-to-point}
  lines: {kind: point-to-point}
  json: {kind: point-to-point, datatype: any.json, invalid: json.invalid}
  json.invalid: {kind: point-to-point}
adapters:
  semi-in: {kind: file-in, to: semi, dir: semi, format: csv, delimiter: ';', quote: \"'\", header: false, poll-interval: 50ms}
  lines-in: {kind: file-in, to: lines, dir: lines, format: lines, poll-interval: 50ms}
  json-in: {kind: file-in, to: json, dir: json, format: json-lines, max-record: 20, poll-interval: 50ms}
",
        &scratch.0,
    );
    let (running, seen) = run(&flow).await;
    place(&scratch.0.join("semi/a.csv"), "1;'x;y'\n2;z\n");
    place(&scratch.0.join("lines/a.txt"), "first\r\n\nthird");
    place(
        &scratch.0.join("json/a.jsonl"),
        "{\"n\":1}\n\n{\"n\": \"far too long for the limit\"}\n[2]\n",
    );
    eventually("eight messages", || count(&seen) == 8).await;
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let on = |channel: &str| -> Vec<String> {
        seen.iter()
            .filter(|(c, _)| c == channel)
            .map(|(_, m)| m.payload_str().unwrap_or("?").to_owned())
            .collect()
    };
    assert_eq!(on("semi"), [r#"["1","x;y"]"#, r#"["2","z"]"#]);
    assert_eq!(on("lines"), ["first", "", "third"]);
    assert_eq!(on("json"), [r#"{"n":1}"#, "[2]"]);
    let (_, too_long) = seen
        .iter()
        .find(|(c, _)| c == "json.invalid")
        .expect("the long line is invalid");
    let death = too_long.death().unwrap().expect("a death record");
    assert_eq!(
        death.error.as_deref(),
        Some("line 3: record longer than 20 bytes")
    );
    let last = seen
        .iter()
        .filter(|(c, _)| c == "lines")
        .map(|(_, m)| m)
        .last()
        .expect("a last line");
    assert_eq!(last.sequence_number().unwrap(), Some(3));
    assert_eq!(last.sequence_size().unwrap(), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_format_a_file_is_still_one_message() {
    let scratch = Scratch::new("file-format-none");
    std::fs::create_dir_all(scratch.0.join("in")).expect("the inbox");
    let flow = compiled(
        "
channels:
  files: {kind: point-to-point}
adapters:
  inbox: {kind: file-in, to: files, dir: in, poll-interval: 50ms}
",
        &scratch.0,
    );
    let (running, seen) = run(&flow).await;
    place(&scratch.0.join("in/a.csv"), "sku,qty\nA-1,3\n");
    eventually("one message", || count(&seen) == 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.payload_str(), Some("sku,qty\nA-1,3\n"));
    assert_eq!(seen[0].1.sequence_number().unwrap(), None);
}

#[test]
fn format_settings_are_checked_where_they_are_written() {
    let adapter = |settings: &str| {
        format!(
            "channels:\n  rows: {{kind: point-to-point}}\nadapters:\n  inbox:\n    kind: file-in\n    to: rows\n    dir: in\n{settings}"
        )
    };
    let both = refused(&adapter("    mode: json-lines\n    format: csv\n"));
    assert!(
        both.contains("`mode` and `format` contradict each other"),
        "{both}"
    );
    let stray = refused(&adapter("    delimiter: ';'\n"));
    assert!(
        stray.contains("`delimiter` is an option of `format`, which is not given"),
        "{stray}"
    );
    let misspelt = refused(&adapter("    format: cvs\n"));
    assert!(misspelt.contains("`format` can not be `cvs`"), "{misspelt}");
    assert!(misspelt.contains("csv"), "a suggestion: {misspelt}");
    let not_csv = refused(&adapter("    format: lines\n    header: false\n"));
    assert!(
        not_csv.contains("`header` is for `format: csv`"),
        "{not_csv}"
    );
    let long = refused(&adapter("    format: csv\n    delimiter: ';;'\n"));
    assert!(
        long.contains("`delimiter` must be one ASCII character"),
        "{long}"
    );
    assert!(long.contains("flow.yaml:9:"), "where it is written: {long}");
}

/// Writes a CSV file of `rows` rows (about 100 bytes each) with an `id` column.
fn write_csv(path: &Path, rows: u64) {
    let file = std::fs::File::create(path).expect("the CSV file");
    let mut out = BufWriter::new(file);
    writeln!(out, "id,customer,sku,qty,note").expect("written");
    for id in 1..=rows {
        writeln!(
            out,
            "{id},customer-{:06},SKU-{:05},{},\"a note, quoted, to make the row longer\"",
            id % 100_000,
            id % 7_919,
            id % 13
        )
        .expect("written");
    }
    out.flush().expect("flushed");
}

/// The peak resident set of process `pid`, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM line")
}

/// Runs `eip run` over a CSV file of `rows` rows, printing every row, and gives its peak RSS
/// in KiB once every row was printed.
fn peak_rss_streaming(label: &str, rows: u64) -> u64 {
    let scratch = Scratch::new(label);
    let inbox = scratch.0.join("in");
    std::fs::create_dir_all(&inbox).expect("the inbox");
    let flow = scratch.0.join("flow.yaml");
    std::fs::write(
        &flow,
        "channels:\n  rows: {kind: point-to-point, capacity: 100}\n\
         adapters:\n  inbox: {kind: file-in, to: rows, dir: in, format: csv, poll-interval: 50ms}\n",
    )
    .expect("the flow file");
    write_csv(&scratch.0.join(".orders.csv"), rows);
    let size = std::fs::metadata(scratch.0.join(".orders.csv")).map_or(0, |m| m.len());
    let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(&flow)
        .args(["--stats-interval", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("eip starts");
    std::fs::rename(scratch.0.join(".orders.csv"), inbox.join("orders.csv"))
        .expect("the file put in place");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut printed = 0u64;
    let mut last_seq = 0u64;
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while printed < rows && Instant::now() < deadline {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.contains("\"channel\":\"rows\"") {
            printed += 1;
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&line)
                && let Some(n) = value["headers"]["sequence-number"].as_u64()
            {
                assert_eq!(n, last_seq + 1, "rows in order");
                last_seq = n;
            }
        }
    }
    let peak = peak_rss_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(printed, rows, "{label}: every row printed");
    println!(
        "{label}: {rows} rows, {:.1} MB file, peak RSS {:.1} MiB",
        size as f64 / 1e6,
        peak as f64 / 1024.0
    );
    peak
}

#[test]
fn a_large_csv_file_streams_in_flat_memory() {
    let small = peak_rss_streaming("file-format-rss-small", 10_000);
    let large = peak_rss_streaming("file-format-rss-large", 250_000);
    // The large file is about 25 MB: held whole, it alone would add that much; streamed, the
    // peak is the small run's give or take the allocator's noise.
    assert!(
        large < small + 8 * 1024,
        "peak RSS {large} KiB for 250k rows against {small} KiB for 10k rows"
    );
}

/// The messages `seen` on `channel`, in order.
fn on(seen: &[(String, Message)], channel: &str) -> Vec<Message> {
    seen.iter()
        .filter(|(c, _)| c == channel)
        .map(|(_, m)| m.clone())
        .collect()
}

/// A dead letter's file name, line, death reason, origin and error.
fn dead_letter(msg: &Message) -> (String, Option<i64>, String, String, String) {
    let death = msg
        .death()
        .expect("a readable death")
        .expect("a death record");
    let name = msg.headers().get("file-name").and_then(|v| v.as_str());
    (
        name.unwrap_or("?").to_owned(),
        header_i64(msg, "line").or_else(|| header_i64(msg, "file-line")),
        death.reason.as_str().to_owned(),
        death.channel.clone(),
        death.error.unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_invalid_channel_bad_records_are_dead_letters_with_their_line() {
    let scratch = Scratch::new("file-format-rejects");
    for dir in ["csv", "json", "whole"] {
        std::fs::create_dir_all(scratch.0.join(dir)).expect("an inbox");
    }
    let flow = compiled(
        "
channels:
  rows: {kind: point-to-point}
  events: {kind: point-to-point}
adapters:
  csv-in: {kind: file-in, to: rows, dir: csv, format: csv, poll-interval: 50ms}
  json-in: {kind: file-in, to: events, dir: json, format: json-lines, poll-interval: 50ms}
  whole-in: {kind: file-in, to: events, dir: whole, mode: json-lines, poll-interval: 50ms}
",
        &scratch.0,
    );
    let (running, seen) = run(&flow).await;
    place(
        &scratch.0.join("csv/a.csv"),
        "a,b\n1,2\n3\n4,5,6\n\"7\",8\n10,11\n\"12,13\n",
    );
    place(
        &scratch.0.join("json/e.jsonl"),
        "{\"n\":1}\nnot json\n{\"n\":2}\n",
    );
    place(&scratch.0.join("whole/w.jsonl"), "{\"n\":3}\n{oops\n");
    let done = [
        scratch.0.join("csv/.done/a.csv"),
        scratch.0.join("json/.done/e.jsonl"),
        scratch.0.join("whole/.done/w.jsonl"),
    ];
    eventually("eleven messages and the files done", || {
        count(&seen) == 11 && done.iter().all(|d| d.exists())
    })
    .await;
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let payloads = |channel: &str| -> Vec<String> {
        on(&seen, channel)
            .iter()
            .map(|m| m.payload_str().unwrap_or("?").to_owned())
            .collect()
    };
    assert_eq!(
        payloads("rows"),
        [
            r#"{"a":"1","b":"2"}"#,
            r#"{"a":"7","b":"8"}"#,
            r#"{"a":"10","b":"11"}"#
        ],
        "the rows around the bad ones go on"
    );
    let rows = on(&seen, "rows");
    let lines: Vec<Option<i64>> = rows.iter().map(|m| header_i64(m, "line")).collect();
    assert_eq!(lines, [Some(2), Some(5), Some(6)]);
    let mut events = payloads("events");
    events.sort();
    assert_eq!(events, [r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#]);

    let dead = on(&seen, "dead-letters");
    let text: Vec<&str> = dead.iter().filter_map(|m| m.payload_str()).collect();
    let mut by_file: Vec<_> = dead.iter().map(dead_letter).collect();
    by_file.sort();
    assert_eq!(by_file.len(), 5, "{text:?}");
    let (csv, lines): (Vec<_>, Vec<_>) = by_file.iter().partition(|d| d.0 == "a.csv");
    assert_eq!(csv.len(), 3);
    for (line, reason) in [
        (3, "line 3: expected 2 fields, found 1"),
        (4, "line 4: expected 2 fields, found 3"),
    ] {
        let found = csv.iter().find(|d| d.1 == Some(line)).expect("the bad row");
        assert_eq!(found.2, "invalid");
        assert_eq!(found.3, "csv-in", "the adapter is the origin");
        assert_eq!(found.4, reason);
    }
    // A quote never closed takes the rest of the file into one field.
    let quoted = csv.iter().find(|d| d.1 == Some(7)).expect("the bad quote");
    assert_eq!(quoted.4, "line 7: expected 2 fields, found 1");
    let row_text: Vec<&str> = dead
        .iter()
        .filter(|m| m.headers().get("file-name").and_then(|v| v.as_str()) == Some("a.csv"))
        .filter_map(|m| m.payload_str())
        .collect();
    assert_eq!(
        row_text,
        ["3", "4,5,6", "\"12,13"],
        "each row as it was read"
    );
    assert_eq!(lines.len(), 2);
    let streamed = lines
        .iter()
        .find(|d| d.0 == "e.jsonl")
        .expect("a JSON line");
    assert_eq!(streamed.1, Some(2));
    assert!(streamed.4.starts_with("line 2: "), "{streamed:?}");
    let whole = lines
        .iter()
        .find(|d| d.0 == "w.jsonl")
        .expect("a JSON line");
    assert_eq!(whole.1, Some(2));
    assert!(whole.4.starts_with("line 2: not JSON"), "{whole:?}");
    for file in [
        "csv/.error/a.csv",
        "json/.error/e.jsonl",
        "whole/.error/w.jsonl",
    ] {
        assert!(
            !scratch.0.join(file).exists(),
            "nothing for the error directory: {file}"
        );
    }
}
