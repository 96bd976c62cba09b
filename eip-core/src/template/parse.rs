//! The one template parser: what a caller may add (names it fills, kinds it compiles, braces
//! as text) is a [`Syntax`]; everything else is the same for every template.

use std::fmt;

use super::{Part, PlaceholderKind, Template, TemplateError};
use crate::predicate::json_path::JsonPathQuery;

/// How a caller's templates are read: the placeholders every template takes, plus the names
/// it fills itself ([`names`](Syntax::names)), the kinds it compiles
/// ([`kinds`](Syntax::kinds)), and whether a brace that opens no placeholder is text
/// ([`text_braces`](Syntax::text_braces)).
///
/// ```
/// use eip_core::Message;
/// use eip_core::template::Syntax;
///
/// let template = Syntax::new().names(&["seq"]).parse("beat-{seq}-{id}").unwrap();
/// let msg = Message::new("");
/// let made = template.render_each(&msg, |_| Some("7".to_owned()), |out: &mut String, _, v: &str| {
///     out.push_str(v);
///     Ok::<_, eip_core::template::RenderError>(())
/// });
/// assert_eq!(made.unwrap(), format!("beat-7-{}", msg.id()));
/// ```
#[derive(Clone, Copy)]
pub struct Syntax<'a> {
    names: &'a [&'a str],
    kinds: &'a [&'a dyn PlaceholderKind],
    text_braces: bool,
}

impl<'a> Syntax<'a> {
    /// The placeholders every template takes, and nothing else.
    pub const fn new() -> Self {
        Syntax {
            names: &[],
            kinds: &[],
            text_braces: false,
        }
    }

    /// Also `{NAME}` for each of `names`: values the caller fills in when it renders (by
    /// their place in this list). A name of its own goes before the `{KIND: ...}` kinds but
    /// after `subject`, `id`, `header.` and `$`, which always mean what they mean.
    pub const fn names(self, names: &'a [&'a str]) -> Self {
        Syntax { names, ..self }
    }

    /// Also `{KIND: SOURCE}` for each of `kinds`.
    pub const fn kinds(self, kinds: &'a [&'a dyn PlaceholderKind]) -> Self {
        Syntax { kinds, ..self }
    }

    /// Only `{` followed by a name (letters, digits, `_`, `-`, `.`) and `}` is a placeholder;
    /// every other brace is text and `{{` is two braces. For a JSON payload written as it
    /// should arrive (the timer's `{"seq": {seq}}`); such a template takes no `{$.path}` nor
    /// `{KIND: ...}`.
    pub const fn text_braces(self) -> Self {
        Syntax {
            text_braces: true,
            ..self
        }
    }

    /// Parses `text`.
    pub fn parse(&self, text: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        while let Some((at, c)) = rest.next() {
            let next = rest.peek().map(|&(_, c)| c);
            let end = match c {
                '{' | '}' if self.text_braces => match name_at(text, at) {
                    Some(end) => end,
                    None => {
                        literal.push(c);
                        continue;
                    }
                },
                '{' if next == Some('{') => {
                    rest.next();
                    literal.push('{');
                    continue;
                }
                '}' if next == Some('}') => {
                    rest.next();
                    literal.push('}');
                    continue;
                }
                '}' => {
                    return Err(TemplateError {
                        offset: at,
                        reason: "a `}` that closes nothing: write `}}` for a brace".to_owned(),
                    });
                }
                '{' => closing(text, at)?,
                c => {
                    literal.push(c);
                    continue;
                }
            };
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(self.placeholder(&text[at + 1..end], at + 1)?);
            while rest.peek().is_some_and(|&(i, _)| i <= end) {
                rest.next();
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template::new(text.to_owned(), parts))
    }

    /// The placeholder written `inner` (between the braces), which starts at byte `offset`.
    fn placeholder(&self, inner: &str, offset: usize) -> Result<Part, TemplateError> {
        let name = inner.trim();
        let lead = inner.len() - inner.trim_start().len();
        match name {
            "subject" => return Ok(Part::Subject),
            "id" => return Ok(Part::Id),
            _ => {}
        }
        if let Some(header) = name.strip_prefix("header.") {
            if header.is_empty() {
                return Err(TemplateError {
                    offset,
                    reason: "`{header.}` names no header: write `{header.NAME}`".to_owned(),
                });
            }
            return Ok(Part::Header(header.to_owned()));
        }
        if name.starts_with('$') {
            let query = JsonPathQuery::parse(name, offset + lead).map_err(|e| TemplateError {
                offset: e.offset,
                reason: e.kind.to_string(),
            })?;
            return Ok(Part::Path {
                path: name.to_owned(),
                query,
            });
        }
        if let Some(index) = self.names.iter().position(|n| *n == name) {
            return Ok(Part::Name {
                index,
                name: name.to_owned(),
            });
        }
        if let Some((word, source)) = kind_word(name) {
            let Some(kind) = self.kinds.iter().find(|k| k.name() == word) else {
                return Err(TemplateError {
                    offset: offset + lead,
                    reason: format!(
                        "no placeholder kind `{word}:` here: {}",
                        self.known_placeholders()
                    ),
                });
            };
            let source_at = offset + lead + (name.len() - source.len());
            let value = kind.compile(source, source_at)?;
            return Ok(Part::Computed {
                written: name.to_owned(),
                value,
            });
        }
        Err(TemplateError {
            offset,
            reason: format!(
                "unknown placeholder `{{{inner}}}`: {}",
                self.known_placeholders()
            ),
        })
    }

    /// What this syntax takes, for an error about one it does not.
    fn known_placeholders(&self) -> String {
        let mut known = vec!["`{subject}`".to_owned(), "`{id}`".to_owned()];
        known.push("`{header.NAME}`".to_owned());
        if !self.text_braces {
            known.push("`{$.json.path}`".to_owned());
        }
        known.extend(self.names.iter().map(|n| format!("`{{{n}}}`")));
        if !self.text_braces {
            known.extend(
                self.kinds
                    .iter()
                    .map(|k| format!("`{{{}: ...}}`", k.name())),
            );
        }
        let last = known.pop().unwrap_or_default();
        format!("a template takes {} and {last}", known.join(", "))
    }
}

impl Default for Syntax<'_> {
    fn default() -> Self {
        Syntax::new()
    }
}

impl fmt::Debug for Syntax<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        f.debug_struct("Syntax")
            .field("names", &self.names)
            .field("kinds", &kinds)
            .field("text_braces", &self.text_braces)
            .finish()
    }
}

/// `KIND` and what follows its colon, when `name` is `KIND: SOURCE` with `KIND` a word
/// (a letter, then letters, digits, `_` or `-`). No other placeholder has a colon there: a
/// header's starts `header.`, a path's `$`, and a declared name has none.
fn kind_word(name: &str) -> Option<(&str, &str)> {
    let (word, source) = name.split_once(':')?;
    let mut chars = word.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let word_chars = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (starts && word_chars).then_some((word, source))
}

/// In text-brace mode, the byte of the `}` closing a `{name}` that starts at `open`, if one
/// does.
fn name_at(text: &str, open: usize) -> Option<usize> {
    let after = text[open..].strip_prefix('{')?;
    let len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(after.len());
    (len > 0 && after[len..].starts_with('}')).then_some(open + 1 + len)
}

/// The byte of the `}` closing the placeholder opened at `open`: the first one outside
/// quotes, brackets and inner braces (a JSONPath may hold `}` in a quoted name or a filter, a
/// jq expression may build an object).
fn closing(text: &str, open: usize) -> Result<usize, TemplateError> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text[open + 1..].char_indices() {
        let at = open + 1 + i;
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' | '{' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            '}' if depth == 0 => return Ok(at),
            '}' => depth -= 1,
            _ => {}
        }
    }
    Err(TemplateError {
        offset: open,
        reason: "a `{` that is never closed: write `{{` for a brace".to_owned(),
    })
}
