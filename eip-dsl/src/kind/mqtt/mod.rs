//! The MQTT bridges: `mqtt-in` (a QoS 1 subscription feeds the channel) and `mqtt-out`
//! (messages are published at QoS 1, each acked once the broker acknowledged it).
//!
//! The password is read when the bridge starts, from the variable `password-env` names.

mod inbound;
mod outbound;

use eip_adapters::mqtt::MqttBroker;
use tower::BoxError;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
use crate::diagnostic::Check;
use crate::settings::Settings;

/// The keys both kinds have: the broker and the session.
const BROKER: &[&str] = &[
    "url",
    "client-id",
    "username",
    "password-env",
    "connect-timeout",
];

/// The broker (`url: mqtt://HOST:PORT`) and the client id.
fn broker(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<(MqttBroker, String)> {
    let url = settings.required_text(check, "url", "add `url: mqtt://HOST:1883`");
    let client_id = settings.required_text(
        check,
        "client-id",
        "add `client-id: NAME`, fixed and the bridge's own (the broker keeps its session by it)",
    );
    let url = url?;
    let address = url.value.strip_prefix("mqtt://").and_then(|rest| {
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').unwrap_or((rest, "1883"));
        let port = port.parse::<u16>().ok()?;
        (!host.is_empty()).then(|| (host.to_owned(), port))
    });
    let Some((host, port)) = address else {
        settings.report_value(
            check,
            "url",
            &url,
            format!("`{}` is not an MQTT address", url.value),
            Some("`mqtt://HOST:PORT`, such as `mqtt://127.0.0.1:1883` (plain TCP: no TLS yet)"),
        );
        return None;
    };
    let mut broker = MqttBroker::new(host, port);
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        broker.connect_timeout = d;
    }
    // The password is read when the bridge starts, from the variable `password-env` names;
    // here only the name is checked.
    let user = settings.text(check, "username");
    let password = settings.env_name(check, "password-env");
    if let Some(user) = user {
        broker.credentials = Some((
            user.value,
            password.map_or(String::new(), |v| format!("${{{v}}}")),
        ));
    }
    Some((broker, client_id?.value))
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

/// How the graph and the start-up lines name a broker.
fn address(broker: &MqttBroker) -> String {
    format!("mqtt://{}:{}", broker.host, broker.port)
}
