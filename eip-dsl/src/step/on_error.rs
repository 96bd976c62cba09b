//! `on-error:` what happens to a message whose step failed, read in one place for every entry
//! that has the key: a route, and each step kind that lists `on-error` among its keys (the
//! kinds that call out: `process`).
//!
//! ```yaml
//! routes:
//!   - from: orders
//!     on-error: orders.failed        # or {to: orders.failed}
//!     steps:
//!       - process: {service: pricing, on-error: pricing.failed}
//!       - process: tax
//!     to: priced
//! ```
//!
//! A step that calls out (a `process` step's service) and fails fails the route for the
//! message: the route's consumer redelivers it by the channel's redelivery policy, as without
//! `on-error`. With the **route's** `on-error`, once that policy is used up the message goes to
//! that channel instead of the dead letter channel, as the route took it, with a death record
//! (reason `max-redeliveries`, the route's channel, and an error naming the route, the step's
//! place and what the step said), and is acked. With the **step's** own `on-error` the message
//! the step failed on goes there at once, without a redelivery of the whole message (reason
//! `rejected`); the rest of the route does not run for it, and the message it came from is
//! acked. Failures that are not a step's (no route, a deleted target, an invalid message) keep
//! going to the dead letter channel. See the book's chapter on error handling.

use crate::diagnostic::Check;
use crate::plan::OnErrorPlan;
use crate::settings::Settings;
use crate::spec::{Located, Setting, SettingValue};
use crate::validate::Names;
use crate::validate::routes::not_back_to;

/// The keys of `on-error:`, in the order suggestions list them; `to` is the one a value that
/// is not a mapping sets (`on-error: orders.failed`).
pub(crate) const KEYS: &[&str] = &["to"];

/// Where `on-error:` is and what it is checked against.
pub(crate) struct Place<'a> {
    /// Its key path (`routes[0].on-error`).
    pub(crate) path: String,
    /// The entry it is in, for messages: "`on-error` of route `price`".
    pub(crate) what: String,
    /// The channel the route consumes: `on-error` may not send back to it.
    pub(crate) from: &'a str,
    /// The flow's names.
    pub(crate) names: &'a Names,
    /// Whether the entry was read with problems already reported.
    pub(crate) damaged: bool,
}

/// The checked `on-error:` written as `value`; `None` after reporting what is wrong.
pub(crate) fn check(
    check: &mut Check<'_>,
    value: &Located<SettingValue>,
    place: &Place<'_>,
) -> Option<OnErrorPlan> {
    let items = match &value.value {
        SettingValue::Map(items) => items.clone(),
        _ => vec![Setting {
            key: Located {
                value: "to".to_owned(),
                at: value.at,
            },
            value: value.clone(),
        }],
    };
    let settings = Settings {
        path: place.path.clone(),
        at: value.at,
        what: place.what.clone(),
        items: &items,
        damaged: place.damaged,
    };
    let before = check.problems.len();
    settings.check_keys(check, KEYS);
    let to = match settings.get("to") {
        None => {
            settings.missing(
                check,
                "to",
                "add `to: CHANNEL`, the channel a message whose step failed goes to",
            );
            None
        }
        Some(_) => channel(check, &settings, place),
    };
    if check.problems.len() > before {
        return None;
    }
    Some(OnErrorPlan { to: to? })
}

/// `to:` a channel the flow declares, and not the one the route consumes.
fn channel(check: &mut Check<'_>, settings: &Settings<'_>, place: &Place<'_>) -> Option<String> {
    let name = settings.text(check, "to")?;
    let key = settings.key("to");
    place.names.channel(check, &name, "to", &key)?;
    let (who, what) = ("`on-error` sends", "the channel its route consumes");
    not_back_to(check, &name, place.from, &key, who, what)?;
    Some(name.value)
}
