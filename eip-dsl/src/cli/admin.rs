//! `eip channels`, `eip joins`, `eip bindings`, `eip purge` (and, in
//! [`dead_letters`](super::dead_letters), `eip messages` and `eip dead-letters`): a running
//! flow's admin server asked from the command line, as `rabbitmqctl` asks a broker. A table for people, `--json`
//! for scripts (the server's answer as it came). The token, where the server wants one, is
//! read from `EIP_ADMIN_TOKEN`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// Where the admin server is, and how to print.
#[derive(Debug, Args)]
pub struct Server {
    /// The admin server's URL.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:9090",
        global = true
    )]
    admin: String,
    /// Print the server's JSON answer instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum JoinsCommand {
    /// Lists every join of the running flow.
    List,
    /// Adds a join to the running flow (checked as a flow file's join).
    Add {
        /// The publish-subscribe channel it leaves.
        from: String,
        /// The channel or queue it brings messages to.
        to: String,
        /// Only messages this predicate selects cross.
        #[arg(long)]
        filter: Option<String>,
        /// How many further joins a message may cross (default 10).
        #[arg(long)]
        hops: Option<i64>,
        /// An archival join (to a queue, keeping every copy).
        #[arg(long)]
        archival: bool,
    },
    /// Removes a join added at runtime, by its id.
    Remove {
        /// The id `eip joins add` printed.
        id: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum BindingsCommand {
    /// Lists every exchange with its bindings.
    List,
    /// Binds a topic pattern to channels on an exchange of the running flow.
    Add {
        /// The exchange.
        exchange: String,
        /// The topic pattern (`stock.*.nyse`); without it, every subject.
        #[arg(long)]
        key: Option<String>,
        /// The channels it sends to.
        #[arg(long, required = true, num_args = 1..)]
        to: Vec<String>,
    },
    /// Removes a binding added at runtime, by its id.
    Remove {
        /// The id `eip bindings add` printed.
        id: u64,
    },
}

/// `eip channels`.
pub fn channels(server: Server) -> ExitCode {
    let table = |answer: &Value| {
        let mut rows = vec![
            [
                "channel", "kind", "store", "in", "out", "waiting", "dead", "invalid",
            ]
            .map(str::to_owned),
        ];
        for c in answer.as_array().into_iter().flatten() {
            let n = |k: &str| c["counters"][k].to_string();
            rows.push([
                text(&c["name"]),
                text(&c["kind"]),
                text(&c["store"]),
                n("in"),
                n("out"),
                n("waiting"),
                n("dead_letters"),
                n("invalid"),
            ]);
        }
        columns(&rows)
    };
    ask(&server, reqwest::Method::GET, "/api/channels", None, table)
}

/// `eip joins ...`.
pub fn joins(server: Server, command: JoinsCommand) -> ExitCode {
    match command {
        JoinsCommand::List => ask(&server, reqwest::Method::GET, "/api/joins", None, |all| {
            let mut rows = vec![["from", "to", "hops", "archival", "filter"].map(str::to_owned)];
            for j in all.as_array().into_iter().flatten() {
                rows.push([
                    text(&j["from"]),
                    text(&j["to"]),
                    j["hops"].to_string(),
                    j["archival"].to_string(),
                    text(&j["filter"]),
                ]);
            }
            columns(&rows)
        }),
        JoinsCommand::Add {
            from,
            to,
            filter,
            hops,
            archival,
        } => {
            let mut body = json!({"from": from, "to": to, "archival": archival});
            if let Some(filter) = filter {
                body["filter"] = json!(filter);
            }
            if let Some(hops) = hops {
                body["hops"] = json!(hops);
            }
            let made = |j: &Value| {
                format!(
                    "join {} added: {} -> {}\n",
                    j["id"],
                    text(&j["from"]),
                    text(&j["to"])
                )
            };
            ask(
                &server,
                reqwest::Method::POST,
                "/api/joins",
                Some(body),
                made,
            )
        }
        JoinsCommand::Remove { id } => {
            let path = format!("/api/joins/{id}");
            let gone = |j: &Value| {
                format!(
                    "join {id} removed: {} -> {}\n",
                    text(&j["from"]),
                    text(&j["to"])
                )
            };
            ask(&server, reqwest::Method::DELETE, &path, None, gone)
        }
    }
}

/// `eip bindings ...`.
pub fn bindings(server: Server, command: BindingsCommand) -> ExitCode {
    match command {
        BindingsCommand::List => ask(
            &server,
            reqwest::Method::GET,
            "/api/exchanges",
            None,
            |all| {
                let mut rows = vec![["exchange", "binding", "key", "to"].map(str::to_owned)];
                for x in all.as_array().into_iter().flatten() {
                    for b in x["bindings"].as_array().into_iter().flatten() {
                        rows.push([
                            text(&x["name"]),
                            text(&b["id"]),
                            text(&b["key"]),
                            list(&b["to"]),
                        ]);
                    }
                }
                columns(&rows)
            },
        ),
        BindingsCommand::Add { exchange, key, to } => {
            let body = json!({"exchange": exchange, "key": key, "to": to});
            let made = |b: &Value| {
                format!(
                    "binding {} added to {}: {} -> {}\n",
                    b["id"],
                    text(&b["exchange"]),
                    text(&b["key"]),
                    list(&b["to"])
                )
            };
            ask(
                &server,
                reqwest::Method::POST,
                "/api/bindings",
                Some(body),
                made,
            )
        }
        BindingsCommand::Remove { id } => {
            let path = format!("/api/bindings/{id}");
            let gone = |b: &Value| format!("binding {id} removed from {}\n", text(&b["exchange"]));
            ask(&server, reqwest::Method::DELETE, &path, None, gone)
        }
    }
}

/// `eip purge CHANNEL [--when PREDICATE]`.
pub fn purge(server: Server, channel: String, when: Option<String>) -> ExitCode {
    let path = format!("/api/channels/{channel}/purge");
    let body = when.map(|when| json!({"when": when}));
    let said = |p: &Value| {
        format!(
            "{}: {} waiting messages purged\n",
            text(&p["channel"]),
            p["purged"]
        )
    };
    ask(&server, reqwest::Method::POST, &path, body, said)
}

/// Asks the server, then prints its answer: as it came with `--json`, else through `show`.
/// A refusal prints the server's `error` (and the closest name it suggests) and fails.
pub(super) fn ask(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    show: impl Fn(&Value) -> String,
) -> ExitCode {
    ask_and_judge(server, method, path, body, |answer| (show(answer), true))
}

/// [`ask`], where `show` also says whether the answer is a success (a replay with failures
/// is not).
pub(super) fn ask_and_judge(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    show: impl Fn(&Value) -> (String, bool),
) -> ExitCode {
    let url = format!("{}{path}", server.admin.trim_end_matches('/'));
    let answered = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(request(method, &url, body)),
        Err(e) => Err(format!("could not start the runtime: {e}")),
    };
    let (status, answer) = match answered {
        Ok(answered) => answered,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !(200..300).contains(&status) {
        let error = answer["error"]
            .as_str()
            .map_or_else(|| answer.to_string(), str::to_owned);
        eprintln!("error: {status}: {}", eip_core::log::Escaped(&error));
        if let Some(closest) = answer["closest"].as_str() {
            eprintln!("did you mean `{}`?", eip_core::log::Escaped(&closest));
        }
        return ExitCode::FAILURE;
    }
    let (shown, success) = show(&answer);
    if server.json {
        println!("{answer}");
    } else {
        print!("{shown}");
    }
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn request(
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<(u16, Value), String> {
    let mut request = reqwest::Client::new().request(method, url);
    if let Ok(token) = std::env::var(eip_dsl::admin::DEFAULT_TOKEN_ENV) {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("no answer from the admin server at {url}: {e}"))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| format!("the admin server's answer was cut off: {e}"))?;
    let answer = serde_json::from_str(&text).map_err(|_| {
        format!("the admin server answered {status} with something not JSON: {text}")
    })?;
    Ok((status, answer))
}

/// A JSON value as a table cell: a string without its quotes, `-` for null.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// A list of names as a cell.
fn list(value: &Value) -> String {
    let names: Vec<String> = value.as_array().into_iter().flatten().map(text).collect();
    names.join(", ")
}

/// Rows as left-aligned columns two spaces apart.
pub(super) fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
