//! `tracing` spans of a running route: a `route` span per message taken (the route and the
//! message's `id`), inside it a `step` span per step (the route, the step's place from 1 and its
//! kind), at debug level, so a subscriber can time each step and put a step's log lines in
//! context.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use eip_core::Message;
use eip_dsl::{compile, load};
use tracing_subscriber::fmt::format::FmtSpan;

/// Where the subscriber writes, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn each_step_runs_in_a_span_inside_its_route_s_span() {
    let plan = load::load_str(
        "
channels:
  orders: {kind: point-to-point}
  audit: {kind: point-to-point}
  big: {kind: point-to-point}
routes:
  - name: triage
    from: orders
    steps:
      - wire-tap: audit
      - filter: '$.total > 100'
    to: big
",
        "flow.yaml",
        Path::new("."),
    )
    .unwrap();
    let flow = compile::compile(&plan).unwrap();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let msg = Message::new(r#"{"total": 500}"#);
    let id = msg.id();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(flow.routes()[0].handle(msg)).unwrap();
    });
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let closed: Vec<&str> = text.lines().filter(|l| l.contains("close")).collect();
    let route = format!("route{{route=triage id={id}}}");
    for (step, kind) in [(1, "wire-tap"), (2, "filter")] {
        let span = format!("{route}:step{{route=triage step={step} kind={kind}}}");
        assert!(
            closed.iter().any(|l| l.contains(&span)),
            "no closed span {span} in:\n{text}"
        );
    }
    assert!(
        closed
            .iter()
            .any(|l| l.contains(&route) && !l.contains(":step")),
        "{text}"
    );
}
