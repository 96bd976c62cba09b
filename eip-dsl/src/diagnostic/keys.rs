//! Key paths and suggestions, the same for every message: `adapters["orders-in"].glob`, and
//! "did you mean `glob`?".

use eip_core::bus::closest;

/// A key path segment for a field: `parent.key`.
pub(crate) fn field_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// A key path segment for a list item: `parent[i]`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// A key path segment for a named entry: `parent["name"]` (names hold dots).
pub(crate) fn name_path(parent: &str, name: &str) -> String {
    format!("{parent}[{name:?}]")
}

/// "did you mean `x`?" for the candidate closest to `name`, else the whole list.
pub(crate) fn suggest_key(name: &str, candidates: &[&str]) -> String {
    match closest(name, candidates.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!(
            "expected one of {}",
            candidates
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
