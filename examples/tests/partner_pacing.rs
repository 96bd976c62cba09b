//! Runs the `partner_pacing` example (built by `cargo test` next to this test) and checks that
//! each call reached the partner no sooner than its tenant's rate and the delay allow.

mod support;

/// When the partner got `request`, in ms from the start.
fn got_at(text: &str, request: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains(&format!(" {request} at ")))
        .unwrap_or_else(|| panic!("the partner never got {request}:\n{text}"));
    line.rsplit(" at ")
        .next()
        .and_then(|t| t.trim_end_matches(" ms").parse().ok())
        .unwrap_or_else(|| panic!("no time in {line}"))
}

#[test]
fn partner_pacing_keeps_each_tenant_to_its_rate_and_refuses_a_request_without_one() {
    let text = support::run_example("partner_pacing");
    // A burst of two for acme, each 50 ms late; the third waits for the next token (500 ms).
    assert!(got_at(&text, "order 1") >= 50, "{text}");
    assert!(got_at(&text, "order 2") >= 50, "{text}");
    assert!(got_at(&text, "order 3") >= 550, "{text}");
    // globex has a bucket of its own: it does not wait behind acme.
    let globex = got_at(&text, "order 4");
    assert!(globex >= 50 && globex < got_at(&text, "order 3"), "{text}");
    assert!(
        text.contains("refused order 5: throttle key header `tenant` is missing"),
        "{text}"
    );
    assert!(!text.contains("partner got ? order 5"), "{text}");
}
