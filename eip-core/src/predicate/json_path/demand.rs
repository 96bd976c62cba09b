//! What a JSONPath reads of a payload, as a [`Demand`]: computed once when the path is built, so
//! that the payload can be read building only those parts.
//!
//! A name selector reads that field and an index from the start that item; a negative index, a
//! wildcard or a slice reads every child (which ones depends on the length or the keys); a
//! descendant segment reads everything below. A filter reads, of every child, what its
//! relative queries (`@.sku`) read, and of the whole document what its absolute ones (`$.limit`)
//! read. Where the path ends, the selected value is read whole: it is compared, tested or
//! written out.

use super::syntax::{Comparable, Logical, Query, RegexArg, Step, ValueFunction};
use crate::message::Demand;

/// What the path `steps` reads of the document.
pub(super) fn of(steps: &[Step]) -> Demand {
    let mut roots = Demand::nothing();
    let path = self::steps(steps, &mut roots);
    path.union(&roots)
}

/// What `steps` read of the value they start from. What absolute queries inside filters read
/// of the document is added to `roots`.
fn steps(steps: &[Step], roots: &mut Demand) -> Demand {
    match steps.split_first() {
        None => Demand::whole(),
        Some((step, rest)) => self::step(step, rest, roots),
    }
}

fn step(step: &Step, rest: &[Step], roots: &mut Demand) -> Demand {
    match step {
        Step::Name(name) => Demand::field(name, steps(rest, roots)),
        Step::Index(i) => match usize::try_from(*i) {
            Ok(index) => Demand::item(index, steps(rest, roots)),
            Err(_) => Demand::each(steps(rest, roots)),
        },
        Step::Wildcard | Step::Slice { .. } => Demand::each(steps(rest, roots)),
        Step::Filter(logical) => {
            let tested = self::logical(logical, roots);
            Demand::each(tested.union(&steps(rest, roots)))
        }
        Step::Union(all) => all.iter().fold(Demand::nothing(), |demand, s| {
            demand.union(&self::step(s, rest, roots))
        }),
        Step::Descendant(inner) => {
            // Everything below is read; only what its filters read of the document remains.
            self::step(inner, rest, roots);
            Demand::whole()
        }
    }
}

/// What a filter's expression reads of the child it tests.
fn logical(logical: &Logical, roots: &mut Demand) -> Demand {
    match logical {
        Logical::Or(all) | Logical::And(all) => all.iter().fold(Demand::nothing(), |demand, l| {
            demand.union(&self::logical(l, roots))
        }),
        Logical::Not(inner) => self::logical(inner, roots),
        Logical::Exists(q) => query(q, roots),
        Logical::Compare(a, _, b) => comparable(a, roots).union(&comparable(b, roots)),
        Logical::Regex(call) => {
            let pattern = match &call.pattern {
                RegexArg::Compiled(_) => Demand::nothing(),
                RegexArg::Dynamic(dynamic) => comparable(&dynamic.source, roots),
            };
            comparable(&call.subject, roots).union(&pattern)
        }
    }
}

/// What a query reads of the child (`@`), adding what it reads of the document (`$`) to
/// `roots`.
fn query(q: &Query, roots: &mut Demand) -> Demand {
    let read = steps(&q.steps, roots);
    if q.relative {
        read
    } else {
        add(roots, &read);
        Demand::nothing()
    }
}

fn comparable(c: &Comparable, roots: &mut Demand) -> Demand {
    match c {
        Comparable::Literal(_) => Demand::nothing(),
        Comparable::Query(q) => query(q, roots),
        // A function reads nothing but what its arguments read.
        Comparable::Function(f) => match &**f {
            ValueFunction::Length(arg) => comparable(arg, roots),
            ValueFunction::Count(q) | ValueFunction::Value(q) => query(q, roots),
        },
    }
}

fn add(roots: &mut Demand, read: &Demand) {
    *roots = std::mem::take(roots).union(read);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::JsonPathQuery;
    use crate::message::{Demand, Doc, JsonNode, Message, Reading};

    fn selected<'a>(query: &JsonPathQuery, doc: impl JsonNode<'a>) -> Vec<Value> {
        let mut out = Vec::new();
        query.any(doc, |v| {
            out.push(v.to_value());
            false
        });
        out
    }

    /// [`selected`] in a reading's document, projected or not.
    fn selected_in(query: &JsonPathQuery, doc: Doc<'_>) -> Vec<Value> {
        match doc {
            Doc::Value(root) => selected(query, root),
            Doc::Tree(root) => selected(query, root),
        }
    }

    /// JSON text, with what a generated `Value` would not hold: keys given twice, escapes,
    /// numbers of every kind, whitespace.
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            (-3i64..40).prop_map(|i| i.to_string()),
            Just("1.5e3".to_owned()),
            Just("18446744073709551615".to_owned()),
            Just(r#""a\u00e9\n""#.to_owned()),
            "[ab]{0,2}".prop_map(|s| format!("\"{s}\"")),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5)
                    .prop_map(|items| format!("[{}]", items.join(", "))),
                proptest::collection::vec(("[abc]", inner), 0..4).prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .iter()
                        .map(|(k, v)| format!("\"{k}\": {v}"))
                        .collect();
                    format!("{{ {} }}", fields.join(","))
                }),
            ]
        })
    }

    /// A document, sometimes broken: cut short, a byte changed, or something after it.
    fn payload() -> impl Strategy<Value = Vec<u8>> {
        (
            json_text(),
            0usize..10,
            any::<prop::sample::Index>(),
            any::<u8>(),
        )
            .prop_map(|(text, how, at, byte)| {
                let mut bytes = text.into_bytes();
                let i = at.index(bytes.len());
                match how {
                    0 => bytes.truncate(i),
                    1 => bytes[i] = byte,
                    2 => bytes.extend_from_slice(b" 1"),
                    _ => {}
                }
                bytes
            })
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(".a".to_owned()),
            Just(".b".to_owned()),
            Just(".*".to_owned()),
            Just("..c".to_owned()),
            Just("[0]".to_owned()),
            Just("[2]".to_owned()),
            Just("[-1]".to_owned()),
            Just("[1:]".to_owned()),
            Just("['a', 1]".to_owned()),
            Just("[?@.a]".to_owned()),
            Just("[?@.b == 1]".to_owned()),
            Just("[?@ > 2]".to_owned()),
            Just("[?@[0] == 'a']".to_owned()),
            Just("[?$.c]".to_owned()),
            Just("[?@.a == $.b[0]]".to_owned()),
            Just("[?length(@.a) > 1]".to_owned()),
            Just("[?@[?@ > 1]]".to_owned()),
            Just("[?match(@.a, 'b.*')]".to_owned()),
            Just("[?search(@.b, $.c)]".to_owned()),
            Just("[?count(@..a) > 0]".to_owned()),
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(segment(), 0..4).prop_map(|s| format!("${}", s.concat()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn paths_select_on_the_projection_what_they_select_on_the_whole(
            payload in payload(),
            paths in proptest::collection::vec(path(), 1..4),
        ) {
            let queries: Vec<JsonPathQuery> = paths
                .iter()
                .map(|p| JsonPathQuery::parse(p, 0).unwrap())
                .collect();
            let demand = queries
                .iter()
                .fold(Demand::nothing(), |d, q| d.union(&q.demand()));
            let msg = Message::new(payload.clone());
            let reading = Reading::new(&msg, &demand);
            match (serde_json::from_slice::<Value>(&payload), reading.json()) {
                (Ok(full), Ok(projected)) => {
                    for (path, query) in paths.iter().zip(&queries) {
                        prop_assert_eq!(
                            selected(query, &full),
                            selected_in(query, projected),
                            "{} on {}", path, String::from_utf8_lossy(&payload)
                        );
                    }
                }
                (Err(full), Err(projected)) => {
                    prop_assert_eq!(full.to_string(), projected.source.to_string());
                }
                (full, projected) => prop_assert!(
                    false,
                    "{:?} against {:?} on {}",
                    full.map(|_| ()),
                    projected.map(|_| ()),
                    String::from_utf8_lossy(&payload)
                ),
            }
        }
    }

    #[test]
    fn a_filter_reads_what_its_queries_read_of_each_child() {
        let q = JsonPathQuery::parse("$.items[?@.sku == 'Z'].qty", 0).unwrap();
        let doc = br#"{"id": "x", "items": [{"sku": "Z", "qty": 2, "name": "n"}, 3]}"#;
        let msg = Message::new(&doc[..]);
        let demand = q.demand();
        let reading = Reading::new(&msg, &demand);
        assert_eq!(
            reading.json().unwrap().to_value(),
            serde_json::json!({"items": [{"sku": "Z", "qty": 2}, null]})
        );
        let absolute = JsonPathQuery::parse("$.a[?@ == $.b]", 0).unwrap().demand();
        let reading = Reading::new(&msg, &absolute);
        assert!(reading.json().is_ok());
        assert!(
            JsonPathQuery::parse("$..a", 0).unwrap().demand().is_whole(),
            "a descendant segment reads everything"
        );
    }
}
