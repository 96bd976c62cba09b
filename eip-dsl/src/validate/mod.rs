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
mod channel_store;
mod channels;
mod durable;
mod duration;
mod exchanges;
mod inner;
mod joins;
mod names;
mod routes;
mod size;

use std::collections::HashSet;
use std::path::Path;

use eip_core::predicate::Predicate;

use self::names::Names;
use crate::diagnostic::Problem;
use crate::plan::Plan;
use crate::spec::{FlowSpec, Located};

pub(crate) use self::adapters::{adapter_keys, all_adapter_keys};
pub use self::duration::{DurationError, parse_duration};
pub(crate) use self::size::UNITS as BYTE_UNITS;
pub use self::size::{ByteSizeError, parse_byte_size};

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
    validate_with(spec, base_dir, None, &Damage::default())
}

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

/// [`validate`], knowing the file's text (for positions inside strings) and what the reading
/// step lost.
pub(crate) fn validate_with(
    spec: &FlowSpec,
    base_dir: &Path,
    source: Option<&str>,
    damage: &Damage,
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
    let routes = routes::check(spec, &names, &mut check);
    let joins = joins::check(spec, &names, &mut check);
    let exchanges = exchanges::check(spec, &names, &mut check);
    let adapters = adapters::check(spec, &names, base_dir, &mut check);
    if check.problems.is_empty() {
        Ok(Plan {
            channels,
            routes,
            joins,
            exchanges,
            store,
            adapters,
        })
    } else {
        let mut problems = check.problems;
        problems.sort_by_key(|p| p.at.map_or((1, 0), |at| (0, at.offset)));
        Err(problems)
    }
}

/// The state of one validation: the problems so far and what helps describe them.
pub(crate) struct Check<'a> {
    problems: Vec<Problem>,
    source: Option<&'a str>,
    damage: &'a Damage,
}

impl Check<'_> {
    pub(crate) fn report(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    /// A predicate, or a problem pointing inside it at what could not be parsed.
    pub(crate) fn predicate(&mut self, text: &Located<String>, key: &str) -> Option<Predicate> {
        match Predicate::parse(&text.value) {
            Ok(predicate) => Some(predicate),
            Err(e) => {
                let at = inner::inside(text, e.offset, self.source);
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
