//! Secrets never reach output, snippets of a flow file included: every command that reads a
//! flow (`validate`, `graph`, `route`, `run`) shows a problem next to a password without the
//! password, and still points at the right line and column.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use eip_dsl::load::load_str;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

const PASSWORD: &str = "Hunter2SecretPw";
const COMMANDS: [&str; 4] = ["validate", "graph", "route", "run"];

/// A flow whose line 7 holds a database URL with a password, with `line6`, `line7` and
/// `line8` in place of the adapter's `from`, `url` and `statement` lines.
fn flow(line6: &str, line7: &str, line8: &str) -> String {
    format!(
        "channels:\n  \
           orders: {{kind: point-to-point}}\n\
         adapters:\n  \
           db:\n    \
             kind: sql-out\n    \
             {line6}\n    \
             {line7}\n    \
             {line8}\n"
    )
}

const FROM: &str = "from: orders";
const URL: &str = "url: postgres://user:Hunter2SecretPw@127.0.0.1/test";
const STATEMENT: &str = "statement: INSERT INTO t (a) VALUES (:$.a)";

/// The line 7 as every output may show it.
const URL_SHOWN: &str = "url: postgres://user:***************@127.0.0.1/test";

/// Runs `eip COMMAND flow.yaml` in `dir` with no input.
fn eip(command: &str, flow: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg(command)
        .arg(flow)
        .stdin(Stdio::null())
        .output()
        .expect("eip runs")
}

fn write_flow(scratch: &Scratch, text: &str) -> PathBuf {
    let path = scratch.0.join("flow.yaml");
    std::fs::write(&path, text).expect("the flow file");
    path
}

/// Every command refuses the flow, shows no password on either stream, and names the place
/// `line:column` of the problem.
fn assert_hidden_everywhere(text: &str, place: &str, shows_url_line: bool) {
    let scratch = Scratch::new("secrets");
    let path = write_flow(&scratch, text);
    for command in COMMANDS {
        let out = eip(command, &path);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
            "{command} shows the password:\n{stdout}\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("flow.yaml:{place}")),
            "{command} names the place {place}:\n{stderr}"
        );
        if shows_url_line {
            assert!(
                stderr.contains(URL_SHOWN),
                "{command} shows the URL line, password hidden:\n{stderr}"
            );
        }
    }
}

#[test]
fn a_misspelt_url_key_is_shown_without_its_password() {
    let urll = URL.replacen("url", "urll", 1);
    let text = flow(FROM, &urll, STATEMENT);
    assert_hidden_everywhere(&text, "7:5", false);
}

#[test]
fn a_misspelt_url_scheme_is_shown_without_its_password() {
    let text = flow(FROM, &URL.replace("postgres", "postgress"), STATEMENT);
    assert_hidden_everywhere(&text, "7:10", false);
}

#[test]
fn a_typo_on_the_line_after_the_url_shows_it_without_its_password() {
    let text = flow(FROM, URL, &STATEMENT.replace("statement", "statment"));
    assert_hidden_everywhere(&text, "8:5", true);
}

#[test]
fn a_typo_on_the_line_before_the_url_shows_it_without_its_password() {
    let text = flow("from: ordrs", URL, STATEMENT);
    assert_hidden_everywhere(&text, "6:11", true);
}

#[test]
fn a_password_written_as_a_key_is_not_shown() {
    let text = flow(FROM, "password: Hunter2SecretPw", STATEMENT);
    assert_hidden_everywhere(&text, "7:5", false);
}

#[test]
fn a_password_query_parameter_is_not_shown() {
    let url = "urll: postgres://127.0.0.1/test?user=app&password=Hunter2SecretPw";
    let text = flow(FROM, url, STATEMENT);
    assert_hidden_everywhere(&text, "7:5", false);
}

#[test]
fn the_plain_rendering_and_display_hide_the_password_and_keep_the_marker() {
    let urll = URL.replacen("url", "urll", 1);
    let text = flow(FROM, &urll, STATEMENT);
    let errors = load_str(&text, "flow.yaml", ".".as_ref()).expect_err("refused");
    let rendered = errors.render();
    let display = errors.to_string();
    let source = errors.source.as_deref().unwrap_or("");
    for shown in [&rendered, &display, &source.to_owned()] {
        assert!(!shown.contains(PASSWORD), "{shown}");
    }
    assert_eq!(source.len(), text.len(), "offsets into the text still hold");
    assert!(
        rendered
            .contains("7 |     urll: postgres://user:***************@127.0.0.1/test\n  |     ^^^^"),
        "{rendered}"
    );
}

#[test]
fn a_password_quoted_in_a_message_is_replaced() {
    let text = "\
channels:
  orders: {kind: point-to-point}
routes:
  - {from: orders, to: 'amqp://guest:Hunter2SecretPw@127.0.0.1'}
";
    let errors = load_str(text, "flow.yaml", ".".as_ref()).expect_err("refused");
    let rendered = errors.render();
    assert!(!rendered.contains(PASSWORD), "{rendered}");
    assert!(
        rendered.contains("amqp://guest:***@127.0.0.1"),
        "{rendered}"
    );
}

#[test]
fn environment_references_stay_visible() {
    let url = "urll: postgres://${PGUSER:-app}:${PGPASSWORD}@127.0.0.1/test";
    let text = flow(FROM, url, STATEMENT);
    let errors = load_str(&text, "flow.yaml", ".".as_ref()).expect_err("refused");
    assert!(errors.render().contains(url), "{}", errors.render());
}
