//! `eip run`: the flow on embedded defaults (in-memory channels, and the embedded durable store
//! for durable ones), fed from JSON lines.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use eip_core::message::Message;
use eip_dsl::compile::{
    ChannelCounters, Flow, FlowView, InputMessage, MessageView, Output, RunningFlow, StoreOptions,
};
use eip_dsl::control::RuntimeChanges;
use eip_dsl::control::reload::FlowFile;

use super::reload::Reloader;
use eip_dsl::plan::Plan;
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The flow file.
    flow: PathBuf,
    /// Messages to send into the flow, one JSON line each (`-` for standard input), in the
    /// format `eip route` reads. When it ends, the flow drains and eip exits (with status 3 if
    /// any line was refused). Without it, the flow runs until SIGINT or SIGTERM.
    #[arg(long, short)]
    input: Option<PathBuf>,
    /// Seconds between counters lines (0: only the final one).
    #[arg(long, default_value_t = 5.0)]
    stats_interval: f64,
    /// Seconds to wait, when stopping, for messages still moving through the flow; then what
    /// is still in progress or in a redelivery backoff is given back to its channel, and eip
    /// exits.
    #[arg(long, default_value_t = 10.0)]
    drain_timeout: f64,
    /// Do not print the messages that reach output channels.
    #[arg(long, short)]
    quiet: bool,
    /// Print `{"accepted": "<message id>"}` on standard output once each input message has
    /// been accepted (for a durable channel: once it is on disk). What a feeding program waits
    /// for before it forgets a message.
    #[arg(long)]
    receipts: bool,
    /// The durable store's data directory, where durable channels keep their messages.
    /// Default: the flow file's `store.path` (relative to the flow file), else ./eip-data.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Serves the management API (the Control Bus: the flow's state as JSON, health,
    /// Prometheus metrics) at this address, such as 127.0.0.1:9090; instead of the flow
    /// file's `admin.listen`. An address other than loopback needs a token in
    /// EIP_ADMIN_TOKEN (or the variable the flow's `admin.token` names).
    #[arg(long, value_name = "ADDR")]
    admin: Option<String>,
    /// Reloads the flow file whenever it changes on disk, as SIGHUP does: what changed is
    /// applied (new channels, routes, adapters, joins and bindings started; removed ones
    /// drained, then stopped; changed ones replaced); a file with problems, or one changing
    /// what needs a restart, is refused and the flow goes on unchanged.
    #[arg(long)]
    watch: bool,
}

/// The data directory when neither `--data-dir` nor the flow's `store.path` names one,
/// relative to the working directory.
const DEFAULT_DATA_DIR: &str = "eip-data";

/// How long `eip run` waits for the channels kept in brokers to connect before it gives up.
const BROKER_CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// How long past `--drain-timeout` stopping may take before eip exits without waiting more:
/// a bound whatever the flow is waiting for (stopping itself is bounded by the drain timeout;
/// this guards the process against a wait nobody foresaw).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The exit status when every input line was read but some were refused (not messages, or not
/// accepted by the flow), so a feeding program can tell.
const INPUT_REFUSED: u8 = 3;

pub fn run(args: RunArgs) -> ExitCode {
    let Some(plan) = super::load_flow(&args.flow) else {
        return ExitCode::FAILURE;
    };
    let store = match store_options(args.data_dir.as_deref(), &plan) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("error: can not resolve the data directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    if plan.has_durable_channels() {
        eprintln!("[eip] data directory: {}", store.data_dir.display());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: could not start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Inside the runtime: a channel kept in a broker connects in the background from the start.
    let compiled = {
        let _inside = runtime.enter();
        eip_dsl::compile::compile_with(&plan, &store)
    };
    let Some(flow) = super::compiled(compiled) else {
        return ExitCode::FAILURE;
    };
    for channel in &plan.channels {
        if let Some(broker) = &channel.broker {
            eprintln!(
                "[eip] channel {} kept in {}",
                channel.name,
                broker.place.describe()
            );
        }
    }
    let code = runtime.block_on(async {
        // Before anything flows: the joins and bindings added at runtime in an earlier run.
        let changes = match RuntimeChanges::open(flow.view()).await {
            Ok((changes, reapplied)) => {
                for change in &reapplied {
                    eprintln!("[eip] runtime {change}");
                }
                Arc::new(changes)
            }
            Err(e) => {
                eprintln!("error: the runtime changes kept in the store can not be read: {e}");
                return ExitCode::FAILURE;
            }
        };
        let file = match FlowFile::new(&args.flow, plan.clone()) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("error: {}", eip_core::log::Escaped(&e));
                return ExitCode::FAILURE;
            }
        };
        let drain = Duration::from_secs_f64(args.drain_timeout.max(0.0));
        let reloader = Reloader::new(file, changes.clone(), args.watch).drain_within(drain);
        let Ok(admin) = start_admin(&flow, &plan, args.admin.as_deref(), changes).await else {
            return ExitCode::FAILURE;
        };
        let kept = kept_dead_letters(&plan, admin.is_some());
        let code = run_flow(flow, args, reloader, &kept).await;
        stop_admin(admin).await;
        code
    });
    // A read of standard input may still be blocked in a thread of the runtime (the input
    // stays open after a signal): do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// The admin server `--admin` or the flow's `admin:` asks for, started (and announced);
/// `Err` once what stopped it is printed.
#[cfg(feature = "admin")]
async fn start_admin(
    flow: &Flow,
    plan: &Plan,
    flag: Option<&str>,
    changes: Arc<RuntimeChanges>,
) -> Result<Option<eip_dsl::admin::AdminServer>, ()> {
    use eip_dsl::admin::{AdminOptions, AdminServer};
    let lookup = |name: &str| std::env::var(name).ok();
    let failed = |e: eip_dsl::admin::AdminError| eprintln!("error: {e}");
    let Some(options) = AdminOptions::resolve(flag, plan.admin.as_ref(), lookup).map_err(failed)?
    else {
        return Ok(None);
    };
    let server = AdminServer::start(options, flow.view(), plan, changes)
        .await
        .map_err(failed)?;
    eprintln!("[eip] {}", server.describe());
    Ok(Some(server))
}

/// Without the admin server built in, asking for one is an error naming the feature.
#[cfg(not(feature = "admin"))]
async fn start_admin(
    _: &Flow,
    plan: &Plan,
    flag: Option<&str>,
    _: Arc<RuntimeChanges>,
) -> Result<Option<()>, ()> {
    if flag.is_none() && plan.admin.is_none() {
        return Ok(None);
    }
    eprintln!(
        "error: the admin server is not built into this eip: its cargo feature `admin` is off \
         (build eip with it: `cargo build -p eip-dsl --features admin`)"
    );
    Err(())
}

#[cfg(feature = "admin")]
async fn stop_admin(server: Option<eip_dsl::admin::AdminServer>) {
    if let Some(server) = server {
        server.shutdown(Duration::from_secs(1)).await;
    }
}

#[cfg(not(feature = "admin"))]
async fn stop_admin(_: Option<()>) {}

/// Where the durable store lives: `--data-dir` if given, else the flow's `store.path` (which
/// validation already joined to the flow file's directory), else [`DEFAULT_DATA_DIR`]; made
/// absolute against the working directory. The disk cap is the flow's `store.max-bytes`.
fn store_options(data_dir: Option<&Path>, plan: &Plan) -> std::io::Result<StoreOptions> {
    let dir = data_dir
        .or(plan.store.path.as_deref())
        .unwrap_or(Path::new(DEFAULT_DATA_DIR));
    Ok(StoreOptions {
        data_dir: std::path::absolute(dir)?,
        max_bytes: plan.store.max_bytes,
    })
}

/// The dead letter channels `eip run` keeps rather than prints: with the admin server on,
/// `dead-letters` and every channel a channel names as its `dead-letter:`, so that their
/// messages wait to be browsed, replayed or deleted. Without it, none (they are outputs).
fn kept_dead_letters(plan: &Plan, admin: bool) -> Vec<String> {
    if !admin {
        return Vec::new();
    }
    let mut kept = vec![eip_dsl::plan::DEAD_LETTERS.to_owned()];
    for named in plan.channels.iter().filter_map(|c| c.dead_letter.as_ref()) {
        if !kept.contains(named) {
            kept.push(named.clone());
        }
    }
    kept
}

async fn run_flow(flow: Flow, args: RunArgs, mut reloader: Reloader, kept: &[String]) -> ExitCode {
    let output: Output = if args.quiet {
        Arc::new(|_: &str, _: &Message| {})
    } else {
        Arc::new(|channel: &str, msg: &Message| println!("{}", output_line(channel, msg)))
    };
    let mut signals = match Signals::listen() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("error: can not listen for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let adapters = match flow.connect_adapters().await {
        Ok(adapters) => adapters,
        Err(e) => {
            eprintln!("error: {}", eip_core::log::Escaped(&e));
            return ExitCode::FAILURE;
        }
    };
    for line in adapters.describe() {
        eprintln!("[eip] {line}");
    }
    let mut running = flow.start_keeping(output, kept);
    for channel in running.kept() {
        eprintln!(
            "[eip] dead letters on {channel} are kept for the admin server (`eip dead-letters list`)"
        );
    }
    // The channels kept in brokers have their queues, bindings and consumers before anything
    // is sent: a subscription sees what is published after it is made. The flow waits on its
    // own channels' stores only.
    if let Err(late) = eip_core::channel::all_ready(flow.channels(), BROKER_CONNECT_LIMIT).await {
        eprintln!(
            "error: not connected within {BROKER_CONNECT_LIMIT:?}: {}",
            late.waiting.join("; ")
        );
        return ExitCode::FAILURE;
    }
    running.attach(adapters);
    let started = Instant::now();
    tracing::info!(
        channels = flow.channels().len(),
        routes = flow.routes().len(),
        "flow started"
    );
    let drain = Duration::from_secs_f64(args.drain_timeout.max(0.0));
    let mut tally = Tally::default();
    let stop = {
        let feeding = feed(&flow, args.input.as_ref(), args.receipts, &mut tally);
        let counters = print_counters_every(flow.view(), args.stats_interval, started);
        tokio::pin!(feeding, counters);
        loop {
            tokio::select! {
                reason = &mut feeding => break reason,
                name = signals.next() => match name {
                    HANGUP => reloader.reload(&mut running, name).await,
                    name => break Stop::Signal(name),
                },
                () = reloader.file_changed() => {
                    reloader.reload(&mut running, "the flow file changed").await;
                }
                () = &mut counters => break Stop::Signal("stats"),
            }
        }
    };
    if args.input.is_some() {
        eprintln!("[eip] {tally}");
    }
    let code = match stop {
        Stop::InputEnded => tally.exit_code(),
        Stop::Signal(name) => {
            eprintln!("[eip] {name}: draining");
            tally.exit_code()
        }
        Stop::Failed(error) => {
            eprintln!("error: {}", eip_core::log::Escaped(&error));
            ExitCode::FAILURE
        }
    };
    stop_flow(running, &mut signals, drain, started, code).await
}

/// Stops the flow (see [`finish`]) and exits with `code`, at most [`STOP_GRACE`] after the
/// drain timeout whatever the flow waits for; a second signal stops waiting at once.
async fn stop_flow(
    running: RunningFlow,
    signals: &mut Signals,
    drain: Duration,
    started: Instant,
    code: ExitCode,
) -> ExitCode {
    let finishing = tokio::time::timeout(drain + STOP_GRACE, finish(running, drain, started));
    tokio::select! {
        finished = finishing => {
            if finished.is_err() {
                eprintln!("[eip] not stopped {STOP_GRACE:?} after the drain timeout: exiting");
            }
            code
        }
        name = signals.stop_signal() => {
            eprintln!("[eip] {name} again: stopping without draining");
            ExitCode::from(130)
        }
    }
}

/// What became of the input lines (blank lines aside).
#[derive(Debug, Default)]
struct Tally {
    /// Lines read, blank ones not counted.
    lines: u64,
    /// Lines the flow accepted.
    accepted: u64,
    /// Lines that are not messages (not JSON, or not the input format).
    malformed: u64,
    /// Messages the flow refused (no such channel, the store full, the channel closed).
    refused: u64,
}

impl Tally {
    /// [`INPUT_REFUSED`] if any line was refused, else success.
    fn exit_code(&self) -> ExitCode {
        if self.malformed + self.refused > 0 {
            ExitCode::from(INPUT_REFUSED)
        } else {
            ExitCode::SUCCESS
        }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input: {} lines, {} accepted, {} refused ({} not messages, {} not accepted by the flow)",
            self.lines,
            self.accepted,
            self.malformed + self.refused,
            self.malformed,
            self.refused
        )
    }
}

/// Why the flow stops.
enum Stop {
    /// The input file ended.
    InputEnded,
    /// SIGINT or SIGTERM.
    Signal(&'static str),
    /// The input could not be read.
    Failed(String),
}

/// Sends every input line into the flow, waiting for room (backpressure), counting in `tally`
/// what became of each. Without an input, never completes.
async fn feed(flow: &Flow, input: Option<&PathBuf>, receipts: bool, tally: &mut Tally) -> Stop {
    let Some(path) = input else {
        return std::future::pending().await;
    };
    let reader: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if path.as_os_str() == "-" {
        Box::new(tokio::io::stdin())
    } else {
        match tokio::fs::File::open(path).await {
            Ok(file) => Box::new(file),
            Err(e) => return Stop::Failed(format!("could not read {}: {e}", path.display())),
        }
    };
    let mut lines = BufReader::new(reader).lines();
    let mut n = 0usize;
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return Stop::InputEnded,
            Err(e) => return Stop::Failed(format!("reading line {}: {e}", n + 1)),
        };
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        tally.lines += 1;
        let input = match InputMessage::parse(&line) {
            Ok(input) => input,
            Err(e) => {
                tracing::warn!(line = n, error = %e, "input line skipped: not a message");
                tally.malformed += 1;
                refusal_receipt(receipts, n, &e);
                continue;
            }
        };
        let id = input.message.id();
        match flow.bus().publish(&input.to, input.message).await {
            Ok(_) => {
                tally.accepted += 1;
                if receipts {
                    println!("{}", serde_json::json!({"accepted": id.to_string()}));
                }
            }
            Err(e) => {
                tracing::warn!(line = n, error = %e, "input message not accepted");
                tally.refused += 1;
                refusal_receipt(receipts, n, &e);
            }
        }
    }
}

/// With `--receipts`, says on standard output that input line `line` was refused, and why.
fn refusal_receipt(receipts: bool, line: usize, error: &dyn std::fmt::Display) {
    if receipts {
        println!(
            "{}",
            serde_json::json!({"refused": line, "error": error.to_string()})
        );
    }
}

/// SIGINT and SIGTERM, listened for from the moment this is made (a signal arriving while
/// eip is busy elsewhere is kept for the next [`next`](Self::next)).
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    /// Listened to so that it never stops the process: it reloads the flow file.
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

/// The name [`Signals::next`] gives SIGHUP.
const HANGUP: &str = "SIGHUP";

impl Signals {
    fn listen() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
                hangup: signal(SignalKind::hangup())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// The next signal that stops the process (SIGHUP, while stopping, is passed over).
    async fn stop_signal(&mut self) -> &'static str {
        loop {
            match self.next().await {
                HANGUP => eprintln!("[eip] {HANGUP} while stopping: passed over"),
                name => return name,
            }
        }
    }

    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
                _ = self.hangup.recv() => HANGUP,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "interrupt"
        }
    }
}

/// Prints the counters every `seconds` (never, for 0); never completes.
async fn print_counters_every(view: FlowView, seconds: f64, started: Instant) {
    if seconds <= 0.0 || !seconds.is_finite() {
        return std::future::pending().await;
    }
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(seconds));
    ticks.tick().await;
    loop {
        ticks.tick().await;
        print_counters(view.counters(), started);
    }
}

fn print_counters(counters: Vec<ChannelCounters>, started: Instant) {
    eprintln!("[eip] counters at {:.1}s", started.elapsed().as_secs_f64());
    for line in counters {
        eprintln!("  {line}");
    }
}

/// Stops the inbound adapters and drains, both within `drain`; then stops every consumer at
/// once (what is still in progress is abandoned, given back to its channel), prints the final
/// counters and what was left.
async fn finish(mut running: RunningFlow, drain: Duration, started: Instant) {
    if !running.drain(drain).await {
        eprintln!(
            "[eip] still busy after {:.1}s of draining: stopping anyway",
            drain.as_secs_f64()
        );
    }
    print_counters(running.counters(), started);
    let durable = running.durable_channels();
    let left = running.shut_down(Duration::ZERO).await;
    if left.given_back.given_back > 0 {
        eprintln!(
            "[eip] {} messages left in backoff: given back to their channels, unacknowledged",
            left.given_back.given_back
        );
    }
    if left.given_back.abandoned > 0 {
        eprintln!(
            "[eip] {} messages in processing abandoned: given back to their channels, unacknowledged",
            left.given_back.abandoned
        );
    }
    for (channel, depth) in left.channels {
        if durable.contains(&channel) {
            eprintln!("[eip] {channel}: {depth} messages left on disk, for the next run");
        } else {
            eprintln!("[eip] {channel}: {depth} messages left in memory, lost");
        }
    }
    eprintln!("[eip] stopped");
}

/// A message that reached an output channel, as one JSON line.
fn output_line(channel: &str, msg: &Message) -> String {
    let view = MessageView::of(msg);
    serde_json::json!({
        "channel": channel,
        "id": msg.id().to_string(),
        "headers": view.headers,
        "payload": view.payload,
    })
    .to_string()
}
