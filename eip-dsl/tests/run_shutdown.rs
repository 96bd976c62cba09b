//! `eip run` stopping in a bounded time whatever its consumers wait for, and its exit status
//! when input was refused.
//!
//! The shutdown tests run the built binary on a flow whose only consumer, an `http-out`
//! adapter, always fails (a local server answers 500) and waits an hour before each
//! redelivery. After the first failure the test sends SIGTERM with `--drain-timeout 1`: eip must
//! exit well within a generous bound, print its final counters, and say what it left: the
//! message in backoff is given back to its channel, kept on disk for the next run when the
//! channel is durable. Every child is killed when a test ends, whatever its outcome.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// How long eip may take to exit once asked: the drain timeout (1 s) and a generous margin.
const EXIT_BOUND: Duration = Duration::from_secs(15);

/// How the local server treats a request.
#[derive(Clone, Copy)]
enum Answer {
    /// 500, then the connection is closed.
    Status500,
    /// Never: the connection is held open, silent (a server that hangs).
    Never,
}

/// A local HTTP server answering every request the same way, reporting each one.
struct FailingServer {
    address: String,
    requests: mpsc::Receiver<()>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FailingServer {
    fn start(answer: Answer) -> FailingServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let address = listener.local_addr().expect("its address").to_string();
        let (tx, requests) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopping.load(Ordering::SeqCst) {
                let Ok((socket, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let answered = match answer {
                    Answer::Status500 => answer_500(socket),
                    Answer::Never => read_request(&socket).map(|()| held.push(socket)),
                };
                if answered.is_ok() {
                    let _ = tx.send(());
                }
            }
        });
        FailingServer {
            address,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// Waits (bounded) for the next request.
    fn next_request(&self) {
        self.requests
            .recv_timeout(Duration::from_secs(20))
            .expect("a request to the failing server within 20 s");
    }
}

impl Drop for FailingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request (head and `content-length` body), answers 500 and closes.
fn answer_500(mut socket: TcpStream) -> std::io::Result<()> {
    read_request(&socket)?;
    socket.write_all(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
}

/// Reads one request: its head and its `content-length` body.
fn read_request(socket: &TcpStream) -> std::io::Result<()> {
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)
}

/// An `eip run` child, killed when dropped if it is still running.
struct Eip(Child);

impl Eip {
    fn spawn(flow: &Path, data: &Path, extra: &[&str]) -> Eip {
        let child = Command::new(env!("CARGO_BIN_EXE_eip"))
            .arg("run")
            .arg(flow)
            .arg("--data-dir")
            .arg(data)
            .args(["--stats-interval", "0"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("eip starts");
        Eip(child)
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.0.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits up to `bound` for the child to exit; `None` if it did not.
    fn exit_within(&mut self, bound: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(status) = self.0.try_wait().expect("the child's status") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its standard output and error, read to their end (call once it has exited).
    fn output(&mut self) -> (String, String) {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut stdout) = self.0.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        if let Some(mut stderr) = self.0.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        (out, err)
    }
}

impl Drop for Eip {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A flow file `name` in `dir` with this text.
fn flow_file(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, yaml).expect("the flow file is written");
    path
}

/// `payments` (durable or not) consumed by an `http-out` adapter to `address` that waits an
/// hour for an answer and an hour before each redelivery.
fn failing_flow(address: &str, durable: bool) -> String {
    format!(
        "
channels:
  payments: {{kind: point-to-point, durable: {durable}}}
adapters:
  ledger:
    kind: http-out
    from: payments
    url: 'http://{address}/payments'
    timeout: 1h
    redelivery: {{max-attempts: 5, initial-backoff: 1h, max-backoff: 1h}}
"
    )
}

/// Runs the failing flow against a server answering `answer`, sends one payment, waits for
/// its first request, then SIGTERM with `--drain-timeout 1`. Returns the exit status and
/// standard error.
fn stop_after_first_request(
    scratch: &Scratch,
    answer: Answer,
    durable: bool,
) -> (ExitStatus, String) {
    let server = FailingServer::start(answer);
    let flow = flow_file(
        &scratch.0,
        "failing.yaml",
        &failing_flow(&server.address, durable),
    );
    let data = scratch.0.join("data");
    let mut eip = Eip::spawn(&flow, &data, &["--input", "-", "--drain-timeout", "1"]);
    let mut stdin = eip.0.stdin.take().expect("piped stdin");
    writeln!(stdin, r#"{{"to": "payments", "payload": {{"amount": 5}}}}"#).expect("written");
    stdin.flush().expect("flushed");
    server.next_request();
    // Let the consumer read a 500 and enter its hour of backoff.
    std::thread::sleep(Duration::from_millis(500));
    eip.signal("TERM");
    let Some(status) = eip.exit_within(EXIT_BOUND) else {
        let _ = eip.0.kill();
        let (_, err) = eip.output();
        panic!("eip run did not exit within {EXIT_BOUND:?} of SIGTERM:\n{err}");
    };
    drop(stdin);
    let (_, err) = eip.output();
    (status, err)
}

/// What every stop with the payment still unprocessed prints, whatever the channel, and the
/// lines `also` saying what was left.
fn assert_stopped_with_counters(status: ExitStatus, err: &str, also: &[&str]) {
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("SIGTERM: draining"), "{err}");
    assert!(
        err.contains("still busy after 1.0s of draining: stopping anyway"),
        "{err}"
    );
    assert!(err.contains("counters at"), "{err}");
    assert!(
        err.contains("payments: in 1, out 0, dead letters 0"),
        "{err}"
    );
    for line in also {
        assert!(err.contains(line), "{line:?} in:\n{err}");
    }
    assert!(err.trim_end().ends_with("[eip] stopped"), "{err}");
}

const IN_BACKOFF: &str = "[eip] 1 messages left in backoff: given back to their channels";
const ON_DISK: &str = "[eip] payments: 1 messages left on disk, for the next run";

#[test]
fn eip_run_stops_within_its_drain_timeout_while_a_message_waits_in_redelivery_backoff() {
    let scratch = Scratch::new("shutdown-memory");
    let (status, err) = stop_after_first_request(&scratch, Answer::Status500, false);
    assert_stopped_with_counters(
        status,
        &err,
        &[
            IN_BACKOFF,
            "[eip] payments: 1 messages left in memory, lost",
        ],
    );
}

#[test]
fn eip_run_abandons_a_call_still_waiting_for_its_answer_when_the_drain_timeout_passes() {
    let scratch = Scratch::new("shutdown-hung");
    let (status, err) = stop_after_first_request(&scratch, Answer::Never, true);
    assert_stopped_with_counters(
        status,
        &err,
        &[
            "[eip] 1 messages in processing abandoned: given back to their channels",
            ON_DISK,
        ],
    );
}

#[test]
fn a_message_in_backoff_on_a_durable_channel_is_there_on_the_next_run() {
    let scratch = Scratch::new("shutdown-durable");
    let (status, err) = stop_after_first_request(&scratch, Answer::Status500, true);
    assert_stopped_with_counters(status, &err, &[IN_BACKOFF, ON_DISK]);

    // The next run: `payments` is an output now, printed; the input is empty, so eip drains
    // what the channel holds and exits.
    let flow = flow_file(
        &scratch.0,
        "output.yaml",
        "channels:\n  payments: {kind: point-to-point, durable: true}\n",
    );
    let empty = flow_file(&scratch.0, "empty.jsonl", "");
    let data = scratch.0.join("data");
    let empty = empty.to_str().expect("a UTF-8 path");
    let mut eip = Eip::spawn(&flow, &data, &["--input", empty]);
    let status = eip
        .exit_within(Duration::from_secs(30))
        .expect("the next run drains and exits");
    let (out, err) = eip.output();
    assert_eq!(status.code(), Some(0), "{err}");
    let printed: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(printed.len(), 1, "{out}");
    assert_eq!(printed[0]["channel"], "payments");
    assert_eq!(printed[0]["payload"], serde_json::json!({"amount": 5}));
    let redeliveries = printed[0]["headers"]["redelivery-count"]
        .as_i64()
        .expect("a redelivery count");
    assert!(redeliveries >= 1, "marked redelivered: {out}");
}

/// The JSON lines of a run's standard output.
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The input line numbers the receipts say were refused, with their errors.
fn refusals(printed: &[serde_json::Value]) -> Vec<(u64, String)> {
    printed
        .iter()
        .filter_map(|v| {
            let line = v.get("refused")?.as_u64()?;
            Some((line, v["error"].as_str().unwrap_or_default().to_owned()))
        })
        .collect()
}

/// Runs `flow` with `--receipts` on these input lines until its input ends (within `bound`);
/// returns its exit status, its standard output and its standard error.
fn run_on_input(
    scratch: &Scratch,
    flow: &Path,
    lines: &[String],
    extra: &[&str],
    bound: Duration,
) -> (ExitStatus, String, String) {
    let input = flow_file(&scratch.0, "input.jsonl", &lines.join("\n"));
    let input = input.to_str().expect("a UTF-8 path");
    let mut args = vec!["--input", input, "--receipts"];
    args.extend_from_slice(extra);
    let mut eip = Eip::spawn(flow, &scratch.0.join("data"), &args);
    let status = eip
        .exit_within(bound)
        .unwrap_or_else(|| panic!("eip run did not end within {bound:?}"));
    let (out, err) = eip.output();
    (status, out, err)
}

#[test]
fn eip_run_exits_3_counting_the_input_lines_it_refused_and_delivers_the_others() {
    let scratch = Scratch::new("refused");
    // A cap of 1 KiB: a record larger than that can never be stored, and is refused at once.
    let flow = flow_file(
        &scratch.0,
        "orders.yaml",
        "store: {max-bytes: 1 KiB}\nchannels:\n  orders: {kind: point-to-point, durable: true}\n",
    );
    let too_large = "x".repeat(2048);
    let input = [
        r#"{"to": "orders", "payload": {"n": 1}}"#.to_owned(),
        r#"{"to": "orders", "payload": {"n": 2}}"#.to_owned(),
        format!(r#"{{"to": "orders", "payload": "{too_large}"}}"#),
        "not a message".to_owned(),
        String::new(),
        r#"{"to": "nowhere", "payload": {"n": 6}}"#.to_owned(),
        r#"{"to": "orders", "payload": {"n": 7}}"#.to_owned(),
    ];
    let (status, out, err) = run_on_input(&scratch, &flow, &input, &[], Duration::from_secs(30));
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "[eip] input: 6 lines, 3 accepted, 3 refused (1 not messages, 2 not accepted by the flow)"
        ),
        "{err}"
    );
    let printed = json_lines(&out);
    let refused = refusals(&printed);
    assert_eq!(
        refused.iter().map(|(line, _)| *line).collect::<Vec<_>>(),
        [3, 4, 6],
        "{out}"
    );
    assert!(refused[0].1.contains("can never fit"), "{out}");
    let accepted = printed
        .iter()
        .filter(|v| v.get("accepted").is_some())
        .count();
    assert_eq!(accepted, 3, "{out}");
    let delivered: Vec<i64> = printed
        .iter()
        .filter(|v| v["channel"] == "orders")
        .filter_map(|v| v["payload"]["n"].as_i64())
        .collect();
    assert_eq!(delivered, [1, 2, 7], "the accepted ones, in order: {out}");
}

#[test]
fn a_full_store_refuses_the_line_that_does_not_fit_and_eip_run_exits_3() {
    // Nothing is acknowledged: the only consumer fails and backs off for an hour. Two records
    // of about 500 bytes fit under the cap of 1 000; the third waits the store's 30 s for
    // room, then is refused.
    let server = FailingServer::start(Answer::Status500);
    let scratch = Scratch::new("full");
    let flow = format!(
        "store: {{max-bytes: 1000}}\n{}",
        failing_flow(&server.address, true)
    );
    let flow = flow_file(&scratch.0, "full.yaml", &flow);
    let payload = "p".repeat(400);
    let line = format!(r#"{{"to": "payments", "payload": "{payload}"}}"#);
    let input = [line.clone(), line.clone(), line];
    let (status, out, err) = run_on_input(
        &scratch,
        &flow,
        &input,
        &["--drain-timeout", "1"],
        Duration::from_secs(90),
    );
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "[eip] input: 3 lines, 2 accepted, 1 refused (0 not messages, 1 not accepted by the flow)"
        ),
        "{err}"
    );
    let printed = json_lines(&out);
    let refused = refusals(&printed);
    assert_eq!(refused.len(), 1, "{out}");
    assert_eq!(refused[0].0, 3, "{out}");
    assert!(refused[0].1.contains("is full"), "{out}");
    assert!(
        err.contains("[eip] payments: 2 messages left on disk, for the next run"),
        "{err}"
    );
}
