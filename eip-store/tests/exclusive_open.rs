//! One opener per directory: a second open, in this process or another, is refused with `InUse`.

mod common;

use std::sync::{Mutex, MutexGuard, PoisonError};

use common::{ScratchDir, child_dir, open, run_child};
use eip_store::{DurableStore, StoreConfig, StoreError};

/// Held by a test that starts a child process, and by one that opens a directory again right
/// after closing it. Between its fork and its exec a child holds a copy of every open file of
/// this process, the store's locked files included; a directory closed in that instant is
/// still locked until the child's exec closes them, and an open then is `InUse`. Real
/// programs that close and at once reopen a store while starting processes meet the same.
static FORKING: Mutex<()> = Mutex::new(());

fn not_forking() -> MutexGuard<'static, ()> {
    FORKING.lock().unwrap_or_else(PoisonError::into_inner)
}

#[test]
fn a_second_open_in_the_same_process_is_in_use_naming_the_dir() {
    let _alone = not_forking();
    let dir = ScratchDir::new("in-use");
    let store = open(dir.path());
    match DurableStore::open(dir.path(), StoreConfig::default()) {
        Err(StoreError::InUse { dir: d }) => assert_eq!(d, dir.path()),
        other => panic!("expected InUse, got {other:?}"),
    }
    drop(store);
    open(dir.path());
}

#[test]
fn the_dir_opens_again_once_every_handle_is_dropped() {
    let _alone = not_forking();
    let dir = ScratchDir::new("reopen-after-drop");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    drop(store);
    assert!(
        matches!(
            DurableStore::open(dir.path(), StoreConfig::default()),
            Err(StoreError::InUse { .. })
        ),
        "a queue handle keeps the store open"
    );
    drop(queue);
    open(dir.path());
}

/// Run as a child by the test below: tries to open the parent's store and reports.
#[test]
fn child_opening_a_store_held_by_its_parent() {
    let Some(dir) = child_dir() else { return };
    match DurableStore::open(&dir, StoreConfig::default()) {
        Err(StoreError::InUse { dir: d }) if d == dir => println!("CHILD: InUse"),
        other => println!("CHILD: {other:?}"),
    }
}

#[test]
fn a_second_open_from_another_process_is_in_use() {
    let _alone = not_forking();
    let dir = ScratchDir::new("in-use-process");
    let store = open(dir.path());
    let output = run_child("child_opening_a_store_held_by_its_parent", dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("CHILD: InUse"), "{stdout}");
    drop(store);
}
