//! Reading what a flow names is bounded: a flow file or a datatype's schema that is not a
//! regular file (a FIFO, `/dev/zero`, a directory) is refused by its kind without waiting or
//! reading, and one larger than the limit by its size, without being read.
//!
//! The commands run as child processes with a deadline (a FIFO could otherwise hold a test
//! for ever) and a cap on their memory (a file read whole could otherwise take the machine's).

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eip_dsl::load::load_str;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// Generous: refusing takes milliseconds; this only bounds a test that would hang.
const DEADLINE: Duration = Duration::from_secs(30);

/// The address space `eip` may use: ample for the command, far short of a 3 GiB file.
const MEMORY_CAP: u64 = 1 << 30;

/// What a bounded `eip validate` did: its exit code (`None` when it was killed at the
/// deadline or by a signal) and its standard error.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

/// Runs `eip validate PATH` with the memory cap, killed if it outlives the deadline.
fn validate(path: &Path) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_eip"));
    command
        .arg("validate")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent's.
    unsafe {
        command.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: MEMORY_CAP,
                rlim_max: MEMORY_CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = command.spawn().expect("eip starts");
    let started = Instant::now();
    let status = loop {
        match child.try_wait().expect("eip's status") {
            Some(status) => break Some(status),
            None if started.elapsed() > DEADLINE => break None,
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if status.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("eip's output");
    Outcome {
        code: status.and_then(|s| s.code()),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Makes a FIFO at `path`.
fn fifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A flow with one datatype channel whose schema is `schema`.
fn flow_with_schema(schema: &str) -> String {
    format!(
        "channels:\n  \
           orders: {{kind: point-to-point, datatype: '{schema}', invalid: orders.invalid}}\n  \
           orders.invalid: {{kind: point-to-point}}\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("a file");
    path
}

#[test]
fn a_sparse_3_gib_flow_file_is_refused_by_its_size_unread() {
    let scratch = Scratch::new("limits-sparse");
    let path = scratch.0.join("huge.yaml");
    let file = std::fs::File::create(&path).expect("the file");
    file.set_len(3 << 30).expect("a sparse 3 GiB file");
    let out = validate(&path);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("it is 3221225472 bytes long; at most 4194304 are read"),
        "{}",
        out.stderr
    );
}

#[test]
fn dev_zero_as_the_flow_file_is_refused_as_a_device() {
    let out = validate(Path::new("/dev/zero"));
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("it is a character device, not a regular file"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_fifo_as_the_flow_file_is_refused_without_waiting_for_a_writer() {
    let scratch = Scratch::new("limits-fifo-flow");
    let path = scratch.0.join("flow.yaml");
    fifo(&path);
    let out = validate(&path);
    assert_eq!(out.code, Some(1), "refused, not hanging: {}", out.stderr);
    assert!(
        out.stderr
            .contains("it is a FIFO (named pipe), not a regular file"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_fifo_as_a_datatype_schema_is_refused_without_waiting_for_a_writer() {
    let scratch = Scratch::new("limits-fifo-schema");
    fifo(&scratch.0.join("order.json"));
    let path = write(&scratch.0, "flow.yaml", &flow_with_schema("order.json"));
    let out = validate(&path);
    assert_eq!(out.code, Some(1), "refused, not hanging: {}", out.stderr);
    assert!(
        out.stderr.contains(
            "can not read the schema file `order.json`: it is a FIFO (named pipe), not a regular file"
        ),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("flow.yaml:2:45"), "{}", out.stderr);
}

#[test]
fn dev_zero_as_a_datatype_schema_is_refused_as_a_device() {
    let errors =
        load_str(&flow_with_schema("/dev/zero"), "flow.yaml", ".".as_ref()).expect_err("refused");
    let problem = &errors.problems[0];
    assert_eq!(
        problem.message,
        "can not read the schema file `/dev/zero`: it is a character device, not a regular file"
    );
}

#[test]
fn a_directory_as_a_datatype_schema_is_refused_as_a_directory() {
    let scratch = Scratch::new("limits-dir-schema");
    std::fs::create_dir(scratch.0.join("order.json")).expect("a directory");
    let errors =
        load_str(&flow_with_schema("order.json"), "flow.yaml", &scratch.0).expect_err("refused");
    assert_eq!(
        errors.problems[0].message,
        "can not read the schema file `order.json`: it is a directory, not a regular file"
    );
}

#[test]
fn a_sparse_schema_over_the_limit_is_refused_by_its_size_unread() {
    let scratch = Scratch::new("limits-sparse-schema");
    let file = std::fs::File::create(scratch.0.join("order.json")).expect("the file");
    file.set_len(3 << 30).expect("a sparse 3 GiB file");
    let path = write(&scratch.0, "flow.yaml", &flow_with_schema("order.json"));
    let out = validate(&path);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "can not read the schema file `order.json`: it is 3221225472 bytes long; at most 4194304 are read"
        ),
        "{}",
        out.stderr
    );
}
