//! XML to and from JSON, through `quick-xml`.
//!
//! The mapping, the one most XML-to-JSON tools use:
//!
//! - The document is an object with one key, the root element's name.
//! - An element with neither attributes nor child elements is its text, a string (`null` when
//!   it has none: `<a/>`, `<a></a>`).
//! - Otherwise it is an object: each attribute under `"@name"`, each child element under its
//!   name, and its text (trimmed, when there are child elements) under `"#text"`.
//! - A child element name that occurs more than once is an array of them, in document order.
//!   The order between elements of different names is not kept.
//! - Every value is a string: XML has no numbers. Names keep their namespace prefix as written
//!   (`soap:Body`, `@xmlns:soap`). Comments, processing instructions and the declaration are
//!   left out; CDATA is text; entities and character references are resolved.
//!
//! JSON to XML is the same mapping backwards: numbers and bools are written as their text,
//! `null` as an empty element, an array as the element repeated.

use std::borrow::Cow;

use quick_xml::events::{BytesStart, Event};
use serde_json::{Map, Value};

use super::json_text::type_name;

/// Nesting deeper than this is refused (a JSON value so deep is costly to work with).
pub(crate) const MAX_DEPTH: usize = 128;

/// An XML text that can not become JSON, or a JSON value that can not become XML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XmlError {
    /// The text is not UTF-8.
    #[error("XML is not UTF-8 (valid up to byte {valid_up_to})")]
    NotUtf8 {
        /// How many bytes are valid UTF-8.
        valid_up_to: usize,
    },
    /// The XML is not well-formed.
    #[error("XML at line {line}, column {column}: {reason}")]
    Syntax {
        /// The line, counted from 1.
        line: u64,
        /// The column (in bytes), counted from 1.
        column: u64,
        /// The parser's reason.
        reason: String,
    },
    /// No root element, or more than one.
    #[error("XML has {found} root elements, expected one")]
    Roots {
        /// How many there were (0 or 2: the reading stops at the second).
        found: usize,
    },
    /// Elements nested deeper than 128.
    #[error("XML at line {line}: nested deeper than {MAX_DEPTH} elements")]
    TooDeep {
        /// The line of the element too deep.
        line: u64,
    },
    /// The JSON text does not parse (serde's reason, with line and column).
    #[error("not JSON: {0}")]
    Json(String),
    /// XML is written from an object with exactly one key, the root element.
    #[error("XML is written from a JSON object with one key (the root element), found {found}")]
    NotOneRoot {
        /// What was found instead.
        found: String,
    },
    /// A key that is not an XML name.
    #[error("`{path}`: `{name}` is not an XML name")]
    InvalidName {
        /// Where, as a dotted path of keys.
        path: String,
        /// The key.
        name: String,
    },
    /// An attribute (`@name`) or `#text` that is an object or an array.
    #[error("`{path}`: an attribute or text is a string, number, bool or null, found {found}")]
    NotText {
        /// Where, as a dotted path of keys.
        path: String,
        /// The JSON type found.
        found: &'static str,
    },
    /// An array directly inside an array: there is no element name for its items.
    #[error("`{path}`: an array inside an array has no element name")]
    NestedArray {
        /// Where, as a dotted path of keys.
        path: String,
    },
}

/// An element being read: what it has collected so far.
struct Open {
    name: String,
    fields: Map<String, Value>,
    has_children: bool,
    text: String,
}

/// XML text to JSON text, by the mapping above.
///
/// ```
/// use eip_steps::format::xml_to_json;
///
/// let json = xml_to_json(br#"<order id="7"><item>A</item><item>B</item><note/></order>"#).unwrap();
/// let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// assert_eq!(value, serde_json::json!({"order": {"@id": "7", "item": ["A", "B"], "note": null}}));
/// ```
pub fn xml_to_json(xml: &[u8]) -> Result<Vec<u8>, XmlError> {
    let text = std::str::from_utf8(xml).map_err(|e| XmlError::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    let root = read_document(text)?;
    serde_json::to_vec(&root).map_err(|e| XmlError::Json(e.to_string()))
}

fn read_document(text: &str) -> Result<Value, XmlError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let syntax = |position: u64, reason: String| {
        let (line, column) = line_and_column(text, position);
        XmlError::Syntax {
            line,
            column,
            reason,
        }
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| syntax(reader.error_position(), e.to_string()))?;
        let at = reader.buffer_position();
        match event {
            Event::Start(start) | Event::Empty(start) if stack.len() >= MAX_DEPTH => {
                drop(start);
                return Err(XmlError::TooDeep {
                    line: line_and_column(text, at).0,
                });
            }
            Event::Start(start) => {
                if root.is_some() {
                    return Err(XmlError::Roots { found: 2 });
                }
                stack.push(open(&start).map_err(|r| syntax(at, r))?);
            }
            Event::Empty(start) => {
                if root.is_some() {
                    return Err(XmlError::Roots { found: 2 });
                }
                let element = open(&start).map_err(|r| syntax(at, r))?;
                close(element, &mut stack, &mut root);
            }
            Event::End(_) => {
                // quick-xml checks that the end tag's name matches.
                if let Some(element) = stack.pop() {
                    close(element, &mut stack, &mut root);
                }
            }
            Event::Text(t) => push_text(&mut stack, &t.xml10_content(), at, &syntax)?,
            Event::CData(c) => push_text(&mut stack, &c.xml10_content(), at, &syntax)?,
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => predefined(&r.xml10_content())
                        .ok_or_else(|| {
                            syntax(at, format!("unknown entity `&{};`", r.xml10_content()))
                        })?
                        .to_owned(),
                    Err(e) => return Err(syntax(at, e.to_string())),
                };
                push_text(&mut stack, &resolved, at, &syntax)?;
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(syntax(
            text.len() as u64,
            format!("element `{}` is not closed", open.name),
        ));
    }
    root.ok_or(XmlError::Roots { found: 0 })
}

fn open(start: &BytesStart<'_>) -> Result<Open, String> {
    let name = start.name().as_ref().to_owned();
    let mut fields = Map::new();
    for attribute in start.attributes() {
        let attribute = attribute.map_err(|e| e.to_string())?;
        let key = format!("@{}", attribute.key.as_ref());
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::default())
            .map_err(|e| e.to_string())?;
        fields.insert(key, Value::String(value.into_owned()));
    }
    Ok(Open {
        name,
        fields,
        has_children: false,
        text: String::new(),
    })
}

fn predefined(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        _ => return None,
    })
}

fn push_text(
    stack: &mut [Open],
    text: &str,
    at: u64,
    syntax: &impl Fn(u64, String) -> XmlError,
) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some(open) => open.text.push_str(text),
        None if text.trim().is_empty() => {}
        None => return Err(syntax(at, "text outside the root element".into())),
    }
    Ok(())
}

/// An element is complete: its value goes to its parent, or becomes the document.
fn close(element: Open, stack: &mut [Open], root: &mut Option<Value>) {
    let Open {
        name,
        mut fields,
        has_children,
        text,
    } = element;
    let value = if fields.is_empty() {
        if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        }
    } else {
        let text = if has_children { text.trim() } else { &text[..] };
        if !text.is_empty() {
            fields.insert("#text".into(), Value::String(text.to_owned()));
        }
        Value::Object(fields)
    };
    match stack.last_mut() {
        Some(parent) => {
            parent.has_children = true;
            match parent.fields.get_mut(&name) {
                // An element's value is never an array: an array is a name repeated.
                Some(Value::Array(items)) => items.push(value),
                Some(first) => {
                    let first = first.take();
                    parent.fields.insert(name, Value::Array(vec![first, value]));
                }
                None => {
                    parent.fields.insert(name, value);
                }
            }
        }
        None => {
            let mut document = Map::new();
            document.insert(name, value);
            *root = Some(Value::Object(document));
        }
    }
}

fn line_and_column(text: &str, position: u64) -> (u64, u64) {
    let end = usize::try_from(position)
        .unwrap_or(usize::MAX)
        .min(text.len());
    let before = &text.as_bytes()[..end];
    let line = memchr::memchr_iter(b'\n', before).count() as u64 + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    (line, (end - line_start) as u64 + 1)
}

/// JSON text to XML text, by the mapping above.
///
/// ```
/// use eip_steps::format::json_to_xml;
///
/// let xml = json_to_xml(br#"{"order": {"@id": 7, "item": ["A", "B"], "note": null}}"#).unwrap();
/// assert_eq!(xml, br#"<order id="7"><item>A</item><item>B</item><note/></order>"#);
/// ```
pub fn json_to_xml(json: &[u8]) -> Result<Vec<u8>, XmlError> {
    let value: Value = serde_json::from_slice(json).map_err(|e| XmlError::Json(e.to_string()))?;
    let (name, root) = match &value {
        Value::Object(map) if map.len() == 1 => {
            map.iter().next().ok_or_else(|| XmlError::NotOneRoot {
                found: "an empty object".into(),
            })?
        }
        Value::Object(map) => {
            return Err(XmlError::NotOneRoot {
                found: format!("an object with {} keys", map.len()),
            });
        }
        other => {
            return Err(XmlError::NotOneRoot {
                found: format!("a JSON {}", type_name(other)),
            });
        }
    };
    if matches!(root, Value::Array(_)) {
        return Err(XmlError::NotOneRoot {
            found: format!("an array under `{name}`"),
        });
    }
    let mut out = String::new();
    write_element(&mut out, name, root, name)?;
    Ok(out.into_bytes())
}

fn write_element(out: &mut String, name: &str, value: &Value, path: &str) -> Result<(), XmlError> {
    check_name(name, path)?;
    match value {
        Value::Array(items) => {
            for item in items {
                if matches!(item, Value::Array(_)) {
                    return Err(XmlError::NestedArray { path: path.into() });
                }
                write_element(out, name, item, path)?;
            }
        }
        Value::Null => {
            out.push('<');
            out.push_str(name);
            out.push_str("/>");
        }
        Value::Object(fields) => write_object(out, name, fields, path)?,
        scalar => {
            out.push('<');
            out.push_str(name);
            out.push('>');
            out.push_str(&quick_xml::escape::escape(scalar_text(scalar, path)?));
            out.push_str("</");
            out.push_str(name);
            out.push('>');
        }
    }
    Ok(())
}

fn write_object(
    out: &mut String,
    name: &str,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<(), XmlError> {
    out.push('<');
    out.push_str(name);
    let mut text = None;
    let mut children = Vec::new();
    for (key, value) in fields {
        let key_path = format!("{path}.{key}");
        if let Some(attribute) = key.strip_prefix('@') {
            check_name(attribute, &key_path)?;
            out.push(' ');
            out.push_str(attribute);
            out.push_str("=\"");
            out.push_str(&quick_xml::escape::escape(scalar_text(value, &key_path)?));
            out.push('"');
        } else if key == "#text" {
            text = Some(scalar_text(value, &key_path)?);
        } else {
            children.push((key, value, key_path));
        }
    }
    if text.is_none() && children.is_empty() {
        out.push_str("/>");
        return Ok(());
    }
    out.push('>');
    if let Some(text) = text {
        out.push_str(&quick_xml::escape::escape(text));
    }
    for (key, value, key_path) in children {
        write_element(out, key, value, &key_path)?;
    }
    out.push_str("</");
    out.push_str(name);
    out.push('>');
    Ok(())
}

fn scalar_text<'a>(value: &'a Value, path: &str) -> Result<Cow<'a, str>, XmlError> {
    Ok(match value {
        Value::Null => Cow::Borrowed(""),
        Value::String(s) => Cow::Borrowed(s),
        Value::Bool(b) => Cow::Owned(b.to_string()),
        Value::Number(n) => Cow::Owned(n.to_string()),
        other => {
            return Err(XmlError::NotText {
                path: path.into(),
                found: type_name(other),
            });
        }
    })
}

/// Whether `name` is an XML name (letters, digits, `_`, `-`, `.`, `:`; not starting with a
/// digit, `-` or `.`).
fn check_name(name: &str, path: &str) -> Result<(), XmlError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')) {
        Ok(())
    } else {
        Err(XmlError::InvalidName {
            path: path.into(),
            name: name.into(),
        })
    }
}
