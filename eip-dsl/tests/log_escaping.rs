//! Text from outside never forges a log line: `eip run` escapes the control characters of what
//! it logs, whichever part of eip logged it.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// The header value an attacker sends: a name the file adapter refuses (it holds `/`), so that
/// the refusal, which quotes the name, is logged; then a forged line, NUL and an escape.
const FORGED: &str = "a/b\n2026-12-01T10:00:00.000000Z  INFO eip: forged\0\u{1b}[2J";

#[test]
fn a_header_with_a_line_feed_does_not_forge_a_log_line() {
    let scratch = Scratch::new("log-escaping");
    let flow = scratch.0.join("flow.yaml");
    std::fs::write(
        &flow,
        "\
channels:
  files: {kind: point-to-point}
adapters:
  files-out: {kind: file-out, from: files, dir: out, name: '{header.name}'}
",
    )
    .expect("the flow file");
    let line = serde_json::json!({"to": "files", "headers": {"name": FORGED}, "payload": {"n": 1}});
    let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
        .args(["run", "--stats-interval", "0", "--input", "-"])
        .arg(&flow)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip runs");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{line}").expect("the input line");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("eip's status").is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("eip run did not stop within 60 s of its input ending");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("eip's output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The refusal was logged, quoting the name with its line feed escaped ...
    let refusal = stderr
        .lines()
        .find(|l| l.contains("would leave"))
        .unwrap_or_else(|| panic!("the refusal is logged:\n{stderr}"));
    assert!(
        refusal.contains(r"a/b\n2026-12-01T10:00:00.000000Z  INFO eip: forged\0\u{1b}[2J"),
        "{refusal}"
    );
    // ... and nothing of it began a line of its own, or reached the terminal raw.
    assert!(
        !stderr.lines().any(|l| l.starts_with("2026-12-01T10:00:00")),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\0') && !stderr.contains('\u{1b}'),
        "{stderr:?}"
    );
}
