//! `eip dead-letters list|replay|delete` and `eip messages` against a real `eip run --admin`
//! child process of a durable flow: dead letters kept (not printed) while the admin server
//! runs, listed with their death records, replayed keeping their ids, deleted; messages
//! browsed on a paused route's channel; refusals and the audit lines on standard error.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support {
    pub mod scratch;
}

use serde_json::Value;
use support::scratch::Scratch;

const TOKEN: &str = "cli-t0ken";

/// Orders with `ok` true go to `done`; no rule takes the others: they die (`no-route`).
const FLOW: &str = r#"
channels:
  orders: {kind: point-to-point, durable: true}
  done: {kind: point-to-point, durable: true}
routes:
  - name: sort
    from: orders
    choice:
      - when: $.ok == true
        to: done
"#;

/// `eip run --admin 127.0.0.1:0` of `FLOW`, its input a pipe, its standard error kept.
struct Eip {
    child: Child,
    input: ChildStdin,
    base: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Eip {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Scratch) -> Eip {
    let flow = dir.0.join("flow.yaml");
    std::fs::write(&flow, FLOW).expect("the flow file is written");
    let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
        .env("EIP_ADMIN_TOKEN", TOKEN)
        .arg("run")
        .arg(&flow)
        .args(["--admin", "127.0.0.1:0", "--input", "-", "--data-dir"])
        .arg(dir.0.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip runs");
    let input = child.stdin.take().expect("its input");
    let mut lines = BufReader::new(child.stderr.take().expect("its standard error")).lines();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let base = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("eip said no admin address: {stderr:?}");
        };
        if let Some(rest) = line.strip_prefix("[eip] admin: ") {
            break rest.trim_end_matches(" (token required)").to_owned();
        }
        stderr.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    };
    let kept = stderr.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    Eip {
        child,
        input,
        base,
        stderr,
    }
}

impl Eip {
    fn send(&mut self, ok: bool, n: u64) {
        writeln!(
            self.input,
            r#"{{"to": "orders", "payload": {{"ok": {ok}, "n": {n}}}}}"#
        )
        .expect("written");
        self.input.flush().expect("flushed");
    }

    /// `eip ARGS --admin URL`, with the token unless `token` is false.
    fn eip(&self, args: &[&str], token: bool) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_eip"));
        command.env_remove("EIP_ADMIN_TOKEN");
        if token {
            command.env("EIP_ADMIN_TOKEN", TOKEN);
        }
        command
            .args(args)
            .args(["--admin", &self.base])
            .output()
            .expect("eip runs")
    }

    /// `eip ARGS --json`, which must succeed: its answer.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let out = self.eip(&args, true);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("JSON")
    }

    /// Waits until `eip dead-letters list` counts `n`.
    fn dead_letters_reach(&self, n: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let page = self.json(&["dead-letters", "list"]);
            if page["total"] == n {
                return page;
            }
            assert!(Instant::now() < deadline, "{n} dead letters: {page}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether `eip run` wrote a line containing `what` to its stderr within 5 s: the line is
    /// read from the pipe by another thread, so it may come in after the command's answer.
    fn said(&self, what: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            {
                let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
                if lines.iter().any(|l| l.contains(what)) {
                    return true;
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ids(page: &Value) -> Vec<String> {
    (page["messages"].as_array().into_iter().flatten())
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn dead_letters_are_listed_replayed_and_deleted_from_the_command_line() {
    let dir = Scratch::new("dead-letters-cli");
    let mut eip = start(&dir);
    for n in 1..=3 {
        eip.send(false, n);
    }
    let page = eip.dead_letters_reach(3);
    let dead = ids(&page);
    assert_eq!(page["messages"][0]["death"]["reason"], "no-route", "{page}");
    assert_eq!(page["messages"][0]["death"]["channel"], "orders");
    assert!(
        eip.said("dead letters on dead-letters are kept for the admin server"),
        "eip run says it keeps the dead letters"
    );

    let table = eip.eip(&["dead-letters", "list"], true);
    assert!(table.status.success());
    let table = text(&table.stdout);
    assert!(
        table.starts_with("dead-letters: 3 dead letters\n"),
        "{table}"
    );
    assert!(
        table.lines().nth(1).is_some_and(|h| h.starts_with("id  ")),
        "{table}"
    );
    assert!(
        table.contains(&dead[0]) && table.contains("no-route"),
        "{table}"
    );
    assert!(
        table.contains(r#"{"n":1,"ok":false}"#) || table.contains(r#"{"ok":false,"n":1}"#),
        "{table}"
    );

    // Replayed by id: the same id comes back (it dies again: no rule takes it), counted.
    let replay = eip.eip(&["dead-letters", "replay", &dead[0]], true);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    assert_eq!(
        text(&replay.stdout),
        format!("replayed {} to orders\n1 replayed, 0 failed\n", dead[0])
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let again = loop {
        let page = eip.json(&[
            "dead-letters",
            "list",
            "--when",
            r#"header("death-count") == 2"#,
        ]);
        if page["total"] == 1 {
            break page;
        }
        assert!(Instant::now() < deadline, "the replay died again: {page}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(ids(&again), [dead[0].clone()], "the same id");
    assert_eq!(again["messages"][0]["headers"]["replayed"], 1);
    assert!(eip.said(&format!(
        "[eip] admin: dead letter {} replayed from dead-letters to orders",
        dead[0]
    )));

    let by_predicate = eip.json(&["dead-letters", "replay", "--when", "$.n >= 2"]);
    assert_eq!(
        by_predicate["replayed"].as_array().map(Vec::len),
        Some(2),
        "{by_predicate}"
    );
    assert_eq!(by_predicate["failed"], serde_json::json!([]));

    // Refusals: a bad id, no token.
    let bad = eip.eip(&["dead-letters", "replay", "not-an-id"], true);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).starts_with("error: 400: `not-an-id` is not a message id"),
        "{}",
        text(&bad.stderr)
    );
    let missing = eip.eip(
        &[
            "dead-letters",
            "replay",
            "0190a5c4-0000-7000-8000-000000000000",
        ],
        true,
    );
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).starts_with("error: 404: no dead letter with id"),
        "{}",
        text(&missing.stderr)
    );
    let anonymous = eip.eip(&["dead-letters", "delete", "--all"], false);
    assert!(!anonymous.status.success());
    assert!(
        text(&anonymous.stderr).starts_with("error: 401: "),
        "{}",
        text(&anonymous.stderr)
    );
    let neither = eip.eip(&["dead-letters", "delete"], true);
    assert!(
        !neither.status.success(),
        "ids, --when or --all is required"
    );

    eip.dead_letters_reach(3);
    let one = eip.eip(&["dead-letters", "delete", &dead[1]], true);
    assert_eq!(
        text(&one.stdout),
        "1 dead letters deleted\n",
        "{}",
        text(&one.stderr)
    );
    let rest = eip.eip(&["dead-letters", "delete", "--all"], true);
    assert_eq!(text(&rest.stdout), "2 dead letters deleted\n");
    assert!(eip.said("[eip] admin: dead letters deleted from dead-letters (all): 2"));
    eip.dead_letters_reach(0);
}

#[test]
fn messages_shows_what_waits_without_taking_it() {
    let dir = Scratch::new("messages-cli");
    let mut eip = start(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let paused = runtime.block_on(async {
        let url = format!("{}/api/routes/sort/pause", eip.base);
        let response = reqwest::Client::new()
            .post(url)
            .bearer_auth(TOKEN)
            .send()
            .await;
        response
            .expect("the admin server answers")
            .status()
            .as_u16()
    });
    assert_eq!(paused, 200);
    for n in 1..=3 {
        eip.send(true, n);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = eip.json(&["messages", "orders"]);
        if page["total"] == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "3 waiting: {page}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = eip.eip(
        &["messages", "orders", "--offset", "1", "--limit", "1"],
        true,
    );
    let shown = text(&shown.stdout);
    assert!(
        shown.starts_with("orders: 3 waiting, showing 1 from 1\n"),
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 3, "{shown}");
    assert!(shown.contains(r#""n":2"#), "{shown}");
    let unknown = eip.eip(&["messages", "ordrs"], true);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("did you mean `orders`?"),
        "{}",
        text(&unknown.stderr)
    );
    // Still all there.
    assert_eq!(eip.json(&["messages", "orders"])["total"], 3);
}
