//! The MQTT bridge (QoS 1): a channel published to a topic (PUBACK), and a subscription feeding
//! a channel. See [`bridge`](crate::bridge).
//!
//! Both halves speak **MQTT v5** (`rumqttc::v5`; Mosquitto 2 and every current broker speak
//! it), because v5 carries headers: an eip message crosses as one PUBLISH at QoS 1.
//! - **Topic ↔ subject.** eip subjects are dot-separated (`sensors.room1.temp`), MQTT topics
//!   slash-separated (`sensors/room1/temp`): the outbound side maps every `.` of the subject to
//!   `/` (see [`TopicTemplate`]: a fixed topic, or one built from the subject), the inbound side
//!   maps the topic's `/` back to `.` and sets it as the `subject` of a message that has none.
//!   A subject holding `/`, `+`, `#` or NUL has no topic and is refused (permanently: the
//!   consumer dead-letters that message at once).
//! - **Headers.** Every header, the message id and the types of the headers that are not
//!   strings travel as user properties, exactly as [`envelope::to_text`] writes them, so a
//!   message comes back with the same id and typed headers. The well-known headers are also
//!   written to the v5 fields meant for them, for MQTT clients that are not eip:
//!   `content-type` → content type, `correlation-id` → correlation data, `return-address` →
//!   response topic (when it is a valid topic name), `expires-at` → message expiry interval
//!   (the seconds left, rounded up; the broker counts it down and drops the message when it
//!   expires). On the way in, a field fills its header only when no user property gave it
//!   (a producer that is not eip).
//! - **Poison messages.** A publish whose user properties do not make a message (an
//!   `eip-types` entry its value does not fit) goes to the channel's dead letter channel and is
//!   acknowledged, so it does not block the subscription.
//!
//! [`MqttOutbound`] answers `Ok` only once the broker's PUBACK for that publish came back, with
//! a bounded number in flight, and owns its connection: a publish during an outage fails at
//! once (the consumer retries with the channel's backoff). [`MqttSource`] keeps a persistent
//! session under a fixed client id and acknowledges each publish (its PUBACK) only once the
//! channel accepted the message: what a stopped or disconnected bridge did not acknowledge, the
//! broker delivers again to the next connection with the same client id. Against Mosquitto
//! 2.0.11, a connection cut mid-stream and resumed has brought back more than the window, all
//! flagged DUP (some already acknowledged before the cut): at least once allows it, and the
//! message ids tell the duplicates apart.
//!
//! Why v5 rather than 3.1.1 with an envelope in the payload: the payload stays the message's
//! own (other MQTT clients read it as it is), and the broker sees content type, expiry and
//! response topic where it looks for them. A broker that speaks only 3.1.1 is not supported.
//!
//! [`envelope::to_text`]: crate::bridge::envelope::to_text

mod broker;
mod error;
mod outbound;
mod properties;
mod source;
mod topic;

pub use broker::MqttBroker;
pub use error::TopicError;
pub use outbound::{MqttOutbound, MqttOutboundConfig, MqttPublisher};
pub use source::{MqttDelivery, MqttSource, MqttSourceConfig};
pub use topic::{TopicTemplate, subject_to_topic, topic_to_subject};
