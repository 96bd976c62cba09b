//! Reading a refused flow: its problems, the one problem, a problem's position and help.

use eip_dsl::diagnostic::Problem;

use super::validate::{flow, load};

#[allow(dead_code)] // Files whose flows each have one problem do not ask for the list.
pub fn problems(lines: &[&str]) -> Vec<Problem> {
    match load(lines) {
        Ok(_) => panic!("the flow validated:\n{}", flow(lines)),
        Err(errors) => errors.problems,
    }
}

/// The one problem of a flow, failing (with the rendered report) if there are others.
pub fn only(lines: &[&str]) -> Problem {
    let errors = load(lines).expect_err("the flow validated");
    assert_eq!(errors.problems.len(), 1, "{}", errors.render());
    errors.problems.into_iter().next().expect("one problem")
}

pub fn at(problem: &Problem) -> (u32, u32) {
    let at = problem.at.expect("a position");
    (at.line, at.column)
}

#[allow(dead_code)] // Not every file checks a problem's help.
pub fn help(problem: &Problem) -> &str {
    problem.help.as_deref().unwrap_or("")
}
