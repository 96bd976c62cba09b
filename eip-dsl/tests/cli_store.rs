//! `eip store check|salvage` on a damaged data directory and on one left by a crash, and `eip
//! run` on a store it can not open: a clear message, the repair commands named, a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use eip_core::store::durable::{Durable, StoreConfig};

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

const RECORDS: u64 = 300;

fn record(i: u64) -> Bytes {
    Bytes::from(format!("<record {i:06}> {}", "-".repeat(200)))
}

/// A store in `dir` with `RECORDS` records in queue "orders"; record 100 then damaged (one bit).
fn damaged_store(dir: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    {
        let durable = Durable::open(dir, StoreConfig::default()).unwrap();
        let queue = durable.store().queue("orders").unwrap();
        runtime.block_on(async {
            for i in 0..RECORDS {
                queue.append(record(i)).unwrap().await.unwrap();
            }
        });
    }
    let file = dir.join("store.redb");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes
        .windows(15)
        .position(|w| w == b"<record 000100>")
        .expect("record 100 is in the file");
    bytes[at + 40] ^= 0x01;
    std::fs::write(&file, bytes).unwrap();
}

/// Runs `eip ARGS`, killed if it has not ended within 60 s.
fn eip(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("eip is there").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("eip's output")
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The environment variable that makes [`child_appending_then_crashing`] a child.
const CHILD_DIR: &str = "EIP_CLI_STORE_CHILD_DIR";

/// Run as a child (with [`CHILD_DIR`] set): appends 20 records to "orders", each its own
/// durable round, then aborts with them in the journal only (an idle checkpoint comes only
/// after 100 ms without work).
#[test]
fn child_appending_then_crashing() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let durable = Durable::open(Path::new(&dir), StoreConfig::default()).unwrap();
    let queue = durable.store().queue("orders").unwrap();
    runtime.block_on(async {
        for i in 0..20 {
            queue.append(record(i)).unwrap().await.unwrap();
        }
    });
    println!("CHILD: resolved 20");
    std::process::abort();
}

#[test]
fn check_of_a_store_left_by_a_crash_reads_the_journal_and_reports_its_damage() {
    let scratch = Scratch::new("store-cli-crash");
    let dir = scratch.0.join("data");
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["child_appending_then_crashing", "--exact", "--nocapture"])
        .env(CHILD_DIR, &dir)
        .output()
        .unwrap();
    assert!(
        text(&child.stdout).contains("CHILD: resolved 20"),
        "{}{}",
        text(&child.stdout),
        text(&child.stderr)
    );

    let check = eip(&[os("store"), os("check"), dir.as_os_str()]);
    let out = text(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{out}{}", text(&check.stderr));
    assert!(
        out.contains("queue \"orders\": 20 records, 20 intact"),
        "{out}"
    );
    assert!(
        out.contains("round(s) not yet in the database file"),
        "a crash leaves rounds in the journal only: {out}"
    );

    // One bit of the journal's first record (the header takes the first 4 KiB): what follows
    // can not be trusted, and the check says so.
    let journal = dir.join("journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes[4096 + 32] ^= 0x01;
    std::fs::write(&journal, bytes).unwrap();
    let check = eip(&[os("store"), os("check"), dir.as_os_str()]);
    let out = text(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{out}{}", text(&check.stderr));
    assert!(out.contains("journal: the journal"), "{out}");
    assert!(out.contains("is damaged at byte 4096"), "{out}");
}

#[test]
fn check_names_the_damaged_record_and_salvage_copies_every_intact_one_leaving_the_original() {
    let scratch = Scratch::new("store-cli");
    let dir = scratch.0.join("data");
    damaged_store(&dir);
    let before = std::fs::read(dir.join("store.redb")).unwrap();

    let check = eip(&[os("store"), os("check"), dir.as_os_str()]);
    let out = text(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{out}{}", text(&check.stderr));
    assert!(
        out.contains("queue \"orders\": 300 records, 299 intact, damaged: 100, unreadable: none"),
        "{out}"
    );
    assert!(out.contains("eip store salvage"), "{out}");

    let into: PathBuf = scratch.0.join("data.salvaged");
    let salvage = eip(&[os("store"), os("salvage"), dir.as_os_str()]);
    let out = text(&salvage.stdout);
    assert_eq!(
        salvage.status.code(),
        Some(0),
        "{out}{}",
        text(&salvage.stderr)
    );
    assert!(
        out.contains(&format!("salvaged into {}", into.display())),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.join("store.redb")).unwrap(),
        before,
        "check and salvage change nothing in the original"
    );

    let check = eip(&[os("store"), os("check"), into.as_os_str()]);
    let out = text(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{out}{}", text(&check.stderr));
    assert!(
        out.contains("299 records, 299 intact") && out.contains("clean"),
        "{out}"
    );
    assert!(out.contains("quarantine: 1 record(s) set aside"), "{out}");

    let durable = Durable::open(&into, StoreConfig::default()).unwrap();
    let queue = durable.store().queue("orders").unwrap();
    assert_eq!(
        queue.head(),
        RECORDS,
        "sequence numbers go on where they were"
    );
    let expected: Vec<(u64, Bytes)> = (0..RECORDS)
        .filter(|&i| i != 100)
        .map(|i| (i, record(i)))
        .collect();
    assert_eq!(queue.read(0, 1000).unwrap(), expected);
    let quarantined = durable.store().quarantined().unwrap();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].seq, 100);
}

#[test]
fn run_on_a_store_it_can_not_open_exits_non_zero_naming_the_file_and_the_repair_commands() {
    let scratch = Scratch::new("store-run");
    let dir = scratch.0.join("data");
    Durable::open(&dir, StoreConfig::default()).unwrap();
    let format = dir.join("FORMAT");
    std::fs::write(&format, "eip-store 9\n").unwrap();
    let flow =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/durable-orders.yaml");
    let run = eip(&[
        os("run"),
        flow.as_os_str(),
        os("--data-dir"),
        dir.as_os_str(),
    ]);
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains(&format.display().to_string()), "{err}");
    assert!(
        err.contains("format 9") && err.contains("format 1"),
        "{err}"
    );
    assert!(
        err.contains("eip store check") && err.contains("eip store salvage"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
