//! Cross-crate integration tests (in `tests/`) and the book's chapters, compiled and run as doc tests.

#[doc = include_str!("../../book/src/introduction.md")]
#[cfg(doctest)]
pub struct Introduction;

#[doc = include_str!("../../book/src/message.md")]
#[cfg(doctest)]
pub struct TheMessage;

#[doc = include_str!("../../book/src/point-to-point.md")]
#[cfg(doctest)]
pub struct PointToPointChannel;

#[doc = include_str!("../../book/src/publish-subscribe.md")]
#[cfg(doctest)]
pub struct PublishSubscribeChannel;

#[doc = include_str!("../../book/src/datatype-channel.md")]
#[cfg(doctest)]
pub struct DatatypeChannel;

#[doc = include_str!("../../book/src/invalid-message-channel.md")]
#[cfg(doctest)]
pub struct InvalidMessageChannel;

#[doc = include_str!("../../book/src/dead-letter-channel.md")]
#[cfg(doctest)]
pub struct DeadLetterChannel;

#[doc = include_str!("../../book/src/guaranteed-delivery.md")]
#[cfg(doctest)]
pub struct GuaranteedDelivery;

#[doc = include_str!("../../book/src/message-expiration.md")]
#[cfg(doctest)]
pub struct MessageExpiration;

#[doc = include_str!("../../book/src/selective-consumer.md")]
#[cfg(doctest)]
pub struct SelectiveConsumer;

#[doc = include_str!("../../book/src/channel-purger.md")]
#[cfg(doctest)]
pub struct ChannelPurger;

#[doc = include_str!("../../book/src/request-reply.md")]
#[cfg(doctest)]
pub struct RequestReply;

#[doc = include_str!("../../book/src/acknowledgement-and-redelivery.md")]
#[cfg(doctest)]
pub struct AcknowledgementAndRedelivery;

#[doc = include_str!("../../book/src/message-bus.md")]
#[cfg(doctest)]
pub struct MessageBus;

#[doc = include_str!("../../book/src/benchmarks.md")]
#[cfg(doctest)]
pub struct Benchmarks;

#[doc = include_str!("../../book/src/channel-joins.md")]
#[cfg(doctest)]
pub struct ChannelJoins;

#[doc = include_str!("../../book/src/predicates.md")]
#[cfg(doctest)]
pub struct Predicates;

#[doc = include_str!("../../book/src/content-based-router.md")]
#[cfg(doctest)]
pub struct ContentBasedRouter;

#[doc = include_str!("../../book/src/topic-exchange.md")]
#[cfg(doctest)]
pub struct TopicExchangeChapter;

#[doc = include_str!("../../book/src/flow-file.md")]
#[cfg(doctest)]
pub struct FlowFiles;

#[doc = include_str!("../../book/src/cli.md")]
#[cfg(doctest)]
pub struct TheEipCommand;

#[doc = include_str!("../../book/src/testing-flows.md")]
#[cfg(doctest)]
pub struct TestingFlows;

#[doc = include_str!("../../book/src/drawing-flows.md")]
#[cfg(doctest)]
pub struct DrawingFlows;

#[doc = include_str!("../../book/src/example-stock-trading.md")]
#[cfg(doctest)]
pub struct ExampleStockTrading;

#[doc = include_str!("../../book/src/example-join-chain.md")]
#[cfg(doctest)]
pub struct ExampleJoinChain;

#[doc = include_str!("../../book/src/flows-in-rust.md")]
#[cfg(doctest)]
pub struct FlowsInRust;

#[doc = include_str!("../../book/src/channel-adapters.md")]
#[cfg(doctest)]
pub struct ChannelAdapters;

#[doc = include_str!("../../book/src/example-orders.md")]
#[cfg(doctest)]
pub struct ExampleOrders;

#[doc = include_str!("../../book/src/messaging-bridge.md")]
#[cfg(doctest)]
pub struct MessagingBridge;

#[doc = include_str!("../../book/src/beyond-one-machine.md")]
#[cfg(doctest)]
pub struct BeyondOneMachine;

#[doc = include_str!("../../book/src/example-sensors.md")]
#[cfg(doctest)]
pub struct ExampleSensors;

#[doc = include_str!("../../book/src/route-steps.md")]
#[cfg(doctest)]
pub struct RouteSteps;

#[doc = include_str!("../../book/src/jq.md")]
#[cfg(doctest)]
pub struct JqAndTheMessageTranslator;

#[doc = include_str!("../../book/src/content-enricher.md")]
#[cfg(doctest)]
pub struct ContentEnricher;

#[doc = include_str!("../../book/src/delayer-and-throttler.md")]
#[cfg(doctest)]
pub struct DelayerAndThrottler;

#[doc = include_str!("../../book/src/load-balancer.md")]
#[cfg(doctest)]
pub struct LoadBalancer;

#[doc = include_str!("../../book/src/routing-slip.md")]
#[cfg(doctest)]
pub struct RoutingSlip;

#[doc = include_str!("../../book/src/split.md")]
#[cfg(doctest)]
pub struct Splitter;

#[doc = include_str!("../../book/src/example-csv-orders.md")]
#[cfg(doctest)]
pub struct ExampleCsvOrders;

#[doc = include_str!("../../book/src/example-sensor-batches.md")]
#[cfg(doctest)]
pub struct ExampleSensorBatches;

#[doc = include_str!("../../book/src/aggregator.md")]
#[cfg(doctest)]
pub struct Aggregator;

#[doc = include_str!("../../book/src/resequencer.md")]
#[cfg(doctest)]
pub struct Resequencer;

#[doc = include_str!("../../book/src/idempotent-receiver.md")]
#[cfg(doctest)]
pub struct IdempotentReceiver;

#[doc = include_str!("../../book/src/templates.md")]
#[cfg(doctest)]
pub struct Templates;

#[doc = include_str!("../../book/src/error-handling.md")]
#[cfg(doctest)]
pub struct ErrorHandling;

#[doc = include_str!("../../book/src/message-history.md")]
#[cfg(doctest)]
pub struct MessageHistory;
