//! Starting a flow's channel adapters.
//!
//! [`Flow::connect_adapters`] does everything that can fail before a message moves: reads the
//! environment variables the adapters name (a missing one is an error naming it and the
//! adapter), binds every HTTP server, connects to every database (running its `setup`
//! statements), creates every output directory. [`RunningFlow::attach`] then starts them: outbound adapters each behind a
//! consumer of their channel (with the adapter's tower layers and redelivery policy), inbound
//! adapters feeding theirs. [`RunningFlow::stop`] stops the inbound adapters first, so a
//! draining flow takes nothing new.

use eip_adapters::amqp::{AmqpOutbound, AmqpSource};
use eip_adapters::bridge::{BridgeError, InboundBridge, InboundBridgeHandle, Source};
use eip_adapters::file::{FileError, FileSink, FileSource, FileSourceHandle};
use eip_adapters::http::{HttpInbound, HttpInboundServer, HttpOutbound};
use eip_adapters::mqtt::{MqttBroker, MqttOutbound, MqttSource};
use eip_adapters::nats::{JetStreamOutbound, JetStreamSource};
use eip_adapters::redis::{RedisStreamOutbound, RedisStreamSource};
use eip_adapters::sql::{SqlInbound, SqlInboundHandle, SqlOutbound};
use eip_core::channel::{Channel, InvalidMessageChannel};
use eip_core::endpoint::{Consumer, ConsumerHandle};
use eip_core::message::Message;
use tower::util::BoxService;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

use super::Flow;
use super::run::{RunningFlow, subscribe};
use crate::plan::adapter::{AdapterConfig, AdapterPlan, OutboundPlan};
use eip_core::log::Escaped;

/// An adapter that could not start.
#[derive(Debug, thiserror::Error)]
#[error("adapter `{adapter}`: {source}")]
pub struct AdapterError {
    /// The adapter's name.
    pub adapter: String,
    /// Why: a missing environment variable, an address in use, a database that does not
    /// answer, a directory that can not be made.
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

struct Connected {
    plan: AdapterPlan,
    channel: Channel,
    /// Where a JSON-lines file's malformed lines go: the datatype's invalid message channel of
    /// the channel a `file-in` adapter feeds.
    invalid: Option<InvalidMessageChannel>,
    endpoint: Endpoint,
}

/// Starts an inbound bridge on its channel.
type StartBridge = Box<dyn FnOnce(Channel) -> InboundBridgeHandle + Send>;

enum Endpoint {
    FileIn,
    Bridge(StartBridge),
    Http(HttpInboundServer),
    SqlIn(SqlInbound),
    Out {
        service: BoxService<Message, (), BoxError>,
        permanent: fn(&BoxError) -> bool,
    },
}

/// A started inbound adapter.
pub(crate) enum InboundHandle {
    File(String, FileSourceHandle),
    Bridge(String, InboundBridgeHandle),
    Http(HttpInboundServer),
    Sql(SqlInboundHandle),
}

impl InboundHandle {
    /// Stops taking anything new; what was accepted is in its channel.
    pub(crate) async fn shutdown(self) {
        match self {
            InboundHandle::File(name, handle) => {
                if let Err(error) = handle.shutdown().await {
                    tracing::warn!(adapter = %name, error = %Escaped(&error), "file adapter stopped with an error");
                }
            }
            InboundHandle::Bridge(name, handle) => {
                if let Err(error) = handle.shutdown().await {
                    tracing::warn!(adapter = %name, error = %Escaped(&error), "bridge stopped with an error");
                }
            }
            InboundHandle::Http(server) => server.shutdown().await,
            InboundHandle::Sql(handle) => handle.shutdown().await,
        }
    }
}

impl ConnectedAdapters {
    /// One line per adapter, saying where it reads or writes: for an HTTP adapter the address
    /// it is bound to (so port 0 shows the port taken).
    pub fn describe(&self) -> Vec<String> {
        self.adapters
            .iter()
            .map(|a| {
                let endpoint = match &a.endpoint {
                    Endpoint::Http(server) => match &a.plan.config {
                        AdapterConfig::HttpIn(c) => {
                            format!("POST http://{}{}", server.local_addr(), c.path)
                        }
                        _ => a.plan.endpoint(),
                    },
                    _ => a.plan.endpoint(),
                };
                let (arrow, channel) = if a.plan.is_inbound() {
                    ("->", &a.plan.channel)
                } else {
                    ("<-", &a.plan.channel)
                };
                format!(
                    "adapter {} ({}): {endpoint} {arrow} {channel}",
                    a.plan.name,
                    a.plan.kind().as_str()
                )
            })
            .collect()
    }

    /// The address each `http-in` adapter is bound to, by adapter name.
    pub fn http_addresses(&self) -> Vec<(String, std::net::SocketAddr)> {
        self.adapters
            .iter()
            .filter_map(|a| match &a.endpoint {
                Endpoint::Http(server) => Some((a.plan.name.clone(), server.local_addr())),
                _ => None,
            })
            .collect()
    }
}

impl Flow {
    /// The flow's adapters, in the order declared.
    pub fn adapters(&self) -> &[AdapterPlan] {
        &self.adapters
    }

    /// Connects every adapter: environment variables read, HTTP servers bound (requests are
    /// taken from now on, into their channels), databases connected, output directories made.
    /// The first adapter that fails stops the rest (those already bound are shut down).
    pub async fn connect_adapters(&self) -> Result<ConnectedAdapters, AdapterError> {
        let mut adapters = Vec::with_capacity(self.adapters.len());
        for plan in &self.adapters {
            match self.connect(plan).await {
                Ok(connected) => adapters.push(connected),
                Err(source) => {
                    for connected in adapters {
                        if let Endpoint::Http(server) = connected.endpoint {
                            server.shutdown().await;
                        }
                    }
                    return Err(AdapterError {
                        adapter: plan.name.clone(),
                        source,
                    });
                }
            }
        }
        Ok(ConnectedAdapters { adapters })
    }

    async fn connect(&self, plan: &AdapterPlan) -> Result<Connected, BoxError> {
        let channel = self
            .bus()
            .channel(&plan.channel)
            .map_err(|e| format!("channel `{}`: {e}", plan.channel))?;
        let mut invalid = None;
        let endpoint = match &plan.config {
            AdapterConfig::FileIn(_) => {
                invalid = self.invalid_channel_of(&plan.channel);
                Endpoint::FileIn
            }
            AdapterConfig::HttpIn(config) => {
                let inbound = HttpInbound::new(config.clone(), channel.clone())?;
                Endpoint::Http(inbound.bind().await?)
            }
            AdapterConfig::SqlIn(config) => {
                config.connection.execute(&plan.setup).await?;
                Endpoint::SqlIn(SqlInbound::connect(config.clone()).await?)
            }
            AdapterConfig::FileOut(config) => {
                let sink = FileSink::new(config.clone())?;
                outbound(sink, &plan.outbound, |e| {
                    e.downcast_ref::<FileError>()
                        .is_some_and(FileError::is_permanent)
                })
            }
            AdapterConfig::HttpOut(config) => {
                let client = HttpOutbound::new(config.clone())?;
                outbound(client, &plan.outbound, |e| {
                    eip_adapters::http::is_permanent(e.as_ref())
                })
            }
            AdapterConfig::RabbitmqIn { source, window } => {
                let source = source.clone();
                inbound_bridge(move || Ok(AmqpSource::new(source.clone())), *window).await?
            }
            AdapterConfig::NatsIn { source, window } => {
                let source = source.clone();
                inbound_bridge(move || JetStreamSource::new(source.clone()), *window).await?
            }
            AdapterConfig::MqttIn { source, window } => {
                let mut source = source.clone();
                source.broker = with_password(&source.broker)?;
                inbound_bridge(move || Ok(MqttSource::new(source.clone())), *window).await?
            }
            AdapterConfig::RedisIn { source, window } => {
                let source = source.clone();
                inbound_bridge(move || RedisStreamSource::new(source.clone()), *window).await?
            }
            AdapterConfig::RabbitmqOut(config) => {
                let publisher = AmqpOutbound::new(config.clone());
                publisher.connect().await?;
                outbound(publisher, &plan.outbound, bridge_refused_for_good)
            }
            AdapterConfig::NatsOut(config) => {
                let publisher = JetStreamOutbound::new(config.clone())?;
                publisher.connect().await?;
                outbound(publisher, &plan.outbound, bridge_refused_for_good)
            }
            AdapterConfig::MqttOut(config) => {
                let mut config = config.clone();
                config.broker = with_password(&config.broker)?;
                let publisher = MqttOutbound::connect(config).await?;
                outbound(publisher, &plan.outbound, bridge_refused_for_good)
            }
            AdapterConfig::RedisOut(config) => {
                let publisher = RedisStreamOutbound::new(config.clone())?;
                publisher.connect().await?;
                outbound(publisher, &plan.outbound, bridge_refused_for_good)
            }
            AdapterConfig::SqlOut(config) => {
                config.connection.execute(&plan.setup).await?;
                let writer = SqlOutbound::connect(config.clone()).await?;
                outbound(writer, &plan.outbound, |_| false)
            }
        };
        Ok(Connected {
            plan: plan.clone(),
            channel,
            invalid,
            endpoint,
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

/// An inbound bridge over the sources `make` makes: one connects now, so a wrong URL or a
/// refused declaration stops the start, and is let go; the bridge then gets a fresh one and keeps
/// its own connection, reconnecting as it must.
async fn inbound_bridge<S: Source>(
    make: impl Fn() -> Result<S, BridgeError>,
    window: usize,
) -> Result<Endpoint, BoxError> {
    let mut probe = make()?;
    probe.connect(window).await?;
    drop(probe);
    let source = make()?;
    Ok(Endpoint::Bridge(Box::new(move |channel: Channel| {
        InboundBridge::new(source, channel, window).spawn()
    })))
}

/// Whether a bridge's error says that trying again would fail the same way.
fn bridge_refused_for_good(error: &BoxError) -> bool {
    error
        .downcast_ref::<BridgeError>()
        .is_some_and(BridgeError::is_permanent)
}

/// `broker` with its password read from the environment (a flow file names the variable, as
/// `${NAME}` in the password's place).
fn with_password(broker: &MqttBroker) -> Result<MqttBroker, BoxError> {
    let mut broker = broker.clone();
    if let Some((user, password)) = &broker.credentials {
        broker.credentials = Some((user.clone(), eip_adapters::env::expand(password)?));
    }
    Ok(broker)
}

/// An outbound adapter behind its layers: a rate limit, then a deadline per attempt.
fn outbound<S>(service: S, plan: &OutboundPlan, permanent: fn(&BoxError) -> bool) -> Endpoint
where
    S: Service<Message> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    let service = service.map_response(drop).map_err(Into::into);
    let layered = ServiceBuilder::new()
        .option_layer(
            plan.rate_limit
                .map(|(n, per)| tower::limit::RateLimitLayer::new(n, per)),
        )
        .option_layer(plan.timeout.map(tower::timeout::TimeoutLayer::new))
        .service(service)
        .map_err(Into::into);
    Endpoint::Out {
        service: BoxService::new(layered),
        permanent,
    }
}

impl RunningFlow {
    /// Starts the connected adapters: outbound ones first (each a consumer of its channel),
    /// then inbound ones.
    pub fn attach(&mut self, adapters: ConnectedAdapters) {
        for connected in adapters.adapters {
            let Connected {
                plan,
                channel,
                invalid,
                endpoint,
            } = connected;
            match endpoint {
                Endpoint::Out { service, permanent } => {
                    let handle = consume(&channel, &plan, service, permanent);
                    self.consumers.push(handle);
                }
                Endpoint::FileIn => {
                    if let AdapterConfig::FileIn(config) = plan.config {
                        let mut source = FileSource::new(config, channel.sender());
                        if let Some(invalid) = invalid {
                            source = source.invalid_message_channel(invalid);
                        }
                        self.inbound
                            .push(InboundHandle::File(plan.name.clone(), source.spawn()));
                    }
                }
                Endpoint::Http(server) => self.inbound.push(InboundHandle::Http(server)),
                Endpoint::Bridge(start) => {
                    self.inbound
                        .push(InboundHandle::Bridge(plan.name.clone(), start(channel)));
                }
                Endpoint::SqlIn(inbound) => {
                    self.inbound
                        .push(InboundHandle::Sql(inbound.spawn(channel.sender())));
                }
            }
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
) -> ConsumerHandle {
    let concurrency = plan.outbound.concurrency.unwrap_or(1);
    let redelivery = plan.outbound.redelivery.clone();
    macro_rules! spawn {
        ($inbox:expr) => {{
            let mut consumer = Consumer::new($inbox, service)
                .concurrency(concurrency)
                .permanent_errors(permanent);
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
