//! Problems found in a flow, and how they are shown to the user.
//!
//! Reading and [validation](crate::validate) never stop at the first problem: they collect
//! every [`Problem`] they find, each with the position of the offending value or key (when
//! the flow came from a file), the key path (`routes[0].choice[1].when`), and help such as
//! "did you mean `trades.requests`?". [`FlowErrors`] holds them all, in file order, with the
//! file's text so they can be shown with a snippet: [`FlowErrors::render`] gives plain,
//! deterministic text, and the [`miette::Diagnostic`] implementation lets a terminal
//! front end draw them with colour.
//!
//! Secrets never reach that output: the text kept for snippets is a copy of the file with
//! every password, token and the like overwritten by `*` (byte for byte, so positions still
//! point where they did), and the problems' texts have them replaced by `***`; see
//! [`FlowErrors::new`].

mod check;
mod inner;
mod keys;
mod redact;

use std::fmt::{self, Write as _};

use miette::{Diagnostic, LabeledSpan, SourceCode};

pub(crate) use self::check::{Check, Damage};
pub(crate) use self::inner::inside;
pub(crate) use self::keys::{field_path, index_path, name_path, suggest_key};
use self::redact::Secrets;
#[cfg(all(feature = "jq", feature = "http"))]
pub(crate) use self::redact::is_secret_name;
use crate::spec::Position;

/// One problem in a flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where, when the flow came from a file.
    pub at: Option<Position>,
    /// How to fix it, e.g. "did you mean `trades.requests`?".
    pub help: Option<String>,
    /// The key path of the offending value, e.g. `channels["trades.requests"].capacity` or
    /// `routes[0].to`; also useful for flows made in code, which have no positions.
    pub key: Option<String>,
    /// Other places that explain the problem, such as where a duplicated name was first
    /// declared.
    pub labels: Vec<Label>,
}

/// A secondary place in the file that a [`Problem`] refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// Where.
    pub at: Position,
    /// What is there, e.g. "first declared here".
    pub message: String,
}

impl Problem {
    /// A problem at `at` (`None` for a value made in code).
    pub fn new(message: impl Into<String>, at: Option<Position>) -> Self {
        Problem {
            message: message.into(),
            at,
            help: None,
            key: None,
            labels: Vec::new(),
        }
    }

    /// The same problem with help text.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The same problem with help text, if there is some.
    #[must_use]
    pub fn with_help_opt(mut self, help: Option<String>) -> Self {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    /// The same problem with its key path.
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The same problem with a secondary place, when `at` is known.
    #[must_use]
    pub fn with_label(mut self, at: Option<Position>, message: impl Into<String>) -> Self {
        if let Some(at) = at {
            self.labels.push(Label {
                at,
                message: message.into(),
            });
        }
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl Diagnostic for Problem {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = self
            .at
            .map(|at| LabeledSpan::new_primary_with_span(self.key.clone(), (at.offset, at.len)));
        let others = self
            .labels
            .iter()
            .map(|l| LabeledSpan::new_with_span(Some(l.message.clone()), (l.at.offset, l.at.len)));
        let all: Vec<LabeledSpan> = primary.into_iter().chain(others).collect();
        if all.is_empty() {
            None
        } else {
            Some(Box::new(all.into_iter()))
        }
    }
}

/// Every problem found in a flow.
#[derive(Debug, Clone)]
pub struct FlowErrors {
    /// The file's name as given (or `<flow>` for a flow made in code).
    pub name: String,
    /// The file's text, for snippets, with its secrets hidden (see [`FlowErrors::new`]).
    pub source: Option<String>,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

impl FlowErrors {
    /// Problems of the flow `name` (with its text, when it came from a file), put in file
    /// order: by position, problems without one last, otherwise in the order found.
    ///
    /// The text is kept with its secrets hidden: the password of any URL (under any key, a
    /// misspelt one included), the value of a `password=`-like parameter and of a key named
    /// like a secret (`password:`, `api-token:`) are overwritten with one `*` per byte, so
    /// every position still points at the same place; `${NAME}` references are kept. A
    /// problem's message, help, key path and labels show `***` in place of the secrets at
    /// the places it points to, and of a URL password that is one of the file's secrets.
    ///
    /// ```
    /// use eip_dsl::diagnostic::{FlowErrors, Problem};
    ///
    /// let text = "urll: postgres://app:Hunter2@db/shop";
    /// let errors = FlowErrors::new("f.yaml", Some(text.into()), vec![Problem::new("x", None)]);
    /// assert_eq!(errors.source.as_deref(), Some("urll: postgres://app:*******@db/shop"));
    /// ```
    pub fn new(
        name: impl Into<String>,
        source: Option<String>,
        mut problems: Vec<Problem>,
    ) -> Self {
        let secrets = source.as_deref().map(Secrets::find).unwrap_or_default();
        let source = source.map(|text| secrets.hide_in(&text));
        for problem in &mut problems {
            scrub_problem(&secrets, problem);
        }
        problems.sort_by_key(|p| p.at.map_or((1, 0), |at| (0, at.offset)));
        FlowErrors {
            name: name.into(),
            source,
            problems,
        }
    }

    /// Plain text for a terminal or a test: no colour, the same every time. For each problem:
    /// the message, `NAME:LINE:COLUMN`, the source line with a marker under the offending
    /// value, other places it refers to, the key path, and the help.
    ///
    /// ```text
    /// error: unknown channel `trade.requests`
    ///   --> flow.yaml:12:11
    ///    |
    /// 12 |   - from: trade.requests
    ///    |           ^^^^^^^^^^^^^^
    ///    = key: routes[0].from
    ///    = help: did you mean `trades.requests`?
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            self.render_problem(problem, &mut out);
        }
        let count = self.problems.len();
        let _ = writeln!(
            out,
            "\n{}: {count} problem{}",
            self.name,
            if count == 1 { "" } else { "s" }
        );
        out
    }

    fn render_problem(&self, problem: &Problem, out: &mut String) {
        let _ = writeln!(out, "error: {}", one_line(&problem.message));
        let mut snippets: Vec<(Position, Option<&str>, char)> = Vec::new();
        if let Some(at) = problem.at {
            snippets.push((at, None, '^'));
        }
        for label in &problem.labels {
            snippets.push((label.at, Some(&label.message), '-'));
        }
        let source = self.source.as_deref();
        let width = snippets
            .iter()
            .map(|(at, _, _)| at.line.to_string().len())
            .max()
            .unwrap_or(0);
        let pad = " ".repeat(width);
        if let Some(at) = problem.at {
            let _ = writeln!(out, "{pad}--> {}:{}:{}", self.name, at.line, at.column);
        }
        if let Some(source) = source {
            for (at, message, marker) in &snippets {
                let Some(line) = source_line(source, at.line) else {
                    continue;
                };
                let chars: Vec<char> = line
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let column = (at.column as usize).saturating_sub(1);
                let (shown, start) = window(&chars, column);
                let rest = shown.chars().count().saturating_sub(start);
                let marked = marker_width(source, at).min(rest).max(1);
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(
                    out,
                    "{:>width$} | {}",
                    at.line,
                    shown.trim_end(),
                    width = width
                );
                let mut marks = format!(
                    "{pad} | {}{}",
                    " ".repeat(start),
                    marker.to_string().repeat(marked)
                );
                if let Some(message) = message {
                    let _ = write!(marks, " {}", one_line(message));
                }
                let _ = writeln!(out, "{marks}");
            }
        }
        let lead = if width == 0 {
            String::new()
        } else {
            format!("{pad} ")
        };
        if let Some(key) = &problem.key {
            let _ = writeln!(out, "{lead}= key: {}", one_line(key));
        }
        if let Some(help) = &problem.help {
            let _ = writeln!(out, "{lead}= help: {}", one_line(help));
        }
    }
}

/// `problem` with the file's secrets taken out of every text it shows.
fn scrub_problem(secrets: &Secrets, problem: &mut Problem) {
    let spans: Vec<std::ops::Range<usize>> = problem
        .at
        .iter()
        .chain(problem.labels.iter().map(|l| &l.at))
        .map(|at| at.offset..at.offset.saturating_add(at.len))
        .collect();
    problem.message = secrets.scrub(&problem.message, &spans);
    if let Some(help) = &mut problem.help {
        *help = secrets.scrub(help, &spans);
    }
    if let Some(key) = &mut problem.key {
        *key = secrets.scrub(key, &spans);
    }
    for label in &mut problem.labels {
        label.message = secrets.scrub(&label.message, &spans);
    }
}

/// The widest source line shown; longer lines are cut around the marked column.
const MAX_SHOWN: usize = 100;

/// The part of `line` to show, and the marked column within it.
fn window(line: &[char], column: usize) -> (String, usize) {
    if line.len() <= MAX_SHOWN {
        return (line.iter().collect(), column);
    }
    let from = column.saturating_sub(MAX_SHOWN / 3).min(line.len());
    let to = (from + MAX_SHOWN).min(line.len());
    let mut shown = String::new();
    let mut start = column - from;
    if from > 0 {
        shown.push('…');
        start += 1;
    }
    shown.extend(&line[from..to]);
    if to < line.len() {
        shown.push('…');
    }
    (shown, start)
}

/// How many characters of the line the marker covers: the value's length, at least one.
fn marker_width(source: &str, at: &Position) -> usize {
    source
        .get(at.offset..at.offset.saturating_add(at.len))
        .map(|s| s.lines().next().unwrap_or("").chars().count())
        .unwrap_or(1)
}

/// Line `line` (1-based) of `source`, without its line break.
fn source_line(source: &str, line: u32) -> Option<&str> {
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    source
        .split('\n')
        .nth(index)
        .map(|l| l.trim_end_matches('\r'))
}

/// Text from the flow (names, values) may hold line breaks or control characters; shown on
/// one line they can not break the layout.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl fmt::Display for FlowErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => match one.at {
                Some(at) => write!(
                    f,
                    "{}:{}:{}: {}",
                    self.name, at.line, at.column, one.message
                ),
                None => write!(f, "{}: {}", self.name, one.message),
            },
            many => write!(f, "{}: {} problems", self.name, many.len()),
        }
    }
}

impl std::error::Error for FlowErrors {}

impl Diagnostic for FlowErrors {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.problems.iter().map(|p| p as &dyn Diagnostic)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, column: u32, offset: usize, len: usize) -> Option<Position> {
        Some(Position {
            line,
            column,
            offset,
            len,
        })
    }

    #[test]
    fn render_marks_the_value_and_shows_help() {
        let source = "routes:\n  - from: trade.requests\n    to: x\n";
        let errors = FlowErrors::new(
            "flow.yaml",
            Some(source.to_owned()),
            vec![
                Problem::new("unknown channel `trade.requests`", at(2, 11, 18, 14))
                    .with_help("did you mean `trades.requests`?")
                    .with_key("routes[0].from"),
            ],
        );
        assert_eq!(
            errors.render(),
            "error: unknown channel `trade.requests`\n \
             --> flow.yaml:2:11\n  |\n2 |   - from: trade.requests\n  |           ^^^^^^^^^^^^^^\n  \
             = key: routes[0].from\n  = help: did you mean `trades.requests`?\n\nflow.yaml: 1 problem\n"
        );
    }

    #[test]
    fn problems_are_sorted_into_file_order_and_unplaced_ones_last() {
        let errors = FlowErrors::new(
            "f",
            None,
            vec![
                Problem::new("c", None),
                Problem::new("b", at(3, 1, 20, 1)),
                Problem::new("a", at(1, 1, 0, 1)),
            ],
        );
        let order: Vec<&str> = errors.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[test]
    fn a_problem_without_position_renders_message_and_help_only() {
        let errors = FlowErrors::new(
            "<flow>",
            None,
            vec![Problem::new("unknown channel `x`", None).with_help("declare it")],
        );
        assert_eq!(
            errors.render(),
            "error: unknown channel `x`\n= help: declare it\n\n<flow>: 1 problem\n"
        );
    }

    #[test]
    fn a_long_line_is_cut_around_the_marker() {
        let line = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let errors = FlowErrors::new(
            "f",
            Some(line.clone()),
            vec![Problem::new("x", at(1, 501, 500, 1))],
        );
        let text = errors.render();
        let shown = text.lines().nth(3).unwrap_or("");
        let marks = text.lines().nth(4).unwrap_or("");
        assert!(
            shown.starts_with("1 | …a") && shown.ends_with("b…"),
            "{shown}"
        );
        assert!(shown.chars().count() < 110, "{shown}");
        let marker = marks.chars().position(|c| c == '^');
        assert_eq!(marker, shown.chars().position(|c| c == 'X'), "{text}");
    }

    #[test]
    fn positions_past_the_source_do_not_panic() {
        let errors = FlowErrors::new(
            "f",
            Some("a: 1".to_owned()),
            vec![Problem::new("x", at(9, 40, 400, 9)).with_label(at(1, 90, 2, 99), "here")],
        );
        assert!(errors.render().contains("--> f:9:40"));
    }
}
