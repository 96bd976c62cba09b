//! `eip messages CHANNEL` and `eip dead-letters list|replay|delete`: the messages waiting on a
//! channel of a running flow, and its dead letters, from its admin server (see
//! [`admin`](super::admin) for `--admin`, `--json` and the token). A table for people:
//! `list` shows where and why each dead letter died; `replay` prints each one replayed and
//! each one not (and exits with status 1 if any was not); `delete` how many went.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::admin::{Server, ask, ask_and_judge, columns, text};

#[derive(Debug, Subcommand)]
pub enum DeadLettersCommand {
    /// Lists the dead letters waiting, with where and why each died.
    List {
        /// Only those this predicate selects (the death record reads as the headers
        /// `death-channel`, `death-reason`, `death-error`, `death-count`).
        #[arg(long)]
        when: Option<String>,
        #[command(flatten)]
        page: Page,
    },
    /// Sends dead letters back to the channel each died on, keeping their ids.
    Replay {
        #[command(flatten)]
        which: Which,
    },
    /// Deletes dead letters for good.
    Delete {
        #[command(flatten)]
        which: Which,
    },
}

/// Which dead letters: ids, `--when`, or `--all`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Which {
    /// The dead letters' ids (as `eip dead-letters list` shows them).
    ids: Vec<String>,
    /// Those this predicate selects.
    #[arg(long)]
    when: Option<String>,
    /// Every dead letter waiting.
    #[arg(long)]
    all: bool,
}

/// Which page of messages.
#[derive(Debug, Args)]
pub struct Page {
    /// How many to pass over first.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// The most to show (the server shows at most 1000).
    #[arg(long, default_value_t = 50)]
    limit: usize,
}

/// `eip dead-letters ...`; `channel` another dead letter channel than `dead-letters`.
pub fn dead_letters(
    server: Server,
    channel: Option<String>,
    command: DeadLettersCommand,
) -> ExitCode {
    match command {
        DeadLettersCommand::List { when, page } => {
            let mut query = vec![
                ("offset", page.offset.to_string()),
                ("limit", page.limit.to_string()),
            ];
            query.extend(when.map(|w| ("when", w)));
            query.extend(channel.map(|c| ("channel", c)));
            let path = format!("/api/dead-letters?{}", encode_query(&query));
            ask(&server, reqwest::Method::GET, &path, None, |page| {
                let mut rows = vec![
                    ["id", "died on", "reason", "count", "error", "payload"].map(str::to_owned),
                ];
                for m in page["messages"].as_array().into_iter().flatten() {
                    let death = &m["death"];
                    rows.push([
                        text(&m["id"]),
                        text(&death["channel"]),
                        text(&death["reason"]),
                        text(&death["count"]),
                        cut(&text(&death["error"])),
                        cut(&text(&m["payload"])),
                    ]);
                }
                let shown = rows.len() - 1;
                format!(
                    "{}: {} dead letters{}\n{}",
                    text(&page["channel"]),
                    page["total"],
                    showing(page, shown),
                    columns(&rows)
                )
            })
        }
        DeadLettersCommand::Replay { which } => {
            let body = selection(which, channel);
            ask_and_judge(
                &server,
                reqwest::Method::POST,
                "/api/dead-letters/replay",
                Some(body),
                |report| {
                    let mut out = String::new();
                    let replayed = report["replayed"].as_array().map_or(&[][..], Vec::as_slice);
                    let failed = report["failed"].as_array().map_or(&[][..], Vec::as_slice);
                    for r in replayed {
                        out.push_str(&format!(
                            "replayed {} to {}",
                            text(&r["id"]),
                            text(&r["channel"])
                        ));
                        if let Some(reason) = r["invalid"].as_str() {
                            out.push_str(&format!(" (invalid there: {reason})"));
                        }
                        out.push('\n');
                    }
                    for f in failed {
                        out.push_str(&format!(
                            "not replayed {}: {}\n",
                            text(&f["id"]),
                            text(&f["reason"])
                        ));
                    }
                    out.push_str(&format!(
                        "{} replayed, {} failed\n",
                        replayed.len(),
                        failed.len()
                    ));
                    (out, failed.is_empty())
                },
            )
        }
        DeadLettersCommand::Delete { which } => {
            let body = selection(which, channel);
            let said = |d: &Value| format!("{} dead letters deleted\n", d["deleted"]);
            ask(
                &server,
                reqwest::Method::POST,
                "/api/dead-letters/delete",
                Some(body),
                said,
            )
        }
    }
}

/// The body of a replay or a deletion.
fn selection(which: Which, channel: Option<String>) -> Value {
    let mut body = if which.all {
        json!({"all": true})
    } else if let Some(when) = which.when {
        json!({"when": when})
    } else {
        json!({"ids": which.ids})
    };
    if let Some(channel) = channel {
        body["channel"] = json!(channel);
    }
    body
}

/// `eip messages CHANNEL`: what waits on a channel, without taking it.
pub fn messages(server: Server, channel: String, page: Page) -> ExitCode {
    let query = [
        ("offset", page.offset.to_string()),
        ("limit", page.limit.to_string()),
    ];
    let path = format!(
        "/api/channels/{}/messages?{}",
        encode(&channel),
        encode_query(&query)
    );
    ask(&server, reqwest::Method::GET, &path, None, |page| {
        let table = |messages: &Value| {
            let mut rows = vec![["id", "headers", "payload"].map(str::to_owned)];
            for m in messages.as_array().into_iter().flatten() {
                rows.push([
                    text(&m["id"]),
                    cut(&m["headers"].to_string()),
                    cut(&text(&m["payload"])),
                ]);
            }
            let shown = rows.len() - 1;
            (columns(&rows), shown)
        };
        let name = text(&page["channel"]);
        if page["kind"] == "publish-subscribe" {
            let mut out = String::new();
            for sub in page["subscriptions"].as_array().into_iter().flatten() {
                let (rows, shown) = table(&sub["messages"]);
                let who = sub["name"].as_str().unwrap_or("(a subscriber's own)");
                out.push_str(&format!(
                    "{name}, subscription {who}: {} waiting{}\n{rows}",
                    sub["total"],
                    showing(sub, shown)
                ));
            }
            if out.is_empty() {
                out = format!("{name}: no subscriptions\n");
            }
            out
        } else {
            let (rows, shown) = table(&page["messages"]);
            format!(
                "{name}: {} waiting{}\n{rows}",
                page["total"],
                showing(page, shown)
            )
        }
    })
}

/// `, showing 3 from 10` when a page shows less than all.
fn showing(page: &Value, shown: usize) -> String {
    let total = page["total"].as_u64().unwrap_or(0);
    if shown as u64 == total {
        return String::new();
    }
    let offset = page["offset"].as_u64().unwrap_or(0);
    if shown == 0 {
        return format!(", none shown from {offset}");
    }
    format!(", showing {shown} from {offset}")
}

/// A cell cut to 40 characters.
fn cut(cell: &str) -> String {
    const WIDTH: usize = 40;
    if cell.chars().count() <= WIDTH {
        return cell.to_owned();
    }
    let mut cut: String = cell.chars().take(WIDTH - 1).collect();
    cut.push('…');
    cut
}

/// `key=value&...`, each percent-encoded.
fn encode_query(pairs: &[(&str, String)]) -> String {
    let pairs: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    pairs.join("&")
}

/// `text` percent-encoded for a URL's path segment or query: every byte but the unreserved.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
