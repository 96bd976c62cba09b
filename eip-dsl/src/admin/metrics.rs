//! `/metrics`: the running flow's counters in Prometheus' text exposition format (0.0.4).
//!
//! Read at each scrape from the same counters the API shows; nothing is counted twice and
//! nothing is kept between scrapes. The families:
//!
//! | family | type | labels |
//! |---|---|---|
//! | `eip_channel_in_total`, `eip_channel_out_total`, `eip_channel_dead_letters_total`, `eip_channel_invalid_total` | counter | `channel` |
//! | `eip_channel_waiting`, `eip_channel_in_flight` | gauge | `channel` |
//! | `eip_route_handled_total`, `eip_route_failed_total` | counter | `route` |
//! | `eip_step_in_total`, `eip_step_out_total`, `eip_step_failed_total` | counter | `route`, `step`, `kind` |
//! | `eip_adapter_connected` | gauge (0 or 1) | `adapter`, `kind`, `section` |
//! | `eip_bridge_reconnects_total` | counter (bridges) | `adapter`, `kind`, `section` |
//! | `eip_store_commits_total` | counter (with durable channels) | |
//! | `eip_store_commit_seconds` | histogram (with durable channels) | `le` |
//! | `eip_flow_ready` | gauge (0 or 1) | |
//! | `process_resident_memory_bytes` | gauge (Linux) | |
//!
//! The format is written here rather than through a client library: every value already
//! lives in an atomic of the flow, so a registry of its own would only copy them; what the
//! format asks (one `# HELP` and `# TYPE` per family, its samples together, label values
//! escaped) is below, and `promtool check metrics` checks the output in the tests.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::api::Admin;
use super::model::Counters;
use crate::compile::{FlowView, RouteStats, StepStats};

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) async fn serve(State(admin): State<Arc<Admin>>) -> impl IntoResponse {
    let ready = admin.view.waiting_for().await.is_empty();
    let text = render(&admin.view, ready);
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text)
}

/// The metrics of `view`'s flow, `ready` or not, in the text format.
pub fn render(view: &FlowView, ready: bool) -> String {
    let mut out = Exposition::default();
    channels(&mut out, view);
    routes(&mut out, view);
    steps(&mut out, view);
    adapters(&mut out, view);
    store(&mut out, view);
    out.family(
        "eip_flow_ready",
        "gauge",
        "Whether the flow is ready (1) or waits for something (0).",
    );
    out.sample("eip_flow_ready", &[], u64::from(ready));
    if let Some(bytes) = resident_memory() {
        let name = "process_resident_memory_bytes";
        out.family(name, "gauge", "Resident memory of the process in bytes.");
        out.sample(name, &[], bytes);
    }
    out.text
}

/// A family of samples, one per channel or route: its name, type and help, and how its
/// value is read from a `T`.
struct Family<T> {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&T) -> u64,
}

const CHANNEL_FAMILIES: [Family<Counters>; 6] = [
    Family {
        name: "eip_channel_in_total",
        kind: "counter",
        help: "Messages that came into the channel.",
        value: |c| c.received,
    },
    Family {
        name: "eip_channel_out_total",
        kind: "counter",
        help: "Deliveries of the channel acknowledged.",
        value: |c| c.out,
    },
    Family {
        name: "eip_channel_dead_letters_total",
        kind: "counter",
        help: "Messages dead-lettered from the channel.",
        value: |c| c.dead_letters,
    },
    Family {
        name: "eip_channel_invalid_total",
        kind: "counter",
        help: "Messages that did not fit the channel's datatype.",
        value: |c| c.invalid,
    },
    Family {
        name: "eip_channel_waiting",
        kind: "gauge",
        help: "Messages waiting on the channel.",
        value: |c| c.waiting,
    },
    Family {
        name: "eip_channel_in_flight",
        kind: "gauge",
        help: "Messages of the channel delivered and not yet settled.",
        value: |c| c.in_flight,
    },
];

const ROUTE_FAMILIES: [Family<RouteStats>; 2] = [
    Family {
        name: "eip_route_handled_total",
        kind: "counter",
        help: "Messages the route carried out to the end.",
        value: |s| s.handled,
    },
    Family {
        name: "eip_route_failed_total",
        kind: "counter",
        help: "Deliveries the route failed on.",
        value: |s| s.failed,
    },
];

/// Each family of `families` with a sample per item of `items`, labelled `label`.
fn families<T>(out: &mut Exposition, families: &[Family<T>], label: &str, items: &[(&str, T)]) {
    for family in families {
        out.family(family.name, family.kind, family.help);
        for (name, item) in items {
            out.sample(family.name, &[(label, name)], (family.value)(item));
        }
    }
}

fn channels(out: &mut Exposition, view: &FlowView) {
    let counters = view.counters();
    let items: Vec<(&str, Counters)> = counters
        .iter()
        .map(|c| (c.channel.as_str(), Counters::from(c)))
        .collect();
    families(out, &CHANNEL_FAMILIES, "channel", &items);
}

fn routes(out: &mut Exposition, view: &FlowView) {
    let routes = view.routes();
    let items: Vec<(&str, RouteStats)> = routes.iter().map(|r| (r.name(), r.stats())).collect();
    families(out, &ROUTE_FAMILIES, "route", &items);
}

const STEP_FAMILIES: [Family<StepStats>; 3] = [
    Family {
        name: "eip_step_in_total",
        kind: "counter",
        help: "Messages that went into the route step.",
        value: |s| s.received,
    },
    Family {
        name: "eip_step_out_total",
        kind: "counter",
        help: "Messages the route step passed on.",
        value: |s| s.sent,
    },
    Family {
        name: "eip_step_failed_total",
        kind: "counter",
        help: "Calls of the route step that failed.",
        value: |s| s.failed,
    },
];

/// Each step of each route, labelled with the route, its number (from 1) and its kind.
fn steps(out: &mut Exposition, view: &FlowView) {
    let routes = view.routes();
    let mut items = Vec::new();
    for route in routes.iter() {
        let kinds = route.step_kinds().iter();
        for (number, (kind, stats)) in kinds.zip(route.step_stats()).enumerate() {
            items.push((route.name(), (number + 1).to_string(), *kind, stats));
        }
    }
    if items.is_empty() {
        return;
    }
    for family in &STEP_FAMILIES {
        out.family(family.name, family.kind, family.help);
        for (route, number, kind, stats) in &items {
            let labels = [("route", *route), ("step", number.as_str()), ("kind", kind)];
            out.sample(family.name, &labels, (family.value)(stats));
        }
    }
}

fn adapters(out: &mut Exposition, view: &FlowView) {
    let plans = view.adapters();
    let adapters: Vec<_> = plans.iter().map(|a| (a, view.health(&a.name))).collect();
    let labels = |a: &'_ crate::plan::adapter::AdapterPlan| {
        [
            ("adapter", a.name.clone()),
            ("kind", a.kind().as_str().to_owned()),
            ("section", a.noun().to_owned()),
        ]
    };
    let name = "eip_adapter_connected";
    let help = "Whether the adapter or bridge is connected (1) or not (0).";
    out.family(name, "gauge", help);
    for (adapter, health) in &adapters {
        let connected = match health {
            Some(health) => health.connected,
            None => view.connected(&adapter.name).is_some(),
        };
        let labels = labels(adapter);
        let labels = labels.each_ref().map(|(k, v)| (*k, v.as_str()));
        out.sample(name, &labels, u64::from(connected));
    }
    if adapters.iter().all(|(_, health)| health.is_none()) {
        return;
    }
    let name = "eip_bridge_reconnects_total";
    let help =
        "Times the bridge connected again after losing its connection or failing to make one.";
    out.family(name, "counter", help);
    for (adapter, health) in &adapters {
        if let Some(health) = health {
            let labels = labels(adapter);
            let labels = labels.each_ref().map(|(k, v)| (*k, v.as_str()));
            out.sample(name, &labels, health.reconnects);
        }
    }
}

/// The durable store's commits and their latency, when the flow has durable channels.
fn store(out: &mut Exposition, view: &FlowView) {
    let Some(store) = view.durable_stats() else {
        return;
    };
    let help = "Transactions the durable store committed.";
    out.family("eip_store_commits_total", "counter", help);
    out.sample("eip_store_commits_total", &[], store.commits);
    let help = "How long the durable store's commits took, fsync included.";
    out.family("eip_store_commit_seconds", "histogram", help);
    let bucket = "eip_store_commit_seconds_bucket";
    for (bound, count) in &store.commit_buckets {
        out.sample(bucket, &[("le", &bound.to_string())], count);
    }
    out.sample(bucket, &[("le", "+Inf")], store.commit_count);
    out.sample("eip_store_commit_seconds_sum", &[], store.commit_seconds);
    out.sample("eip_store_commit_seconds_count", &[], store.commit_count);
}

/// The text being written.
#[derive(Debug, Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts the family `name`: its help and type.
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape(help, false));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample of the family just started.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape(value, true));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// `text` escaped for a help line (backslash, line feed) or a label value (and `"`).
fn escape(text: &str, label: bool) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\\', '\n', '"']) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if label => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.into()
}

/// The process's resident memory in bytes, from `/proc/self/statm` (its second field, in
/// pages); `None` where there is no such file.
fn resident_memory() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page_size).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_help_are_escaped() {
        assert_eq!(escape("plain", true), "plain");
        assert_eq!(escape("a\"b\\c\nd", true), "a\\\"b\\\\c\\nd");
        assert_eq!(escape("say \"x\"\n", false), "say \"x\"\\n");
    }

    #[test]
    fn samples_carry_their_labels() {
        let mut out = Exposition::default();
        out.family("eip_x_total", "counter", "X.");
        out.sample("eip_x_total", &[("channel", "a\"b"), ("kind", "k")], 3);
        out.sample("eip_x_total", &[], 4);
        assert_eq!(
            out.text,
            "# HELP eip_x_total X.\n# TYPE eip_x_total counter\n\
             eip_x_total{channel=\"a\\\"b\",kind=\"k\"} 3\neip_x_total 4\n"
        );
    }

    #[test]
    fn resident_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_memory().is_some_and(|b| b > 0));
        }
    }
}
