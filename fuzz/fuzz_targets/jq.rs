//! jq programs as a flow file's `transform` and `split` give them: any text of up to 128
//! bytes compiled, then run on the payload that follows it (after a newline).
//!
//! What must hold: compiling never panics (nor overflows the stack: nesting is bounded before
//! jaq sees the program), an error points inside the program, and it renders. A program that
//! compiles is run only when it can not loop, recurse or grow a value without bound (none of
//! the words in `UNBOUNDED`): a user's program may loop forever, which is not eip's fault, but
//! one that can not must answer, with outputs or an error, and never panic. And reading only
//! the parts of the payload the program needs changes nothing: the outputs and errors are those
//! of the program run on the whole payload.

#![no_main]

use eip_core::Message;
use eip_steps::expr::Jq;
use libfuzzer_sys::fuzz_target;

/// Words that let a program loop, recurse or grow without bound.
const UNBOUNDED: &[&str] = &[
    "def",
    "recurse",
    "repeat",
    "while",
    "until",
    "range",
    "limit",
    "..",
    "path",
    "env",
    "walk",
    "splits",
    "combinations",
    "*",
    "pow",
    "pick",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (program, payload) = text.split_once('\n').unwrap_or((&text, "{\"a\": [1, 2]}"));
    if program.len() > 128 {
        return;
    }
    match Jq::compile(program) {
        Err(e) => {
            assert!(
                e.offset() <= program.len(),
                "error offset {} past the program's {} bytes",
                e.offset(),
                program.len()
            );
            assert!(!e.to_string().is_empty());
        }
        Ok(jq) => {
            if UNBOUNDED.iter().any(|w| program.contains(w)) || payload.len() > 4096 {
                return;
            }
            let msg = Message::builder(payload.to_owned())
                .header("region", "eu")
                .build();
            let _ = jq.one(&msg);
            let _ = jq.one_payload(&msg);
            let projected = jq.all(&msg);
            let whole = jq.all_reading_everything(&msg);
            assert_eq!(
                projected, whole,
                "program {program:?} on {payload:?}: projected and whole differ"
            );
        }
    }
});
