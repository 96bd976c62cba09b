//! What tests that run flows share: a scratch directory, a number from the environment, and a
//! PostgreSQL database of a test's own.

use std::path::PathBuf;

/// A fresh directory in the system's temporary directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new directory whose name starts with `eip-NAME-` and holds the process id.
    pub fn new(name: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("eip-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The whole number in the environment variable `name`, or `default` when it is not set.
#[allow(dead_code)] // Not every test file reads one.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, found {value:?}")),
        Err(_) => default,
    }
}
