//! Starting a flow's channel adapters and messaging bridges, the same way for every kind.
//!
//! [`Flow::connect_adapters`] does everything that can fail before a message moves: each
//! adapter's [kind](crate::kind) connects it (reads the environment variables it names, binds
//! its HTTP server, connects to its database or broker, makes its directory). [`RunningFlow::attach`]
//! then starts them: outbound adapters each behind a consumer of their channel (with the
//! adapter's tower layers and redelivery policy), inbound adapters feeding theirs.
//! [`RunningFlow::stop_inbound`] stops the inbound adapters first, so a draining flow takes
//! nothing new.

use eip_core::channel::{Channel, InvalidMessageChannel};
use eip_core::endpoint::{Consumer, ConsumerHandle, PauseGate};
use eip_core::message::Message;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

use super::Flow;
use super::run::subscribe;
use crate::kind::{Endpoint, Inbound, Site};
use crate::plan::adapter::{AdapterPlan, OutboundPlan};

/// An adapter or bridge that could not start.
#[derive(Debug, thiserror::Error)]
#[error("{noun} `{adapter}`: {source}")]
pub struct AdapterError {
    /// `adapter` or `bridge`: where it was declared.
    pub noun: &'static str,
    /// The adapter's name.
    pub adapter: String,
    /// Why: a missing environment variable, an address in use, a database or broker that does
    /// not answer, a directory that can not be made.
    #[source]
    pub source: BoxError,
}

/// The adapters of a flow, connected and bound, not yet moving messages.
pub struct ConnectedAdapters {
    adapters: Vec<Connected>,
}

impl std::fmt::Debug for ConnectedAdapters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectedAdapters")
            .field("adapters", &self.adapters.len())
            .finish()
    }
}

pub(super) struct Connected {
    pub(super) plan: AdapterPlan,
    pub(super) channel: Channel,
    pub(super) endpoint: Endpoint,
    /// Its pause switch, as its consumer watches it (an outbound adapter).
    pub(super) pause: PauseGate,
}

impl Connected {
    /// Where it reads or writes: for an HTTP adapter the address it is bound to (so port 0
    /// shows the port taken).
    pub(super) fn endpoint(&self) -> String {
        match &self.endpoint {
            Endpoint::Inbound(inbound) => inbound.endpoint(),
            Endpoint::Outbound { .. } => None,
        }
        .unwrap_or_else(|| self.plan.endpoint())
    }
}

impl ConnectedAdapters {
    /// One line per adapter and bridge (so called), saying where it reads or writes: for an
    /// HTTP adapter the address it is bound to (so port 0 shows the port taken).
    pub fn describe(&self) -> Vec<String> {
        self.adapters
            .iter()
            .map(|a| {
                let endpoint = a.endpoint();
                let arrow = if a.plan.is_inbound() { "->" } else { "<-" };
                format!(
                    "{} {} ({}): {endpoint} {arrow} {}",
                    a.plan.noun(),
                    a.plan.name,
                    a.plan.kind().as_str(),
                    a.plan.channel
                )
            })
            .collect()
    }

    /// The address each `http-in` adapter is bound to, by adapter name.
    pub fn http_addresses(&self) -> Vec<(String, std::net::SocketAddr)> {
        self.adapters
            .iter()
            .filter_map(|a| match &a.endpoint {
                Endpoint::Inbound(inbound) => {
                    inbound.local_addr().map(|at| (a.plan.name.clone(), at))
                }
                Endpoint::Outbound { .. } => None,
            })
            .collect()
    }

    pub(super) fn into_inner(self) -> Vec<Connected> {
        self.adapters
    }
}

impl Flow {
    /// The flow's adapters and bridges, in the order declared.
    pub fn adapters(&self) -> &[AdapterPlan] {
        &self.adapters
    }

    /// Connects every adapter: environment variables read, HTTP servers bound (requests are
    /// taken from now on, into their channels), databases and brokers connected, output
    /// directories made. The first adapter that fails stops the rest (those already bound are
    /// let go).
    pub async fn connect_adapters(&self) -> Result<ConnectedAdapters, AdapterError> {
        let mut adapters = Vec::with_capacity(self.adapters.len());
        for plan in &self.adapters {
            match self.connect(plan).await {
                Ok(connected) => {
                    self.readiness.connected(&plan.name, connected.endpoint());
                    adapters.push(connected);
                }
                Err(source) => {
                    for connected in adapters {
                        if let Endpoint::Inbound(inbound) = connected.endpoint {
                            inbound.abandon().await;
                        }
                    }
                    return Err(AdapterError {
                        noun: plan.noun(),
                        adapter: plan.name.clone(),
                        source,
                    });
                }
            }
        }
        Ok(ConnectedAdapters { adapters })
    }

    pub(super) async fn connect(&self, plan: &AdapterPlan) -> Result<Connected, BoxError> {
        let channel = self
            .bus()
            .channel(&plan.channel)
            .map_err(|e| format!("channel `{}`: {e}", plan.channel))?;
        let pause = self.detours.switch(&plan.name);
        let site = Site {
            name: &plan.name,
            channel: &channel,
            invalid: self.invalid_channel_of(&plan.channel),
            pause: pause.gate(),
        };
        let endpoint = match plan.config.connect(site).await? {
            Endpoint::Outbound {
                service,
                permanent,
                health,
            } => Endpoint::Outbound {
                service: layered(service, &plan.outbound),
                permanent,
                health,
            },
            inbound => inbound,
        };
        if let Some(health) = endpoint.health() {
            self.readiness.keeps_health(&plan.name, health);
        }
        Ok(Connected {
            plan: plan.clone(),
            channel,
            endpoint,
            pause: pause.gate(),
        })
    }

    /// The invalid message channel of the datatype of the channel `name`, if it has one.
    fn invalid_channel_of(&self, name: &str) -> Option<InvalidMessageChannel> {
        let invalid = self.invalid.get(name)?;
        match self.bus().channel(invalid) {
            Ok(Channel::PointToPoint(c)) => Some(InvalidMessageChannel::from(c)),
            _ => None,
        }
    }
}

/// An outbound adapter behind its layers: a rate limit, then a deadline per attempt.
fn layered(
    service: BoxService<Message, (), BoxError>,
    plan: &OutboundPlan,
) -> BoxService<Message, (), BoxError> {
    let layered = ServiceBuilder::new()
        .option_layer(
            plan.rate_limit
                .map(|(n, per)| tower::limit::RateLimitLayer::new(n, per)),
        )
        .option_layer(plan.timeout.map(tower::timeout::TimeoutLayer::new))
        .service(service)
        .map_err(Into::into);
    BoxService::new(layered)
}

/// Starts one connected adapter: an outbound one as a consumer of its channel, an inbound one
/// feeding it.
pub(super) enum Start {
    /// The consumer driving an outbound adapter.
    Consumer(ConsumerHandle),
    /// A started inbound adapter.
    Inbound(Box<dyn crate::kind::Started>),
}

impl Connected {
    pub(super) fn start(self) -> Start {
        match self.endpoint {
            Endpoint::Outbound {
                service, permanent, ..
            } => Start::Consumer(consume(
                &self.channel,
                &self.plan,
                service,
                permanent,
                self.pause,
            )),
            Endpoint::Inbound(inbound) => Start::Inbound(Inbound::start(inbound)),
        }
    }
}

/// A consumer of `channel` driving an outbound adapter's service: on a publish-subscribe
/// channel through a subscription named after the adapter (durable on a durable channel).
fn consume(
    channel: &Channel,
    plan: &AdapterPlan,
    service: BoxService<Message, (), BoxError>,
    permanent: fn(&BoxError) -> bool,
    pause: PauseGate,
) -> ConsumerHandle {
    let concurrency = plan.outbound.concurrency.unwrap_or(1);
    let redelivery = plan.outbound.redelivery.clone();
    macro_rules! spawn {
        ($inbox:expr) => {{
            let mut consumer = Consumer::new($inbox, service)
                .concurrency(concurrency)
                .permanent_errors(permanent)
                .pause_gate(pause);
            if let Some(policy) = redelivery {
                consumer = consumer.redelivery(policy);
            }
            consumer.spawn()
        }};
    }
    match channel {
        Channel::PointToPoint(c) => spawn!(c.receiver()),
        Channel::PublishSubscribe(c) => spawn!(subscribe(c, &plan.name)),
    }
}
