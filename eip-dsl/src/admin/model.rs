//! What the admin API answers: one serde struct per JSON object, as the OpenAPI document
//! (`/api/openapi.json`) describes it. Every field is always present (`null` where there is
//! nothing to say), so a client can rely on the document's `required` lists.

use std::time::SystemTime;

use eip_core::channel::{Channel, ChannelKind};
use serde::Serialize;

use crate::compile::{
    ChannelCounters, ChannelStore, FlowView, LastError, Route, RouteStats, StepStats,
};
use crate::plan::adapter::AdapterPlan;
use crate::plan::{ActionPlan, Plan, RecipientsPlan, TargetRef};
use eip_adapters::health::HealthReport;

/// A refusal or a failure: what was wrong, and for an unknown name the closest known one.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody {
    /// What was wrong.
    pub error: String,
    /// The closest known name, for an unknown one that looks like a typo.
    pub closest: Option<String>,
}

impl ErrorBody {
    /// A refusal saying `error`.
    pub fn new(error: impl Into<String>) -> ErrorBody {
        ErrorBody {
            error: error.into(),
            closest: None,
        }
    }
}

/// `GET /api/flow`: the whole running flow.
#[derive(Debug, Clone, Serialize)]
pub struct FlowInfo {
    /// Every channel, in the order declared.
    pub channels: Vec<ChannelInfo>,
    /// Every route, in the order declared.
    pub routes: Vec<RouteInfo>,
    /// Every join, by source channel.
    pub joins: Vec<JoinInfo>,
    /// Every exchange, by name.
    pub exchanges: Vec<ExchangeInfo>,
    /// Every adapter and bridge, in the order declared.
    pub adapters: Vec<AdapterInfo>,
    /// The embedded durable store's counters, when the flow has durable channels.
    pub store: Option<StoreInfo>,
    /// Readiness, as `/health/ready` answers.
    pub health: ReadyInfo,
}

/// A channel.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelInfo {
    /// Its name.
    pub name: String,
    /// `point-to-point` or `publish-subscribe`.
    pub kind: &'static str,
    /// Where it keeps its messages: `memory`, `durable` or `broker`.
    pub store: &'static str,
    /// For a channel kept in a broker, which (`rabbitmq queue orders`).
    pub broker: Option<String>,
    /// Whether it was deleted (it takes nothing more).
    pub closed: bool,
    /// Its counters since the flow started.
    pub counters: Counters,
    /// Messages a second over the last sampling interval.
    pub rates: Rates,
}

/// A channel's counters.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Counters {
    /// Messages that came in: stored, or sent on to the invalid message channel.
    #[serde(rename = "in")]
    pub received: u64,
    /// Deliveries acknowledged.
    pub out: u64,
    /// Messages waiting to be delivered.
    pub waiting: u64,
    /// Messages delivered and not yet settled.
    pub in_flight: u64,
    /// Messages dead-lettered from it (those of the routes consuming it included).
    pub dead_letters: u64,
    /// Messages that did not fit its datatype.
    pub invalid: u64,
    /// Deliveries made.
    pub delivered: u64,
    /// Deliveries put back (refused, or dropped without settling).
    pub requeued: u64,
    /// Messages a join had already brought (loop detection).
    pub duplicates: u64,
    /// Messages lost for want of a dead letter channel.
    pub discarded: u64,
}

impl From<&ChannelCounters> for Counters {
    fn from(c: &ChannelCounters) -> Counters {
        let s = &c.stats;
        Counters {
            received: s.accepted + s.invalid,
            out: s.acked,
            waiting: s.depth as u64,
            in_flight: s.in_flight as u64,
            dead_letters: s.dead_lettered,
            invalid: s.invalid,
            delivered: s.delivered,
            requeued: s.requeued,
            duplicates: s.duplicates,
            discarded: s.discarded,
        }
    }
}

/// A channel's rates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rates {
    /// Messages in a second.
    pub in_per_second: f64,
    /// Messages out (acknowledged) a second.
    pub out_per_second: f64,
    /// Over how many seconds (0 before the second sample).
    pub interval_seconds: f64,
}

impl ChannelInfo {
    /// The channel `channel`, kept in `store`, with its `counters` and `rates`.
    pub(super) fn of(
        channel: &Channel,
        store: &ChannelStore,
        counters: &ChannelCounters,
        rates: Rates,
    ) -> ChannelInfo {
        let (store, broker) = match store {
            ChannelStore::Memory => ("memory", None),
            ChannelStore::Durable => ("durable", None),
            ChannelStore::Broker(place) => ("broker", Some(place.clone())),
        };
        ChannelInfo {
            name: channel.name().to_owned(),
            kind: kind_name(channel.kind()),
            store,
            broker,
            closed: channel.is_closed(),
            counters: Counters::from(counters),
            rates,
        }
    }
}

/// A channel kind's name in a flow file.
pub(super) fn kind_name(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::PointToPoint => "point-to-point",
        ChannelKind::PublishSubscribe => "publish-subscribe",
    }
}

/// A route.
#[derive(Debug, Clone, Serialize)]
pub struct RouteInfo {
    /// Its name.
    pub name: String,
    /// The channel it consumes.
    pub from: String,
    /// How many of its messages are processed at once.
    pub concurrency: u64,
    /// Its steps, in order.
    pub steps: Vec<StepInfo>,
    /// Where the messages go.
    pub action: ActionInfo,
    /// Its `on-error:` channel.
    pub on_error: Option<String>,
    /// Its counters since the flow started.
    pub counters: RouteStats,
    /// Its last failure.
    pub last_error: Option<LastErrorInfo>,
    /// Whether it is paused (`POST /api/routes/{name}/pause`): it takes nothing new from its
    /// channel, whose messages wait.
    pub paused: bool,
}

/// A route step.
#[derive(Debug, Clone, Serialize)]
pub struct StepInfo {
    /// Its kind (`filter`, `transform`, ...).
    pub kind: String,
    /// The step in a few words (`filter $.total > 0`).
    pub description: String,
    /// Its `on-error:` channel.
    pub on_error: Option<String>,
    /// What it did so far: messages in, messages passed on, failed calls.
    pub counters: StepStats,
}

/// What a route does with what comes out of its steps.
#[derive(Debug, Clone, Serialize)]
pub struct ActionInfo {
    /// `to`, `choice`, `recipient-list` or `load-balance`.
    pub kind: &'static str,
    /// Every channel or exchange it may send to, in order (a template as written).
    pub targets: Vec<String>,
    /// A choice's clauses, in order; empty for the other kinds.
    pub when: Vec<ClauseInfo>,
    /// A choice's `otherwise`.
    pub otherwise: Option<String>,
    /// The header a recipient list reads its recipients from.
    pub header: Option<String>,
    /// A load balancer's strategy (`round-robin`, `failover`).
    pub strategy: Option<&'static str>,
}

/// One clause of a choice.
#[derive(Debug, Clone, Serialize)]
pub struct ClauseInfo {
    /// The predicate.
    pub when: String,
    /// Where a matching message goes.
    pub to: String,
}

/// A route's last failure.
#[derive(Debug, Clone, Serialize)]
pub struct LastErrorInfo {
    /// What failed.
    pub error: String,
    /// When, in RFC 3339 (UTC).
    pub at: String,
}

impl From<LastError> for LastErrorInfo {
    fn from(e: LastError) -> LastErrorInfo {
        LastErrorInfo {
            error: e.error,
            at: rfc3339(e.at),
        }
    }
}

/// What the checked plan says of a route, which does not change while it runs.
#[derive(Debug, Clone)]
pub(super) struct RouteShape {
    pub(super) steps: Vec<StepInfo>,
    pub(super) action: ActionInfo,
    pub(super) on_error: Option<String>,
}

/// What the admin server reads from the plan once, by route name.
#[derive(Debug, Clone, Default)]
pub(super) struct Shape {
    pub(super) routes: std::collections::HashMap<String, RouteShape>,
}

impl Shape {
    pub(super) fn of(plan: &Plan) -> Shape {
        let routes = plan
            .routes
            .iter()
            .map(|r| {
                let steps = r
                    .steps
                    .iter()
                    .map(|s| StepInfo {
                        kind: s.kind.to_owned(),
                        description: s.config.describe(),
                        on_error: s.on_error.as_ref().map(|o| o.to.clone()),
                        counters: StepStats::default(),
                    })
                    .collect();
                let shape = RouteShape {
                    steps,
                    action: ActionInfo::of(&r.action),
                    on_error: r.on_error.as_ref().map(|o| o.to.clone()),
                };
                (r.name.clone(), shape)
            })
            .collect();
        Shape { routes }
    }
}

impl ActionInfo {
    fn of(action: &ActionPlan) -> ActionInfo {
        let names = |targets: &[TargetRef]| targets.iter().map(|t| t.name().to_owned()).collect();
        let mut info = ActionInfo {
            kind: "to",
            targets: Vec::new(),
            when: Vec::new(),
            otherwise: None,
            header: None,
            strategy: None,
        };
        match action {
            ActionPlan::To(targets) => info.targets = names(targets),
            ActionPlan::Choice { when, otherwise } => {
                info.kind = "choice";
                info.when = when
                    .iter()
                    .map(|(predicate, to)| ClauseInfo {
                        when: predicate.as_str().to_owned(),
                        to: to.name().to_owned(),
                    })
                    .collect();
                info.otherwise = otherwise.as_ref().map(|t| t.name().to_owned());
                info.targets = info
                    .when
                    .iter()
                    .map(|c| c.to.clone())
                    .chain(info.otherwise.clone())
                    .collect();
            }
            ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)) => {
                info.kind = "recipient-list";
                info.targets = names(targets);
            }
            ActionPlan::RecipientList(RecipientsPlan::Header(header)) => {
                info.kind = "recipient-list";
                info.header = Some(header.clone());
            }
            ActionPlan::LoadBalance { targets, strategy } => {
                info.kind = "load-balance";
                info.targets = names(targets);
                info.strategy = Some(strategy.name());
            }
        }
        info
    }
}

impl RouteInfo {
    pub(super) fn of(route: &Route, shape: Option<&RouteShape>) -> RouteInfo {
        let s = route.stats();
        let shape = shape.cloned().unwrap_or_else(|| RouteShape {
            steps: Vec::new(),
            action: ActionInfo::of(&ActionPlan::To(Vec::new())),
            on_error: None,
        });
        let mut steps = shape.steps;
        for (step, counted) in steps.iter_mut().zip(route.step_stats()) {
            step.counters = counted;
        }
        RouteInfo {
            name: route.name().to_owned(),
            from: route.from().name().to_owned(),
            concurrency: route.concurrency() as u64,
            steps,
            action: shape.action,
            on_error: shape.on_error,
            counters: s,
            last_error: route.last_error().map(LastErrorInfo::from),
            paused: route.is_paused(),
        }
    }
}

/// A join.
#[derive(Debug, Clone, Serialize)]
pub struct JoinInfo {
    /// The publish-subscribe channel it leaves.
    pub from: String,
    /// The channel it brings messages to.
    pub to: String,
    /// How many joins a message may cross from here.
    pub hops: u32,
    /// Whether it is archival.
    pub archival: bool,
    /// Only messages this selects cross.
    pub filter: Option<String>,
}

/// A topic exchange.
#[derive(Debug, Clone, Serialize)]
pub struct ExchangeInfo {
    /// Its name.
    pub name: String,
    /// Where messages no binding matches go.
    pub alternate: Option<String>,
    /// Its bindings, in order.
    pub bindings: Vec<BindingInfo>,
}

/// A binding of an exchange.
#[derive(Debug, Clone, Serialize)]
pub struct BindingInfo {
    /// Its id on the exchange (`#0`).
    pub id: String,
    /// Its topic pattern; `null` matches every message.
    pub key: Option<String>,
    /// The channels that get what it matches.
    pub to: Vec<String>,
}

/// A channel adapter or messaging bridge.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterInfo {
    /// Its name.
    pub name: String,
    /// `adapter` or `bridge`.
    pub section: &'static str,
    /// Its kind (`http-in`, `rabbitmq-out`, ...).
    pub kind: &'static str,
    /// `inbound` (it feeds its channel) or `outbound` (it consumes it).
    pub direction: &'static str,
    /// Its channel.
    pub channel: String,
    /// Where it reads or writes (an HTTP server's bound address, once connected).
    pub endpoint: String,
    /// Whether it is connected: for a bridge, whether its connection is up now; for an
    /// adapter, whether it connected when the flow started.
    pub connected: bool,
    /// A bridge's reconnections since it first connected (`null` for an adapter).
    pub reconnects: Option<u64>,
    /// A bridge's last connection error and when (`null` for an adapter, or none yet).
    pub last_error: Option<LastErrorInfo>,
    /// Whether it is paused (`POST /api/adapters/{name}/pause`, a Detour).
    pub paused: bool,
}

impl AdapterInfo {
    /// The adapter or bridge `plan`, as `view`'s flow runs it.
    pub(super) fn of(plan: &AdapterPlan, view: &FlowView) -> AdapterInfo {
        let connected = view.connected(&plan.name);
        let health: Option<HealthReport> = view.health(&plan.name);
        AdapterInfo {
            name: plan.name.clone(),
            section: plan.noun(),
            kind: plan.kind().as_str(),
            direction: if plan.is_inbound() {
                "inbound"
            } else {
                "outbound"
            },
            channel: plan.channel.clone(),
            endpoint: connected.clone().unwrap_or_else(|| plan.endpoint()),
            connected: health.as_ref().map_or(connected.is_some(), |h| h.connected),
            reconnects: health.as_ref().map(|h| h.reconnects),
            last_error: health.and_then(|h| h.last_error).map(|e| LastErrorInfo {
                error: e.error,
                at: rfc3339(e.at),
            }),
            paused: view.detours().is_paused(&plan.name),
        }
    }
}

/// The embedded durable store.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StoreInfo {
    /// Transactions committed since it was opened.
    pub commits: u64,
    /// Records those commits wrote.
    pub records: u64,
    /// Acknowledgements those commits wrote.
    pub acks: u64,
}

/// `GET /health/ready`.
#[derive(Debug, Clone, Serialize)]
pub struct ReadyInfo {
    /// Whether the flow is ready.
    pub ready: bool,
    /// What it waits for; empty when ready.
    pub waiting_for: Vec<String>,
}

/// `GET /health/live`.
#[derive(Debug, Clone, Serialize)]
pub struct LiveInfo {
    /// Always `true`: the process answers.
    pub live: bool,
}

/// `time` as RFC 3339 in UTC, to the millisecond (`2026-12-02T06:07:22.123Z`).
pub(super) fn rfc3339(time: SystemTime) -> String {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The date `days` after 1970-01-01 in the proleptic Gregorian calendar (the days-to-civil
/// conversion over 400-year eras of 146 097 days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_writes_utc_dates() {
        let at = |secs: u64, ms: u64| {
            rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_191_642, 123), "2026-12-02T06:07:22.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
    }
}
