//! `eip run` and its flow file changing under it: SIGHUP reloads the file (and never stops the
//! process), `--watch` reloads it when it changes on disk; changed joins apply at once, a file
//! with problems or with changes that need a restart is refused and the flow goes on; the
//! admin server shows the channels and routes a reload added.

mod support {
    pub mod scratch;
}

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::scratch::Scratch;

const FLOW: &str = "
channels:
  quotes: {kind: publish-subscribe}
  nyse: {kind: point-to-point}
  archive: {kind: point-to-point}
joins:
  - {from: quotes, to: archive, archival: true}
";

/// [`FLOW`] with a join from `quotes` to `nyse` too.
fn with_nyse() -> String {
    FLOW.replace(
        "archival: true}\n",
        "archival: true}\n  - {from: quotes, to: nyse}\n",
    )
}

/// A running `eip run`, its standard error read line by line on a thread.
struct Eip {
    child: Child,
    said: mpsc::Receiver<String>,
}

impl Drop for Eip {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Eip {
    fn start(flow: &Path, extra: &[&str]) -> Eip {
        let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
            .arg("run")
            .arg(flow)
            .args(["--input", "-", "--stats-interval", "0"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("eip runs");
        let stderr = child.stderr.take().expect("its standard error");
        let (tell, said) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tell.send(line).is_err() {
                    break;
                }
            }
        });
        Eip { child, said }
    }

    /// Waits (10 s at most) for a line `wanted` accepts; every line seen on the way.
    fn wait_for(&self, what: &str, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.said.recv_timeout(Duration::from_secs(10)) {
                Ok(line) => {
                    let found = wanted(&line);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(_) => panic!("no {what} in 10 s; eip said: {seen:#?}"),
            }
        }
    }

    fn signal(&self, signal: libc::c_int) {
        // The child is ours and alive (killed only on drop).
        let pid = self.child.id() as libc::pid_t;
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    fn send(&mut self, line: &str) {
        let input = self.child.stdin.as_mut().expect("its input");
        writeln!(input, "{line}").expect("written");
        input.flush().expect("flushed");
    }
}

#[test]
fn sighup_reloads_the_flow_file_and_never_stops_eip() {
    let dir = Scratch::new("run-reload");
    let flow = dir.0.join("flow.yaml");
    std::fs::write(&flow, FLOW).unwrap();
    let mut eip = Eip::start(&flow, &[]);
    // A line it refuses tells that the flow is running and reading its input.
    eip.send("not a message");
    eip.wait_for("the refused line", |l| {
        l.contains("not a message") || l.contains("skipped")
    });

    std::fs::write(&flow, with_nyse()).unwrap();
    eip.signal(libc::SIGHUP);
    eip.wait_for("the reload", |l| l.starts_with("[eip] SIGHUP: reloading"));
    eip.wait_for("the new join", |l| {
        l == "[eip] reload: join quotes -> nyse added"
    });

    std::fs::write(&flow, with_nyse().replace("to: nyse", "to: nsye")).unwrap();
    eip.signal(libc::SIGHUP);
    let seen = eip.wait_for("the refusal", |l| {
        l == "[eip] reload refused: the flow goes on unchanged"
    });
    assert!(
        seen.iter().any(|l| l.contains("did you mean `nyse`?")),
        "{seen:#?}"
    );

    std::fs::write(
        &flow,
        with_nyse().replace(
            "archive: {kind: point-to-point}",
            "archive: {kind: point-to-point, capacity: 5}",
        ),
    )
    .unwrap();
    eip.signal(libc::SIGHUP);
    eip.wait_for("the restart refusal", |l| {
        l.starts_with(
            "[eip] reload refused: the file changes channel `archive` declared differently",
        )
    });
    assert!(
        eip.child.try_wait().expect("its status").is_none(),
        "eip is still running"
    );

    eip.signal(libc::SIGTERM);
    eip.wait_for("the drain", |l| l == "[eip] SIGTERM: draining");
    let status = eip.child.wait().expect("it exits");
    assert_eq!(status.code(), Some(3), "one input line was refused");
}

#[test]
fn watch_reloads_the_flow_file_when_it_changes() {
    let dir = Scratch::new("run-watch");
    let flow = dir.0.join("flow.yaml");
    std::fs::write(&flow, FLOW).unwrap();
    let mut eip = Eip::start(&flow, &["--watch"]);
    eip.send("not a message");
    eip.wait_for("the refused line", |l| {
        l.contains("not a message") || l.contains("skipped")
    });
    std::fs::write(&flow, with_nyse()).unwrap();
    eip.wait_for("the reload", |l| {
        l.starts_with("[eip] the flow file changed: reloading")
    });
    eip.wait_for("the new join", |l| {
        l == "[eip] reload: join quotes -> nyse added"
    });
    std::fs::write(&flow, FLOW).unwrap();
    eip.wait_for("the join removed", |l| {
        l == "[eip] reload: join quotes -> nyse removed"
    });
}

/// The body of `GET path` from the HTTP server at `addr` (HTTP/1.0: it closes when done).
fn get(addr: &str, path: &str) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).expect("the admin server answers");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("asked");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

#[test]
fn the_admin_server_shows_the_channels_and_routes_of_a_reload() {
    let dir = Scratch::new("run-reload-admin");
    let flow = dir.0.join("flow.yaml");
    std::fs::write(&flow, FLOW).unwrap();
    let mut eip = Eip::start(&flow, &["--admin", "127.0.0.1:0"]);
    let seen = eip.wait_for("the admin address", |l| {
        l.starts_with("[eip] admin: http://")
    });
    // A line it refuses tells that the flow is running (and listens for SIGHUP).
    eip.send("not a message");
    eip.wait_for("the refused line", |l| {
        l.contains("not a message") || l.contains("skipped")
    });
    let addr = seen.last().and_then(|l| l.split("http://").nth(1));
    let addr = addr
        .and_then(|a| a.split(' ').next())
        .expect("an address")
        .to_owned();
    let before: serde_json::Value = serde_json::from_str(&get(&addr, "/api/flow")).unwrap();
    let channels = |flow: &serde_json::Value| -> Vec<String> {
        let all = flow["channels"].as_array().cloned().unwrap_or_default();
        all.iter()
            .filter_map(|c| Some(c["name"].as_str()?.to_owned()))
            .collect()
    };
    assert!(!channels(&before).contains(&"bonds".to_owned()));

    let more = FLOW.replace(
        "  archive: {kind: point-to-point}\n",
        "  archive: {kind: point-to-point}\n  bonds: {kind: point-to-point}\n",
    ) + "routes:\n  - name: file\n    from: nyse\n    to: bonds\n";
    std::fs::write(&flow, more).unwrap();
    eip.signal(libc::SIGHUP);
    eip.wait_for("the reload", |l| {
        l == "[eip] reload: channel bonds added, route file added"
    });
    let after: serde_json::Value = serde_json::from_str(&get(&addr, "/api/flow")).unwrap();
    assert!(channels(&after).contains(&"bonds".to_owned()), "{after:#}");
    let route: serde_json::Value = serde_json::from_str(&get(&addr, "/api/routes/file")).unwrap();
    assert_eq!(route["from"], "nyse", "{route:#}");
    assert_eq!(route["action"]["targets"][0], "bonds", "{route:#}");
}
