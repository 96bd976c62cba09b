//! Checking a flow as a whole: a [`FlowSpec`] becomes a [`Plan`], or every problem it has.
//!
//! Validation resolves every name (one namespace for channels and exchanges), parses every
//! string into its type (predicates, topic patterns, durations), loads the datatypes' JSON
//! Schemas, and checks every rule the core would enforce when the flow is built, so that a
//! plan that validates compiles. It never stops at the first problem: each one is collected
//! with the position of the offending value (for a flow read from a file), its key path, and
//! help such as the closest declared name.
//!
//! The dead letter channel [`DEAD_LETTERS`](crate::plan::DEAD_LETTERS) always exists: when a
//! flow does not declare it, validation adds it to the plan as a point-to-point channel. The
//! dead letter and invalid message channels of a durable channel are durable too (the plan
//! marks them so, `dead-letters` included); `store:` is checked whether or not a channel is
//! durable.

mod adapters;
pub(crate) mod admin;
mod channel_store;
mod channels;
mod durable;
mod exchanges;
mod joins;
mod names;
pub(crate) mod routes;

use std::path::Path;

pub(crate) use self::names::Names;
use crate::diagnostic::{Check, Damage, Problem};
use crate::plan::Plan;
use crate::spec::FlowSpec;
use crate::step::Services;

pub(crate) use crate::settings::BYTE_UNITS;
pub use crate::settings::{ByteSizeError, DurationError, parse_byte_size, parse_duration};

/// Checks `spec`; schema files are read relative to `base_dir`. Returns the plan, or every
/// problem found, in the order of the flow.
///
/// ```
/// use eip_dsl::spec::{ChannelSpec, FlowSpec, KindSpec, Located, RouteSpec};
/// use eip_dsl::validate::validate;
///
/// let queue = |name: &str| {
///     let channel = ChannelSpec {
///         at: None,
///         kind: Located::new(KindSpec::PointToPoint),
///         capacity: None,
///         datatype: None,
///         invalid: None,
///         dead_letter: None,
///         time_to_live: None,
///         redelivery: None,
///         overflow: None,
///         durable: None,
///         store: None,
///     };
///     (Located::from(name), channel)
/// };
/// let route = RouteSpec {
///     at: None,
///     name: None,
///     from: "orders".into(),
///     filter: None,
///     discard: None,
///     wire_tap: None,
///     to: Some(Located::new(vec!["shiped".into()])),
///     choice: None,
///     otherwise: None,
///     recipient_list: None,
///     load_balance: None,
///     on_error: None,
///     steps: Vec::new(),
///     concurrency: None,
/// };
/// let spec = FlowSpec {
///     channels: vec![queue("orders"), queue("shipped")],
///     routes: vec![route],
///     ..FlowSpec::default()
/// };
/// let problems = validate(&spec, ".".as_ref()).unwrap_err();
/// assert_eq!(problems[0].message, "unknown channel or exchange `shiped`");
/// assert_eq!(problems[0].key.as_deref(), Some("routes[0].to[0]"));
/// ```
pub fn validate(spec: &FlowSpec, base_dir: &Path) -> Result<Plan, Vec<Problem>> {
    validate_with(spec, base_dir, None, &Damage::default(), &Services::new())
}

/// [`validate`] for a program that offers its flows `services`, which `process` steps may
/// name.
pub fn validate_with_services(
    spec: &FlowSpec,
    base_dir: &Path,
    services: &Services,
) -> Result<Plan, Vec<Problem>> {
    validate_with(spec, base_dir, None, &Damage::default(), services)
}

/// [`validate`], knowing the file's text (for positions inside strings), what the reading
/// step lost, and the program's services.
pub(crate) fn validate_with(
    spec: &FlowSpec,
    base_dir: &Path,
    source: Option<&str>,
    damage: &Damage,
    services: &Services,
) -> Result<Plan, Vec<Problem>> {
    let mut check = Check {
        problems: Vec::new(),
        source,
        damage,
    };
    for reserved in &spec.reserved {
        check.report(
            Problem::new(
                format!(
                    "`{}` are not supported by this version of eip yet",
                    reserved.value
                ),
                reserved.at,
            )
            .with_key(reserved.value.as_str())
            .with_help("remove the section; it comes in a later version"),
        );
    }
    let names = Names::declare(spec, &mut check);
    let mut channels = channels::check(spec, &names, base_dir, &mut check);
    durable::propagate(spec, &mut channels, &mut check);
    let store = durable::store(spec, base_dir, &mut check);
    let routes = routes::check(spec, &names, base_dir, services, &mut check);
    let joins = joins::check(spec, &names, &mut check);
    let exchanges = exchanges::check(spec, &names, &mut check);
    let adapters = adapters::check(spec, &names, base_dir, &mut check);
    let admin = admin::check(spec, &mut check);
    if check.problems.is_empty() {
        Ok(Plan {
            channels,
            routes,
            joins,
            exchanges,
            store,
            adapters,
            history: spec.history.as_ref().is_some_and(|h| h.value),
            admin,
        })
    } else {
        let mut problems = check.problems;
        problems.sort_by_key(|p| p.at.map_or((1, 0), |at| (0, at.offset)));
        Err(problems)
    }
}
