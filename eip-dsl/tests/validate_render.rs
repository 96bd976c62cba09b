//! A whole flow file's report: every problem in file order without cascades, rendered with the
//! line, a marker and the help, as text and as a miette report.

use eip_dsl::load::load_file;

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, only};
use support::queues::with_queues;
use support::validate::{fixtures, load};

#[test]
fn every_problem_of_a_file_is_reported_in_file_order() {
    let errors = load(&[
        "channels:",
        "  trades.in: {kind: point-to-point, capacity: many}",
        "  trades.out: {kind: point-to-point}",
        "  quotes: {kind: publish-subscribe}",
        "routes:",
        "  - from: trades.inn",
        "    filter: '$.a >'",
        "    to: trades.out",
        "joins:",
        "  - {from: trades.in, to: quotes, hops: -2}",
        "exchanges:",
        "  mx:",
        "    bindings: [{key: 'a.b#', to: trades.out}]",
        "    colour: blue",
    ])
    .expect_err("refused");
    let found: Vec<(u32, &str)> = errors
        .problems
        .iter()
        .map(|p| (at(p).0, p.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (2, "`capacity` must be a whole number, found a string"),
            (6, "unknown channel `trades.inn`"),
            (
                7,
                "invalid predicate: expected a literal (a number, a quoted string, `true`, `false` or `null`), found the end of the predicate"
            ),
            (
                10,
                "`trades.in` is a queue (point-to-point channel); a queue can not be the source of a join, only its destination"
            ),
            (10, "`hops` must not be negative, found -2"),
            (
                13,
                "invalid topic pattern `a.b#`: word 2 (`b#`) mixes a wildcard with other characters; use `*` or `#` as a whole word"
            ),
            (14, "unknown key `colour` in exchange `mx`"),
        ],
        "{}",
        errors.render()
    );
}

#[test]
fn a_reading_problem_does_not_cascade_into_unknown_names() {
    // The channel whose kind is misspelt is still declared: routes naming it are not reported.
    let p = only(&with_queues(&[
        "  sink: {kind: queue}",
        "routes:",
        "  - {from: in, to: sink}",
    ]));
    assert_eq!(p.message, "`kind` can not be `queue`");
    // A value of the wrong type does not also make "datatype without invalid".
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json, invalid: [x]}",
    ]);
    assert_eq!(p.message, "`invalid` must be a name, found a list");
}

#[test]
fn render_shows_the_line_a_marker_and_the_help() {
    let errors = load(&[
        "channels:",
        "  trades.requests: {kind: point-to-point}",
        "  trades.buy: {kind: point-to-point}",
        "routes:",
        "  - from: trade.requests",
        "    to: trades.buy",
    ])
    .expect_err("refused");
    let expected = "\
error: unknown channel `trade.requests`
 --> flow.yaml:5:11
  |
5 |   - from: trade.requests
  |           ^^^^^^^^^^^^^^
  = key: routes[0].from
  = help: did you mean `trades.requests`?

flow.yaml: 1 problem
";
    assert_eq!(errors.render(), expected);
    assert_eq!(
        errors.to_string(),
        "flow.yaml:5:11: unknown channel `trade.requests`"
    );
}

#[test]
fn render_shows_the_first_place_of_a_duplicate() {
    let errors = load(&[
        "channels:",
        "  q: {kind: point-to-point}",
        "  q: {kind: point-to-point}",
    ])
    .expect_err("refused");
    let text = errors.render();
    assert!(
        text.contains("3 |   q: {kind: point-to-point}\n  |   ^\n"),
        "{text}"
    );
    assert!(
        text.contains("2 |   q: {kind: point-to-point}\n  |   - first declared here\n"),
        "{text}"
    );
}

#[test]
fn the_miette_report_lists_every_problem() {
    use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
    let errors = load(&with_queues(&["routes:", "  - {from: inn, to: ot}"])).expect_err("refused");
    assert_eq!(errors.related().map(Iterator::count), Some(2));
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, &errors)
        .expect("renders");
    assert!(
        out.contains("unknown channel `inn`") && out.contains("unknown channel or exchange `ot`"),
        "{out}"
    );
    assert!(out.contains("did you mean `in`?"), "{out}");
}

#[test]
fn an_unreadable_flow_file_is_one_problem() {
    let errors = load_file(&fixtures().join("no-such-flow.yaml")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
    assert!(
        errors.problems[0]
            .message
            .starts_with("can not read the flow file")
    );
}
