//! Reading `adapters:`: each entry's kind, its channel and its redelivery policy typed, every
//! other key kept as written for [validation](crate::validate) to interpret.
//!
//! Which keys a kind has is its [kind](crate::kind)'s to say (an unknown key is reported with
//! the closest key of that kind, and dropped); what a key's value must be is validation's
//! business, so that a flow made in code is checked the same way. A kind this `eip` was built
//! without is reported with the cargo feature that builds it.

use super::flow::read_redelivery;
use super::node::{Node, Value};
use super::read::{Fields, Reader};
use super::routes::required_name;
use crate::diagnostic::{Damage, field_path, name_path};
use crate::kind;
use crate::spec::{AdapterKind, AdapterSpec, Located, Position, Setting, SettingValue};

/// One entry `name: {kind: ..., ...}`; `None` when its kind can not be read (the entry is then
/// recorded as damaged by the caller).
pub(super) fn read_adapter(
    reader: &mut Reader<'_>,
    key: &Node,
    node: &Node,
    name: &str,
    bridge: bool,
    damage: &mut Damage,
) -> Option<AdapterSpec> {
    let (section, what) = if bridge {
        ("bridges", format!("bridge `{name}`"))
    } else {
        ("adapters", format!("adapter `{name}`"))
    };
    let entry = Written {
        path: name_path(section, name),
        what,
        at: reader.pos(key),
    };
    let kind_help = kind::choices(bridge)
        .iter()
        .map(|(word, _)| format!("`{word}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let kind_help = format!("add `kind:` with one of {kind_help}");
    if node.value == Value::Null {
        reader.missing(entry.at, &entry.what, "kind", &entry.path, &kind_help);
        return None;
    }
    let (kind, allowed, written) = read_kind(reader, node, &entry.path, bridge);
    let before = reader.problems.len();
    let fields = reader.fields(node, name, &entry.path, &entry.what, &allowed)?;
    if !written {
        reader.missing(entry.at, &entry.what, "kind", &entry.path, &kind_help);
    }
    let kind = kind?;
    let channel = read_channel(reader, &fields, kind.value, before, &entry, damage);
    let mut spec = AdapterSpec {
        at: Some(entry.at),
        kind: Located {
            value: kind.value.as_str().to_owned(),
            at: kind.at,
        },
        channel,
        redelivery: None,
        settings: Vec::new(),
    };
    for (field, k, v) in fields.entries() {
        match field {
            "kind" | "to" | "from" => {}
            "redelivery" => {
                let path = field_path(&entry.path, field);
                spec.redelivery = read_redelivery(reader, k, v, &path, name);
            }
            _ => spec.settings.push(setting(reader, k, v)),
        }
    }
    Some(spec)
}

/// Where an entry is, for messages.
struct Written {
    /// Its key path (`adapters["incoming"]`).
    path: String,
    /// "adapter `incoming`".
    what: String,
    /// Its name's position.
    at: Position,
}

/// The entry's kind (`None` when it can not be read), the keys it may have, and whether
/// `kind:` is written at all. The kind decides the keys: it is read first, from the raw
/// mapping.
fn read_kind<'n>(
    reader: &mut Reader<'_>,
    node: &'n Node,
    path: &str,
    bridge: bool,
) -> (Option<Located<AdapterKind>>, Vec<&'n str>, bool) {
    let kind_node = match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.value == Value::Str("kind".into()))
            .map(|(_, v)| v),
        _ => None,
    };
    let key = field_path(path, "kind");
    let unbuilt = kind_node.is_some_and(|v| not_built(reader, v, &key));
    let kind = match kind_node {
        // Every kind is read here; one declared in the wrong section is validation's to report.
        Some(v) if !unbuilt => reader.one_of(v, "kind", &key, &kind::all_choices()),
        _ => None,
    };
    let allowed = match &kind {
        Some(kind) => kind::keys(kind.value),
        // The keys of a kind that is not built are not known here: none is reported.
        None if unbuilt => written_keys(node),
        None => kind::all_keys(bridge),
    };
    (kind, allowed, kind_node.is_some())
}

/// The channel: `to` of an inbound kind, `from` of an outbound one. `to` on an outbound
/// adapter (or `from` on an inbound one) is the likely slip: the problems reported since
/// `before` say so, and the right key is then not also reported as missing.
fn read_channel(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    kind: AdapterKind,
    before: usize,
    entry: &Written,
    damage: &mut Damage,
) -> Located<String> {
    let (channel_key, other, help) = if kind.is_inbound() {
        (
            "to",
            "from",
            "an inbound adapter feeds a channel: write `to: CHANNEL`",
        )
    } else {
        (
            "from",
            "to",
            "an outbound adapter consumes a channel: write `from: CHANNEL`",
        )
    };
    let wrong_way = field_path(&entry.path, other);
    let mut slipped = false;
    for problem in &mut reader.problems[before..] {
        if problem.key.as_deref() == Some(wrong_way.as_str()) {
            problem.help = Some(help.to_owned());
            slipped = true;
        }
    }
    if slipped && fields.get(channel_key).is_none() {
        damage.names.insert(String::new());
        return Located::new(String::new());
    }
    let help = format!("add `{channel_key}: CHANNEL`");
    required_name(
        reader,
        fields,
        entry.at,
        &entry.what,
        &entry.path,
        channel_key,
        &help,
        damage,
    )
}

/// Whether `node` names a kind this `eip` was built without; if so, reports it.
fn not_built(reader: &mut Reader<'_>, node: &Node, path: &str) -> bool {
    let Value::Str(name) = &node.value else {
        return false;
    };
    match kind::not_built(name, Some(reader.pos(node)), path) {
        Some(problem) => {
            reader.report(problem);
            true
        }
        None => false,
    }
}

/// The keys written in an entry.
fn written_keys(node: &Node) -> Vec<&str> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .filter_map(|(k, _)| match &k.value {
                Value::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A key and its value as written.
pub(super) fn setting(reader: &Reader<'_>, key: &Node, value: &Node) -> Setting {
    let name = match &key.value {
        Value::Str(s) => s.clone(),
        _ => reader.text(reader.pos(key)).to_owned(),
    };
    Setting {
        key: Located::at(name, reader.pos(key)),
        value: Located::at(setting_value(reader, value), reader.pos(value)),
    }
}

pub(super) fn setting_value(reader: &Reader<'_>, node: &Node) -> SettingValue {
    match &node.value {
        Value::Null => SettingValue::Null,
        Value::Bool(b) => SettingValue::Bool(*b),
        Value::Str(s) => SettingValue::Text(s.clone()),
        Value::Int(_) | Value::Float(_) => {
            SettingValue::Number(reader.text(reader.pos(node)).trim().to_owned())
        }
        Value::Seq(items) => SettingValue::List(
            items
                .iter()
                .map(|item| {
                    let text = match &item.value {
                        Value::Str(s) => s.clone(),
                        _ => reader.text(reader.pos(item)).trim().to_owned(),
                    };
                    Located::at(text, reader.pos(item))
                })
                .collect(),
        ),
        Value::Map(entries) => {
            SettingValue::Map(entries.iter().map(|(k, v)| setting(reader, k, v)).collect())
        }
    }
}
