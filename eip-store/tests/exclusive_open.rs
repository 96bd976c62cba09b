//! One opener per directory: a second open, in this process or another, is refused with `InUse`;
//! a lock held only for a moment (a child process between its fork and its exec holds a copy of
//! the store's locked files) is waited for.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{ScratchDir, child_dir, open, run_child};
use eip_store::{DurableStore, StoreConfig, StoreError};

#[test]
fn a_second_open_in_the_same_process_is_in_use_naming_the_dir() {
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
    let dir = ScratchDir::new("in-use-process");
    let store = open(dir.path());
    let output = run_child("child_opening_a_store_held_by_its_parent", dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("CHILD: InUse"), "{stdout}");
    drop(store);
}

/// Run as a child by the test below: opens the store, says so, holds it a moment and exits.
#[test]
fn child_holding_a_store_for_a_moment() {
    let Some(dir) = child_dir() else { return };
    let _store = DurableStore::open(&dir, StoreConfig::default()).expect("the child opens");
    println!("CHILD: holding");
    std::thread::sleep(Duration::from_millis(150));
}

#[test]
fn a_lock_held_for_a_moment_is_waited_for() {
    let dir = ScratchDir::new("held-a-moment");
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = std::process::Command::new(exe)
        .args([
            "child_holding_a_store_for_a_moment",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("EIP_STORE_CHILD_DIR", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child runs");
    let stdout = child.stdout.take().expect("the child's stdout");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let holding = lines.any(|line| line.contains("CHILD: holding"));
    assert!(holding, "the child opened the store");
    let started = Instant::now();
    let store = DurableStore::open(dir.path(), StoreConfig::default());
    let waited = started.elapsed();
    // The rest of what the child prints, so that it never writes to a closed pipe
    lines.for_each(drop);
    assert!(child.wait().expect("the child ends").success());
    assert!(
        store.is_ok(),
        "the open waits out a lock held for a moment, waited {waited:?}: {:?}",
        store.err()
    );
}
