//! Predicates: any expression parsed, and every one that parses evaluated on messages made from
//! the input.
//!
//! The input is three parts: the first line is the expression, the second the headers
//! (`name=value` pairs separated by `;`, a value typed as a bool, an integer, a finite float or
//! else a string), the rest the payload (JSON or not). Each parsed predicate is evaluated on
//! two messages carrying those headers: one with the payload as given, one with a JSON object
//! built from the input (every header as a field, and the payload as a string under `payload`),
//! so a JSON payload is in play whatever the mutations did to the bytes.
//!
//! What must hold: parsing never panics, and an error points inside the expression. Evaluation
//! never panics, gives the same answer whether the payload is read from its bytes (only what the
//! predicate names) or from a full parse made first, and is boolean: `not p` is the opposite of
//! `p`, `p and p` and `p or p` are `p`, `p and not p` never holds and `p or not p` always does.
//! A predicate built in code (`not`, `and`, `or`, `header_equals`, `header_exists`,
//! `header_matches`, `subject_matches`) shows an expression that parses back into a predicate
//! with the same answer.

#![no_main]

use eip_core::Message;
use eip_core::message::{HeaderValue, names};
use eip_core::predicate::Predicate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (expression, rest) = split_line(data);
    let (header_line, payload) = split_line(rest);
    let expression = String::from_utf8_lossy(expression);
    let headers = parse_headers(&String::from_utf8_lossy(header_line));
    let messages = [
        message(&headers, payload.to_vec()),
        message(&headers, built_json(&headers, payload)),
    ];
    match Predicate::parse(&expression) {
        Ok(p) => {
            for msg in &messages {
                check_read_as_parsed(&p, msg);
                check_boolean(&p, msg);
            }
        }
        Err(e) => {
            assert!(
                e.offset <= expression.len(),
                "error offset {} past the expression's {} bytes",
                e.offset,
                expression.len()
            );
            assert!(!e.to_string().is_empty());
        }
    }
    for msg in &messages {
        check_built_in_code(msg);
    }
});

/// The bytes before the first newline, and those after it.
fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// `name=value;name=value`, each value typed.
fn parse_headers(line: &str) -> Vec<(String, HeaderValue)> {
    line.split(';')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (name.to_owned(), typed(value))
        })
        .collect()
}

fn typed(value: &str) -> HeaderValue {
    if let Ok(b) = value.parse::<bool>() {
        HeaderValue::Bool(b)
    } else if let Ok(i) = value.parse::<i64>() {
        HeaderValue::Int(i)
    } else if let Some(f) = value.parse::<f64>().ok().filter(|f| f.is_finite()) {
        HeaderValue::Float(f)
    } else {
        HeaderValue::Str(value.to_owned())
    }
}

fn message(headers: &[(String, HeaderValue)], payload: Vec<u8>) -> Message {
    let mut msg = Message::new(payload);
    for (name, value) in headers {
        msg.headers_mut().insert(name.clone(), value.clone());
    }
    msg
}

/// A JSON object with a field per header and the payload (as text) under `payload`.
fn built_json(headers: &[(String, HeaderValue)], payload: &[u8]) -> Vec<u8> {
    let mut object = serde_json::Map::new();
    for (name, value) in headers {
        let value = match value {
            HeaderValue::Str(s) => serde_json::Value::from(s.as_str()),
            HeaderValue::Int(i) => serde_json::Value::from(*i),
            HeaderValue::Float(f) => serde_json::Value::from(*f),
            HeaderValue::Bool(b) => serde_json::Value::from(*b),
            HeaderValue::Bytes(b) => serde_json::Value::from(b.len()),
        };
        object.insert(name.clone(), value);
    }
    let text = String::from_utf8_lossy(payload).into_owned();
    object.insert("payload".into(), serde_json::Value::from(text));
    serde_json::Value::Object(object).to_string().into_bytes()
}

/// A predicate reads from the payload's bytes only what it names; on a copy whose payload was
/// parsed whole first, it reads the parse instead. Both give the same answer.
fn check_read_as_parsed(p: &Predicate, msg: &Message) {
    let parsed = msg.clone();
    let whole = parsed.json_value().is_ok();
    assert_eq!(
        p.matches(msg),
        p.matches(&parsed),
        "`{p}` answers otherwise on the bytes than on the full parse (parsed: {whole})"
    );
}

/// The boolean laws, and that the combinations built in code parse back to the same answer.
fn check_boolean(p: &Predicate, msg: &Message) {
    let holds = p.matches(msg);
    let not = p.clone().not();
    assert_eq!(
        not.matches(msg),
        !holds,
        "`{not}` is not the opposite of `{p}`"
    );
    assert_eq!(
        p.clone().and(p.clone()).matches(msg),
        holds,
        "`{p}` and itself"
    );
    assert_eq!(
        p.clone().or(p.clone()).matches(msg),
        holds,
        "`{p}` or itself"
    );
    let never = p.clone().and(not.clone());
    let always = p.clone().or(not.clone());
    assert!(!never.matches(msg), "`{never}` held");
    assert!(always.matches(msg), "`{always}` did not hold");
    for built in [not, never, always] {
        check_parses_back(&built, msg);
    }
}

/// `built` shows an expression that parses into a predicate giving the same answer on `msg`.
fn check_parses_back(built: &Predicate, msg: &Message) {
    let parsed = Predicate::parse(built.as_str())
        .unwrap_or_else(|e| panic!("`{built}`, built in code, does not parse back: {e}"));
    assert_eq!(
        parsed.matches(msg),
        built.matches(msg),
        "`{built}` parsed back answers otherwise"
    );
}

/// Header and subject predicates built from the message's own headers.
fn check_built_in_code(msg: &Message) {
    for (name, value) in msg.headers().iter() {
        let equals = Predicate::header_equals(name, value.clone());
        assert!(
            equals.matches(msg),
            "`{equals}` does not hold on its own header"
        );
        check_parses_back(&equals, msg);
        let exists = Predicate::header_exists(name);
        assert!(exists.matches(msg), "`{exists}` does not hold");
        check_parses_back(&exists, msg);
        if let Some(text) = value.as_str()
            && let Ok(regex) = Predicate::header_matches(name, text)
        {
            check_parses_back(&regex, msg);
        }
    }
    if let Some(HeaderValue::Str(subject)) = msg.headers().get(names::SUBJECT)
        && let Ok(topic) = Predicate::subject_matches(subject)
    {
        // Read as a pattern, a subject matches itself: `*` takes the word `*`, `#` the word `#`.
        assert!(
            topic.matches(msg),
            "`{topic}` does not match its own subject"
        );
        check_parses_back(&topic, msg);
    }
}
