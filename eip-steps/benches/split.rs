//! The streamed CSV splitter against a hand-written csv-crate loop, measured in the same run.
//!
//! `split csv`: a 1M-row CSV file (generated in a temporary directory, about 40 MB) read with
//! `tokio::fs` through eip's streaming splitter ([`Split::stream`]): each row a JSON object,
//! a new message with the Message Sequence headers, sent on a `tokio::sync::mpsc` channel to a
//! task that receives it. The baseline is what one would write by hand: the `csv` crate's read
//! loop over the same file (`std::fs`, its own buffer), each row turned into a JSON object with
//! `serde_json` and sent as bytes on the same kind of channel to the same kind of task. A second
//! line compares against a loop that sends the csv crate's records as they are (no JSON, no
//! message): the floor any splitter pays to read a CSV file and hand it on.
//!
//! It prints `compare: split csv: eip X ns/row, baseline Y ns/row (csv crate + mpsc), ratio R`
//! from the medians of alternating rounds (so both sides see the same machine load), on a
//! two-worker runtime and again on a current-thread one (`[current-thread]`, where the
//! per-row CPU cost shows without cross-core traffic), then the
//! process's peak RSS (`VmHWM`): flat whatever the file's size, since no side holds more than a
//! buffer and the channel's capacity.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::Message;
use eip_steps::format::CsvOptions;
use eip_steps::split::Split;
use tokio::sync::mpsc;

/// Rows of the file behind the compare line.
const ROWS: u64 = 1_000_000;
/// Rows of the smaller file criterion samples.
const SAMPLE_ROWS: u64 = 100_000;
/// Rounds of the alternating measurement.
const ROUNDS: usize = 9;
/// The channel's capacity, on both sides.
const CAPACITY: usize = 1024;
/// The read buffer, on both sides.
const BUFFER: usize = 256 << 10;

fn write_csv(path: &Path, rows: u64) {
    let file = std::fs::File::create(path).expect("temporary file");
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "id,customer,sku,qty,price,note").expect("write");
    for i in 0..rows {
        writeln!(
            out,
            "{i},customer-{},SKU-{:05},{},{}.{:02},\"note, {i}\"",
            i % 977,
            i % 10_000,
            i % 50 + 1,
            i % 1000,
            i % 100
        )
        .expect("write");
    }
    out.flush().expect("flush");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The receiving task, the same on every side: counts what arrives.
async fn receive<T: Send + 'static>(mut rx: mpsc::Receiver<T>) -> u64 {
    let mut n = 0u64;
    while let Some(item) = rx.recv().await {
        black_box(&item);
        n += 1;
    }
    n
}

/// eip: the streamed splitter onto a channel; returns the rows received.
async fn eip(path: PathBuf) -> u64 {
    let (tx, rx) = mpsc::channel::<Message>(CAPACITY);
    let consumer = tokio::spawn(receive(rx));
    let file = tokio::fs::File::open(&path).await.expect("file");
    let reader = tokio::io::BufReader::with_capacity(BUFFER, file);
    let original = Message::builder("")
        .header("file-name", "orders.csv")
        .build();
    let mut parts = Split::csv(CsvOptions::new()).stream(&original, reader);
    while let Some(part) = parts.next_part().await.expect("read") {
        let part = part.expect("every row is well-formed");
        tx.send(part).await.expect("consumer");
    }
    drop(tx);
    consumer.await.expect("consumer")
}

/// The baseline: the csv crate's read loop, each row as JSON bytes onto a channel.
async fn baseline_json(path: PathBuf) -> u64 {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(CAPACITY);
    let consumer = tokio::spawn(receive(rx));
    let mut reader = csv::ReaderBuilder::new()
        .buffer_capacity(BUFFER)
        .from_path(&path)
        .expect("file");
    let header = reader.headers().expect("header").clone();
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).expect("read") {
        let row: BTreeMap<&str, &str> = header.iter().zip(record.iter()).collect();
        let json = serde_json::to_vec(&row).expect("JSON");
        tx.send(json).await.expect("consumer");
    }
    drop(tx);
    consumer.await.expect("consumer")
}

/// The floor: the csv crate's records sent as they are.
async fn baseline_records(path: PathBuf) -> u64 {
    let (tx, rx) = mpsc::channel::<csv::ByteRecord>(CAPACITY);
    let consumer = tokio::spawn(receive(rx));
    let mut reader = csv::ReaderBuilder::new()
        .buffer_capacity(BUFFER)
        .from_path(&path)
        .expect("file");
    let mut record = csv::ByteRecord::new();
    while reader.read_byte_record(&mut record).expect("read") {
        tx.send(record.clone()).await.expect("consumer");
    }
    drop(tx);
    consumer.await.expect("consumer")
}

type Side = fn(PathBuf) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>;

const SIDES: [(&str, Side); 3] = [
    ("eip", |p| Box::pin(eip(p))),
    ("baseline", |p| Box::pin(baseline_json(p))),
    ("records only", |p| Box::pin(baseline_records(p))),
];

/// ns per row of one pass over the file.
fn pass(rt: &tokio::runtime::Runtime, side: Side, path: &Path, rows: u64) -> f64 {
    let start = Instant::now();
    let received = rt.block_on(side(path.to_path_buf()));
    let elapsed = start.elapsed();
    assert_eq!(received, rows, "every row received");
    elapsed.as_nanos() as f64 / rows as f64
}

fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn split_csv(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let rt = runtime();
    let small = dir.path().join("sample.csv");
    let sample_rows = if measuring() { SAMPLE_ROWS } else { 1_000 };
    write_csv(&small, sample_rows);

    let mut group = c.benchmark_group("split csv");
    group.throughput(criterion::Throughput::Elements(sample_rows));
    let mut ran = false;
    for (id, side) in SIDES {
        group.bench_function(id, |b| {
            ran = true;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    assert_eq!(rt.block_on(side(small.clone())), sample_rows);
                    total += start.elapsed();
                }
                total
            })
        });
    }
    group.finish();
    if !ran || !measuring() {
        return;
    }

    let large = dir.path().join("orders.csv");
    write_csv(&large, ROWS);
    let mb = std::fs::metadata(&large).map_or(0, |m| m.len() >> 20);
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for (flavor, rt) in [("", &rt), (" [current-thread]", &current)] {
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); SIDES.len()];
        for _ in 0..ROUNDS {
            for (i, (_, side)) in SIDES.iter().enumerate() {
                times[i].push(pass(rt, *side, &large, ROWS));
            }
        }
        let [eip, json, records] = [0, 1, 2].map(|i| median(&mut times[i]));
        println!(
            "compare: split csv{flavor}: eip {eip:.1} ns/row, baseline {json:.1} ns/row (csv crate + mpsc), ratio {:.2}",
            eip / json
        );
        println!(
            "compare: split csv (records only){flavor}: eip {eip:.1} ns/row, baseline {records:.1} ns/row (csv crate records + mpsc, no JSON), ratio {:.2}",
            eip / records
        );
    }
    match peak_rss_kib() {
        Some(kib) => println!(
            "split csv: {ROWS} rows, {mb} MB file, peak RSS {:.1} MiB (VmHWM)",
            kib as f64 / 1024.0
        ),
        None => println!("split csv: peak RSS unknown (no /proc/self/status)"),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = split_csv
}
criterion_main!(benches);
