//! Runs the JSONPath Compliance Test Suite (github.com/jsonpath-standard/jsonpath-compliance-test-suite,
//! its `cts.json`) against eip's JSONPath, and prints how many cases pass.
//!
//! ```text
//! cargo run -p eip-core --example jsonpath_cts -- path/to/cts.json
//! ```
//!
//! A case passes when an invalid selector is refused, or when a valid one selects the expected
//! values in the expected order (one of the orders listed, when the suite allows several). The
//! exit status is 1 when any case fails or the file cannot be read.

use std::process::ExitCode;

use eip_core::predicate::JsonPath;
use serde_json::Value;

fn main() -> ExitCode {
    let Some(file) = std::env::args().nth(1) else {
        eprintln!("usage: jsonpath_cts <cts.json>");
        return ExitCode::FAILURE;
    };
    let suite: Value = match std::fs::read(&file).map(|b| serde_json::from_slice(&b)) {
        Ok(Ok(suite)) => suite,
        Ok(Err(e)) => {
            eprintln!("{file}: not JSON: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("{file}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(cases) = suite.get("tests").and_then(Value::as_array) else {
        eprintln!("{file}: no `tests` array");
        return ExitCode::FAILURE;
    };
    let mut failed = Vec::new();
    for case in cases {
        if let Err(why) = run(case) {
            let name = case.get("name").and_then(Value::as_str).unwrap_or("?");
            let selector = case.get("selector").and_then(Value::as_str).unwrap_or("?");
            failed.push(format!("{name}: {selector:?}: {why}"));
        }
    }
    for failure in &failed {
        println!("FAIL {failure}");
    }
    println!(
        "jsonpath CTS: {} passed, {} failed, {} cases",
        cases.len() - failed.len(),
        failed.len(),
        cases.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One case: `Err` says how the outcome differs from the expected one.
fn run(case: &Value) -> Result<(), String> {
    let selector = case
        .get("selector")
        .and_then(Value::as_str)
        .ok_or("the case has no selector")?;
    let parsed = JsonPath::parse(selector);
    if case.get("invalid_selector").and_then(Value::as_bool) == Some(true) {
        return match parsed {
            Err(_) => Ok(()),
            Ok(_) => Err("accepted, but the selector is invalid".to_owned()),
        };
    }
    let path = parsed.map_err(|e| format!("refused: {e}"))?;
    let document = case.get("document").ok_or("the case has no document")?;
    let got: Vec<Value> = path.select(document).into_iter().cloned().collect();
    let expected: Vec<&Value> = match (case.get("result"), case.get("results")) {
        (Some(one), _) => vec![one],
        (None, Some(Value::Array(any))) => any.iter().collect(),
        _ => return Err("the case has no expected result".to_owned()),
    };
    if expected.iter().any(|e| e.as_array() == Some(&got)) {
        Ok(())
    } else {
        Err(format!("selected {}", Value::Array(got)))
    }
}
