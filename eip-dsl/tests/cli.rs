//! The `eip` binary: exit codes, `validate` diagnostics, `graph` output, `route` on bad input,
//! and `run` stopping on a signal after draining.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn eip() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eip"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A flow file with this text in a fresh directory of its own; returns its path.
fn flow_file(yaml: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "eip-cli-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flow.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

const SMALL: &str = "\
channels:
  orders:    {kind: point-to-point}
  orders.eu: {kind: point-to-point}
  orders.us: {kind: point-to-point}
routes:
  - from: orders
    choice:
      - when: '$.region == \"eu\"'
        to: orders.eu
    otherwise: orders.us
";

#[test]
fn validate_says_ok_for_a_good_flow() {
    let out = eip()
        .arg("validate")
        .arg(flow_file(SMALL))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with(": ok\n"));
}

#[test]
fn validate_reports_every_problem_with_its_position_and_a_suggestion() {
    let yaml = "\
channels:
  trades.requests: {kind: point-to-point}
  quotes:          {kind: publish-subscribe}
routes:
  - from: trade.requests
    to: quotes
joins:
  - {from: trades.requests, to: quotes, hops: -1}
";
    let path = flow_file(yaml);
    let out = eip().arg("validate").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown channel `trade.requests`"),
        "the unknown name: {err}"
    );
    assert!(err.contains("did you mean `trades.requests`?"), "{err}");
    assert!(
        err.contains("flow.yaml:5:11"),
        "line and column of the name: {err}"
    );
    assert!(
        err.contains("flow.yaml:8:12"),
        "the join from a queue: {err}"
    );
    assert!(
        err.contains("flow.yaml:8:47"),
        "the negative hop count: {err}"
    );
}

#[test]
fn every_command_refuses_a_bad_flow_with_status_1() {
    let path = flow_file("channels:\n  a: {kind: point-to-point, capacty: 3}\n");
    for command in ["validate", "graph", "route", "run"] {
        let out = eip()
            .arg(command)
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{command}");
        let err = text(&out.stderr);
        assert!(err.contains("capacty"), "{command}: {err}");
        assert!(err.contains("did you mean `capacity`?"), "{command}: {err}");
    }
}

#[test]
fn usage_mistakes_exit_with_status_2() {
    let out = eip().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = eip()
        .args(["graph", "x.yaml", "--format", "png"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("png"));
}

#[test]
fn graph_draws_the_flow_in_each_format() {
    let path = flow_file(SMALL);
    let dot = eip().arg("graph").arg(&path).output().unwrap();
    assert!(dot.status.success());
    let dot = text(&dot.stdout);
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(
        dot.contains("orders.eu") && dot.contains("otherwise"),
        "{dot}"
    );

    let mermaid = eip()
        .arg("graph")
        .arg(&path)
        .args(["--format", "mermaid"])
        .output()
        .unwrap();
    assert!(text(&mermaid.stdout).starts_with("flowchart"));

    let svg_path = path.with_extension("svg");
    let svg = eip()
        .arg("graph")
        .arg(&path)
        .args(["-f", "svg", "-o"])
        .arg(&svg_path)
        .output()
        .unwrap();
    assert!(svg.status.success(), "{}", text(&svg.stderr));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("orders.us"));
}

#[test]
fn route_answers_each_line_and_reports_bad_lines_without_stopping() {
    let path = flow_file(SMALL);
    let mut child = eip()
        .arg("route")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = "\
{\"to\": \"orders\", \"payload\": {\"region\": \"eu\"}}
not json

{\"to\": \"ordrs\"}
{\"to\": \"orders\", \"payload\": {\"region\": \"us\"}}
";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(
        lines.len(),
        4,
        "one answer per message line, blank lines skipped"
    );
    assert_eq!(
        lines[0],
        r#"{"stored":["orders","orders.eu"],"dead_letter":null,"invalid":null}"#
    );
    assert!(
        lines[1].starts_with(r#"{"error":"line 2: not JSON"#),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[2],
        r#"{"error":"line 4: unknown channel or exchange `ordrs`; did you mean `orders`?"}"#
    );
    assert_eq!(
        lines[3],
        r#"{"stored":["orders","orders.us"],"dead_letter":null,"invalid":null}"#
    );
}

#[test]
fn route_keeps_up_with_many_lines() {
    let path = flow_file(SMALL);
    let dir = path.parent().unwrap().to_path_buf();
    let input = dir.join("many.jsonl");
    let mut lines = String::new();
    for i in 0..20_000 {
        let region = if i % 2 == 0 { "eu" } else { "us" };
        lines.push_str(&format!(
            "{{\"to\": \"orders\", \"payload\": {{\"region\": \"{region}\", \"n\": {i}}}}}\n"
        ));
    }
    std::fs::write(&input, lines).unwrap();
    let out = eip()
        .arg("route")
        .arg(&path)
        .arg("--input")
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success());
    let answers = text(&out.stdout);
    assert_eq!(answers.lines().count(), 20_000);
    assert_eq!(
        answers.lines().filter(|l| l.contains("orders.eu")).count(),
        10_000
    );
}

/// The lines of `reader`, read on a thread of their own so that waiting for them is bounded.
fn lines_of(reader: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn run_drains_and_exits_0_on_sigint() {
    run_drains_and_exits_0_on("INT");
}

#[test]
fn run_drains_and_exits_0_on_sigterm() {
    run_drains_and_exits_0_on("TERM");
}

/// `eip run` fed from an open standard input, stopped by `kill -SIGNAL`.
fn run_drains_and_exits_0_on(signal: &str) {
    let path = flow_file(SMALL);
    let mut child = eip()
        .arg("run")
        .arg(&path)
        .args(["--input", "-", "--stats-interval", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for region in ["eu", "us", "eu"] {
        writeln!(
            stdin,
            "{{\"to\": \"orders\", \"payload\": {{\"region\": \"{region}\"}}}}"
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let stdout = lines_of(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut delivered = Vec::new();
    while delivered.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        match stdout.recv_timeout(left) {
            Ok(line) => delivered.push(line),
            Err(_) => break,
        }
    }
    assert_eq!(delivered.len(), 3, "{delivered:?}");
    // The input stays open: only the signal stops the flow.
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Bounded: a flow that does not stop is killed and the test fails.
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("eip run did not stop within 20 s of SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(exit.code(), Some(0), "{err}");
    assert!(err.contains(&format!("SIG{signal}: draining")), "{err}");
    assert!(
        err.contains("orders: in 3, out 3, dead letters 0, invalid 0, waiting 0"),
        "{err}"
    );
    assert!(err.contains("orders.eu: in 2, out 2"), "{err}");
    assert!(err.trim_end().ends_with("[eip] stopped"), "{err}");
    let eu = delivered
        .iter()
        .filter(|l| l.contains(r#""channel":"orders.eu""#))
        .count();
    assert_eq!(eu, 2);
}

/// Each kind of problem the issue names, through `eip validate`: the message, the position
/// (`flow.yaml:LINE:COLUMN`) and the suggestion or help, as a user sees them.
#[test]
fn validate_shows_each_kind_of_problem_with_its_position() {
    const HEAD: &str = "\
channels:
  trades.requests: {kind: point-to-point}
  quotes:          {kind: publish-subscribe}
  quotes.nyse:     {kind: publish-subscribe}
";
    // (what follows the head, the message, the position, the help)
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "routes:\n  - {from: trades.requests, to: quote}\n",
            "unknown channel or exchange `quote`",
            "flow.yaml:6:33",
            "did you mean `quotes`?",
        ),
        (
            "routes:\n  - {from: trades.requests, to: markt}\nexchanges:\n  market: {}\n",
            "unknown channel or exchange `markt`",
            "flow.yaml:6:33",
            "did you mean `market`?",
        ),
        (
            "exchanges:\n  quotes: {}\n",
            "`quotes` is declared as a channel and as an exchange",
            "flow.yaml:6:3",
            "share one namespace",
        ),
        (
            "joins:\n  - {from: trades.requests, to: quotes}\n",
            "a queue can not be the source of a join",
            "flow.yaml:6:12",
            "join from a publish-subscribe channel",
        ),
        (
            "joins:\n  - {from: quotes, to: quotes.nyse, archival: true}\n",
            "archival",
            "flow.yaml:6:",
            "point-to-point",
        ),
        (
            "joins:\n  - {from: quotes, to: quotes.nyse, filter: '$.price >> 3'}\n",
            "invalid predicate",
            "flow.yaml:6:55",
            "",
        ),
        (
            "exchanges:\n  x:\n    bindings:\n      - {key: 'stock.ny*', to: quotes}\n",
            "mixes a wildcard with other characters",
            "flow.yaml:8:22",
            "`*` stands for exactly one word",
        ),
        (
            "joins:\n  - {from: quotes, to: quotes.nyse, hops: -2}\n",
            "`hops` must not be negative, found -2",
            "flow.yaml:6:43",
            "0 (to the destination and no further)",
        ),
        (
            "joins:\n  - {from: quotes, to: quotes.nyse, hops: 1.5}\n",
            "`hops` must be a whole number, found 1.5",
            "flow.yaml:6:43",
            "",
        ),
        (
            "routes:\n  - {from: trades.requests, too: quotes}\n",
            "unknown key `too`",
            "flow.yaml:6:29",
            "did you mean `to`?",
        ),
        (
            "exchanges:\n  x: {alternate: [quotes]}\n",
            "`alternate` must be",
            "flow.yaml:6:18",
            "",
        ),
        (
            "  checked: {kind: point-to-point, datatype: schemas/none.json, invalid: trades.requests}\n",
            "can not read the schema file `schemas/none.json`",
            "flow.yaml:5:45",
            "relative to the flow file's directory",
        ),
    ];
    let mut failures = Vec::new();
    for (tail, message, position, help) in cases {
        let path = flow_file(&format!("{HEAD}{tail}"));
        let out = eip().arg("validate").arg(&path).output().unwrap();
        let err = text(&out.stderr);
        let ok = out.status.code() == Some(1)
            && err.contains(message)
            && err.contains(position)
            && err.contains(help);
        if !ok {
            failures.push(format!(
                "{tail}expected {message:?} at {position:?} with {help:?}, got:\n{err}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_second_signal_stops_a_flow_that_does_not_drain() {
    // Two routes pass every message back and forth: the flow never becomes idle.
    let path = flow_file(
        "channels:\n  a: {kind: point-to-point}\n  b: {kind: point-to-point}\nroutes:\n  - {from: a, to: b}\n  - {from: b, to: a}\n",
    );
    let mut child = eip()
        .arg("run")
        .arg(&path)
        .args([
            "-v",
            "--input",
            "-",
            "--stats-interval",
            "0",
            "--drain-timeout",
            "60",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"to": "a"}}"#).unwrap();
    stdin.flush().unwrap();
    let stderr = lines_of(child.stderr.take().unwrap());
    let kill = |child: &std::process::Child| {
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let wait_for = |text: &str, seen: &mut Vec<String>| {
        while !seen.iter().any(|l: &String| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match stderr.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no line with {text:?}: {seen:?}"),
            }
        }
    };
    // Once the flow has started (and listens for signals), ask it to stop: draining never
    // ends, since the message keeps circulating.
    wait_for("flow started", &mut seen);
    kill(&child);
    wait_for("SIGINT: draining", &mut seen);
    kill(&child);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("eip run did not stop on the second SIGINT: {seen:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    // The process has exited: its last lines are in the reader's channel, or soon will be.
    while let Ok(line) = stderr.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    assert_eq!(exit.code(), Some(130), "{seen:?}");
    assert!(
        seen.iter()
            .any(|l| l.contains("SIGINT again: stopping without draining")),
        "{seen:?}"
    );
}

#[test]
fn run_help_offers_a_data_directory() {
    let out = eip().args(["run", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(help.contains("--data-dir <DIR>"), "{help}");
    assert!(help.contains("store.path"), "{help}");
}

const DURABLE: &str = "channels:\n  orders: {kind: point-to-point, durable: true}\n";

/// `eip run FLOW ARGS` from the working directory `cwd`, fed one message; the data directory
/// it reports, if it reports one.
fn data_directory(flow: &std::path::Path, cwd: &std::path::Path, args: &[&str]) -> Option<String> {
    let input = cwd.join("input.jsonl");
    std::fs::write(&input, "{\"to\": \"orders\", \"payload\": {}}\n").unwrap();
    let out = eip()
        .arg("run")
        .arg(flow)
        .arg("--input")
        .arg(&input)
        .args(["--stats-interval", "0", "--quiet"])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("orders: in 1"), "the flow still runs: {err}");
    err.lines()
        .find_map(|l| l.strip_prefix("[eip] data directory: "))
        .map(str::to_owned)
}

/// A fresh working directory, its path with symbolic links resolved (as the process sees it).
fn working_directory() -> PathBuf {
    let dir = flow_file("").parent().unwrap().to_path_buf();
    dir.canonicalize().unwrap()
}

#[test]
fn run_reports_the_data_directory_of_a_durable_flow() {
    let cwd = working_directory();
    let shown = |p: PathBuf| Some(p.display().to_string());

    // Nothing said: ./eip-data, in the working directory.
    let flow = flow_file(DURABLE);
    assert_eq!(
        data_directory(&flow, &cwd, &[]),
        shown(cwd.join("eip-data"))
    );

    // The flow's `store.path`: relative to the flow file, wherever eip runs.
    let flow = flow_file(&format!(
        "{DURABLE}store: {{path: data, max-bytes: 1 GiB}}\n"
    ));
    let flow_dir = flow.parent().unwrap().canonicalize().unwrap();
    let parent = flow_dir.parent().unwrap();
    let relative = PathBuf::from(flow_dir.file_name().unwrap()).join("flow.yaml");
    assert_eq!(
        data_directory(&relative, parent, &[]),
        shown(flow_dir.join("data"))
    );

    // `--data-dir` wins, relative to the working directory.
    assert_eq!(
        data_directory(&flow, &cwd, &["--data-dir", "elsewhere"]),
        shown(cwd.join("elsewhere"))
    );
    let absolute = cwd.join("absolute");
    assert_eq!(
        data_directory(&flow, &cwd, &["--data-dir", absolute.to_str().unwrap()]),
        shown(absolute)
    );
}

#[test]
fn a_second_run_on_one_data_directory_is_refused_as_in_use() {
    let cwd = working_directory();
    let flow = flow_file(DURABLE);
    let data = cwd.join("shared-data");
    let mut first = eip()
        .arg("run")
        .arg(&flow)
        .arg("--data-dir")
        .arg(&data)
        .args([
            "--input",
            "-",
            "--stats-interval",
            "0",
            "--quiet",
            "--receipts",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The first has the store open once it has accepted a message onto it.
    let mut stdin = first.stdin.take().unwrap();
    stdin
        .write_all(b"{\"to\": \"orders\", \"payload\": {}}\n")
        .unwrap();
    let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
    let accepted = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("accepted"));
    assert!(accepted, "the first run never accepted its message");
    let second = eip()
        .arg("run")
        .arg(&flow)
        .arg("--data-dir")
        .arg(&data)
        .args(["--input", "/dev/null", "--stats-interval", "0"])
        .output()
        .unwrap();
    drop(stdin);
    let first_status = first.wait().unwrap();
    let err = text(&second.stderr);
    assert!(!second.status.success(), "the second run was let in: {err}");
    assert!(err.contains("in use"), "{err}");
    assert!(
        err.contains(data.to_str().unwrap()),
        "names the directory: {err}"
    );
    assert!(first_status.success(), "the first run still ends well");
}

#[test]
fn run_reports_no_data_directory_for_a_flow_in_memory() {
    let flow = flow_file("channels:\n  orders: {kind: point-to-point}\nstore: {path: data}\n");
    assert_eq!(data_directory(&flow, &working_directory(), &[]), None);
}

#[test]
fn route_reads_standard_input_when_told_dash() {
    let mut child = eip()
        .arg("route")
        .arg(flow_file(SMALL))
        .args(["--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"to\": \"orders\", \"payload\": {\"region\": \"eu\"}}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answer = text(&out.stdout);
    assert!(answer.contains("orders.eu"), "{answer}");
}
