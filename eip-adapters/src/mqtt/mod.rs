//! The MQTT bridge (QoS 1): a channel published to a topic (PUBACK), and a subscription feeding
//! a channel. See [`bridge`](crate::bridge).
