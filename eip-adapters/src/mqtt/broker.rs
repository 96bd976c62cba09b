//! Where the broker is and how a connection to it is kept.

use std::time::Duration;

use rumqttc::v5::MqttOptions;

use crate::bridge::BridgeError;

const MIN_KEEP_ALIVE: Duration = Duration::from_secs(5);

/// An MQTT broker's address and the connection settings both halves share.
#[derive(Debug, Clone)]
pub struct MqttBroker {
    /// Host name or address.
    pub host: String,
    /// TCP port (1883 without TLS).
    pub port: u16,
    /// How often a ping proves an idle connection alive (default and least 5 s); a connection
    /// silent for longer is taken as lost.
    pub keep_alive: Duration,
    /// How long connecting may take (default 5 s).
    pub connect_timeout: Duration,
    /// A user name and password, when the broker asks for them.
    pub credentials: Option<(String, String)>,
}

impl MqttBroker {
    /// The broker at `host:port`, anonymous.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        MqttBroker {
            host: host.into(),
            port,
            keep_alive: MIN_KEEP_ALIVE,
            connect_timeout: Duration::from_secs(5),
            credentials: None,
        }
    }

    /// Logs in as `user` with `password`.
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some((user.into(), password.into()));
        self
    }

    /// The broker in a few words, for logs and errors (never the password): `mqtt at
    /// 127.0.0.1:1883`.
    pub fn describe(&self) -> String {
        format!("mqtt at {}:{}", self.host, self.port)
    }

    /// The client options for a connection under `client_id`.
    pub(crate) fn options(&self, client_id: &str) -> MqttOptions {
        let mut options = MqttOptions::new(client_id, self.host.clone(), self.port);
        // rumqttc refuses (panics on) a keep-alive under 5 s.
        options.set_keep_alive(self.keep_alive.max(MIN_KEEP_ALIVE));
        options.set_connection_timeout(self.connect_timeout.as_secs().max(1));
        if let Some((user, password)) = &self.credentials {
            options.set_credentials(user.clone(), password.clone());
        }
        options
    }

    /// A connection error naming this broker.
    pub(crate) fn lost(&self, reason: impl std::fmt::Display) -> BridgeError {
        BridgeError::Connection {
            broker: self.describe(),
            reason: reason.to_string(),
        }
    }
}
