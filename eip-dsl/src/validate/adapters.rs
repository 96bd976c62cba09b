//! `adapters:`: every setting of every adapter parsed into the adapter crate's configuration.
//!
//! Each kind has its keys (see [`adapter_keys`]); a value of the wrong type, a duration, size,
//! address, glob, URL or name template that does not parse is reported at its position.
//! Paths (`dir`) are relative to the flow file's directory; the claim, done and error
//! directories of a `file-in` adapter are relative to the directory it watches. Environment
//! variables (`bearer-token-env`, `password-env`, `${NAME}` in a database URL) are read when
//! the adapter starts, not here: a flow validates on a machine without its secrets.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use eip_adapters::amqp::{
    AmqpOutboundConfig, AmqpSourceConfig, AmqpUrl, ExchangeDeclaration, QueueBinding, RoutingKey,
};
use eip_adapters::file::{FileGlob, FileSink, FileSource, NameTemplate, ReadMode};
use eip_adapters::http::{HttpInboundConfig, HttpOutboundConfig, OutboundMethod, UrlTemplate};
use eip_adapters::mqtt::{MqttBroker, MqttOutboundConfig, MqttSourceConfig, TopicTemplate};
use eip_adapters::nats::{
    JetStreamOutboundConfig, JetStreamSourceConfig, StreamDeclaration, SubjectTemplate,
};
use eip_adapters::redis::{RedisStreamOutboundConfig, RedisStreamSourceConfig, StreamKey};
use eip_adapters::sql::{Claim, ClaimColumns, Connection, SqlInboundConfig, SqlOutboundConfig};

use super::Check;
use super::channels::{duration, redelivery};
use super::names::Names;
use super::size::parse_byte_size;
use crate::diagnostic::Problem;
use crate::load::{name_path, suggest_key};
use crate::plan::adapter::{AdapterConfig, AdapterPlan, OutboundPlan};
use crate::spec::{AdapterKind, AdapterSpec, FlowSpec, Located, Position, Setting, SettingValue};

const COMMON: &[&str] = &["kind"];
const OUTBOUND: &[&str] = &["from", "concurrency", "rate-limit", "timeout", "redelivery"];
const FILE_IN: &[&str] = &[
    "to",
    "dir",
    "glob",
    "mode",
    "done-dir",
    "delete-when-done",
    "claim-dir",
    "error-dir",
    "max-size",
    "poll-interval",
    "min-age",
    "watch",
];
const FILE_OUT: &[&str] = &["dir", "name", "append", "overwrite"];
const HTTP_IN: &[&str] = &[
    "to",
    "listen",
    "path",
    "json",
    "body-limit",
    "bearer-token-env",
    "headers",
    "header-read-timeout",
    "request-timeout",
    "accept-wait",
    "retry-after",
    "max-connections",
];
const HTTP_OUT: &[&str] = &[
    "url",
    "method",
    "connect-timeout",
    "request-timeout",
    "bearer-token-env",
    "headers",
];
const SQL: &[&str] = &[
    "url",
    "password-env",
    "max-connections",
    "connect-timeout",
    "setup",
];
const SQL_IN: &[&str] = &["to", "query", "done", "claim", "interval", "max-rows"];
const SQL_OUT: &[&str] = &["statement", "batch-size"];
const RABBITMQ: &[&str] = &["url", "connect-timeout"];
const RABBITMQ_IN: &[&str] = &[
    "to",
    "queue",
    "declare",
    "exchange",
    "binding-keys",
    "window",
];
const RABBITMQ_OUT: &[&str] = &[
    "exchange",
    "routing-key",
    "declare-exchange",
    "durable",
    "confirm-timeout",
];
const NATS: &[&str] = &["url", "connect-timeout", "stream", "stream-subjects"];
const NATS_IN: &[&str] = &["to", "consumer", "filter-subject", "ack-wait", "window"];
const NATS_OUT: &[&str] = &["subject", "publish-timeout"];
const MQTT: &[&str] = &[
    "url",
    "client-id",
    "username",
    "password-env",
    "connect-timeout",
];
const MQTT_IN: &[&str] = &["to", "filter", "session-expiry", "window"];
const MQTT_OUT: &[&str] = &["topic", "retain", "ack-timeout", "in-flight"];
const REDIS: &[&str] = &["url", "stream", "connect-timeout"];
const REDIS_IN: &[&str] = &["to", "group", "consumer", "claim-idle", "window"];
const REDIS_OUT: &[&str] = &["max-len"];
const CLAIM: &[&str] = &["table", "key", "claimed-by", "claimed-at", "timeout"];
const RATE: &[&str] = &["requests", "per"];

/// The keys an adapter of `kind` has.
pub(crate) fn adapter_keys(kind: AdapterKind) -> Vec<&'static str> {
    let parts: &[&[&str]] = match kind {
        AdapterKind::FileIn => &[FILE_IN],
        AdapterKind::FileOut => &[OUTBOUND, FILE_OUT],
        AdapterKind::HttpIn => &[HTTP_IN],
        AdapterKind::HttpOut => &[OUTBOUND, HTTP_OUT],
        AdapterKind::SqlIn => &[SQL_IN, SQL],
        AdapterKind::SqlOut => &[OUTBOUND, SQL, SQL_OUT],
        AdapterKind::RabbitmqIn => &[RABBITMQ_IN, RABBITMQ],
        AdapterKind::RabbitmqOut => &[OUTBOUND, RABBITMQ, RABBITMQ_OUT],
        AdapterKind::NatsIn => &[NATS_IN, NATS],
        AdapterKind::NatsOut => &[OUTBOUND, NATS, NATS_OUT],
        AdapterKind::MqttIn => &[MQTT_IN, MQTT],
        AdapterKind::MqttOut => &[OUTBOUND, MQTT, MQTT_OUT],
        AdapterKind::RedisIn => &[REDIS_IN, REDIS],
        AdapterKind::RedisOut => &[OUTBOUND, REDIS, REDIS_OUT],
    };
    let mut keys: Vec<&str> = COMMON.to_vec();
    for part in parts {
        keys.extend(
            part.iter()
                .filter(|k| !keys.contains(k))
                .collect::<Vec<_>>(),
        );
    }
    keys
}

/// Every key of every kind of adapter (or bridge): what one whose kind could not be read may
/// have.
pub(crate) fn all_adapter_keys(bridge: bool) -> Vec<&'static str> {
    let mut keys: Vec<&str> = Vec::new();
    for (_, kind) in AdapterKind::ALL
        .into_iter()
        .filter(|(_, k)| k.is_bridge() == bridge)
    {
        for key in adapter_keys(kind) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// Checks every adapter of `spec`.
pub(crate) fn check(
    spec: &FlowSpec,
    names: &Names,
    base_dir: &Path,
    check: &mut Check<'_>,
) -> Vec<AdapterPlan> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut plans = Vec::new();
    let sections = [
        (
            "adapters",
            "adapter",
            &spec.adapters,
            &check.damage.adapters,
        ),
        ("bridges", "bridge", &spec.bridges, &check.damage.bridges),
    ];
    for (section, noun, entries, damaged) in sections {
        for (i, (name, adapter)) in entries.iter().enumerate() {
            let key = name_path(section, &name.value);
            if !seen.insert(name.value.as_str()) {
                check.report(
                    Problem::new(
                        format!(
                            "{noun} `{}`: the name is taken by another adapter or bridge",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help("give each adapter and bridge its own name"),
                );
                continue;
            }
            if names.get(&name.value).is_some() {
                check.report(
                    Problem::new(
                        format!(
                            "{noun} `{}` has the name of a channel or exchange",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help(
                        "`eip route` input names a channel, an exchange or an inbound adapter in \
                         `to`: give it a name of its own",
                    ),
                );
            }
            let damaged = damaged.contains(&i);
            let entry = Entry {
                section,
                noun,
                name: &name.value,
            };
            if let Some(plan) = check_adapter(check, names, base_dir, entry, adapter, damaged) {
                plans.push(plan);
            }
        }
    }
    plans
}

/// Where an adapter or bridge is declared, for messages.
#[derive(Clone, Copy)]
struct Entry<'a> {
    section: &'static str,
    noun: &'static str,
    name: &'a str,
}

fn check_adapter(
    check: &mut Check<'_>,
    names: &Names,
    base_dir: &Path,
    entry: Entry<'_>,
    spec: &AdapterSpec,
    damaged: bool,
) -> Option<AdapterPlan> {
    let kind = spec.kind.value;
    let name = entry.name;
    let path = name_path(entry.section, name);
    let settings = Settings {
        path: path.clone(),
        at: spec.at,
        what: format!("`{}` {} `{name}`", kind.as_str(), entry.noun),
        items: &spec.settings,
        damaged,
    };
    if kind.is_bridge() != (entry.section == "bridges") {
        let (here, there) = if kind.is_bridge() {
            ("a messaging bridge", "bridges")
        } else {
            ("a channel adapter", "adapters")
        };
        check.report(
            Problem::new(
                format!("`{}` is {here}: declare it under `{there}:`", kind.as_str()),
                spec.kind.at,
            )
            .with_key(format!("{path}.kind")),
        );
        return None;
    }
    let before = check.problems.len();
    settings.check_keys(check, &adapter_keys(kind));
    let channel_key = if kind.is_inbound() { "to" } else { "from" };
    if !spec.channel.value.is_empty() {
        names.channel(
            check,
            &spec.channel,
            channel_key,
            &format!("{path}.{channel_key}"),
        );
    }
    let config = match kind {
        AdapterKind::FileIn => file_in(check, &settings, base_dir, name).map(AdapterConfig::FileIn),
        AdapterKind::FileOut => file_out(check, &settings, base_dir).map(AdapterConfig::FileOut),
        AdapterKind::HttpIn => http_in(check, &settings),
        AdapterKind::HttpOut => http_out(check, &settings).map(AdapterConfig::HttpOut),
        AdapterKind::SqlIn => sql_in(check, &settings).map(AdapterConfig::SqlIn),
        AdapterKind::SqlOut => sql_out(check, &settings).map(AdapterConfig::SqlOut),
        AdapterKind::RabbitmqIn => rabbitmq_in(check, &settings),
        AdapterKind::RabbitmqOut => rabbitmq_out(check, &settings).map(AdapterConfig::RabbitmqOut),
        AdapterKind::NatsIn => nats_in(check, &settings),
        AdapterKind::NatsOut => nats_out(check, &settings).map(AdapterConfig::NatsOut),
        AdapterKind::MqttIn => mqtt_in(check, &settings),
        AdapterKind::MqttOut => mqtt_out(check, &settings).map(AdapterConfig::MqttOut),
        AdapterKind::RedisIn => redis_in(check, &settings),
        AdapterKind::RedisOut => redis_out(check, &settings).map(AdapterConfig::RedisOut),
    };
    let outbound = if kind.is_inbound() {
        OutboundPlan::default()
    } else {
        outbound(check, &settings, spec)
    };
    let setup = settings
        .list(check, "setup")
        .map(|statements| statements.into_iter().map(|s| s.value).collect())
        .unwrap_or_default();
    if check.problems.len() > before {
        return None;
    }
    Some(AdapterPlan {
        name: name.to_owned(),
        channel: spec.channel.value.clone(),
        config: config?,
        outbound,
        setup,
    })
}

fn outbound(check: &mut Check<'_>, settings: &Settings<'_>, spec: &AdapterSpec) -> OutboundPlan {
    let concurrency = settings
        .whole(check, "concurrency", 1)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let rate_limit = settings.map(check, "rate-limit", RATE).and_then(|rate| {
        let requests = rate.required_whole(check, "requests", 1, "add `requests: N`")?;
        let per = rate.required_duration(check, "per", "add `per: 1s`")?;
        if per.is_zero() {
            rate.report_at(check, "per", "`per` must be longer than zero", None);
            return None;
        }
        Some((requests, per))
    });
    let timeout = settings.duration(check, "timeout");
    let redelivery = spec
        .redelivery
        .as_ref()
        .and_then(|r| redelivery(check, r, &format!("{}.redelivery", settings.path)));
    OutboundPlan {
        concurrency,
        rate_limit,
        timeout,
        redelivery,
    }
}

fn file_in(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    base_dir: &Path,
    name: &str,
) -> Option<eip_adapters::file::FileSourceConfig> {
    let dir = settings.required_path(check, "dir", base_dir, "the directory to watch")?;
    let mut builder = FileSource::builder(dir).name(name);
    if let Some(glob) = settings.text(check, "glob") {
        match FileGlob::parse(&glob.value) {
            Ok(_) => builder = builder.glob(&glob.value),
            Err(e) => settings.report_value(check, "glob", &glob, e.to_string(), None),
        }
    }
    if let Some(mode) = settings.one_of(
        check,
        "mode",
        &[
            ("whole-file", ReadMode::WholeFile),
            ("json-lines", ReadMode::JsonLines),
        ],
    ) {
        builder = builder.mode(mode);
    }
    let done = settings.text(check, "done-dir");
    let delete = settings.boolean(check, "delete-when-done");
    match (done, delete) {
        (Some(done), Some(true)) => settings.report_value(
            check,
            "done-dir",
            &done,
            "`done-dir` and `delete-when-done: true` contradict each other".to_owned(),
            Some("keep one: move accepted files, or delete them"),
        ),
        (Some(done), _) => builder = builder.done_dir(&done.value),
        (None, Some(true)) => builder = builder.delete_when_done(),
        (None, _) => {}
    }
    if let Some(dir) = settings.text(check, "claim-dir") {
        builder = builder.claim_dir(&dir.value);
    }
    if let Some(dir) = settings.text(check, "error-dir") {
        builder = builder.error_dir(&dir.value);
    }
    if let Some(size) = settings.size(check, "max-size") {
        builder = builder.max_size(size);
    }
    if let Some(every) = settings.positive_duration(check, "poll-interval") {
        builder = builder.poll_interval(every);
    }
    if let Some(age) = settings.duration(check, "min-age") {
        builder = builder.min_age(age);
    }
    if let Some(watch) = settings.boolean(check, "watch") {
        builder = builder.watch(watch);
    }
    match builder.build() {
        Ok(config) => Some(config),
        Err(e) => {
            settings.report_entry(check, e.to_string(), None);
            None
        }
    }
}

fn file_out(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    base_dir: &Path,
) -> Option<eip_adapters::file::FileSinkConfig> {
    let dir = settings.required_path(check, "dir", base_dir, "the directory to write into")?;
    let mut builder = FileSink::builder(dir);
    let name = settings.text(check, "name");
    let append = settings.text(check, "append");
    let template =
        |t: &Located<String>, key: &str, check: &mut Check<'_>| match NameTemplate::parse(&t.value)
        {
            Ok(_) => true,
            Err(e) => {
                settings.report_value(
                check,
                key,
                t,
                e.to_string(),
                Some(
                    "a file name relative to `dir`, with `{id}`, `{header.NAME}` and date parts \
                     such as `{yyyy}-{MM}-{dd}`",
                ),
            );
                false
            }
        };
    match (name, append) {
        (Some(name), Some(_)) => settings.report_value(
            check,
            "append",
            &name,
            "`name` and `append` contradict each other".to_owned(),
            Some(
                "`name` writes a file per message, `append` adds JSON lines to one file: keep one",
            ),
        ),
        (Some(name), None) => {
            if template(&name, "name", check) {
                builder = builder.name_template(&name.value);
            }
        }
        (None, Some(append)) => {
            if template(&append, "append", check) {
                builder = builder.append_json_lines(&append.value);
            }
        }
        (None, None) => {}
    }
    if let Some(overwrite) = settings.boolean(check, "overwrite") {
        builder = builder.overwrite(overwrite);
    }
    match builder.build() {
        Ok(config) => Some(config),
        Err(e) => {
            settings.report_entry(check, e.to_string(), None);
            None
        }
    }
}

fn http_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AdapterConfig> {
    let listen = settings.required_text(check, "listen", "add `listen: 127.0.0.1:8080`");
    let address = listen.and_then(|listen| match listen.value.parse::<SocketAddr>() {
        Ok(address) => Some(address),
        Err(_) => {
            settings.report_value(
                check,
                "listen",
                &listen,
                format!("`{}` is not an address and port", listen.value),
                Some("write an IP address and a port: `127.0.0.1:8080`, `0.0.0.0:8080`, `[::1]:8080`"),
            );
            None
        }
    });
    let path = settings
        .required_text(
            check,
            "path",
            "add `path: /orders`, the path that takes POST requests",
        )
        .and_then(|path| {
            if path.value.starts_with('/') {
                Some(path.value)
            } else {
                settings.report_value(
                    check,
                    "path",
                    &path,
                    format!("`path` must start with `/`, found `{}`", path.value),
                    None,
                );
                None
            }
        });
    let mut config = HttpInboundConfig::new(address?, path?);
    if let Some(json) = settings.boolean(check, "json") {
        config.json = json;
    }
    if let Some(limit) = settings.size(check, "body-limit") {
        config.body_limit = usize::try_from(limit).unwrap_or(usize::MAX);
    }
    config.bearer_token_env = settings.env_name(check, "bearer-token-env");
    if let Some(headers) = settings.list(check, "headers") {
        config.copy_headers = headers
            .into_iter()
            .map(|h| h.value.to_lowercase())
            .collect();
    }
    if let Some(d) = settings.positive_duration(check, "header-read-timeout") {
        config.header_read_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "request-timeout") {
        config.request_timeout = d;
    }
    if let Some(d) = settings.duration(check, "accept-wait") {
        config.accept_wait = d;
    }
    if let Some(d) = settings.duration(check, "retry-after") {
        config.retry_after = d;
    }
    if let Some(n) = settings.whole(check, "max-connections", 1) {
        config.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Some(AdapterConfig::HttpIn(config))
}

fn http_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<HttpOutboundConfig> {
    let url = settings
        .required_text(
            check,
            "url",
            "add `url: http://HOST:PORT/PATH`, where `{id}` and `{header.NAME}` are filled from each message",
        )
        .and_then(|url| match UrlTemplate::parse(&url.value) {
            Ok(template) => Some(template),
            Err(e) => {
                settings.report_value(
                    check,
                    "url",
                    &url,
                    format!("invalid `url`: {}", e.reason),
                    Some("an `http://` URL with a host; `{id}` and `{header.NAME}` are filled from each message"),
                );
                None
            }
        });
    let mut config = HttpOutboundConfig::new(url?);
    if let Some(method) = settings.one_of(
        check,
        "method",
        &[("post", OutboundMethod::Post), ("put", OutboundMethod::Put)],
    ) {
        config.method = method;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "request-timeout") {
        config.request_timeout = d;
    }
    config.bearer_token_env = settings.env_name(check, "bearer-token-env");
    if let Some(headers) = settings.list(check, "headers") {
        config.copy_headers = headers.into_iter().map(|h| h.value).collect();
    }
    Some(config)
}

/// The schemes a database URL may have.
const SCHEMES: &[&str] = &[
    "postgres://",
    "postgresql://",
    "mysql://",
    "mariadb://",
    "sqlite:",
];

fn connection(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Connection> {
    let url = settings.required_text(
        check,
        "url",
        "add `url:`, such as `postgres://user@127.0.0.1:5432/db`, `mysql://user@127.0.0.1/db` \
         or `sqlite:data.db`",
    )?;
    let known = SCHEMES.iter().any(|s| url.value.starts_with(s));
    if !known && !url.value.starts_with("${") {
        settings.report_value(
            check,
            "url",
            &url,
            "unknown database: the URL must start with `postgres://`, `mysql://` (or \
             `mariadb://`) or `sqlite:`"
                .to_owned(),
            Some("a URL may name environment variables as `${NAME}` or `${NAME:-default}`"),
        );
        return None;
    }
    let mut connection = Connection::new(url.value);
    if let Some(env) = settings.env_name(check, "password-env") {
        connection = connection.password_env(env);
    }
    if let Some(n) = settings.whole(check, "max-connections", 1) {
        connection = connection.max_connections(u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        connection = connection.connect_timeout(d);
    }
    Some(connection)
}

fn sql_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<SqlInboundConfig> {
    let connection = connection(check, settings);
    let query = settings.required_text(
        check,
        "query",
        "add `query:`, the SELECT that finds the rows to take",
    );
    let done = settings.required_text(
        check,
        "done",
        "add `done:`, the statement that marks a row taken, such as \
         `UPDATE orders SET done = true WHERE id = :id`",
    );
    let mut config = SqlInboundConfig::new(connection?, query?.value, done?.value);
    if let Some(claim) = settings.get("claim") {
        match &claim.value {
            SettingValue::Text(word) if word == "skip-locked" => config.claim = Claim::SkipLocked,
            SettingValue::Map(_) => {
                let columns = settings.map(check, "claim", CLAIM)?;
                let table = columns.required_text(check, "table", "add `table: NAME`");
                let key = columns.required_text(check, "key", "add `key: COLUMN`");
                let mut claim = ClaimColumns::new(table?.value, key?.value);
                if let Some(c) = columns.text(check, "claimed-by") {
                    claim.claimed_by = c.value;
                }
                if let Some(c) = columns.text(check, "claimed-at") {
                    claim.claimed_at = c.value;
                }
                if let Some(d) = columns.positive_duration(check, "timeout") {
                    claim.timeout = d;
                }
                config.claim = Claim::Column(claim);
            }
            other => {
                settings.report_at_value(
                    check,
                    "claim",
                    claim.at,
                    format!(
                        "`claim` must be `skip-locked` or a mapping of claim columns, found {}",
                        describe(other)
                    ),
                    Some(
                        "`skip-locked` (PostgreSQL, MariaDB), or `{table: T, key: ID}` for a \
                         claim column (SQLite)",
                    ),
                );
                return None;
            }
        }
    }
    if let Some(d) = settings.positive_duration(check, "interval") {
        config.interval = d;
    }
    if let Some(n) = settings.whole(check, "max-rows", 1) {
        config.max_rows = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Some(config)
}

fn sql_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<SqlOutboundConfig> {
    let connection = connection(check, settings);
    let statement = settings.required_text(
        check,
        "statement",
        "add `statement:`, such as `INSERT INTO orders (sku, qty) VALUES (:$.sku, :$.qty)`",
    );
    let mut config = SqlOutboundConfig::new(connection?, statement?.value);
    if let Some(n) = settings.whole(check, "batch-size", 1) {
        config = config.batch_size(usize::try_from(n).unwrap_or(usize::MAX));
    }
    Some(config)
}

/// A broker's `url`, which must start with `scheme` (or be a `${VARIABLE}`); `help` shows the
/// form it takes.
pub(super) fn broker_url(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    scheme: &str,
    broker: &str,
    help: &str,
) -> Option<String> {
    let url = settings.required_text(check, "url", &format!("add `url:` like {help}"))?;
    if !url.value.starts_with(scheme) && !url.value.starts_with("${") {
        settings.report_value(
            check,
            "url",
            &url,
            format!("a {broker} URL starts with `{scheme}`"),
            Some(help),
        );
        return None;
    }
    Some(url.value)
}

fn amqp_url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AmqpUrl> {
    let help = "`amqp://USER:PASSWORD@HOST:5672/VHOST` (`%2f` is the default vhost); name the \
                password as `${VARIABLE}`";
    broker_url(check, settings, "amqp://", "RabbitMQ", help).map(AmqpUrl)
}

fn nats_url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<String> {
    let help = "`nats://HOST:4222`, or `nats://USER:PASSWORD@HOST:4222`";
    broker_url(check, settings, "nats://", "NATS", help)
}

fn redis_url(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<String> {
    let help = "`redis://HOST:6379`, or `redis://:PASSWORD@HOST:6379/DB` (plain TCP: no TLS yet)";
    broker_url(check, settings, "redis://", "Redis", help)
}

fn rabbitmq_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AdapterConfig> {
    let url = amqp_url(check, settings);
    let queue = settings.required_text(check, "queue", "add `queue: NAME`, the queue to consume");
    let mut config = AmqpSourceConfig::new(url?.0, queue?.value);
    if let Some(declare) = settings.boolean(check, "declare") {
        config.declare = declare;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    let exchange = settings.text(check, "exchange");
    let keys = settings.list(check, "binding-keys");
    match (exchange, keys) {
        (Some(exchange), keys) => {
            let keys = keys.unwrap_or_else(|| vec![Located::new("#".to_owned())]);
            config.bindings = keys
                .into_iter()
                .map(|key| QueueBinding {
                    exchange: exchange.value.clone(),
                    key: key.value,
                })
                .collect();
        }
        (None, Some(keys)) => {
            if let Some(first) = keys.first() {
                settings.report_value(
                    check,
                    "binding-keys",
                    first,
                    "`binding-keys` without `exchange`: bound to what?".to_owned(),
                    Some("add `exchange: NAME`, the exchange the queue is bound to"),
                );
            }
            return None;
        }
        (None, None) => {}
    }
    let window = settings.window(check, 64);
    Some(AdapterConfig::RabbitmqIn {
        source: config,
        window,
    })
}

fn rabbitmq_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AmqpOutboundConfig> {
    let url = amqp_url(check, settings)?;
    let exchange = settings
        .text(check, "exchange")
        .map_or(String::new(), |e| e.value);
    let mut config = AmqpOutboundConfig::new(url.0, exchange);
    if let Some(key) = settings.text(check, "routing-key") {
        match RoutingKey::parse(&key.value) {
            Ok(routing_key) => config.routing_key = routing_key,
            Err(e) => settings.report_value(
                check,
                "routing-key",
                &key,
                format!("invalid `routing-key`: {e}"),
                Some("a fixed routing key, or `{subject}` for each message's subject"),
            ),
        }
    }
    if let Some(kind) = settings.one_of(
        check,
        "declare-exchange",
        &[
            ("topic", "topic"),
            ("direct", "direct"),
            ("fanout", "fanout"),
            ("headers", "headers"),
        ],
    ) {
        config.declare = Some(ExchangeDeclaration {
            kind: kind.to_owned(),
            durable: settings.boolean(check, "durable").unwrap_or(true),
        });
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "confirm-timeout") {
        config.confirm_timeout = d;
    }
    Some(config)
}

/// The stream: its name, and the subjects to create it with if it is missing.
fn nats_stream(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    required: bool,
) -> Option<Option<StreamDeclaration>> {
    let name = if required {
        Some(settings.required_text(check, "stream", "add `stream: NAME`, the JetStream stream")?)
    } else {
        settings.text(check, "stream")
    };
    let subjects = settings.list(check, "stream-subjects");
    match (name, subjects) {
        (Some(name), Some(subjects)) => Some(Some(StreamDeclaration::new(
            name.value,
            subjects.into_iter().map(|s| s.value),
        ))),
        (Some(name), None) => Some(Some(StreamDeclaration::existing(name.value))),
        (None, Some(subjects)) => {
            if let Some(first) = subjects.first() {
                settings.report_value(
                    check,
                    "stream-subjects",
                    first,
                    "`stream-subjects` without `stream`: the subjects of which stream?".to_owned(),
                    Some("add `stream: NAME`"),
                );
            }
            None
        }
        (None, None) => Some(None),
    }
}

fn nats_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AdapterConfig> {
    let url = nats_url(check, settings);
    let stream = nats_stream(check, settings, true);
    let consumer = settings.required_text(
        check,
        "consumer",
        "add `consumer: NAME`, the durable consumer (bridges with one name share its messages)",
    );
    let mut config = JetStreamSourceConfig::new(url?, stream??, consumer?.value);
    config.filter_subject = settings.text(check, "filter-subject").map(|s| s.value);
    if let Some(d) = settings.positive_duration(check, "ack-wait") {
        config.ack_wait = d;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    let window = settings.window(check, 64);
    Some(AdapterConfig::NatsIn {
        source: config,
        window,
    })
}

fn nats_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<JetStreamOutboundConfig> {
    let url = nats_url(check, settings);
    let stream = nats_stream(check, settings, false);
    let subject = match settings.text(check, "subject") {
        Some(text) => match SubjectTemplate::parse(&text.value) {
            Ok(subject) => Some(subject),
            Err(e) => {
                settings.report_value(
                    check,
                    "subject",
                    &text,
                    format!("invalid `subject`: {e}"),
                    Some("a NATS subject, where `{subject}` is each message's subject"),
                );
                None
            }
        },
        None => SubjectTemplate::parse("{subject}").ok(),
    };
    let mut config = JetStreamOutboundConfig::new(url?, subject?);
    config.stream = stream?;
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "publish-timeout") {
        config.publish_timeout = d;
    }
    Some(config)
}

/// The broker (`url: mqtt://HOST:PORT`) and the client id.
fn mqtt_broker(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<(MqttBroker, String)> {
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

fn mqtt_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AdapterConfig> {
    let broker = mqtt_broker(check, settings);
    let filter = settings.required_text(
        check,
        "filter",
        "add `filter: TOPIC/#`, the topics subscribed to",
    );
    let (broker, client_id) = broker?;
    let mut config = MqttSourceConfig::new(broker, client_id, filter?.value);
    if let Some(d) = settings.positive_duration(check, "session-expiry") {
        config.session_expiry = d;
    }
    let window = settings.window(check, 16);
    Some(AdapterConfig::MqttIn {
        source: config,
        window,
    })
}

fn mqtt_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<MqttOutboundConfig> {
    let broker = mqtt_broker(check, settings);
    let topic = match settings.text(check, "topic") {
        Some(text) => match TopicTemplate::parse(&text.value) {
            Ok(topic) => Some(topic),
            Err(e) => {
                settings.report_value(
                    check,
                    "topic",
                    &text,
                    format!("invalid `topic`: {e}"),
                    Some("an MQTT topic, where `{subject}` is each message's subject with its dots as slashes"),
                );
                None
            }
        },
        None => TopicTemplate::parse("{subject}").ok(),
    };
    let (broker, client_id) = broker?;
    let mut config = MqttOutboundConfig::new(broker, client_id, topic?);
    if let Some(retain) = settings.boolean(check, "retain") {
        config.retain = retain;
    }
    if let Some(d) = settings.positive_duration(check, "ack-timeout") {
        config.ack_timeout = d;
    }
    if let Some(n) = settings.whole(check, "in-flight", 1) {
        config.in_flight = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Some(config)
}

fn redis_in(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<AdapterConfig> {
    let url = redis_url(check, settings);
    let stream = settings.required_text(check, "stream", "add `stream: KEY`, the stream read");
    let group = settings.required_text(check, "group", "add `group: NAME`, the consumer group");
    let consumer = settings.required_text(
        check,
        "consumer",
        "add `consumer: NAME`, fixed and the bridge's own (its pending entries come back to it)",
    );
    let mut config =
        RedisStreamSourceConfig::new(url?, stream?.value, group?.value, consumer?.value);
    if let Some(d) = settings.positive_duration(check, "claim-idle") {
        config.claim_idle = Some(d);
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    let window = settings.window(check, 64);
    Some(AdapterConfig::RedisIn {
        source: config,
        window,
    })
}

fn redis_out(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<RedisStreamOutboundConfig> {
    let url = redis_url(check, settings);
    let stream = settings
        .required_text(
            check,
            "stream",
            "add `stream: KEY`; `{subject}` is each message's subject",
        )
        .and_then(|text| match StreamKey::parse(&text.value) {
            Ok(key) => Some(key),
            Err(e) => {
                settings.report_value(
                    check,
                    "stream",
                    &text,
                    format!("invalid `stream`: {e}"),
                    None,
                );
                None
            }
        });
    let mut config = RedisStreamOutboundConfig::new(url?, stream?);
    if let Some(n) = settings.whole(check, "max-len", 1) {
        config.max_len = Some(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    Some(config)
}

fn describe(value: &SettingValue) -> String {
    match value {
        SettingValue::Text(s) => format!("`{s}`"),
        SettingValue::Number(n) => format!("`{n}`"),
        other => other.describe().to_owned(),
    }
}

/// The settings of one adapter (or one mapping inside it), read by key with their type.
pub(super) struct Settings<'a> {
    /// The key path of the entry (`adapters.orders-in`, `adapters.db.claim`).
    pub(super) path: String,
    /// Where the entry starts.
    pub(super) at: Option<Position>,
    /// The entry, for messages: "`file-in` adapter `incoming`".
    pub(super) what: String,
    pub(super) items: &'a [Setting],
    /// The reading step reported problems in this entry: a required key that is missing may
    /// be one written with a misspelt key, already reported.
    pub(super) damaged: bool,
}

impl<'a> Settings<'a> {
    pub(super) fn get(&self, key: &str) -> Option<&'a Located<SettingValue>> {
        self.items
            .iter()
            .find(|s| s.key.value == key)
            .map(|s| &s.value)
    }

    fn key(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// Unknown keys (only possible in a flow made in code: the reader drops them).
    pub(super) fn check_keys(&self, check: &mut Check<'_>, allowed: &[&str]) {
        for setting in self.items {
            let key = setting.key.value.as_str();
            if !allowed.contains(&key) {
                check.report(
                    Problem::new(
                        format!("unknown key `{key}` in {}", self.what),
                        setting.key.at,
                    )
                    .with_key(self.key(key))
                    .with_help(suggest_key(key, allowed)),
                );
            }
        }
    }

    pub(super) fn report_entry(&self, check: &mut Check<'_>, message: String, help: Option<&str>) {
        check.report(
            Problem::new(format!("{}: {message}", self.what), self.at)
                .with_key(self.path.as_str())
                .with_help_opt(help.map(str::to_owned)),
        );
    }

    pub(super) fn report_value(
        &self,
        check: &mut Check<'_>,
        key: &str,
        value: &Located<String>,
        message: String,
        help: Option<&str>,
    ) {
        self.report_at_value(check, key, value.at, message, help);
    }

    fn report_at_value(
        &self,
        check: &mut Check<'_>,
        key: &str,
        at: Option<Position>,
        message: String,
        help: Option<&str>,
    ) {
        check.report(
            Problem::new(message, at)
                .with_key(self.key(key))
                .with_help_opt(help.map(str::to_owned)),
        );
    }

    pub(super) fn report_at(
        &self,
        check: &mut Check<'_>,
        key: &str,
        message: &str,
        help: Option<&str>,
    ) {
        let at = self.get(key).and_then(|v| v.at).or(self.at);
        self.report_at_value(check, key, at, message.to_owned(), help);
    }

    fn wrong_type(&self, check: &mut Check<'_>, key: &str, expected: &str) {
        if let Some(value) = self.get(key) {
            let message = format!(
                "`{key}` must be {expected}, found {}",
                value.value.describe()
            );
            self.report_at_value(check, key, value.at, message, None);
        }
    }

    fn missing(&self, check: &mut Check<'_>, key: &str, help: &str) {
        if self.damaged {
            return;
        }
        check.report(
            Problem::new(format!("{} has no `{key}`", self.what), self.at)
                .with_key(self.key(key))
                .with_help(help),
        );
    }

    /// A string (a number written without quotes counts, as written).
    pub(super) fn text(&self, check: &mut Check<'_>, key: &str) -> Option<Located<String>> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::Text(s) | SettingValue::Number(s) => Some(Located {
                value: s.clone(),
                at: value.at,
            }),
            _ => {
                self.wrong_type(check, key, "a string");
                None
            }
        }
    }

    pub(super) fn required_text(
        &self,
        check: &mut Check<'_>,
        key: &str,
        help: &str,
    ) -> Option<Located<String>> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        let text = self.text(check, key)?;
        if text.value.trim().is_empty() {
            self.report_value(check, key, &text, format!("`{key}` is empty"), Some(help));
            return None;
        }
        Some(text)
    }

    /// A path relative to `base_dir`.
    fn required_path(
        &self,
        check: &mut Check<'_>,
        key: &str,
        base_dir: &Path,
        what: &str,
    ) -> Option<std::path::PathBuf> {
        let help = format!("add `{key}:`, {what}, relative to the flow file's directory");
        let text = self.required_text(check, key, &help)?;
        if text.value.contains('\0') {
            self.report_value(
                check,
                key,
                &text,
                format!("`{key}` holds a NUL character"),
                None,
            );
            return None;
        }
        Some(base_dir.join(&text.value))
    }

    /// The name of an environment variable (read when the adapter starts).
    fn env_name(&self, check: &mut Check<'_>, key: &str) -> Option<String> {
        let name = self.text(check, key)?;
        let valid = !name.value.is_empty()
            && !name.value.starts_with(|c: char| c.is_ascii_digit())
            && name
                .value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.report_value(
                check,
                key,
                &name,
                format!("`{}` is not an environment variable name", name.value),
                Some("name the variable that holds the secret, such as `ORDERS_TOKEN`; never the secret itself"),
            );
            return None;
        }
        Some(name.value)
    }

    fn boolean(&self, check: &mut Check<'_>, key: &str) -> Option<bool> {
        match &self.get(key)?.value {
            SettingValue::Bool(b) => Some(*b),
            _ => {
                self.wrong_type(check, key, "`true` or `false`");
                None
            }
        }
    }

    /// `window:` of an inbound bridge: deliveries unacknowledged at most, `default` when not
    /// written.
    fn window(&self, check: &mut Check<'_>, default: usize) -> usize {
        self.whole(check, "window", 1)
            .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub(super) fn whole(&self, check: &mut Check<'_>, key: &str, min: u64) -> Option<u64> {
        let value = self.get(key)?;
        let SettingValue::Number(text) = &value.value else {
            self.wrong_type(check, key, "a whole number");
            return None;
        };
        match text.parse::<u64>() {
            Ok(n) if n >= min => Some(n),
            _ => {
                let message =
                    format!("`{key}` must be a whole number of at least {min}, found {text}");
                self.report_at_value(check, key, value.at, message, None);
                None
            }
        }
    }

    fn required_whole(
        &self,
        check: &mut Check<'_>,
        key: &str,
        min: u64,
        help: &str,
    ) -> Option<u64> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        self.whole(check, key, min)
    }

    pub(super) fn duration(&self, check: &mut Check<'_>, key: &str) -> Option<Duration> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::Text(text) => {
                let text = Located {
                    value: text.clone(),
                    at: value.at,
                };
                duration(check, &text, &self.key(key))
            }
            SettingValue::Number(n) => {
                let message = format!("`{key}` must be a duration such as `30s`, found {n}");
                self.report_at_value(
                    check,
                    key,
                    value.at,
                    message,
                    Some(&format!("`{n}` has no unit (`{n}s`?)")),
                );
                None
            }
            _ => {
                self.wrong_type(check, key, "a duration such as `30s`");
                None
            }
        }
    }

    fn positive_duration(&self, check: &mut Check<'_>, key: &str) -> Option<Duration> {
        let d = self.duration(check, key)?;
        if d.is_zero() {
            self.report_at(
                check,
                key,
                &format!("`{key}` must be longer than zero"),
                None,
            );
            return None;
        }
        Some(d)
    }

    fn required_duration(&self, check: &mut Check<'_>, key: &str, help: &str) -> Option<Duration> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        self.duration(check, key)
    }

    fn size(&self, check: &mut Check<'_>, key: &str) -> Option<u64> {
        let value = self.get(key)?;
        let (SettingValue::Text(text) | SettingValue::Number(text)) = &value.value else {
            self.wrong_type(check, key, "a size such as `1 MiB`, or a number of bytes");
            return None;
        };
        match parse_byte_size(text) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                check.report(
                    Problem::new(format!("invalid `{key}`: {e}"), value.at)
                        .with_key(self.key(key))
                        .with_help(e.help()),
                );
                None
            }
        }
    }

    fn list(&self, check: &mut Check<'_>, key: &str) -> Option<Vec<Located<String>>> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::List(items) => Some(items.clone()),
            SettingValue::Text(s) => Some(vec![Located {
                value: s.clone(),
                at: value.at,
            }]),
            _ => {
                self.wrong_type(check, key, "a list of names");
                None
            }
        }
    }

    fn one_of<T: Copy>(
        &self,
        check: &mut Check<'_>,
        key: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let text = self.text(check, key)?;
        if let Some((_, value)) = choices.iter().find(|(word, _)| *word == text.value) {
            return Some(*value);
        }
        let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
        self.report_value(
            check,
            key,
            &text,
            format!("`{key}` can not be `{}`", text.value),
            Some(&suggest_key(&text.value, &words)),
        );
        None
    }

    /// A mapping under `key`, its keys checked against `allowed`.
    pub(super) fn map(
        &self,
        check: &mut Check<'_>,
        key: &str,
        allowed: &[&str],
    ) -> Option<Settings<'a>> {
        let value = self.get(key)?;
        let SettingValue::Map(items) = &value.value else {
            self.wrong_type(check, key, "a mapping");
            return None;
        };
        let inner = Settings {
            path: self.key(key),
            at: value.at,
            what: format!("`{key}` of {}", self.what),
            items,
            damaged: self.damaged,
        };
        let before = check.problems.len();
        inner.check_keys(check, allowed);
        (check.problems.len() == before).then_some(inner)
    }
}
