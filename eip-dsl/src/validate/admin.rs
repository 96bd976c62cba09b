//! `admin:` the management API's server: its address, and where its bearer token comes from.
//!
//! The token is a secret, so a flow file names the environment variable that holds it
//! (`token: ${EIP_ADMIN_TOKEN}`), never the token itself; the variable is read when the
//! server starts. A server listening anywhere but on a loopback address must have a token:
//! without one, anybody who can reach the port could read the flow.

use std::net::SocketAddr;

use super::Check;
use crate::diagnostic::Problem;
use crate::plan::{AdminPlan, DEFAULT_ADMIN_LISTEN};
use crate::spec::FlowSpec;

const LISTEN_HELP: &str = "an IP address and a port: `127.0.0.1:9090` (this machine only), \
                           `0.0.0.0:9090` (every interface: needs `token`)";

const TOKEN_HELP: &str = "name the environment variable that holds the token, as \
                          `${EIP_ADMIN_TOKEN}`; never the token itself";

/// Checks `admin:`; `None` when the flow has none (or it has problems, all reported).
pub(crate) fn check(spec: &FlowSpec, check: &mut Check<'_>) -> Option<AdminPlan> {
    let admin = spec.admin.as_ref()?;
    let before = check.problems.len();
    let listen = match &admin.listen {
        None => DEFAULT_ADMIN_LISTEN.parse().ok(),
        Some(listen) => parse_listen(&listen.value).or_else(|| {
            check.report(
                Problem::new(
                    format!(
                        "`listen` of `admin` is not an IP address and port: `{}`",
                        listen.value
                    ),
                    listen.at,
                )
                .with_key("admin.listen")
                .with_help(LISTEN_HELP),
            );
            None
        }),
    };
    let token_env = admin.token.as_ref().and_then(|token| {
        let name = token_variable(&token.value);
        if name.is_none() {
            check.report(
                Problem::new(
                    "`token` of `admin` must name an environment variable: `${NAME}`",
                    token.at,
                )
                .with_key("admin.token")
                .with_help(TOKEN_HELP),
            );
        }
        name
    });
    if let Some(addr) = listen
        && !addr.ip().is_loopback()
        && admin.token.is_none()
    {
        let at = admin.listen.as_ref().and_then(|l| l.at).or(admin.at);
        check.report(
            Problem::new(
                format!(
                    "the admin server listens on `{addr}`, which is not a loopback address, \
                     without a `token`"
                ),
                at,
            )
            .with_key("admin.listen")
            .with_help(format!(
                "anybody who can reach the port could use the API: add `token: ${{EIP_ADMIN_TOKEN}}`, \
                 or listen on `{DEFAULT_ADMIN_LISTEN}`"
            )),
        );
    }
    if check.problems.len() > before {
        return None;
    }
    Some(AdminPlan {
        listen: listen?,
        token_env,
    })
}

/// An address and port: `127.0.0.1:9090`, `[::1]:9090`.
pub(crate) fn parse_listen(text: &str) -> Option<SocketAddr> {
    text.trim().parse().ok()
}

/// `NAME` of `${NAME}`, if `text` is exactly that with a valid variable name.
fn token_variable(text: &str) -> Option<String> {
    let name = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_names_one_variable() {
        assert_eq!(
            token_variable("${EIP_ADMIN_TOKEN}").as_deref(),
            Some("EIP_ADMIN_TOKEN")
        );
        assert_eq!(token_variable("s3cret"), None);
        assert_eq!(token_variable("${}"), None);
        assert_eq!(token_variable("${1X}"), None);
        assert_eq!(token_variable("${A}${B}"), None);
        assert_eq!(token_variable("${A:-x}"), None);
    }

    #[test]
    fn listen_is_an_address_and_port() {
        assert!(parse_listen("127.0.0.1:9090").is_some());
        assert!(parse_listen("[::1]:0").is_some());
        assert!(parse_listen("localhost:9090").is_none());
        assert!(parse_listen("9090").is_none());
    }
}
