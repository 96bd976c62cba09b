//! A tiny XML checker: parses a well-formed document of elements, attributes and text, and
//! refuses anything else.

use std::collections::BTreeMap;

/// An element's name and attributes, in document order.
#[derive(Debug)]
pub struct Element {
    pub name: String,
    pub attrs: BTreeMap<String, String>,
}

/// Checks `text` is character data: no `<`, every `&` starting a known or numeric entity.
fn check_text(text: &str) -> Result<(), String> {
    if text.contains('<') {
        return Err(format!("raw `<` in {text:?}"));
    }
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        rest = &rest[i + 1..];
        let end = rest
            .find(';')
            .ok_or_else(|| format!("unterminated entity in {text:?}"))?;
        let name = &rest[..end];
        let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || name
                .strip_prefix('#')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("bad entity `&{name};` in {text:?}"));
        }
        rest = &rest[end + 1..];
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')
}

/// Parses a well-formed XML document of elements, attributes and text (a declaration first
/// allowed), returning every element; an error for anything else.
pub fn parse_xml(doc: &str) -> Result<Vec<Element>, String> {
    let mut rest = doc;
    if let Some(after) = rest.strip_prefix("<?xml") {
        let end = after.find("?>").ok_or("unterminated declaration")?;
        rest = &after[end + 2..];
    }
    let mut stack: Vec<String> = Vec::new();
    let mut elements = Vec::new();
    let mut roots = 0;
    loop {
        let next = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..next];
        check_text(text)?;
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        rest = &rest[next..];
        if rest.is_empty() {
            break;
        }
        if let Some(after) = rest.strip_prefix("</") {
            let end = after.find('>').ok_or("unterminated end tag")?;
            let name = after[..end].trim_end();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("`</{name}>` closes {other:?}")),
            }
            rest = &after[end + 1..];
            continue;
        }
        // A start tag.
        let after = &rest[1..];
        let name_len = after.find(|c| !is_name_char(c)).unwrap_or(after.len());
        if name_len == 0 {
            return Err(format!("not a tag: {:?}", &rest[..rest.len().min(20)]));
        }
        let name = after[..name_len].to_owned();
        let mut tail = &after[name_len..];
        let mut attrs = BTreeMap::new();
        let self_closing = loop {
            let trimmed = tail.trim_start();
            if let Some(t) = trimmed.strip_prefix("/>") {
                tail = t;
                break true;
            }
            if let Some(t) = trimmed.strip_prefix('>') {
                tail = t;
                break false;
            }
            if trimmed.len() == tail.len() {
                return Err(format!("no space before an attribute of <{name}>"));
            }
            let a_len = trimmed.find(|c| !is_name_char(c)).unwrap_or(trimmed.len());
            if a_len == 0 {
                return Err(format!(
                    "bad attribute in <{name}>: {:?}",
                    &trimmed[..trimmed.len().min(20)]
                ));
            }
            let a_name = &trimmed[..a_len];
            let t = trimmed[a_len..]
                .strip_prefix('=')
                .ok_or_else(|| format!("attribute `{a_name}` of <{name}> has no `=`"))?;
            let quote = t.chars().next().filter(|&c| c == '"' || c == '\'');
            let quote =
                quote.ok_or_else(|| format!("attribute `{a_name}` of <{name}> is not quoted"))?;
            let t = &t[1..];
            let end = t.find(quote).ok_or("unterminated attribute value")?;
            check_text(&t[..end])?;
            if attrs
                .insert(a_name.to_owned(), t[..end].to_owned())
                .is_some()
            {
                return Err(format!("attribute `{a_name}` twice in <{name}>"));
            }
            tail = &t[end + 1..];
        };
        if stack.is_empty() {
            roots += 1;
        }
        if !self_closing {
            stack.push(name.clone());
        }
        elements.push(Element { name, attrs });
        rest = tail;
    }
    if !stack.is_empty() {
        return Err(format!("unclosed: {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(elements)
}
