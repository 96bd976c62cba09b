//! The flow-file format: the node tree of a document read into a [`FlowSpec`].
//!
//! Every level is strict: an unknown key is a problem (with the closest valid key), and so is
//! a key written twice, a value of the wrong type, or a missing required key. An entry that
//! can not be read whole is kept as far as it could be read, and [`Damage`] records it so
//! validation does not report what follows from the reading problem (an "unknown channel" for
//! a channel whose `kind` was misspelt).

use super::adapters::read_adapter;
use super::node::{Node, Value};
use super::read::Reader;
use super::routes::{read_join, read_route};
use crate::diagnostic::Damage;
use crate::diagnostic::Problem;
use crate::diagnostic::{field_path, index_path, name_path};
use crate::spec::{
    AdminSpec, BindingSpec, ChannelSpec, ExchangeSpec, FlowSpec, KindSpec, Located, OverflowSpec,
    RedeliverySpec, StoreSpec,
};

const TOP: &[&str] = &[
    "channels",
    "routes",
    "joins",
    "exchanges",
    "store",
    "adapters",
    "bridges",
    "history",
    "admin",
];
const CHANNEL: &[&str] = &[
    "kind",
    "capacity",
    "datatype",
    "invalid",
    "dead-letter",
    "time-to-live",
    "redelivery",
    "overflow",
    "durable",
    "store",
];
const REDELIVERY: &[&str] = &[
    "max-attempts",
    "initial-backoff",
    "max-backoff",
    "multiplier",
    "jitter",
];
const STORE: &[&str] = &["path", "max-bytes"];
const ADMIN: &[&str] = &["listen", "token"];
const EXCHANGE: &[&str] = &["alternate", "bindings"];
const BINDING: &[&str] = &["key", "to"];

const DURATION_HELP: &str = "a duration is a whole number and a unit: `500ms`, `30s`, `5m`, `1h`";

/// Reads the document `root` into a flow, recording what could not be read.
pub(crate) fn read_flow(reader: &mut Reader<'_>, root: &Node) -> (FlowSpec, Damage) {
    let mut flow = FlowSpec::default();
    let mut damage = Damage::default();
    if root.value == Value::Null {
        return (flow, damage);
    }
    let Value::Map(_) = root.value else {
        let problem = Problem::new(
            format!(
                "a flow file is a mapping with the keys `channels`, `routes`, `joins` and \
                 `exchanges`; found {}",
                root.value.describe()
            ),
            Some(reader.pos(root)),
        );
        reader.report(problem);
        damage.all_names = true;
        return (flow, damage);
    };
    let Some(top) = reader.fields(root, "flow", "", "the flow file", TOP) else {
        return (flow, damage);
    };
    if let Some(node) = top.get("history") {
        flow.history = reader.boolean(node, "history", "history");
    }
    if let Some((key, node)) = top.entry("store") {
        flow.store = read_store(reader, key, node);
    }
    if let Some((key, node)) = top.entry("admin") {
        flow.admin = read_admin(reader, key, node);
    }
    if let Some(node) = top.get("channels") {
        read_channels(reader, node, &mut flow, &mut damage);
    }
    if let Some(node) = top.get("exchanges") {
        read_exchanges(reader, node, &mut flow, &mut damage);
    }
    for (section, bridges) in [("adapters", false), ("bridges", true)] {
        if let Some(node) = top.get(section) {
            read_adapters(reader, node, section, bridges, &mut flow, &mut damage);
        }
    }
    if let Some(node) = top.get("routes") {
        read_list(reader, node, "routes", |reader, i, item| {
            let before = reader.problems.len();
            let route = read_route(reader, item, i, &mut damage);
            if reader.problems.len() > before {
                damage.routes.insert(i);
            }
            flow.routes.push(route);
        });
    }
    if let Some(node) = top.get("joins") {
        read_list(reader, node, "joins", |reader, i, item| {
            let before = reader.problems.len();
            let join = read_join(reader, item, i, &mut damage);
            if reader.problems.len() > before {
                damage.joins.insert(i);
            }
            flow.joins.push(join);
        });
    }
    (flow, damage)
}

/// `channels:`. A channel that can not be read at all is left out and its name recorded, so
/// what names it is not reported again; one read in part is kept and marked damaged.
fn read_channels(reader: &mut Reader<'_>, node: &Node, flow: &mut FlowSpec, damage: &mut Damage) {
    read_named(
        reader,
        node,
        "channels",
        damage,
        |reader, name, key, value, damage| {
            let index = flow.channels.len();
            let before = reader.problems.len();
            match read_channel(reader, key, value, &name.value) {
                Some(channel) => {
                    flow.channels.push((name, channel));
                    if reader.problems.len() > before {
                        damage.channels.insert(index);
                    }
                }
                None => {
                    damage.names.insert(name.value);
                }
            }
        },
    );
}

/// `exchanges:`, each kept (an exchange has no required key) and marked damaged if need be.
fn read_exchanges(reader: &mut Reader<'_>, node: &Node, flow: &mut FlowSpec, damage: &mut Damage) {
    read_named(
        reader,
        node,
        "exchanges",
        damage,
        |reader, name, key, value, damage| {
            let index = flow.exchanges.len();
            let before = reader.problems.len();
            let exchange = read_exchange(reader, key, value, &name.value);
            flow.exchanges.push((name, exchange));
            if reader.problems.len() > before {
                damage.exchanges.insert(index);
            }
        },
    );
}

/// `adapters:` or (with `bridges`) `bridges:`: the same entries, in their own lists.
fn read_adapters(
    reader: &mut Reader<'_>,
    node: &Node,
    section: &str,
    bridges: bool,
    flow: &mut FlowSpec,
    damage: &mut Damage,
) {
    let list = if bridges {
        &mut flow.bridges
    } else {
        &mut flow.adapters
    };
    read_named(
        reader,
        node,
        section,
        damage,
        |reader, name, key, value, damage| {
            let index = list.len();
            let before = reader.problems.len();
            if let Some(adapter) = read_adapter(reader, key, value, &name.value, bridges, damage) {
                list.push((name, adapter));
                if reader.problems.len() > before {
                    let damaged = if bridges {
                        &mut damage.bridges
                    } else {
                        &mut damage.adapters
                    };
                    damaged.insert(index);
                }
            }
        },
    );
}

/// A mapping of names to entries (`channels`, `exchanges`); nothing (`channels:`) is empty.
pub(super) fn read_named(
    reader: &mut Reader<'_>,
    node: &Node,
    section: &str,
    damage: &mut Damage,
    mut each: impl FnMut(&mut Reader<'_>, Located<String>, &Node, &Node, &mut Damage),
) {
    let entries = match &node.value {
        Value::Null => return,
        Value::Map(entries) => entries,
        _ => {
            reader.wrong_type(node, section, section, "a mapping of names to entries");
            damage.all_names = true;
            return;
        }
    };
    for (key, value) in entries {
        let Some(name) = reader.scalar_text(key) else {
            let problem = Problem::new(
                format!(
                    "a name under `{section}` must be a word, found {}",
                    key.value.describe()
                ),
                Some(reader.pos(key)),
            )
            .with_key(section);
            reader.report(problem);
            damage.all_names = true;
            continue;
        };
        let name = Located::at(name, reader.pos(key));
        each(reader, name, key, value, damage);
    }
}

/// A list of entries (`routes`, `joins`); nothing is empty.
fn read_list(
    reader: &mut Reader<'_>,
    node: &Node,
    section: &str,
    mut each: impl FnMut(&mut Reader<'_>, usize, &Node),
) {
    match &node.value {
        Value::Null => {}
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                each(reader, i, item);
            }
        }
        _ => reader.wrong_type(node, section, section, "a list"),
    }
}

fn read_channel(
    reader: &mut Reader<'_>,
    key: &Node,
    node: &Node,
    name: &str,
) -> Option<ChannelSpec> {
    let path = name_path("channels", name);
    let what = format!("channel `{name}`");
    let at = reader.pos(key);
    if node.value == Value::Null {
        reader.missing(at, &what, "kind", &path, KIND_HELP);
        return None;
    }
    let fields = reader.fields(node, name, &path, &what, CHANNEL)?;
    let p = |k: &str| field_path(&path, k);
    let kind = match fields.get("kind") {
        Some(v) => reader.one_of(
            v,
            "kind",
            &p("kind"),
            &[
                ("point-to-point", KindSpec::PointToPoint),
                ("publish-subscribe", KindSpec::PublishSubscribe),
            ],
        ),
        None => {
            reader.missing(at, &what, "kind", &path, KIND_HELP);
            None
        }
    };
    let mut channel = ChannelSpec::new(kind?, Some(at));
    if let Some(v) = fields.get("capacity") {
        channel.capacity = reader.whole(v, "capacity", &p("capacity"), 1);
    }
    if let Some(v) = fields.get("datatype") {
        channel.datatype = reader.string(v, "datatype", &p("datatype"));
    }
    if let Some(v) = fields.get("invalid") {
        channel.invalid = reader.name(v, "invalid", &p("invalid"));
    }
    if let Some(v) = fields.get("dead-letter") {
        channel.dead_letter = reader.name(v, "dead-letter", &p("dead-letter"));
    }
    if let Some(v) = fields.get("time-to-live") {
        channel.time_to_live = duration(reader, v, "time-to-live", &p("time-to-live"));
    }
    if let Some((k, v)) = fields.entry("redelivery") {
        channel.redelivery = read_redelivery(reader, k, v, &p("redelivery"), name);
    }
    if let Some(v) = fields.get("overflow") {
        channel.overflow = reader.one_of(
            v,
            "overflow",
            &p("overflow"),
            &[
                ("backpressure", OverflowSpec::Backpressure),
                ("drop-oldest", OverflowSpec::DropOldest),
            ],
        );
    }
    if let Some(v) = fields.get("durable") {
        channel.durable = reader.boolean(v, "durable", &p("durable"));
    }
    if let Some((k, v)) = fields.entry("store") {
        channel.store = Some(super::adapters::setting(reader, k, v));
    }
    Some(channel)
}

/// `store:`; nothing after it (`store:`) is a store with every key left to its default.
fn read_store(reader: &mut Reader<'_>, key: &Node, node: &Node) -> Option<StoreSpec> {
    let mut store = StoreSpec {
        at: Some(reader.pos(key)),
        ..StoreSpec::default()
    };
    if node.value == Value::Null {
        return Some(store);
    }
    let fields = reader.fields(node, "store", "store", "`store`", STORE)?;
    if let Some(v) = fields.get("path") {
        store.path = reader.string(v, "path", "store.path");
    }
    if let Some(v) = fields.get("max-bytes") {
        store.max_bytes = byte_size(reader, v, "max-bytes", "store.max-bytes");
    }
    Some(store)
}

/// `admin:`; nothing after it (`admin:`) is a server with every key left to its default.
fn read_admin(reader: &mut Reader<'_>, key: &Node, node: &Node) -> Option<AdminSpec> {
    let mut admin = AdminSpec {
        at: Some(reader.pos(key)),
        ..AdminSpec::default()
    };
    if node.value == Value::Null {
        return Some(admin);
    }
    let fields = reader.fields(node, "admin", "admin", "`admin`", ADMIN)?;
    if let Some(v) = fields.get("listen") {
        admin.listen = reader.string(v, "listen", "admin.listen");
    }
    if let Some(v) = fields.get("token") {
        admin.token = reader.string(v, "token", "admin.token");
    }
    Some(admin)
}

/// A size: a whole number of bytes (kept as its decimal digits) or a string with a unit.
fn byte_size(
    reader: &mut Reader<'_>,
    node: &Node,
    key: &str,
    path: &str,
) -> Option<Located<String>> {
    let at = reader.pos(node);
    match &node.value {
        Value::Str(s) => Some(Located::at(s.clone(), at)),
        Value::Int(n) => Some(Located::at(n.to_string(), at)),
        Value::Float(_) => Some(Located::at(reader.text(at).trim().to_owned(), at)),
        _ => {
            reader.wrong_type(
                node,
                key,
                path,
                "a size such as `512 MiB`, or a number of bytes",
            );
            None
        }
    }
}

const KIND_HELP: &str = "add `kind: point-to-point` (a queue: each message to one consumer) or \
                         `kind: publish-subscribe` (each message to every subscriber)";

fn duration(
    reader: &mut Reader<'_>,
    node: &Node,
    key: &str,
    path: &str,
) -> Option<Located<String>> {
    if let Value::Str(s) = &node.value {
        return Some(Located::at(s.clone(), reader.pos(node)));
    }
    reader.wrong_type(node, key, path, "a duration such as `30s`");
    if let Some(last) = reader.problems.last_mut() {
        last.help = Some(match node.value {
            Value::Int(n) => format!("{DURATION_HELP}; `{n}` has no unit (`{n}s`?)"),
            _ => DURATION_HELP.to_owned(),
        });
    }
    None
}

pub(super) fn read_redelivery(
    reader: &mut Reader<'_>,
    key: &Node,
    node: &Node,
    path: &str,
    channel: &str,
) -> Option<RedeliverySpec> {
    let what = format!("`redelivery` of channel `{channel}`");
    let fields = reader.fields(node, "redelivery", path, &what, REDELIVERY)?;
    let p = |k: &str| field_path(path, k);
    let mut spec = RedeliverySpec {
        at: Some(reader.pos(key)),
        ..RedeliverySpec::default()
    };
    if let Some(v) = fields.get("max-attempts") {
        spec.max_attempts = reader.whole(v, "max-attempts", &p("max-attempts"), 1);
    }
    if let Some(v) = fields.get("initial-backoff") {
        spec.initial_backoff = duration(reader, v, "initial-backoff", &p("initial-backoff"));
    }
    if let Some(v) = fields.get("max-backoff") {
        spec.max_backoff = duration(reader, v, "max-backoff", &p("max-backoff"));
    }
    if let Some(v) = fields.get("multiplier") {
        spec.multiplier = reader.float(v, "multiplier", &p("multiplier"));
    }
    if let Some(v) = fields.get("jitter") {
        spec.jitter = reader.float(v, "jitter", &p("jitter"));
    }
    Some(spec)
}

fn read_exchange(reader: &mut Reader<'_>, key: &Node, node: &Node, name: &str) -> ExchangeSpec {
    let path = name_path("exchanges", name);
    let mut exchange = ExchangeSpec {
        at: Some(reader.pos(key)),
        ..ExchangeSpec::default()
    };
    if node.value == Value::Null {
        return exchange;
    }
    let what = format!("exchange `{name}`");
    let Some(fields) = reader.fields(node, name, &path, &what, EXCHANGE) else {
        return exchange;
    };
    if let Some(v) = fields.get("alternate") {
        exchange.alternate = reader.name(v, "alternate", &field_path(&path, "alternate"));
    }
    if let Some(v) = fields.get("bindings") {
        let path = field_path(&path, "bindings");
        match &v.value {
            Value::Null => {}
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(binding) =
                        read_binding(reader, item, &index_path(&path, i), i, name)
                    {
                        exchange.bindings.push(binding);
                    }
                }
            }
            _ => reader.wrong_type(
                v,
                "bindings",
                &path,
                "a list of `{key: PATTERN, to: NAMES}`",
            ),
        }
    }
    exchange
}

fn read_binding(
    reader: &mut Reader<'_>,
    node: &Node,
    path: &str,
    i: usize,
    exchange: &str,
) -> Option<BindingSpec> {
    let what = format!("binding {} of exchange `{exchange}`", i + 1);
    let fields = reader.fields(node, "bindings[]", path, &what, BINDING)?;
    let at = reader.pos(node);
    let mut key = None;
    if let Some(v) = fields.get("key") {
        key = match reader.scalar_text(v) {
            Some(pattern) => Some(Located::at(pattern, reader.pos(v))),
            None => {
                reader.wrong_type(v, "key", &field_path(path, "key"), "a topic pattern");
                if v.value == Value::Null
                    && let Some(last) = reader.problems.last_mut()
                {
                    last.help = Some(
                        "in YAML `#` starts a comment: quote it (`key: \"#\"`), or leave \
                             `key` out to match every subject"
                            .to_owned(),
                    );
                }
                None
            }
        };
    }
    let to = match fields.get("to") {
        Some(v) => reader.names(v, "to", &field_path(path, "to"))?,
        None => {
            reader.missing(
                at,
                &what,
                "to",
                path,
                "add `to: [CHANNEL, ...]`, where matching messages go",
            );
            return None;
        }
    };
    Some(BindingSpec {
        at: Some(at),
        key,
        to,
    })
}
