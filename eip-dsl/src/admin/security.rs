//! The bearer token: every request but liveness shows it once one is set.
//!
//! The token is compared in constant time (its length aside), so the time an answer takes
//! says nothing of how much of a guess was right. A refusal is a 401 with
//! `WWW-Authenticate: Bearer` and a JSON [`ErrorBody`] saying what was wrong: no
//! `Authorization` header, one that is not `Bearer TOKEN`, or another token.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::api;
use super::model::ErrorBody;

/// The environment variable the token is read from when the flow's `admin.token` names none.
pub const DEFAULT_TOKEN_ENV: &str = "EIP_ADMIN_TOKEN";

/// The token requests must show.
pub(super) struct Token(Vec<u8>);

impl Token {
    pub(super) fn new(token: String) -> Token {
        Token(token.into_bytes())
    }

    fn matches(&self, shown: &[u8]) -> bool {
        self.0.ct_eq(shown).into()
    }
}

/// Lets a request through if no token is set or it shows the token; answers 401 otherwise.
pub(super) async fn require_token(
    State(admin): State<Arc<api::Admin>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &admin.token else {
        return next.run(request).await;
    };
    let refusal = match request.headers().get(header::AUTHORIZATION) {
        None => "this admin server needs a token: send `Authorization: Bearer TOKEN`",
        Some(value) => match bearer(value) {
            None => "the `Authorization` header is not `Bearer TOKEN`",
            Some(shown) if token.matches(shown) => return next.run(request).await,
            Some(_) => "the token is not the admin server's",
        },
    };
    let mut response = (
        StatusCode::UNAUTHORIZED,
        axum::Json(ErrorBody::new(refusal)),
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"eip\""),
    );
    response
}

/// The token of `Bearer TOKEN` (the scheme in any case, as HTTP says).
fn bearer(value: &HeaderValue) -> Option<&[u8]> {
    let bytes = value.as_bytes();
    let scheme = bytes.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = bytes.get(7..)?.trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_takes_the_token_of_the_bearer_scheme_only() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(bearer(&v("Bearer abc")), Some(&b"abc"[..]));
        assert_eq!(bearer(&v("bearer  abc ")), Some(&b"abc"[..]));
        assert_eq!(bearer(&v("Basic abc")), None);
        assert_eq!(bearer(&v("Bearer ")), None);
        assert_eq!(bearer(&v("Bearer")), None);
    }

    #[test]
    fn token_matches_itself_only() {
        let token = Token::new("s3cret".to_owned());
        assert!(token.matches(b"s3cret"));
        assert!(!token.matches(b"s3cre"));
        assert!(!token.matches(b"s3cret!"));
        assert!(!token.matches(b""));
    }
}
