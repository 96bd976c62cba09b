//! What a JSONPath reads of a payload, as a [`Demand`]: computed once when the path is built, so
//! that the payload can be read building only those parts.
//!
//! A name selector reads that field and an index from the start that item; a negative index, a
//! wildcard or a slice reads every child (which ones depends on the length or the keys); a
//! descendant segment reads everything below. A filter reads, of every child, what its
//! relative queries (`@.sku`) read, and of the whole document what its absolute ones (`$.limit`)
//! read. Where the path ends, the selected value is read whole: it is compared, tested or
//! written out.

use jsonpath_rust::parser::model::{
    Comparable, Filter, FilterAtom, FnArg, JpQuery, Segment, Selector, SingularQuery,
    SingularQuerySegment, Test, TestFunction,
};

use crate::message::Demand;

/// What `query` reads of the document.
pub(super) fn of(query: &JpQuery) -> Demand {
    let mut roots = Demand::nothing();
    let path = segments(&query.segments, &mut roots);
    path.union(&roots)
}

/// What `segments` read of the value they start from. What absolute queries inside filters read
/// of the document is added to `roots`.
fn segments(segments: &[Segment], roots: &mut Demand) -> Demand {
    match segments.split_first() {
        None => Demand::whole(),
        Some((segment, rest)) => self::segment(segment, rest, roots),
    }
}

fn segment(segment: &Segment, rest: &[Segment], roots: &mut Demand) -> Demand {
    match segment {
        Segment::Selector(s) => selector(s, rest, roots),
        Segment::Selectors(all) => all.iter().fold(Demand::nothing(), |demand, s| {
            demand.union(&selector(s, rest, roots))
        }),
        Segment::Descendant(inner) => {
            // Everything below is read; only what its filters read of the document remains.
            self::segment(inner, rest, roots);
            Demand::whole()
        }
    }
}

fn selector(selector: &Selector, rest: &[Segment], roots: &mut Demand) -> Demand {
    match selector {
        Selector::Name(name) => Demand::field(name, segments(rest, roots)),
        Selector::Index(i) => match usize::try_from(*i) {
            Ok(index) => Demand::item(index, segments(rest, roots)),
            Err(_) => Demand::each(segments(rest, roots)),
        },
        Selector::Wildcard | Selector::Slice(..) => Demand::each(segments(rest, roots)),
        Selector::Filter(f) => {
            let tested = filter(f, roots);
            Demand::each(tested.union(&segments(rest, roots)))
        }
    }
}

/// What `filter` reads of the child it tests.
fn filter(filter: &Filter, roots: &mut Demand) -> Demand {
    match filter {
        Filter::Or(all) | Filter::And(all) => all.iter().fold(Demand::nothing(), |demand, f| {
            demand.union(&self::filter(f, roots))
        }),
        Filter::Atom(FilterAtom::Filter { expr, .. }) => self::filter(expr, roots),
        Filter::Atom(FilterAtom::Test { expr, .. }) => test(expr, roots),
        Filter::Atom(FilterAtom::Comparison(c)) => {
            let (a, b) = c.vals();
            comparable(a, roots).union(&comparable(b, roots))
        }
    }
}

fn comparable(c: &Comparable, roots: &mut Demand) -> Demand {
    match c {
        Comparable::Literal(_) => Demand::nothing(),
        Comparable::Function(f) => function(f, roots),
        Comparable::SingularQuery(SingularQuery::Current(path)) => singular(path),
        Comparable::SingularQuery(SingularQuery::Root(path)) => {
            add(roots, &singular(path));
            Demand::nothing()
        }
    }
}

/// A singular query's path (names and indices), its value read whole.
fn singular(path: &[SingularQuerySegment]) -> Demand {
    path.iter().rev().fold(Demand::whole(), |below, s| match s {
        SingularQuerySegment::Name(name) => Demand::field(name, below),
        SingularQuerySegment::Index(i) => match usize::try_from(*i) {
            Ok(index) => Demand::item(index, below),
            Err(_) => Demand::each(below),
        },
    })
}

fn test(test: &Test, roots: &mut Demand) -> Demand {
    match test {
        Test::RelQuery(path) => segments(path, roots),
        Test::AbsQuery(query) => {
            let read = segments(&query.segments, roots);
            add(roots, &read);
            Demand::nothing()
        }
        Test::Function(f) => function(f, roots),
    }
}

/// A function reads nothing but what its arguments read.
fn function(f: &TestFunction, roots: &mut Demand) -> Demand {
    match f {
        TestFunction::Length(a) => arg(a, roots),
        TestFunction::Value(a) | TestFunction::Count(a) => arg(a, roots),
        TestFunction::Search(a, b) | TestFunction::Match(a, b) => {
            arg(a, roots).union(&arg(b, roots))
        }
        TestFunction::Custom(_, args) => args
            .iter()
            .fold(Demand::nothing(), |demand, a| demand.union(&arg(a, roots))),
    }
}

fn arg(a: &FnArg, roots: &mut Demand) -> Demand {
    match a {
        FnArg::Literal(_) => Demand::nothing(),
        FnArg::Test(t) => test(t, roots),
        FnArg::Filter(f) => filter(f, roots),
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
    use crate::message::{Demand, Message, Reading};

    fn selected(query: &JsonPathQuery, doc: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        query.any(doc, |v| {
            out.push(v.clone());
            false
        });
        out
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
            Just("[?length(@.*) > 1]".to_owned()),
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
                            selected(query, projected),
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
            reading.json().unwrap(),
            &serde_json::json!({"items": [{"sku": "Z", "qty": 2}, null]})
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
