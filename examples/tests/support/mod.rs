//! Running an example binary from its test.

use std::path::PathBuf;
use std::process::Command;

/// Runs the example `name` (built by `cargo test` next to the test that calls this), checks it
/// succeeded, and returns what it printed.
pub fn run_example(name: &str) -> String {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test executable under target/<profile>/deps");
    let path: PathBuf = profile_dir.join("examples").join(name);
    let out = Command::new(&path)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}
