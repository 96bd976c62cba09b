//! `split csv (file-in)`: a 1M-row CSV file (about 60 MB, generated in a temporary directory)
//! through a [`FileSource`] streaming it with `format: csv` ([`SplitRecords`], the `split`
//! step's CSV splitter) onto a point-to-point channel, a consumer acking each row; against
//! what one would write by hand: the `csv` crate's read loop over the same file on a blocking
//! thread, each row turned into a JSON object with `serde_json` and sent as bytes on a tokio
//! mpsc of the same capacity to a task that receives it (issue 17).
//!
//! eip does more per row than the loop: it claims the file by rename and moves it to the done
//! directory once every row was accepted, makes each row a message with its own id, the file's
//! headers and the Message Sequence headers (correlation id, number, `line`; the size on the
//! last), and each row waits for the channel's acknowledgement.
//!
//! On a shared two-core machine one side's round can meet a burst of load the other's did
//! not, and a ratio of two medians taken over minutes moves with it. So each round runs both
//! sides back to back (eip first in even rounds, the baseline first in odd ones) and gives its
//! own ratio; the compare line gives the medians in ns per row and the **median of the
//! rounds' ratios**, and a detail line lists every round's ratio, sorted, so the spread shows.
//! Then the process's peak RSS (`VmHWM`), which holds both sides' peaks: flat whatever the
//! file's size.
//!
//! Run: `cargo bench -p eip-bench --bench split_file`. `EIP_SPLIT_ROWS` sets the rows (the
//! book's 1 GB run: `EIP_SPLIT_ROWS=17000000 EIP_SPLIT_ROUNDS=1`), `EIP_SPLIT_ROUNDS` the
//! rounds (default 9). `EIP_SPLIT_SIDE=eip` (or `baseline`) runs one side only and prints its
//! time, for a profiler (`valgrind --tool=callgrind`) to count that side's instructions.
//! `cargo test -p eip-bench --benches` runs a small version.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use eip_adapters::file::FileSource;
use eip_bench::{MemoryStatus, TempDir, measuring, median, per_item};
use eip_core::channel::PointToPoint;
use eip_dsl::kind::file::SplitRecords;
use eip_steps::format::CsvOptions;
use eip_steps::split::Split;

/// The capacity of eip's channel and of the baseline's tokio mpsc.
const CAPACITY: usize = 1024;

/// The baseline's read buffer: the size of the chunks eip's adapter reads.
const BUFFER: usize = eip_adapters::file::CHUNK_BYTES;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn write_csv(path: &Path, rows: u64) {
    let file = std::fs::File::create(path).expect("a CSV file");
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "id,customer,sku,qty,price,note").expect("written");
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
        .expect("written");
    }
    out.flush().expect("flushed");
}

/// From the file put in the watched directory to every row acked and the file done.
async fn eip(source_csv: &Path, rows: u64) -> Duration {
    let dir = TempDir::new("split-file");
    std::fs::create_dir_all(dir.path()).expect("the watched directory");
    let channel = PointToPoint::new("rows", CAPACITY).expect("a channel");
    let config = FileSource::builder(dir.path())
        .records(SplitRecords::shared(Split::csv(CsvOptions::new())))
        .poll_interval(Duration::from_millis(10))
        .build()
        .expect("a file source");
    let mut receiver = channel.receiver();
    let source = FileSource::new(config, channel.sender()).spawn();
    // Hard-linked in: the file is not copied, and the source file stays for the next round.
    let started = Instant::now();
    std::fs::hard_link(source_csv, dir.path().join("orders.csv")).expect("the file put in place");
    for _ in 0..rows {
        let delivery = receiver.recv().await.expect("the channel stays open");
        std::hint::black_box(delivery.message().payload());
        delivery.ack();
    }
    let done = dir.path().join(".done/orders.csv");
    while !done.exists() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = started.elapsed();
    source.shutdown().await.expect("the file source stops");
    elapsed
}

/// The csv crate's read loop on a blocking thread, each row as JSON bytes onto a tokio mpsc.
async fn baseline(path: &Path, rows: u64) -> Duration {
    let path = path.to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(CAPACITY);
    let started = Instant::now();
    let reader = tokio::task::spawn_blocking(move || {
        let mut reader = csv::ReaderBuilder::new()
            .buffer_capacity(BUFFER)
            .from_path(&path)
            .expect("the file opens");
        let header = reader.headers().expect("a header").clone();
        let mut record = csv::StringRecord::new();
        while reader.read_record(&mut record).expect("a row reads") {
            let row: BTreeMap<&str, &str> = header.iter().zip(record.iter()).collect();
            let json = serde_json::to_vec(&row).expect("JSON");
            tx.blocking_send(json).expect("the consumer is there");
        }
    });
    let mut received = 0u64;
    while let Some(row) = rx.recv().await {
        std::hint::black_box(&row);
        received += 1;
    }
    let elapsed = started.elapsed();
    reader.await.expect("the reader finishes");
    assert_eq!(received, rows, "every row received");
    elapsed
}

/// One round of each side, the order swapped every other round (the side run second finds
/// the file's pages warmer and the allocator's free lists filled by the first): the two
/// times in ns per row.
fn round(
    round: usize,
    eip_side: &mut dyn FnMut() -> f64,
    raw: &mut dyn FnMut() -> f64,
) -> (f64, f64) {
    if round.is_multiple_of(2) {
        let x = eip_side();
        (x, raw())
    } else {
        let y = raw();
        (eip_side(), y)
    }
}

/// `EIP_SPLIT_SIDE`: one side's rounds alone, each printed (no ratio).
fn one_side(
    side: &str,
    rounds: usize,
    eip_side: &mut dyn FnMut() -> f64,
    raw: &mut dyn FnMut() -> f64,
) {
    let run: &mut dyn FnMut() -> f64 = match side {
        "eip" => eip_side,
        "baseline" => raw,
        other => panic!("EIP_SPLIT_SIDE is `eip` or `baseline`, not `{other}`"),
    };
    for n in 0..rounds {
        eprintln!("  split csv {side} round {n}: {:.0} ns/row", run());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let measuring = measuring();
    let rows = if measuring {
        env_number("EIP_SPLIT_ROWS", 1_000_000)
    } else {
        2_000
    };
    let rounds = if measuring {
        env_number("EIP_SPLIT_ROUNDS", 9).max(1) as usize
    } else {
        1
    };
    let dir = TempDir::new("split-file-source");
    std::fs::create_dir_all(dir.path()).expect("a directory");
    let csv = dir.path().join("orders.csv");
    write_csv(&csv, rows);
    let mb = std::fs::metadata(&csv).map_or(0, |m| m.len()) as f64 / 1e6;
    let rt = eip_bench::runtime();
    let before = MemoryStatus::read();
    let mut eip_side = || per_item(rt.block_on(eip(&csv, rows)), rows as usize);
    let mut raw = || per_item(rt.block_on(baseline(&csv, rows)), rows as usize);
    if let Ok(side) = std::env::var("EIP_SPLIT_SIDE") {
        one_side(&side, rounds, &mut eip_side, &mut raw);
        return;
    }
    let (mut xs, mut ys, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..rounds {
        let (x, y) = round(n, &mut eip_side, &mut raw);
        eprintln!(
            "  split csv round {n}: eip {x:.0} ns/row, raw {y:.0} ns/row, ratio {:.2}",
            x / y
        );
        xs.push(x);
        ys.push(y);
        ratios.push(x / y);
    }
    let (x, y) = (median(&mut xs), median(&mut ys));
    let ratio = median(&mut ratios.clone());
    println!(
        "compare: split csv: eip {x:.1} ns/msg, baseline {y:.1} ns/msg (csv crate read loop + \
         serde_json + tokio mpsc), ratio {ratio:.2}"
    );
    ratios.sort_by(f64::total_cmp);
    let spread: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    println!(
        "detail: split csv: the ratio is the median of {rounds} rounds' own ratios (each round \
         runs both sides back to back, in turns first); sorted: {}",
        spread.join(" ")
    );
    match (before, MemoryStatus::read()) {
        (Some(before), Some(after)) => println!(
            "split csv: {rows} rows, {mb:.0} MB file, peak RSS {:.1} MiB (VmHWM; {:.1} MiB before the first round)",
            after.peak_kib as f64 / 1024.0,
            before.peak_kib as f64 / 1024.0
        ),
        _ => println!("split csv: peak RSS unknown (no /proc/self/status)"),
    }
}
