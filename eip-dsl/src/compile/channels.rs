//! Building a plan's channels: each with its configuration, its dead letter and invalid
//! message channels first, in memory, in the durable store or in its broker.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[cfg(feature = "nats")]
use eip_adapters::store::JetStream;
#[cfg(feature = "amqp")]
use eip_adapters::store::RabbitMq;
use eip_core::MessageBus;
use eip_core::channel::{
    Channel, ChannelBuilder, ChannelKind, DeadLetterChannel, InvalidMessageChannel, JsonSchema,
    PointToPoint, PublishSubscribe,
};
use eip_core::store::Backend;
use eip_core::store::durable::Durable;

use super::CompileError;
use crate::plan::{BrokerPlace, BrokerStorePlan, ChannelPlan, DEAD_LETTERS, Plan};

/// Every channel of the plan, in its order, registered on the bus; `dead-letters` (the
/// bus's own) last when the plan does not declare it.
pub(super) fn channels(
    plan: &Plan,
    bus: &MessageBus,
    store: Option<&Arc<Durable>>,
    brokers: bool,
) -> Result<Vec<Channel>, CompileError> {
    let mut builder = ChannelsBuilder {
        plan,
        bus,
        built: HashMap::new(),
        building: HashSet::new(),
        store,
        brokers,
    };
    let dead_letters: &PointToPoint = bus.dead_letter_channel();
    builder
        .built
        .insert(DEAD_LETTERS.to_owned(), dead_letters.clone().into());
    let mut channels = Vec::with_capacity(plan.channels.len() + 1);
    for channel in &plan.channels {
        channels.push(builder.channel(&channel.name)?);
    }
    if !plan.channels.iter().any(|c| c.name == DEAD_LETTERS) {
        channels.push(dead_letters.clone().into());
    }
    for channel in &channels {
        if channel.name() != DEAD_LETTERS {
            bus.register(channel.clone())?;
        }
    }
    Ok(channels)
}

/// Builds channels in dependency order: a channel's dead letter and invalid message channels
/// before the channel.
pub(super) struct ChannelsBuilder<'p> {
    pub(super) plan: &'p Plan,
    pub(super) bus: &'p MessageBus,
    pub(super) built: HashMap<String, Channel>,
    pub(super) building: HashSet<String>,
    /// Where durable channels live; `None` keeps them in memory.
    pub(super) store: Option<&'p Arc<Durable>>,
    /// Whether channels with a `store:` live in their brokers (otherwise in memory).
    pub(super) brokers: bool,
}

impl ChannelsBuilder<'_> {
    pub(super) fn channel(&mut self, name: &str) -> Result<Channel, CompileError> {
        if let Some(channel) = self.built.get(name) {
            return Ok(channel.clone());
        }
        let plan = self
            .plan
            .channel(name)
            .ok_or_else(|| CompileError::Unknown {
                what: "channel",
                name: name.to_owned(),
            })?;
        if !self.building.insert(name.to_owned()) {
            return Err(CompileError::Circular(name.to_owned()));
        }
        let channel = self.build(plan)?;
        self.building.remove(name);
        self.built.insert(name.to_owned(), channel.clone());
        Ok(channel)
    }

    fn point_to_point(&mut self, name: &str) -> Result<PointToPoint, CompileError> {
        match self.channel(name)? {
            Channel::PointToPoint(c) => Ok(c),
            Channel::PublishSubscribe(_) => Err(CompileError::Unknown {
                what: "point-to-point channel",
                name: name.to_owned(),
            }),
        }
    }

    fn build(&mut self, plan: &ChannelPlan) -> Result<Channel, CompileError> {
        let dead_letters = match &plan.dead_letter {
            Some(name) => DeadLetterChannel::from(self.point_to_point(name)?),
            None => self.bus.dead_letter_channel().clone(),
        };
        let datatype = match &plan.datatype {
            Some(datatype) => {
                let schema = JsonSchema::new(datatype.path.as_str(), &datatype.schema).map_err(
                    |source| CompileError::Schema {
                        name: plan.name.clone(),
                        source,
                    },
                )?;
                let invalid = InvalidMessageChannel::from(self.point_to_point(&datatype.invalid)?);
                Some((schema, invalid))
            }
            None => None,
        };
        let failed = |source| CompileError::Channel {
            name: plan.name.clone(),
            source,
        };
        let backend: Option<Arc<dyn Backend>> = match &plan.broker {
            Some(broker) if self.brokers => Some(broker_backend(plan, broker)?),
            Some(_) => None,
            None => self
                .store
                .filter(|_| plan.durable)
                .map(|store| store.clone() as Arc<dyn Backend>),
        };
        match plan.kind {
            ChannelKind::PointToPoint => {
                let b = self.bus.builder::<PointToPoint>(&plan.name);
                let b =
                    configure(b, plan, dead_letters, datatype, backend).history(self.plan.history);
                Ok(b.build().map_err(failed)?.into())
            }
            ChannelKind::PublishSubscribe => {
                let mut b = self.bus.builder::<PublishSubscribe>(&plan.name);
                if let Some(overflow) = plan.overflow {
                    b = b.overflow(overflow);
                }
                let b =
                    configure(b, plan, dead_letters, datatype, backend).history(self.plan.history);
                Ok(b.build().map_err(failed)?.into())
            }
        }
    }
}

/// What every kind of channel is configured with.
fn configure<K>(
    mut b: ChannelBuilder<K>,
    plan: &ChannelPlan,
    dead_letters: DeadLetterChannel,
    datatype: Option<(JsonSchema, InvalidMessageChannel)>,
    backend: Option<Arc<dyn Backend>>,
) -> ChannelBuilder<K> {
    b = b.dead_letter_channel(dead_letters);
    if let Some(backend) = backend {
        b = b.store(backend);
    }
    if let Some(capacity) = plan.capacity {
        b = b.capacity(capacity);
    }
    if let Some(policy) = &plan.redelivery {
        b = b.redelivery(policy.clone());
    }
    if let Some(ttl) = plan.time_to_live {
        b = b.time_to_live(ttl);
    }
    if let Some((schema, invalid)) = datatype {
        b = b.datatype(schema, invalid);
    }
    b
}

/// The backend of a channel kept in a broker: its URL's variables read now.
fn broker_backend(
    plan: &ChannelPlan,
    broker: &BrokerStorePlan,
) -> Result<Arc<dyn Backend>, CompileError> {
    let failed = |reason: String| CompileError::Broker {
        channel: plan.name.clone(),
        place: broker.place.describe(),
        reason,
    };
    let expand =
        |url: &str| eip_adapters::env::expand(url).map_err(|e| failed(format!("its url: {e}")));
    match &broker.place {
        // Validation refuses a broker that is not built; a plan made by hand is refused here.
        #[cfg(not(feature = "amqp"))]
        BrokerPlace::RabbitMqQueue { .. } | BrokerPlace::RabbitMqExchange { .. } => {
            let _ = expand;
            Err(failed(
                "not built into this eip: cargo feature `amqp`".to_owned(),
            ))
        }
        #[cfg(not(feature = "nats"))]
        BrokerPlace::JetStream { .. } => {
            let _ = expand;
            Err(failed(
                "not built into this eip: cargo feature `nats`".to_owned(),
            ))
        }
        #[cfg(feature = "amqp")]
        BrokerPlace::RabbitMqQueue { url, queue } => Ok(Arc::new(with_limits(
            RabbitMq::queue(expand(url)?, queue),
            broker,
        ))),
        #[cfg(feature = "amqp")]
        BrokerPlace::RabbitMqExchange { url, exchange } => Ok(Arc::new(with_limits(
            RabbitMq::exchange(expand(url)?, exchange),
            broker,
        ))),
        #[cfg(feature = "nats")]
        BrokerPlace::JetStream {
            url,
            stream,
            subject,
            ack_wait,
        } => {
            let url = expand(url)?;
            let mut store = match plan.kind {
                ChannelKind::PointToPoint => JetStream::queue(url, stream),
                ChannelKind::PublishSubscribe => JetStream::fan_out(url, stream),
            }
            .map_err(|e| failed(e.to_string()))?;
            if let Some(subject) = subject {
                store = store.subject(subject).map_err(|e| failed(e.to_string()))?;
            }
            if let Some(wait) = ack_wait {
                store = store.ack_wait(*wait);
            }
            if let Some(window) = broker.publish_window {
                store = store.publish_window(window);
            }
            if let Some(wait) = broker.retry_for {
                store = store.retry_for(wait);
            }
            Ok(Arc::new(store))
        }
    }
}

#[cfg(feature = "amqp")]
fn with_limits(store: RabbitMq, broker: &BrokerStorePlan) -> RabbitMq {
    let store = match broker.publish_window {
        Some(window) => store.publish_window(window),
        None => store,
    };
    match broker.retry_for {
        Some(wait) => store.retry_for(wait),
        None => store,
    }
}
