//! Flow files: any text through the loader and validator, and every loaded flow drawn.
//!
//! A flow file is outside data. Loading it must end in a plan or in problems, never a panic,
//! and a refusal must name at least one problem and render (as plain text and through miette,
//! as `eip validate` shows it) without panicking on its positions. A flow that loads is drawn
//! in every graph format; drawing is deterministic, so drawing it twice gives the same bytes.
//! Schema files named by `datatype` are looked up beside the example flows, so the seeds taken
//! from `examples/flows/` load whole.

#![no_main]

use std::path::Path;

use eip_dsl::graph::{self, Format};
use eip_dsl::load::load_str;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let base_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows");
    match load_str(&text, "fuzz.yaml", &base_dir) {
        Ok(plan) => {
            for format in Format::ALL {
                let drawn = graph::render(&plan, format);
                assert!(!drawn.is_empty(), "{format} drawing is empty");
                assert_eq!(
                    drawn,
                    graph::render(&plan, format),
                    "{format} drawing differs"
                );
            }
        }
        Err(errors) => {
            assert!(
                !errors.problems.is_empty(),
                "a refused flow names no problem"
            );
            let plain = errors.render();
            assert!(
                plain.contains("fuzz.yaml"),
                "the report does not name the file"
            );
            let mut fancy = String::new();
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .render_report(&mut fancy, &errors)
                .expect("rendering into a String does not fail");
        }
    }
});
