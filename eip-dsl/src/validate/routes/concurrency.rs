//! `concurrency:` of a route: how many of its messages are processed at once, a whole number
//! from 1 to [`MAX_CONCURRENCY`].
//!
//! Above 1, a route with an `aggregate` or a `resequence` step is refused: both keep state
//! across messages (a group, a sequence) that each message changes, and a durable aggregate
//! deletes a group in the commit that acknowledges the message completing it. Processed side
//! by side, two messages of one group could both see it incomplete, or one be written into a
//! group the other is deleting; and a resequencer exists to restore an order that concurrency
//! gives up. Such a route runs one message at a time.

use super::super::Check;
use super::Route;
use crate::diagnostic::Problem;
use crate::plan::{MAX_CONCURRENCY, StepPlan};
use crate::spec::Number;

/// The step kinds that hold state across messages and are refused above `concurrency: 1`.
const ONE_AT_A_TIME: &[&str] = &["aggregate", "resequence"];

impl Route<'_> {
    /// `concurrency:` checked; 1 when not written. `steps` are the route's checked steps.
    pub(super) fn concurrency(
        &self,
        name: &str,
        steps: &[StepPlan],
        check: &mut Check<'_>,
    ) -> Option<usize> {
        let Some(written) = &self.route.concurrency else {
            return Some(1);
        };
        let key = self.field("concurrency");
        let refused = match written.value {
            Number::Integer(n) if n < 1 => {
                Some(format!("`concurrency` must be at least 1, found {n}"))
            }
            Number::Integer(n) if n > MAX_CONCURRENCY as i64 => Some(format!(
                "`concurrency` must be at most {MAX_CONCURRENCY}, found {n}"
            )),
            Number::Integer(_) => None,
            Number::Float(f) => Some(format!("`concurrency` must be a whole number, found {f}")),
        };
        if let Some(message) = refused {
            check.report(
                Problem::new(message, written.at)
                    .with_key(key)
                    .with_help(format!(
                        "the number of messages route `{name}` processes at once: a whole \
                         number from 1 (the default, one at a time) to {MAX_CONCURRENCY}"
                    )),
            );
            return None;
        }
        let n = match written.value {
            Number::Integer(n) => usize::try_from(n).ok()?,
            Number::Float(_) => return None,
        };
        if n == 1 {
            return Some(1);
        }
        let mut refused = false;
        for step in steps.iter().filter(|s| ONE_AT_A_TIME.contains(&s.kind)) {
            refused = true;
            let at = self
                .route
                .steps
                .iter()
                .enumerate()
                .find(|(j, _)| step.key == format!("{}.steps[{j}]", self.key))
                .and_then(|(_, s)| s.at.or(s.kind.at));
            check.report(
                Problem::new(
                    format!(
                        "route `{name}` has `concurrency: {n}` and a `{}` step, which needs its \
                         messages one at a time: it keeps state across them that each message \
                         changes",
                        step.kind
                    ),
                    written.at,
                )
                .with_key(key.clone())
                .with_label(at, "this step")
                .with_help(format!(
                    "run the `{}` in a route of its own with `concurrency: 1` (the default), \
                     fed by this one",
                    step.kind
                )),
            );
        }
        (!refused).then_some(n)
    }
}
