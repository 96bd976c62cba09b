//! Bearer tokens: read once from an environment variable, compared in constant time, never
//! shown.

use std::fmt;

use subtle::ConstantTimeEq;

use super::error::ConfigProblem;

/// A bearer token. Its `Debug` prints the variable it came from, never the token.
#[derive(Clone)]
pub(crate) struct BearerToken {
    variable: String,
    token: Vec<u8>,
}

impl BearerToken {
    /// The token held by environment variable `variable`; a variable that is unset, not
    /// text or empty is a problem naming it.
    pub(crate) fn from_env(variable: &str) -> Result<Self, ConfigProblem> {
        match std::env::var(variable) {
            Ok(token) if !token.is_empty() => Ok(BearerToken {
                variable: variable.to_owned(),
                token: token.into_bytes(),
            }),
            _ => Err(ConfigProblem::MissingEnv(variable.to_owned())),
        }
    }

    /// Whether an `Authorization` header value carries this token. The comparison takes the
    /// same time wherever the first difference is (only the length may show).
    pub(crate) fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some(presented) = strip_bearer(value) else {
            return false;
        };
        presented.ct_eq(&self.token).into()
    }

    /// The `Authorization` header value that carries this token.
    pub(crate) fn header_value(&self) -> Vec<u8> {
        let mut value = b"Bearer ".to_vec();
        value.extend_from_slice(&self.token);
        value
    }
}

/// The credentials of a `Bearer` authorization (the scheme is case-insensitive).
fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BearerToken(from ${}, redacted)", self.variable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(secret: &str) -> BearerToken {
        BearerToken {
            variable: "TOKEN".into(),
            token: secret.as_bytes().to_vec(),
        }
    }

    #[test]
    fn admits_only_the_exact_token_with_the_bearer_scheme() {
        let t = token("s3cret");
        assert!(t.admits(Some(b"Bearer s3cret")));
        assert!(t.admits(Some(b"bearer s3cret")));
        assert!(!t.admits(Some(b"Bearer s3cre")));
        assert!(!t.admits(Some(b"Bearer s3cret2")));
        assert!(!t.admits(Some(b"Basic s3cret")));
        assert!(!t.admits(Some(b"s3cret")));
        assert!(!t.admits(None));
    }

    #[test]
    fn debug_never_shows_the_token() {
        assert!(!format!("{:?}", token("s3cret")).contains("s3cret"));
    }

    #[test]
    fn a_missing_variable_is_named() {
        let problem = BearerToken::from_env("EIP_TEST_NO_SUCH_VARIABLE").unwrap_err();
        assert!(problem.to_string().contains("EIP_TEST_NO_SUCH_VARIABLE"));
    }
}
