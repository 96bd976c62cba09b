//! The RabbitMQ (AMQP 0-9-1) bridge: a channel published to an exchange with a routing key
//! (publisher confirms), and a queue feeding a channel. See [`bridge`](crate::bridge).
