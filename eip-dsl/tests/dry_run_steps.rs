//! What `eip route --steps` says a delay and an enricher would do with this one message: how
//! long it would wait, and the request it would make (made for the message, never sent, its
//! secrets hidden).

use std::path::Path;

use eip_dsl::compile::{self, Flow, InputMessage};
use eip_dsl::load;

/// A flow whose one route takes `orders` through `steps` to `out`.
fn flow(steps: &str) -> Flow {
    let text = format!(
        "
channels:
  orders: {{kind: point-to-point}}
  out: {{kind: point-to-point}}
routes:
  - from: orders
    steps:
{steps}
    to: out
"
    );
    match load::load_str(&text, "flow.yaml", Path::new(".")) {
        Ok(plan) => compile::compile(&plan).expect("the flow compiles"),
        Err(errors) => panic!("{}", errors.render()),
    }
}

/// The notes of each step for the input line `input`, in order.
fn notes(flow: &Flow, input: &str) -> Vec<Vec<String>> {
    let input = InputMessage::parse(input).expect("an input line");
    let report = flow.dry_run_steps(&input).expect("a report");
    report.steps.into_iter().map(|s| s.notes).collect()
}

#[test]
fn a_fixed_delay_says_how_long_this_message_would_wait() {
    let f = flow("      - delay: 90s\n      - delay: 250ms");
    let notes = notes(&f, r#"{"to": "orders", "payload": {}}"#);
    assert_eq!(notes, [["delayed 90s"], ["delayed 250ms"]]);
}

#[test]
fn a_delay_until_a_time_says_the_time_and_how_far_ahead_it_is() {
    let f = flow("      - delay: {until: '.at', max: 900000h}");
    let notes = notes(
        &f,
        r#"{"to": "orders", "payload": {"at": "2099-01-01T01:00:00+01:00"}}"#,
    );
    let note = &notes[0][0];
    // The time in UTC, then how long from now: years ahead, so days first, then the hours,
    // minutes and seconds that are not zero (which ones depends on the moment the test runs).
    let ahead = note
        .strip_prefix("until 2099-01-01T00:00:00Z (in ")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{note}"));
    let parts: Vec<(&str, char)> = ahead
        .split(' ')
        .map(|part| {
            let unit = part.chars().last().unwrap_or_else(|| panic!("{note}"));
            (&part[..part.len() - unit.len_utf8()], unit)
        })
        .collect();
    assert_eq!(
        parts.first().map(|(_, unit)| *unit),
        Some('d'),
        "days first: {note}"
    );
    for (count, unit) in &parts {
        assert!(
            count.parse::<u64>().is_ok() && "dhms".contains(*unit),
            "{note}"
        );
    }
}

#[test]
fn a_delay_until_a_time_already_past_says_it_would_not_wait() {
    let f = flow("      - delay: {until: '.at'}");
    let notes = notes(
        &f,
        r#"{"to": "orders", "payload": {"at": "2020-01-01T00:00:00Z"}}"#,
    );
    assert_eq!(
        notes,
        [["not delayed: 2020-01-01T00:00:00Z is already past"]]
    );
    // Seconds since 1970 are read the same way.
    let notes = self::notes(&f, r#"{"to": "orders", "payload": {"at": 0}}"#);
    assert_eq!(
        notes,
        [["not delayed: 1970-01-01T00:00:00Z is already past"]]
    );
}

#[test]
fn a_delay_whose_time_is_too_far_gives_no_note_but_an_invalid_message() {
    let f = flow("      - delay: {until: '.at', max: 1h}");
    let input =
        InputMessage::parse(r#"{"to": "orders", "payload": {"at": "2099-01-01T00:00:00Z"}}"#)
            .expect("an input line");
    let report = f.dry_run_steps(&input).expect("a report");
    assert_eq!(report.dead_letter.expect("dead-lettered").reason, "invalid");
}

#[cfg(feature = "http")]
#[test]
fn an_http_enricher_says_the_request_it_would_make_for_this_message() {
    // Port 9 (discard) on loopback: a real call would fail; the dry run makes none.
    let f = flow(
        "      - enrich:
          http: {url: 'http://127.0.0.1:9/customers/{$.customer_id}?tier={header.tier}'}
          merge: '. + {customer: $answer}'
      - enrich:
          http: {url: 'http://127.0.0.1:9/prices', method: post}
          merge: '. + {price: $answer}'",
    );
    let notes = notes(
        &f,
        r#"{"to": "orders", "payload": {"customer_id": 42}, "headers": {"tier": "gold plus"}}"#,
    );
    assert_eq!(
        notes,
        [
            ["would call GET http://127.0.0.1:9/customers/42?tier=gold%20plus"],
            ["would call POST http://127.0.0.1:9/prices with the payload"],
        ]
    );
}

#[cfg(feature = "http")]
#[test]
fn an_http_enricher_s_dry_run_hides_the_secrets_of_its_url() {
    let f = flow(
        "      - enrich:
          http: {url: 'http://app:s3cret@127.0.0.1:9/c/{$.id}?api_key=k3y&password=pw&x=1'}
          merge: '. + {customer: $answer}'",
    );
    let notes = notes(&f, r#"{"to": "orders", "payload": {"id": 7}}"#);
    let note = &notes[0][0];
    assert_eq!(
        note,
        "would call GET http://app:***@127.0.0.1:9/c/7?api_key=***&password=***&x=1"
    );
    for secret in ["s3cret", "k3y", "=pw"] {
        assert!(!note.contains(secret), "{secret} shown: {note}");
    }
}

#[cfg(feature = "sql")]
#[test]
fn an_sql_enricher_says_the_query_and_the_values_it_would_bind() {
    // Nothing connects in a dry run: the pool opens at the first real lookup.
    let f = flow(
        "      - enrich:
          sql:
            url: 'postgres://eip:pw@127.0.0.1:5432/test'
            query: 'select name from customers where id = :id and tier = :tier'
            params: {id: '.customer_id', tier: '.tier // null'}
          merge: '. + {customer: $answer}'
      - enrich:
          sql:
            url: 'postgres://127.0.0.1:5432/test'
            query: 'select name from customers where region = :$.region and since > :header.since'
          merge: '. + {peers: $answer}'",
    );
    let notes = notes(
        &f,
        r#"{"to": "orders", "payload": {"customer_id": 42, "region": "O'Hare"}, "headers": {"since": 2020}}"#,
    );
    assert_eq!(
        notes,
        [
            [
                "would query `select name from customers where id = :id and tier = :tier` with \
                 :id = 42, :tier = NULL"
            ],
            [
                "would query `select name from customers where region = :$.region and since > \
                 :header.since` with :$.region = 'O''Hare', :header.since = 2020"
            ],
        ]
    );
}

#[cfg(feature = "sql")]
#[test]
fn an_sql_enricher_whose_parameter_the_message_can_not_fill_is_invalid_in_the_dry_run_too() {
    let f = flow(
        "      - enrich:
          sql:
            url: 'postgres://127.0.0.1:5432/test'
            query: 'select name from customers where id = :$.customer_id'
          merge: '. + {customer: $answer}'",
    );
    let input =
        InputMessage::parse(r#"{"to": "orders", "payload": {"other": 1}}"#).expect("an input line");
    let report = f.dry_run_steps(&input).expect("a report");
    assert_eq!(report.dead_letter.expect("dead-lettered").reason, "invalid");
    assert!(report.steps.is_empty() || report.steps[0].notes.is_empty());
}
