//! Reading `adapters:`: each entry's kind, its channel and its redelivery policy typed, every
//! other key kept as written for [validation](crate::validate) to interpret.
//!
//! Which keys a kind has is its [kind](crate::kind)'s to say (an unknown key is reported with
//! the closest key of that kind, and dropped); what a key's value must be is validation's
//! business, so that a flow made in code is checked the same way. A kind this `eip` was built
//! without is reported with the cargo feature that builds it.

use super::flow::read_redelivery;
use super::node::{Node, Value};
use super::read::Reader;
use super::routes::required_name;
use crate::diagnostic::{Damage, field_path, name_path};
use crate::kind;
use crate::spec::{AdapterSpec, Located, Setting, SettingValue};

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
    let path = name_path(section, name);
    let kinds = kind::choices(bridge);
    let kind_help = kinds
        .iter()
        .map(|(word, _)| format!("`{word}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let kind_help = format!("add `kind:` with one of {kind_help}");
    let at = reader.pos(key);
    if node.value == Value::Null {
        reader.missing(at, &what, "kind", &path, &kind_help);
        return None;
    }
    // The kind decides the keys: read it first, from the raw mapping.
    let kind_node = match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.value == Value::Str("kind".into()))
            .map(|(_, v)| v),
        _ => None,
    };
    let unbuilt = kind_node.is_some_and(|v| not_built(reader, v, &field_path(&path, "kind")));
    let kind = match kind_node {
        // Every kind is read here; one declared in the wrong section is validation's to report.
        Some(v) if !unbuilt => {
            reader.one_of(v, "kind", &field_path(&path, "kind"), &kind::all_choices())
        }
        _ => None,
    };
    let allowed = match &kind {
        Some(kind) => kind::keys(kind.value),
        // The keys of a kind that is not built are not known here: none is reported.
        None if unbuilt => written_keys(node),
        None => kind::all_keys(bridge),
    };
    let before = reader.problems.len();
    let fields = reader.fields(node, name, &path, &what, &allowed)?;
    if kind_node.is_none() {
        reader.missing(at, &what, "kind", &path, &kind_help);
    }
    let kind = kind?;
    let (channel_key, other, help) = if kind.value.is_inbound() {
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
    // `to` on an outbound adapter (or `from` on an inbound one) is the likely slip: say so,
    // and do not also report the right key as missing.
    let wrong_way = field_path(&path, other);
    let mut slipped = false;
    for problem in &mut reader.problems[before..] {
        if problem.key.as_deref() == Some(wrong_way.as_str()) {
            problem.help = Some(help.to_owned());
            slipped = true;
        }
    }
    let channel = if slipped && fields.get(channel_key).is_none() {
        damage.names.insert(String::new());
        Located::new(String::new())
    } else {
        let help = format!("add `{channel_key}: CHANNEL`");
        required_name(
            reader,
            &fields,
            at,
            &what,
            &path,
            channel_key,
            &help,
            damage,
        )
    };
    let mut spec = AdapterSpec {
        at: Some(at),
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
                spec.redelivery = read_redelivery(reader, k, v, &field_path(&path, field), name);
            }
            _ => spec.settings.push(setting(reader, k, v)),
        }
    }
    Some(spec)
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

fn setting_value(reader: &Reader<'_>, node: &Node) -> SettingValue {
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
