//! The brokers of this machine as processes a test stops and starts again: each is stopped the
//! way an operator would stop it, and started with the very command `.ci/run` starts it with
//! (read from that file, so the two never drift apart).
//!
//! A test takes the broker with [`Broker::take`]: a [`Restart`] that holds a lock file, so two
//! test processes never restart the same broker at once, and that starts the broker again when
//! it is dropped, whatever happened (a failed assertion, a panic, a timeout dropping the test's
//! future), waiting a bounded time until its port accepts connections. Every wait here is
//! bounded: a stop command gets [`STOP_LIMIT`], a start [`START_LIMIT`].

use std::fs::File;
use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long stopping a broker may take before its process is sent SIGKILL.
pub const STOP_LIMIT: Duration = Duration::from_secs(30);
/// How long a started broker may take until its port accepts connections.
pub const START_LIMIT: Duration = Duration::from_secs(60);

/// How a broker is stopped.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// A command that returns once the broker is down.
    Command(&'static [&'static str]),
    /// SIGTERM to the process listening on the broker's port: a graceful shutdown (Mosquitto
    /// writes its persistence file, NATS closes its JetStream store).
    Terminate,
}

/// A broker on this machine: its name in `.ci/run`, its port, how it is stopped.
#[derive(Debug, Clone, Copy)]
pub struct Broker {
    /// The service's name in `.ci/run` (`rabbitmq`).
    pub name: &'static str,
    /// What it is, for messages (`RabbitMQ`).
    pub title: &'static str,
    /// Its port on 127.0.0.1.
    pub port: u16,
    stop: Stop,
}

/// RabbitMQ, stopped with `rabbitmqctl stop` (which returns once the node is down).
pub const RABBITMQ: Broker = Broker {
    name: "rabbitmq",
    title: "RabbitMQ",
    port: 5672,
    stop: Stop::Command(&["rabbitmqctl", "stop"]),
};

/// NATS with JetStream, stopped with SIGTERM.
pub const NATS: Broker = Broker {
    name: "nats",
    title: "NATS with JetStream",
    port: 4222,
    stop: Stop::Terminate,
};

/// Mosquitto, stopped with SIGTERM (it saves its persistence file on the way out).
pub const MOSQUITTO: Broker = Broker {
    name: "mosquitto",
    title: "the MQTT broker (Mosquitto)",
    port: 1883,
    stop: Stop::Terminate,
};

/// Redis, stopped with `SHUTDOWN NOSAVE` (it is configured to keep nothing on disk anyway).
pub const REDIS: Broker = Broker {
    name: "redis",
    title: "Redis",
    port: 6379,
    stop: Stop::Command(&[
        "redis-cli",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "shutdown",
        "nosave",
    ]),
};

impl Broker {
    /// 127.0.0.1 and its port.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Whether the broker's port accepts a connection now.
    pub fn is_up(&self) -> bool {
        TcpStream::connect_timeout(&self.address(), Duration::from_secs(1)).is_ok()
    }

    /// `false` (said on stdout) when `EIP_SKIP_BROKERS=1`; fails the test, naming the broker,
    /// when it is down.
    pub fn check(&self, test: &str) -> bool {
        if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
            println!("{test}: skipped, EIP_SKIP_BROKERS=1");
            return false;
        }
        assert!(
            self.is_up(),
            "{} at 127.0.0.1:{} is down ({test} needs it; `.ci/run` starts it)",
            self.title,
            self.port
        );
        true
    }

    /// The command `.ci/run` starts this broker with.
    pub fn start_command(&self) -> Vec<String> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/run");
        let script = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        start_command(&script, self.name).unwrap_or_else(|| {
            panic!(
                "{} has no `up {} …` line with a start command",
                path.display(),
                self.name
            )
        })
    }

    /// Takes the broker for a test that restarts it: waits (at most `START_LIMIT`) for any
    /// other test process restarting it to finish.
    pub fn take(&self) -> Restart {
        let path = std::env::temp_dir().join(format!("eip-restart-{}.lock", self.name));
        let lock =
            File::create(&path).unwrap_or_else(|e| panic!("the lock file {}: {e}", path.display()));
        let deadline = Instant::now() + START_LIMIT;
        while lock.try_lock().is_err() {
            assert!(
                Instant::now() < deadline,
                "another test process has been restarting {} for {START_LIMIT:?} ({})",
                self.title,
                path.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Restart {
            broker: *self,
            start: self.start_command(),
            _lock: lock,
            down: false,
            restarts: 0,
        }
    }
}

/// A broker a test may stop and start; see the [module](self). Dropped while the broker is
/// down, it starts it.
pub struct Restart {
    broker: Broker,
    start: Vec<String>,
    _lock: File,
    down: bool,
    restarts: usize,
}

impl Restart {
    /// Stops the broker and waits until its process is gone and its port closed; gives how
    /// long that took.
    pub fn stop(&mut self) -> Duration {
        let began = Instant::now();
        let broker = self.broker;
        let pid = listener_pid(broker.port);
        self.down = true;
        match broker.stop {
            Stop::Command(command) => {
                if let Err(e) = run(command, STOP_LIMIT, &log_path(broker.name)) {
                    eprintln!(
                        "{}: `{}` failed ({e}); sending SIGTERM",
                        broker.name,
                        command.join(" ")
                    );
                    if let Some(pid) = pid {
                        signal(pid, "TERM");
                    }
                }
            }
            Stop::Terminate => match pid {
                Some(pid) => signal(pid, "TERM"),
                None => panic!(
                    "no process listens on 127.0.0.1:{} for {}",
                    broker.port, broker.title
                ),
            },
        }
        let deadline = began + STOP_LIMIT;
        while (pid.is_some_and(is_alive) || broker.is_up()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(pid) = pid.filter(|pid| is_alive(*pid)) {
            eprintln!(
                "{}: still running after {STOP_LIMIT:?}: SIGKILL",
                broker.name
            );
            signal(pid, "KILL");
            std::thread::sleep(Duration::from_millis(500));
        }
        assert!(
            !broker.is_up(),
            "{} still accepts connections on 127.0.0.1:{} after being stopped",
            broker.title,
            broker.port
        );
        began.elapsed()
    }

    /// Starts the broker with its `.ci/run` command and waits until its port accepts
    /// connections; gives how long that took.
    pub fn start(&mut self) -> Duration {
        let began = Instant::now();
        match self.bring_up() {
            Ok(()) => {
                self.down = false;
                self.restarts += 1;
                began.elapsed()
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// How many times the broker was started again.
    pub fn restarts(&self) -> usize {
        self.restarts
    }

    fn bring_up(&self) -> Result<(), String> {
        let broker = self.broker;
        if broker.is_up() {
            return Ok(());
        }
        let log = log_path(broker.name);
        let words: Vec<&str> = self.start.iter().map(String::as_str).collect();
        if let Err(e) = run(&words, START_LIMIT, &log) {
            eprintln!("{}: `{}`: {e}", broker.name, words.join(" "));
        }
        let deadline = Instant::now() + START_LIMIT;
        while !broker.is_up() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} is not accepting connections on 127.0.0.1:{} {START_LIMIT:?} after `{}` (its output: {})",
                    broker.title,
                    broker.port,
                    words.join(" "),
                    log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }
}

impl Drop for Restart {
    fn drop(&mut self) {
        if self.down || !self.broker.is_up() {
            eprintln!(
                "{}: down at the end of the test, starting it again",
                self.broker.name
            );
            // Never a panic here: this may run while a failed test unwinds.
            if let Err(e) = self.bring_up() {
                eprintln!("{e}");
            }
        }
    }
}

/// Where the output of the stop and start commands goes (not to the test's own output: a
/// daemon that kept it open would hold a pipe reading it open).
fn log_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("eip-restart-{name}.log"))
}

/// Runs `command` (its own process group, so stopping the test does not stop the daemon it
/// starts), output appended to `log`, and waits at most `limit` for it to exit.
fn run(command: &[&str], limit: Duration, log: &std::path::Path) -> Result<(), String> {
    let (program, args) = command.split_first().ok_or("an empty command")?;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let _ = writeln!(out, "$ {}", command.join(" "));
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("spawning {program}: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => return Err(format!("{status} (see {})", log.display())),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {limit:?}, killed"));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

fn is_alive(pid: u32) -> bool {
    // A zombie is as good as gone: it holds no port and no file.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// The process listening on TCP `port` (IPv4 or IPv6), found through `/proc`.
fn listener_pid(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listening = *state == "0A";
            let on_port = local
                .rsplit(':')
                .next()
                .and_then(|hex| u16::from_str_radix(hex, 16).ok())
                == Some(port);
            if listening && on_port {
                inodes.push(format!("socket:[{inode}]"));
            }
        }
    }
    let processes = std::fs::read_dir("/proc").ok()?;
    for process in processes.flatten() {
        let Ok(pid) = process.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && inodes
                    .iter()
                    .any(|inode| target.as_os_str() == inode.as_str())
            {
                return Some(pid);
            }
        }
    }
    None
}

/// The start command of service `name` in the text of `.ci/run`: the words after
/// `up NAME HOST PORT` (double and single quotes understood, nothing else of the shell).
fn start_command(script: &str, name: &str) -> Option<Vec<String>> {
    script.lines().find_map(|line| {
        let words = shell_words(line.trim())?;
        match words.as_slice() {
            [up, service, _host, _port, command @ ..]
                if up == "up" && service == name && !command.is_empty() =>
            {
                Some(command.to_vec())
            }
            _ => None,
        }
    })
}

/// Splits a line into words as the shell would, for plain words and quotes; `None` for a line
/// with anything else (`$`, a backquote), which is not a command this reads.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '"' | '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        q if q == c => break,
                        '$' | '`' if c == '"' => return None,
                        other => w.push(other),
                    }
                }
            }
            '$' | '`' | '\\' => return None,
            // A comment.
            '#' if word.is_none() => break,
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    Some(words)
}

#[test]
fn the_start_commands_are_read_from_ci_run_as_the_shell_reads_them() {
    let script = "  up redis 127.0.0.1 6379 redis-server --save \"\" --bind 127.0.0.1 -::1\n\
                  up postgresql 127.0.0.1 5432 pg_ctlcluster \"$(ls /etc)\" main start\n";
    assert_eq!(
        start_command(script, "redis").unwrap(),
        ["redis-server", "--save", "", "--bind", "127.0.0.1", "-::1"]
    );
    assert_eq!(start_command(script, "postgresql"), None);
    for broker in [RABBITMQ, NATS, MOSQUITTO, REDIS] {
        let command = broker.start_command();
        assert!(!command.is_empty(), "{}", broker.name);
    }
}
