//! Key tables: byte keys to byte values with an optional expiry, durable like records, counted
//! against the byte limit, and damage to an entry costs only that entry.

mod common;

use bytes::Bytes;
use common::damage::{PAGE, database};
use common::{ScratchDir, open};
use eip_store::{DurableStore, StoreConfig, StoreError};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn b(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

#[tokio::test]
async fn a_put_is_read_back_replaced_and_removed() {
    let dir = ScratchDir::new("kt-round-trip");
    let store = open(dir.path());
    let seen = store.table("seen").unwrap();
    assert_eq!(seen.get(b"a").unwrap(), None);
    seen.put(b("a"), b("1"), None).await.unwrap();
    seen.put(b("b"), b("2"), None).await.unwrap();
    assert_eq!(seen.get(b"a").unwrap(), Some(b("1")));
    seen.put(b("a"), b("one"), None).await.unwrap();
    assert_eq!(seen.get(b"a").unwrap(), Some(b("one")));
    assert_eq!(
        seen.entries().unwrap(),
        vec![(b("a"), b("one")), (b("b"), b("2"))]
    );
    assert_eq!(seen.used_bytes(), 4 + 2);
    seen.remove(b("a")).await.unwrap();
    seen.remove(b("never there")).await.unwrap();
    assert_eq!(seen.get(b"a").unwrap(), None);
    assert_eq!(seen.entries().unwrap(), vec![(b("b"), b("2"))]);
    assert_eq!(seen.used_bytes(), 2);
    assert_eq!(store.used_bytes(), 2);
    assert_eq!(store.table_names(), ["seen"]);
}

#[tokio::test]
async fn an_expired_entry_reads_as_absent_and_expire_gives_its_bytes_back() {
    let dir = ScratchDir::new("kt-expiry");
    let store = open(dir.path());
    let seen = store.table("seen").unwrap();
    let now = now_ms();
    seen.put(b("gone"), b("x"), Some(now - 1)).await.unwrap();
    seen.put(b("later"), b("y"), Some(now + 60_000))
        .await
        .unwrap();
    seen.put(b("kept"), b("z"), None).await.unwrap();
    assert_eq!(seen.get(b"gone").unwrap(), None, "expired at once");
    assert_eq!(seen.get(b"later").unwrap(), Some(b("y")));
    assert_eq!(seen.get_at(b"later", now + 60_000).unwrap(), None);
    assert_eq!(seen.entries().unwrap().len(), 2);
    assert_eq!(seen.used_bytes(), 5 + 6 + 5);

    assert_eq!(seen.expire(now).await.unwrap(), 1);
    assert_eq!(seen.used_bytes(), 6 + 5);
    assert_eq!(seen.expire(now).await.unwrap(), 0, "nothing left to expire");
    // A later put of the key with another expiry is not removed by the old expiry
    seen.put(b("later"), b("y2"), Some(now + 120_000))
        .await
        .unwrap();
    assert_eq!(seen.expire(now + 60_000).await.unwrap(), 0);
    assert_eq!(seen.get_at(b"later", now + 60_000).unwrap(), Some(b("y2")));
    assert_eq!(seen.expire(now + 120_000).await.unwrap(), 1);
    assert_eq!(seen.entries().unwrap(), vec![(b("kept"), b("z"))]);
    assert_eq!(store.used_bytes(), 5);
}

#[tokio::test]
async fn expire_removes_at_most_its_limit_per_call() {
    let dir = ScratchDir::new("kt-expire-limit");
    let store = open(dir.path());
    let seen = store.table("seen").unwrap();
    let count = eip_store::EXPIRE_LIMIT as u64 + 10;
    let mut batch = store.batch();
    for i in 0..count {
        batch = batch.put(&seen, format!("k{i}"), b("v"), Some(1_000 + i));
    }
    batch.commit().await.unwrap();
    let first = seen.expire(u64::MAX - 1).await.unwrap();
    assert_eq!(first, eip_store::EXPIRE_LIMIT as u64);
    assert_eq!(seen.expire(u64::MAX - 1).await.unwrap(), 10);
    assert_eq!(seen.used_bytes(), 0);
}

#[test]
fn entries_and_their_bytes_survive_a_reopen() {
    let dir = ScratchDir::new("kt-reopen");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    {
        let store = open(dir.path());
        let groups = store.table("groups").unwrap();
        runtime.block_on(async {
            for i in 0..50 {
                groups
                    .put(format!("g{i:02}"), format!("members of {i}"), None)
                    .await
                    .unwrap();
            }
            groups.remove(b("g07")).await.unwrap();
        });
    }
    let store = open(dir.path());
    let groups = store.table("groups").unwrap();
    let entries = groups.entries().unwrap();
    assert_eq!(entries.len(), 49);
    assert_eq!(groups.get(b"g08").unwrap(), Some(b("members of 8")));
    assert_eq!(groups.get(b"g07").unwrap(), None);
    let bytes: u64 = entries
        .iter()
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum();
    assert_eq!(groups.used_bytes(), bytes);
    assert_eq!(store.used_bytes(), bytes, "rebuilt at open, no entry read");
}

#[tokio::test]
async fn a_table_and_a_queue_may_share_a_name() {
    let dir = ScratchDir::new("kt-names");
    let store = open(dir.path());
    let queue = store.queue("orders").unwrap();
    let table = store.table("orders").unwrap();
    queue.append(b("record")).unwrap().await.unwrap();
    table.put(b("key"), b("value"), None).await.unwrap();
    assert_eq!(queue.read(0, 10).unwrap(), vec![(0, b("record"))]);
    assert_eq!(table.entries().unwrap(), vec![(b("key"), b("value"))]);
    assert_eq!(store.queue_names(), ["orders"]);
    assert_eq!(store.table_names(), ["orders"]);
}

#[test]
fn a_store_written_before_key_tables_opens_and_keeps_its_format() {
    let dir = ScratchDir::new("kt-old-store");
    common::damage::store_with(dir.path(), 3, 10);
    {
        // What the store holds before any table is declared: no `tables` table at all
        let db = redb::Database::open(database(dir.path())).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let names: Vec<String> = txn
            .list_tables()
            .unwrap()
            .map(|t| redb::TableHandle::name(&t).to_string())
            .collect();
        assert!(!names.iter().any(|n| n == "tables"), "{names:?}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    {
        let store = open(dir.path());
        assert_eq!(store.queue("q").unwrap().len(), 3);
        let table = store.table("t").unwrap();
        runtime.block_on(table.put(b("k"), b("v"), None)).unwrap();
    }
    let format = std::fs::read_to_string(dir.path().join("FORMAT")).unwrap();
    assert_eq!(
        format, "eip-store 2\n",
        "tables are added lazily, the format stays"
    );
    let store = open(dir.path());
    assert_eq!(store.queue("q").unwrap().len(), 3);
    assert_eq!(store.table("t").unwrap().get(b"k").unwrap(), Some(b("v")));
}

#[tokio::test]
async fn puts_count_against_max_bytes_and_replacing_or_removing_frees_room() {
    let dir = ScratchDir::new("kt-max-bytes");
    let config = StoreConfig {
        max_bytes: Some(4096),
        ..StoreConfig::default()
    };
    let store = DurableStore::open(dir.path(), config.clone()).unwrap();
    let table = store.table("t").unwrap();
    let queue = store.queue("q").unwrap();
    table.put(b("big"), vec![1u8; 3000], None).await.unwrap();
    assert_eq!(store.used_bytes(), 3003);
    let error = table
        .put(b("more"), vec![2u8; 2000], None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Full {
                max_bytes: 4096,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(matches!(
        queue.append(Bytes::from(vec![0; 2000])),
        Err(StoreError::Full { .. })
    ));
    let error = table
        .put(b("huge"), vec![2u8; 5000], None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::RecordTooLarge { .. }),
        "{error:?}"
    );
    assert_eq!(
        table.get(b"more").unwrap(),
        None,
        "a refused put writes nothing"
    );
    // Replacing the entry frees the old value's bytes once committed
    table.put(b("big"), vec![1u8; 1000], None).await.unwrap();
    assert_eq!(store.used_bytes(), 1003);
    table.put(b("more"), vec![2u8; 2000], None).await.unwrap();
    assert_eq!(store.used_bytes(), 3007);
    table.remove(b("big")).await.unwrap();
    assert_eq!(store.used_bytes(), 2004);
    drop((table, queue, store));
    let store = DurableStore::open(dir.path(), config).unwrap();
    assert_eq!(store.used_bytes(), 2004, "rebuilt at open");
}

/// A store whose table "t" holds `count` entries `key NNNN` → a value that says which one it
/// is, closed cleanly.
fn table_with(dir: &std::path::Path, count: usize) -> Vec<(Bytes, Bytes)> {
    let store = open(dir);
    let table = store.table("t").unwrap();
    let entries: Vec<(Bytes, Bytes)> = (0..count)
        .map(|i| {
            let mut value = format!("<value {i:04}>").into_bytes();
            value.resize(200, b'.');
            (Bytes::from(format!("key {i:04}")), Bytes::from(value))
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for (key, value) in &entries {
            table.put(key.clone(), value.clone(), None).await.unwrap();
        }
    });
    entries
}

fn find(file: &[u8], needle: &[u8]) -> usize {
    file.windows(needle.len())
        .position(|w| w == needle)
        .expect("the value is in the file")
}

#[test]
fn an_entry_failing_its_checksum_reads_as_absent_and_is_counted_once() {
    let dir = ScratchDir::new("kt-flipped");
    let entries = table_with(dir.path(), 100);
    let path = database(dir.path());
    let mut file = std::fs::read(&path).unwrap();
    let at = find(&file, b"<value 0042>");
    file[at + 40] ^= 0x08;
    std::fs::write(&path, &file).unwrap();

    let store = open(dir.path());
    let table = store.table("t").unwrap();
    assert_eq!(table.get(b"key 0042").unwrap(), None, "never returned");
    assert_eq!(table.get(b"key 0042").unwrap(), None);
    assert_eq!(table.get(b"key 0041").unwrap(), Some(entries[41].1.clone()));
    let read = table.entries().unwrap();
    let expected: Vec<_> = entries
        .iter()
        .filter(|(k, _)| k != "key 0042")
        .cloned()
        .collect();
    assert_eq!(read, expected, "every intact entry");
    assert_eq!(table.damage().damaged, 1, "counted once");
    assert_eq!(table.damage().unreadable, 0);
    // A put over the damaged entry replaces it
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(table.put(b("key 0042"), b("fresh"), None))
        .unwrap();
    assert_eq!(table.get(b"key 0042").unwrap(), Some(b("fresh")));
}

#[test]
fn a_zeroed_page_costs_only_the_entries_on_it() {
    let dir = ScratchDir::new("kt-zeroed");
    let entries = table_with(dir.path(), 300);
    let path = database(dir.path());
    let mut file = std::fs::read(&path).unwrap();
    let page = find(&file, b"<value 0150>") / PAGE;
    let on_page: Vec<bool> = entries
        .iter()
        .map(|(_, v)| find(&file, &v[..12]) / PAGE == page)
        .collect();
    file[page * PAGE..(page + 1) * PAGE].fill(0);
    std::fs::write(&path, &file).unwrap();

    let store = open(dir.path());
    let table = store.table("t").unwrap();
    let read = table.entries().unwrap();
    for (entry, on_page) in entries.iter().zip(&on_page) {
        if !on_page {
            assert!(read.contains(entry), "{:?} is on another page", entry.0);
        }
    }
    assert!(!read.iter().any(|(k, _)| k == "key 0150"));
    assert!(
        read.iter().any(|(k, _)| k == "key 0299"),
        "entries after the damage are read too"
    );
    for (key, value) in &read {
        let i: usize = std::str::from_utf8(&key[4..]).unwrap().parse().unwrap();
        assert_eq!(value, &entries[i].1, "no wrong bytes");
    }
    let lost = (entries.len() - read.len()) as u64;
    let damage = table.damage();
    assert!(
        damage.unreadable + damage.damaged >= lost,
        "every entry not read is counted: {lost} lost, {damage:?}"
    );
    assert_eq!(table.get(b"key 0150").unwrap(), None);
    assert_eq!(table.get(b"key 0010").unwrap().is_some(), !on_page[10]);
}

#[test]
fn check_names_a_damaged_entry_and_salvage_copies_every_intact_one() {
    let dir = ScratchDir::new("kt-salvage");
    let into = ScratchDir::new("kt-salvaged");
    let entries = table_with(dir.path(), 100);
    {
        let store = open(dir.path());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let t = store.table("t").unwrap();
        runtime
            .block_on(t.put(b("expiring"), b("soon"), Some(now_ms() + 3_600_000)))
            .unwrap();
    }
    let path = database(dir.path());
    let mut file = std::fs::read(&path).unwrap();
    let at = find(&file, b"<value 0007>");
    file[at + 20] ^= 0x01;
    std::fs::write(&path, &file).unwrap();

    let check = eip_store::check(dir.path()).unwrap();
    assert!(!check.is_clean());
    assert_eq!(check.tables.len(), 1);
    let table = &check.tables[0];
    assert_eq!(
        (table.name.as_str(), table.entries, table.intact),
        ("t", Some(101), 100)
    );
    assert_eq!(table.damaged, [b("key 0007")]);
    assert_eq!(table.unreadable, 0);

    let salvaged = eip_store::salvage(dir.path(), into.path()).unwrap();
    assert_eq!(salvaged.tables, check.tables);
    let store = open(into.path());
    let t = store.table("t").unwrap();
    let read = t.entries().unwrap();
    assert_eq!(read.len(), 100);
    for entry in entries.iter().filter(|(k, _)| k != "key 0007") {
        assert!(read.contains(entry), "{:?} salvaged", entry.0);
    }
    assert_eq!(t.get(b"key 0007").unwrap(), None);
    let bytes: u64 = read.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
    assert_eq!(store.used_bytes(), bytes);
    // The expiry index came along: the entry expires in the salvaged store too
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(t.expire(u64::MAX - 1)).unwrap(), 1);
    assert_eq!(t.get_at(b"expiring", 0).unwrap(), None);
    assert!(eip_store::check(into.path()).is_err(), "the store is open");
}
