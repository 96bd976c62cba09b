//! Positions for a flow made in code: a listing of its predicates and topic patterns.
//!
//! A flow file's problems point into the file. A flow made in code has no file, but a problem
//! inside a predicate or pattern should still say where: so before validation, each of them
//! is given a position in a listing that holds them one a line, in the order of the flow.
//! Validation then points inside them exactly as it does for a file, and the listing serves as
//! the source its snippets are cut from. Names and other values stay without position: their
//! key path says all there is to say.

use crate::spec::{FlowSpec, Located, Position};

/// Places every predicate and topic pattern of `spec` in a listing; returns the listing.
pub(super) fn place_expressions(spec: &mut FlowSpec) -> String {
    let mut listing = Listing::default();
    for route in &mut spec.routes {
        if let Some(filter) = &mut route.filter {
            listing.place(filter);
        }
        if let Some(clauses) = &mut route.choice {
            for clause in &mut clauses.value {
                listing.place(&mut clause.when);
            }
        }
    }
    for join in &mut spec.joins {
        if let Some(filter) = &mut join.filter {
            listing.place(filter);
        }
    }
    for (_, exchange) in &mut spec.exchanges {
        for binding in &mut exchange.bindings {
            if let Some(key) = &mut binding.key {
                listing.place(key);
            }
        }
    }
    listing.text
}

#[derive(Default)]
struct Listing {
    text: String,
    lines: u32,
}

impl Listing {
    /// Appends `value` as the next line(s) and gives it that position.
    fn place(&mut self, value: &mut Located<String>) {
        self.lines = self.lines.saturating_add(1);
        value.at = Some(Position {
            line: self.lines,
            column: 1,
            offset: self.text.len(),
            len: value.value.len(),
        });
        self.text.push_str(&value.value);
        self.text.push('\n');
        let breaks = u32::try_from(value.value.matches('\n').count()).unwrap_or(u32::MAX);
        self.lines = self.lines.saturating_add(breaks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{FlowBuilder, exchange, join, route};

    #[test]
    fn expressions_are_listed_one_a_line_in_flow_order() {
        let mut spec = FlowBuilder::new()
            .route(route::from("a").filter("$.x == 1").to("b"))
            .route(route::from("c").choice().when("exists($.y)", "d"))
            .join(join::from("e").to("f").filter("$.z\n== 2"))
            .exchange(
                "g",
                exchange::topic().bind("stock.#", ["h"]).bind_all(["i"]),
            )
            .into_spec();
        let listing = place_expressions(&mut spec);
        assert_eq!(listing, "$.x == 1\nexists($.y)\n$.z\n== 2\nstock.#\n");
        let at = |l: &Option<Located<String>>| l.as_ref().and_then(|v| v.at);
        assert_eq!(
            at(&spec.routes[0].filter),
            Some(Position {
                line: 1,
                column: 1,
                offset: 0,
                len: 8
            })
        );
        let when = spec.routes[1].choice.as_ref().map(|c| c.value[0].when.at);
        assert_eq!(when.flatten().map(|p| (p.line, p.offset)), Some((2, 9)));
        assert_eq!(
            at(&spec.joins[0].filter).map(|p| (p.line, p.offset)),
            Some((3, 21))
        );
        assert_eq!(
            at(&spec.exchanges[0].1.bindings[0].key).map(|p| (p.line, p.offset, p.len)),
            Some((5, 30, 7))
        );
        assert_eq!(spec.exchanges[0].1.bindings[1].key, None);
    }
}
