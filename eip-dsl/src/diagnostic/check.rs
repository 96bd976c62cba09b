//! The state of one check of a flow: the problems found so far, the file's text (for
//! positions inside strings) and what the reading step lost (so its consequences are not
//! reported twice). Reading produces the [`Damage`]; validation and every kind's checks report
//! into a [`Check`].

use std::collections::HashSet;

use eip_core::predicate::Predicate;

use super::Problem;
use crate::spec::{Located, Position};

/// What the reading step could not read, so validation does not report its consequences.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    /// Channels and exchanges declared in entries that could not be read (and `""`, the
    /// placeholder of a required name that could not be read): references to them are not
    /// reported.
    pub(crate) names: HashSet<String>,
    /// A whole `channels` or `exchanges` section could not be read: no name is reported as
    /// unknown.
    pub(crate) all_names: bool,
    /// Entries (by index) read only in part: checks that combine their keys are skipped.
    pub(crate) channels: HashSet<usize>,
    /// See `channels`.
    pub(crate) routes: HashSet<usize>,
    /// See `channels`.
    pub(crate) joins: HashSet<usize>,
    /// See `channels`.
    pub(crate) exchanges: HashSet<usize>,
    /// See `channels`.
    pub(crate) adapters: HashSet<usize>,
    /// See `channels`.
    pub(crate) bridges: HashSet<usize>,
}

/// The state of one validation: the problems so far and what helps describe them.
pub(crate) struct Check<'a> {
    pub(crate) problems: Vec<Problem>,
    pub(crate) source: Option<&'a str>,
    pub(crate) damage: &'a Damage,
}

impl Check<'_> {
    pub(crate) fn report(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    /// Where byte `offset` of the string value `text` was written: the position of a problem
    /// inside an expression.
    pub(crate) fn inside(&self, text: &Located<String>, offset: usize) -> Option<Position> {
        super::inner::inside(text, offset, self.source)
    }

    /// A predicate, or a problem pointing inside it at what could not be parsed.
    pub(crate) fn predicate(&mut self, text: &Located<String>, key: &str) -> Option<Predicate> {
        match Predicate::parse(&text.value) {
            Ok(predicate) => Some(predicate),
            Err(e) => {
                let at = self.inside(text, e.offset);
                self.report(
                    Problem::new(format!("invalid predicate: {}", e.kind), at)
                        .with_key(key)
                        .with_help(
                            "a predicate compares JSONPath values, headers or the subject: \
                             `$.side == \"buy\"`, `header(\"region\") == \"eu\"`, \
                             `subject matches \"stock.#\"`",
                        ),
                );
                None
            }
        }
    }
}
