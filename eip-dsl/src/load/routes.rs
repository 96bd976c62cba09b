//! Reading the parts of a flow that move messages: routes (with their choices and recipient
//! lists) and joins.

use super::node::{Node, Value};
use super::read::{Fields, Reader};
use crate::diagnostic::Damage;
use crate::diagnostic::{field_path, index_path};
use crate::spec::{
    JoinSpec, LoadBalanceSpec, Located, Position, RecipientsSpec, RouteSpec, WhenSpec,
};

const ROUTE: &[&str] = &[
    "name",
    "from",
    "filter",
    "discard",
    "wire-tap",
    "steps",
    "to",
    "choice",
    "otherwise",
    "recipient-list",
    "load-balance",
    "on-error",
    "concurrency",
];
const LOAD_BALANCE: &[&str] = &["to", "strategy"];
const WHEN: &[&str] = &["when", "to"];
const HEADER: &[&str] = &["header"];
const JOIN: &[&str] = &["from", "to", "filter", "hops", "archival"];

/// A placeholder for a required name that could not be read; validation leaves it alone.
fn placeholder(damage: &mut Damage) -> Located<String> {
    damage.names.insert(String::new());
    Located::new(String::new())
}

/// A name the entry must have: read from `fields`, or reported missing. When it is missing or
/// unreadable, a placeholder stands in so later checks do not report it again.
#[allow(clippy::too_many_arguments)]
pub(super) fn required_name(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    at: Position,
    what: &str,
    path: &str,
    key: &str,
    help: &str,
    damage: &mut Damage,
) -> Located<String> {
    let read = match fields.get(key) {
        Some(v) => reader.name(v, key, &field_path(path, key)),
        None => {
            reader.missing(at, what, key, path, help);
            None
        }
    };
    read.unwrap_or_else(|| placeholder(damage))
}

pub(super) fn read_route(
    reader: &mut Reader<'_>,
    node: &Node,
    i: usize,
    damage: &mut Damage,
) -> RouteSpec {
    let path = index_path("routes", i);
    let what = format!("route {}", i + 1);
    let at = reader.pos(node);
    let mut route = RouteSpec::new(Located::new(String::new()), Some(at));
    let Some(fields) = reader.fields(node, "routes[]", &path, &what, ROUTE) else {
        route.from = placeholder(damage);
        return route;
    };
    let p = |k: &str| field_path(&path, k);
    if let Some(v) = fields.get("name") {
        route.name = reader.name(v, "name", &p("name"));
    }
    route.from = required_name(
        reader,
        &fields,
        at,
        &what,
        &path,
        "from",
        "add `from: CHANNEL`, the channel it consumes",
        damage,
    );
    if let Some(v) = fields.get("filter") {
        route.filter = reader.string(v, "filter", &p("filter"));
    }
    if let Some(v) = fields.get("discard") {
        route.discard = reader.name(v, "discard", &p("discard"));
    }
    if let Some(v) = fields.get("wire-tap") {
        route.wire_tap = reader.name(v, "wire-tap", &p("wire-tap"));
    }
    if let Some(v) = fields.get("steps") {
        route.steps = super::steps::read_steps(reader, v, &p("steps"));
    }
    if let Some(v) = fields.get("to") {
        route.to = reader.names(v, "to", &p("to"));
    }
    if let Some(v) = fields.get("choice") {
        route.choice = read_choice(reader, v, &p("choice"));
    }
    if let Some(v) = fields.get("otherwise") {
        route.otherwise = reader.name(v, "otherwise", &p("otherwise"));
    }
    if let Some(v) = fields.get("recipient-list") {
        route.recipient_list = read_recipients(reader, v, &p("recipient-list"));
    }
    if let Some(v) = fields.get("load-balance") {
        route.load_balance = read_load_balance(reader, v, &p("load-balance"));
    }
    if let Some(v) = fields.get("on-error") {
        route.on_error = Some(Located::at(
            super::adapters::setting_value(reader, v),
            reader.pos(v),
        ));
    }
    if let Some(v) = fields.get("concurrency") {
        route.concurrency = reader.number(v, "concurrency", &p("concurrency"));
    }
    route
}

/// `load-balance:` a list of names, or `{to: NAMES, strategy: STRATEGY}`.
fn read_load_balance(
    reader: &mut Reader<'_>,
    node: &Node,
    path: &str,
) -> Option<Located<LoadBalanceSpec>> {
    let at = reader.pos(node);
    let (to, strategy) = match &node.value {
        Value::Seq(_) => (reader.names(node, "load-balance", path)?, None),
        Value::Map(_) => {
            let what = "`load-balance`";
            let fields = reader.fields(node, "load-balance", path, what, LOAD_BALANCE)?;
            let strategy = match fields.get("strategy") {
                Some(v) => reader.string(v, "strategy", &field_path(path, "strategy")),
                None => None,
            };
            let Some(v) = fields.get("to") else {
                reader.missing(
                    at,
                    what,
                    "to",
                    path,
                    "add `to: [CHANNEL, ...]`, the targets that share the messages",
                );
                return None;
            };
            (reader.names(v, "to", &field_path(path, "to"))?, strategy)
        }
        _ => {
            reader.wrong_type(
                node,
                "load-balance",
                path,
                "a list of names or `{to: [NAME, ...], strategy: round-robin}`",
            );
            return None;
        }
    };
    Some(Located::at(LoadBalanceSpec { to, strategy }, at))
}

fn read_choice(reader: &mut Reader<'_>, node: &Node, path: &str) -> Option<Located<Vec<WhenSpec>>> {
    let Value::Seq(items) = &node.value else {
        reader.wrong_type(
            node,
            "choice",
            path,
            "a list of `{when: PREDICATE, to: NAME}`",
        );
        return None;
    };
    let mut clauses = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index_path(path, i);
        let what = format!("`choice` clause {}", i + 1);
        let Some(fields) = reader.fields(item, "choice[]", &path, &what, WHEN) else {
            continue;
        };
        let at = reader.pos(item);
        let when = match fields.get("when") {
            Some(v) => reader.string(v, "when", &field_path(&path, "when")),
            None => {
                reader.missing(
                    at,
                    &what,
                    "when",
                    &path,
                    "add `when: PREDICATE`, e.g. `when: '$.side == \"buy\"'`",
                );
                None
            }
        };
        let to = match fields.get("to") {
            Some(v) => reader.name(v, "to", &field_path(&path, "to")),
            None => {
                reader.missing(
                    at,
                    &what,
                    "to",
                    &path,
                    "add `to: NAME`, the channel or exchange a matching message goes to",
                );
                None
            }
        };
        if let (Some(when), Some(to)) = (when, to) {
            clauses.push(WhenSpec {
                at: Some(at),
                when,
                to,
            });
        }
    }
    Some(Located::at(clauses, reader.pos(node)))
}

fn read_recipients(
    reader: &mut Reader<'_>,
    node: &Node,
    path: &str,
) -> Option<Located<RecipientsSpec>> {
    let at = reader.pos(node);
    match &node.value {
        Value::Seq(items) => {
            let names = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| reader.name(item, "recipient-list", &index_path(path, i)))
                .collect();
            Some(Located::at(RecipientsSpec::Fixed(names), at))
        }
        Value::Map(_) => {
            let fields = reader.fields(node, "recipient-list", path, "`recipient-list`", HEADER)?;
            match fields.get("header") {
                Some(v) => {
                    let header = reader.string(v, "header", &field_path(path, "header"))?;
                    Some(Located::at(RecipientsSpec::Header(header), at))
                }
                None => {
                    reader.missing(
                        at,
                        "`recipient-list`",
                        "header",
                        path,
                        "write a list of names, or `{header: HEADER-NAME}`",
                    );
                    None
                }
            }
        }
        _ => {
            reader.wrong_type(
                node,
                "recipient-list",
                path,
                "a list of names or `{header: NAME}`",
            );
            None
        }
    }
}

pub(super) fn read_join(
    reader: &mut Reader<'_>,
    node: &Node,
    i: usize,
    damage: &mut Damage,
) -> JoinSpec {
    let path = index_path("joins", i);
    let what = format!("join {}", i + 1);
    let at = reader.pos(node);
    let mut join = JoinSpec {
        at: Some(at),
        from: Located::new(String::new()),
        to: Located::new(String::new()),
        filter: None,
        hops: None,
        archival: None,
    };
    let Some(fields) = reader.fields(node, "joins[]", &path, &what, JOIN) else {
        join.from = placeholder(damage);
        join.to = placeholder(damage);
        return join;
    };
    let p = |k: &str| field_path(&path, k);
    join.from = required_name(
        reader,
        &fields,
        at,
        &what,
        &path,
        "from",
        "add `from: CHANNEL`, a publish-subscribe channel",
        damage,
    );
    join.to = required_name(
        reader,
        &fields,
        at,
        &what,
        &path,
        "to",
        "add `to: CHANNEL`, the destination",
        damage,
    );
    if let Some(v) = fields.get("filter") {
        join.filter = reader.string(v, "filter", &p("filter"));
    }
    if let Some(v) = fields.get("hops") {
        join.hops = reader.number(v, "hops", &p("hops"));
    }
    if let Some(v) = fields.get("archival") {
        join.archival = reader.boolean(v, "archival", &p("archival"));
    }
    join
}
