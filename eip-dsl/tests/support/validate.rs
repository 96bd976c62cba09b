//! A flow under test: written as numbered lines, loaded against the `validate` fixtures.

use std::path::{Path, PathBuf};

use eip_dsl::diagnostic::FlowErrors;
use eip_dsl::load::load_str;
use eip_dsl::plan::Plan;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validate")
}

/// The lines joined, so that line N of the flow is `lines[N - 1]`.
pub fn flow(lines: &[&str]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

pub fn load(lines: &[&str]) -> Result<Plan, FlowErrors> {
    load_str(&flow(lines), "flow.yaml", &fixtures())
}
