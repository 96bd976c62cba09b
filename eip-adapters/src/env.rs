//! Environment variables named in settings: `${NAME}`, and `${NAME:-default}` for a value used
//! when the variable is not set or empty. Secrets stay out of flow files and configuration.

/// Why a setting's variables could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A variable without a default is not set.
    #[error("environment variable `{0}` is not set")]
    Missing(String),
    /// `${` without its closing `}`.
    #[error("`${{` without its closing `}}`")]
    Unclosed,
}

/// `text` with every `${NAME}` and `${NAME:-default}` replaced by the variable's value.
///
/// ```
/// use eip_adapters::env::expand;
/// assert_eq!(expand("amqp://${EIP_DOC_UNSET_HOST:-127.0.0.1}:5672").unwrap(), "amqp://127.0.0.1:5672");
/// assert!(expand("${EIP_DOC_UNSET_SECRET}").is_err());
/// ```
pub fn expand(text: &str) -> Result<String, EnvError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            return Err(EnvError::Unclosed);
        };
        let inner = &rest[start + 2..start + len];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (std::env::var(name), default) {
            (Ok(value), None) => out.push_str(&value),
            (Ok(value), Some(_)) if !value.is_empty() => out.push_str(&value),
            (_, Some(default)) => out.push_str(default),
            (Err(_), None) => return Err(EnvError::Missing(name.to_owned())),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `url` as it may be shown: its password (in the user info, or a `password=` query
/// parameter) replaced by `***`. A `:` inside `${NAME:-default}` is not a password separator.
///
/// ```
/// use eip_adapters::env::redact_url;
/// assert_eq!(redact_url("amqp://guest:s3cret@h:5672/%2f"), "amqp://guest:***@h:5672/%2f");
/// assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
/// ```
pub fn redact_url(url: &str) -> String {
    let mut shown = match user_info(url) {
        Some((start, info)) => match split_password(info) {
            Some((user, _)) => format!("{}{user}:***{}", &url[..start], &url[start + info.len()..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    };
    if let Some(q) = shown.find('?') {
        let query: Vec<String> = shown[q + 1..]
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown = format!("{}?{}", &shown[..q], query.join("&"));
    }
    shown
}

/// The user-info part (`user:password`) of `url`, if any: the bytes between `://` and the last
/// `@` before the path.
pub(crate) fn user_info(url: &str) -> Option<(usize, &str)> {
    let start = url.find("://")? + 3;
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let at = url[start..authority_end].rfind('@')?;
    Some((start, &url[start..start + at]))
}

/// The user info split at the `:` before the password; a `:` inside an environment variable
/// reference (`${PGUSER:-root}`) is part of the user name.
pub(crate) fn split_password(info: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    let bytes = info.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'$' if bytes.get(i + 1) == Some(&b'{') => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b':' if depth == 0 => return Some((&info[..i], &info[i + 1..])),
            _ => {}
        }
    }
    None
}
