//! A flow file read and checked: [reading](crate::load) then [validation](crate::validate),
//! both steps' problems together, in file order.
//!
//! ```
//! use eip_dsl::flow_file::load_str;
//!
//! let flow = "
//! channels:
//!   orders: {kind: point-to-point}
//! routes:
//!   - {from: orders, to: orders-out}
//! ";
//! let errors = load_str(flow, "flow.yaml", ".".as_ref()).unwrap_err();
//! assert_eq!(errors.problems[0].message, "unknown channel or exchange `orders-out`");
//! ```

use std::path::Path;

use crate::diagnostic::{FlowErrors, Problem};
use crate::load::{self, MAX_FLOW_FILE_BYTES};
use crate::plan::Plan;
use crate::step::Services;
use crate::text_file::read_text_file;
use crate::validate;

/// Reads and checks a flow file: Ok(plan) or every problem found.
///
/// The file is read only if it is a regular file of at most [`MAX_FLOW_FILE_BYTES`] of UTF-8
/// (see [`read_text_file`]). Schema files named by `datatype` are read relative to the flow
/// file's directory, the same way.
pub fn load_file(path: &Path) -> Result<Plan, FlowErrors> {
    load_file_with(path, &Services::new())
}

/// [`load_file`] for a program that offers its flows `services`, which `process` steps may
/// name.
pub fn load_file_with(path: &Path, services: &Services) -> Result<Plan, FlowErrors> {
    let name = path.display().to_string();
    let source = read_text_file(path, MAX_FLOW_FILE_BYTES as u64).map_err(|e| {
        FlowErrors::new(
            &name,
            None,
            vec![Problem::new(
                format!("can not read the flow file `{name}`: {e}"),
                None,
            )],
        )
    })?;
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    load_str_with(&source, &name, base_dir, services)
}

/// The same for text already read; `name` is shown in diagnostics, `base_dir` is where
/// relative paths (schema files) are resolved.
pub fn load_str(source: &str, name: &str, base_dir: &Path) -> Result<Plan, FlowErrors> {
    load_str_with(source, name, base_dir, &Services::new())
}

/// [`load_str`] for a program that offers its flows `services`.
pub fn load_str_with(
    source: &str,
    name: &str,
    base_dir: &Path,
    services: &Services,
) -> Result<Plan, FlowErrors> {
    let (spec, mut problems, damage) = match load::read_str(source) {
        Ok(read) => read,
        Err(problem) => {
            return Err(FlowErrors::new(
                name,
                Some(source.to_owned()),
                vec![*problem],
            ));
        }
    };
    let damaged = !problems.is_empty();
    match validate::validate_with(&spec, base_dir, Some(source), &damage, services) {
        Ok(plan) if !damaged => Ok(plan),
        Ok(_) => Err(FlowErrors::new(name, Some(source.to_owned()), problems)),
        Err(more) => {
            problems.extend(more);
            Err(FlowErrors::new(name, Some(source.to_owned()), problems))
        }
    }
}
