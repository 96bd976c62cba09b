//! A damaged record costs only itself: every intact record is still delivered, the damaged one
//! is set aside into the quarantine (kept, counted, reported), and nothing panics or stalls.

mod common;

use common::ScratchDir;
use common::damage::{PAGE, database, pages, read_all, spans, store_with};
use eip_store::{DurableStore, StoreConfig, StoreError};

const RECORDS: u64 = 300;

fn open(dir: &std::path::Path) -> DurableStore {
    DurableStore::open(dir, StoreConfig::default()).expect("the damaged store opens")
}

/// Waits for the committer to have written everything handed to it (the quarantine included).
fn flush(store: &DurableStore) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(store.flush()).unwrap();
}

#[test]
fn a_record_failing_its_checksum_is_set_aside_and_every_other_one_delivered() {
    let dir = ScratchDir::new("flipped-bit");
    let committed = store_with(dir.path(), RECORDS, 200);
    let mut file = std::fs::read(database(dir.path())).unwrap();
    let span = spans(&file, &committed)[100].clone();
    file[span.start + 30] ^= 0x04;
    std::fs::write(database(dir.path()), &file).unwrap();

    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let read = read_all(&queue).unwrap();
    let expected: Vec<_> = committed
        .iter()
        .filter(|(s, _)| *s != 100)
        .cloned()
        .collect();
    assert_eq!(read, expected, "all 299 intact records, in order");
    assert_eq!(queue.damage().set_aside, 1);
    assert_eq!(queue.damage().unreadable, 0);
    flush(&store);
    let quarantined = store.quarantined().unwrap();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(
        (quarantined[0].queue.as_str(), quarantined[0].seq),
        ("q", 100)
    );
    assert_eq!(
        quarantined[0].bytes,
        file[span.start + 4..span.end],
        "its bytes as found"
    );
    assert!(
        quarantined[0].reason.contains("checksum"),
        "{}",
        quarantined[0].reason
    );
    assert_eq!(queue.len(), RECORDS - 1);
    drop((queue, store));

    // Set aside for good: the next open finds 299 records and nothing more to set aside
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    assert_eq!(queue.len(), RECORDS - 1);
    assert_eq!(read_all(&queue).unwrap(), expected);
    assert_eq!(queue.damage().set_aside, 0);
    assert_eq!(store.quarantined().unwrap().len(), 1);
}

#[test]
fn a_zeroed_page_costs_only_the_records_on_it() {
    let dir = ScratchDir::new("zeroed-page");
    let committed = store_with(dir.path(), RECORDS, 200);
    let mut file = std::fs::read(database(dir.path())).unwrap();
    let spans = spans(&file, &committed);
    let page = *pages(&spans[100]).start();
    file[page * PAGE..(page + 1) * PAGE].fill(0);
    std::fs::write(database(dir.path()), &file).unwrap();

    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let read = read_all(&queue).unwrap();
    let untouched: Vec<_> = committed
        .iter()
        .zip(&spans)
        .filter(|(_, span)| !pages(span).contains(&page))
        .map(|(r, _)| r.clone())
        .collect();
    assert!(untouched.len() < committed.len() && !untouched.is_empty());
    for record in &untouched {
        assert!(
            read.contains(record),
            "record {} is on another page",
            record.0
        );
    }
    assert!(
        !read.iter().any(|(s, _)| *s == 100),
        "record 100 was on the zeroed page"
    );
    let lost = committed.len() - read.len();
    let damage = queue.damage();
    assert!(
        damage.unreadable + damage.set_aside >= lost as u64,
        "every record not delivered is counted: {lost} lost, {damage:?}"
    );
}

#[test]
fn a_store_of_an_unknown_format_version_is_refused_naming_file_and_versions() {
    let dir = ScratchDir::new("format-9");
    store_with(dir.path(), 3, 10);
    let format = dir.path().join("FORMAT");
    assert_eq!(std::fs::read_to_string(&format).unwrap(), "eip-store 2\n");
    std::fs::write(&format, "eip-store 9\n").unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    match &error {
        StoreError::UnsupportedFormat {
            file,
            found,
            supported,
        } => assert_eq!((file, found.as_str(), *supported), (&format, "9", 2)),
        other => panic!("expected UnsupportedFormat, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(&format.display().to_string()), "{message}");
    assert!(
        message.contains("format 9") && message.contains("format 2"),
        "{message}"
    );

    std::fs::write(&format, "something else entirely").unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(
        matches!(&error, StoreError::UnsupportedFormat { found, .. } if found.contains("something else")),
        "{error:?}"
    );
    std::fs::write(&format, "eip-store 2\n").unwrap();
    assert_eq!(open(dir.path()).queue("q").unwrap().len(), 3);
}
