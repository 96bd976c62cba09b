//! Reading a route's `steps:`: a list whose every entry is a mapping with one key, the step's
//! kind, and its value: the kind's main setting (`- filter: '$.total > 0'`) or a mapping of
//! its keys (`- filter: {when: '$.total > 0', discard: rejected}`).
//!
//! Which kinds there are, and which keys each has, is the [step kinds](crate::step)' to say: an
//! unknown kind or key is reported with the closest one, and dropped. What a key's value must be
//! is validation's business, so that a flow made in code is checked the same way.

use super::adapters::{setting, setting_value};
use super::node::{Node, Value};
use super::read::Reader;
use crate::diagnostic::{Problem, field_path, index_path, suggest_key};
use crate::spec::{Located, SettingValue, StepSpec};
use crate::step;

/// Every step of `steps:` at `path` that could be read.
pub(super) fn read_steps(reader: &mut Reader<'_>, node: &Node, path: &str) -> Vec<StepSpec> {
    let items = match &node.value {
        Value::Null => return Vec::new(),
        Value::Seq(items) => items,
        _ => {
            reader.wrong_type(
                node,
                "steps",
                path,
                "a list of steps, such as `- transform: '{id: .id}'`",
            );
            return Vec::new();
        }
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| read_step(reader, item, &index_path(path, i), i))
        .collect()
}

fn read_step(reader: &mut Reader<'_>, node: &Node, path: &str, i: usize) -> Option<StepSpec> {
    let shape = "a mapping with one key, the step's kind, such as `- filter: '$.total > 0'`";
    let Value::Map(entries) = &node.value else {
        reader.wrong_type(node, "steps[]", path, shape);
        return None;
    };
    let (key, value) = match entries.as_slice() {
        [only] => only,
        [] => {
            reader.wrong_type(node, "steps[]", path, shape);
            return None;
        }
        [(first, _), (second, _), ..] => {
            let problem = Problem::new(
                format!(
                    "step {} names two kinds, `{}` and `{}`: a step is one kind",
                    i + 1,
                    reader.text(reader.pos(first)).trim(),
                    reader.text(reader.pos(second)).trim()
                ),
                Some(reader.pos(second)),
            )
            .with_key(path)
            .with_help("write each as its own step: `- KIND: VALUE` per list entry");
            reader.report(problem);
            return None;
        }
    };
    let at = reader.pos(key);
    let Value::Str(name) = &key.value else {
        let problem = Problem::new(
            format!("a step's kind is a word, found {}", key.value.describe()),
            Some(at),
        )
        .with_key(path)
        .with_help(suggest_key("", &step::names()));
        reader.report(problem);
        return None;
    };
    let Some(kind) = step::named(name) else {
        let problem = step::not_built(name, Some(at), path).unwrap_or_else(|| {
            Problem::new(format!("unknown step `{name}`"), Some(at))
                .with_key(path)
                .with_help(suggest_key(name, &step::names()))
        });
        reader.report(problem);
        return None;
    };
    let what = format!("step `{name}`");
    let value = match &value.value {
        Value::Map(_) => {
            let fields = reader.fields(value, name, &field_path(path, name), &what, kind.keys)?;
            let items = fields.entries().map(|(_, k, v)| setting(reader, k, v));
            Located::at(SettingValue::Map(items.collect()), reader.pos(value))
        }
        _ => Located::at(setting_value(reader, value), reader.pos(value)),
    };
    Some(StepSpec {
        at: Some(reader.pos(node)),
        kind: Located::at(name.clone(), at),
        value,
    })
}
