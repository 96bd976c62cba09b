//! What the file adapter's tests share: scratch directories, listing them, receiving.
// Each test file uses a part of this module.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::PointToPoint;

/// A directory of its own, removed at the end.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-{name}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The names of the entries of `dir`, sorted (none if it does not exist).
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

pub async fn receive(channel: &PointToPoint, n: usize) -> Vec<Message> {
    let mut receiver = channel.receiver();
    let mut got = Vec::new();
    for _ in 0..n {
        let delivery = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .expect("a message within 10 s")
            .expect("channel open");
        got.push(delivery.message().clone());
        delivery.ack();
    }
    got
}
