//! Typed reading of YAML nodes: each helper either returns the value or records why not.
//!
//! The helpers never stop the reading: a wrong type, an unknown or repeated key, a missing
//! required key each become a [`Problem`] and the caller carries on with the next key, so one
//! pass finds everything.

use eip_core::bus::closest;

use super::node::{Node, RawLocation, Value};
use crate::diagnostic::{Problem, field_path, index_path, suggest_key};
use crate::spec::{Located, Number, Position};

/// Reads nodes of one document, collecting problems.
pub(crate) struct Reader<'s> {
    source: &'s str,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    pub(crate) problems: Vec<Problem>,
}

/// The keys of one mapping, each checked (known, written once) and taken by name.
pub(crate) struct Fields<'n> {
    entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// The key node and value of `key`, if written.
    pub(crate) fn entry(&self, key: &str) -> Option<(&'n Node, &'n Node)> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, k, v)| (*k, *v))
    }

    /// The value of `key`, if written.
    pub(crate) fn get(&self, key: &str) -> Option<&'n Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// Every key read (known, written once), its key node and its value, in file order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'n str, &'n Node, &'n Node)> + '_ {
        self.entries.iter().copied()
    }
}

impl<'s> Reader<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Reader {
            source,
            line_starts,
            problems: Vec::new(),
        }
    }

    /// The byte offset of a 1-based line and character column, clamped to the source.
    fn offset_of(&self, line: u32, column: u32) -> usize {
        let index = (line as usize).saturating_sub(1);
        let Some(&start) = self.line_starts.get(index) else {
            return self.source.len();
        };
        let rest = self.source.get(start..).unwrap_or("");
        let skip = (column as usize).saturating_sub(1);
        start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i)
    }

    /// A position from serde-saphyr's location: the byte range computed from line and column
    /// when serde-saphyr does not know it.
    pub(crate) fn position_of(&self, at: RawLocation) -> Position {
        let (offset, len) = at
            .bytes
            .filter(|(o, l)| {
                o.checked_add(*l)
                    .is_some_and(|end| end <= self.source.len())
            })
            .unwrap_or_else(|| (self.offset_of(at.line, at.column), 0));
        Position {
            line: at.line,
            column: at.column,
            offset,
            len,
        }
    }

    /// Where a node's value is: for a quoted string, its first character after the quote, and
    /// its length without the quotes.
    pub(crate) fn pos(&self, node: &Node) -> Position {
        let mut at = self.position_of(node.at);
        if let Value::Str(_) = node.value {
            let first = self.source.get(at.offset..).and_then(|s| s.chars().next());
            if let Some(quote @ ('"' | '\'')) = first {
                at.offset += 1;
                at.column = at.column.saturating_add(1);
                let closed = at.len >= 2
                    && self.source.as_bytes().get(at.offset + at.len - 2) == Some(&(quote as u8));
                at.len = at.len.saturating_sub(if closed { 2 } else { 1 });
            }
        }
        at
    }

    /// The text of the source at `at`.
    pub(crate) fn text(&self, at: Position) -> &str {
        self.source
            .get(at.offset..at.offset.saturating_add(at.len))
            .unwrap_or("")
    }

    pub(crate) fn report(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    /// "`key` must be EXPECTED, found ..." at the value.
    pub(crate) fn wrong_type(&mut self, node: &Node, key: &str, path: &str, expected: &str) {
        let problem = Problem::new(
            format!(
                "`{key}` must be {expected}, found {}",
                node.value.describe()
            ),
            Some(self.pos(node)),
        )
        .with_key(path);
        self.report(problem);
    }

    /// "WHAT has no `key`" at `at`.
    pub(crate) fn missing(&mut self, at: Position, what: &str, key: &str, path: &str, help: &str) {
        let problem = Problem::new(format!("{what} has no `{key}`"), Some(at))
            .with_key(path)
            .with_help(help);
        self.report(problem);
    }

    /// A scalar as a name: a string, or a number or boolean as written (`404`).
    pub(crate) fn scalar_text(&self, node: &Node) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                Some(self.text(self.pos(node)).to_owned())
            }
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
        }
    }

    /// The keys of a mapping: each must be one of `allowed` and written once. `None` (and a
    /// problem) when the node is not a mapping.
    pub(crate) fn fields<'n>(
        &mut self,
        node: &'n Node,
        key: &str,
        path: &str,
        what: &str,
        allowed: &[&str],
    ) -> Option<Fields<'n>> {
        let Value::Map(map) = &node.value else {
            self.wrong_type(node, key, path, "a mapping");
            return None;
        };
        let mut entries: Vec<(&'n str, &'n Node, &'n Node)> = Vec::new();
        for (k, v) in map {
            let name = match &k.value {
                Value::Str(s) => s.as_str(),
                other => {
                    let problem = Problem::new(
                        format!("keys of {what} are words, found {}", other.describe()),
                        Some(self.pos(k)),
                    )
                    .with_key(path)
                    .with_help(suggest_key("", allowed));
                    self.report(problem);
                    continue;
                }
            };
            if !allowed.contains(&name) {
                let problem =
                    Problem::new(format!("unknown key `{name}` in {what}"), Some(self.pos(k)))
                        .with_key(field_path(path, name))
                        .with_help(suggest_key(name, allowed));
                self.report(problem);
                continue;
            }
            if let Some((_, first, _)) = entries.iter().find(|(n, _, _)| *n == name) {
                let first = self.pos(first);
                let problem = Problem::new(
                    format!("`{name}` is written twice in {what}"),
                    Some(self.pos(k)),
                )
                .with_key(field_path(path, name))
                .with_label(Some(first), "first written here")
                .with_help("keep one of them");
                self.report(problem);
                continue;
            }
            entries.push((name, k, v));
        }
        Some(Fields { entries })
    }

    /// A string value (predicates, paths, durations).
    pub(crate) fn string(&mut self, node: &Node, key: &str, path: &str) -> Option<Located<String>> {
        match &node.value {
            Value::Str(s) => Some(Located::at(s.clone(), self.pos(node))),
            _ => {
                self.wrong_type(node, key, path, "a string");
                None
            }
        }
    }

    /// A name of a channel or exchange: a string, or a number as written.
    pub(crate) fn name(&mut self, node: &Node, key: &str, path: &str) -> Option<Located<String>> {
        match self.scalar_text(node) {
            Some(name) => Some(Located::at(name, self.pos(node))),
            None => {
                self.wrong_type(node, key, path, "a name");
                None
            }
        }
    }

    /// One name or a list of names.
    pub(crate) fn names(
        &mut self,
        node: &Node,
        key: &str,
        path: &str,
    ) -> Option<Located<Vec<Located<String>>>> {
        match &node.value {
            Value::Seq(items) => {
                let names = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| self.name(item, key, &index_path(path, i)))
                    .collect();
                Some(Located::at(names, self.pos(node)))
            }
            _ => match self.scalar_text(node) {
                Some(name) => {
                    let at = self.pos(node);
                    Some(Located::at(vec![Located::at(name, at)], at))
                }
                None => {
                    self.wrong_type(node, key, path, "a name or a list of names");
                    None
                }
            },
        }
    }

    /// A whole number of at least `min`.
    pub(crate) fn whole(
        &mut self,
        node: &Node,
        key: &str,
        path: &str,
        min: u64,
    ) -> Option<Located<u64>> {
        let at = self.pos(node);
        match &node.value {
            Value::Int(n) => match u64::try_from(*n) {
                Ok(n) => Some(Located::at(n, at)),
                Err(_) if *n < 0 => {
                    let problem = Problem::new(
                        format!("`{key}` must be at least {min}, found {n}"),
                        Some(at),
                    )
                    .with_key(path);
                    self.report(problem);
                    None
                }
                Err(_) => {
                    let problem =
                        Problem::new(format!("`{key}` is too large: {n}"), Some(at)).with_key(path);
                    self.report(problem);
                    None
                }
            },
            Value::Float(_) => {
                let problem = Problem::new(
                    format!(
                        "`{key}` must be a whole number, found {}",
                        self.text(at).trim()
                    ),
                    Some(at),
                )
                .with_key(path);
                self.report(problem);
                None
            }
            _ => {
                self.wrong_type(node, key, path, "a whole number");
                None
            }
        }
    }

    /// A number, whole or not, kept as written.
    pub(crate) fn number(&mut self, node: &Node, key: &str, path: &str) -> Option<Located<Number>> {
        let at = self.pos(node);
        match &node.value {
            Value::Int(n) => Some(Located::at(
                i64::try_from(*n).map_or(Number::Float(*n as f64), Number::Integer),
                at,
            )),
            Value::Float(f) => Some(Located::at(Number::Float(*f), at)),
            _ => {
                self.wrong_type(node, key, path, "a number");
                None
            }
        }
    }

    /// A number as a float.
    pub(crate) fn float(&mut self, node: &Node, key: &str, path: &str) -> Option<Located<f64>> {
        let at = self.pos(node);
        match &node.value {
            Value::Int(n) => Some(Located::at(*n as f64, at)),
            Value::Float(f) => Some(Located::at(*f, at)),
            _ => {
                self.wrong_type(node, key, path, "a number");
                None
            }
        }
    }

    /// `true` or `false`.
    pub(crate) fn boolean(&mut self, node: &Node, key: &str, path: &str) -> Option<Located<bool>> {
        match &node.value {
            Value::Bool(b) => Some(Located::at(*b, self.pos(node))),
            _ => {
                self.wrong_type(node, key, path, "`true` or `false`");
                None
            }
        }
    }

    /// One of `choices` (kebab-case words), mapped to its value.
    pub(crate) fn one_of<T: Copy>(
        &mut self,
        node: &Node,
        key: &str,
        path: &str,
        choices: &[(&str, T)],
    ) -> Option<Located<T>> {
        let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
        let expected = words
            .iter()
            .map(|w| format!("`{w}`"))
            .collect::<Vec<_>>()
            .join(" or ");
        let Value::Str(s) = &node.value else {
            self.wrong_type(node, key, path, &expected);
            return None;
        };
        if let Some((_, value)) = choices.iter().find(|(w, _)| *w == s) {
            return Some(Located::at(*value, self.pos(node)));
        }
        let help = match closest(s, words.iter().copied()) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("expected {expected}"),
        };
        let problem = Problem::new(format!("`{key}` can not be `{s}`"), Some(self.pos(node)))
            .with_key(path)
            .with_help(help);
        self.report(problem);
        None
    }
}
