//! The general settings reader: the keys of an adapter, a bridge or a channel store read with
//! their types, each problem reported at its position with the entry's key path.
//!
//! Every kind reads its keys through [`Settings`]: strings, whole numbers, booleans, lists and
//! mappings, durations (`30s`, [`parse_duration`]), sizes (`1 MiB`, [`parse_byte_size`]),
//! paths relative to the flow file, broker URLs (which may name `${VARIABLE}`s, expanded when
//! the adapter starts) and the names of environment variables that hold secrets; and the
//! `redelivery:` policy of a channel or an outbound adapter. A value of the wrong type is
//! reported as "`key` must be …, found …"; a required key that is missing as "… has no `key`"
//! with help saying what to add.

// An `eip` built with no adapter family at all reads no adapter settings
#![cfg_attr(
    not(any(
        feature = "file",
        feature = "http",
        feature = "sql",
        feature = "timer",
        feature = "amqp",
        feature = "nats",
        feature = "mqtt",
        feature = "redis"
    )),
    allow(dead_code)
)]

mod duration;
mod size;

use std::path::Path;
use std::time::Duration;

use eip_core::channel::RedeliveryPolicy;

pub(crate) use self::duration::spell_duration;
pub use self::duration::{DurationError, parse_duration};
pub(crate) use self::size::UNITS as BYTE_UNITS;
pub use self::size::{ByteSizeError, parse_byte_size};
use crate::diagnostic::{Check, Problem, suggest_key};
use crate::spec::{Located, Position, RedeliverySpec, Setting, SettingValue};

/// A duration, or a problem at it.
pub(crate) fn duration(
    check: &mut Check<'_>,
    text: &Located<String>,
    key: &str,
) -> Option<Duration> {
    match parse_duration(&text.value) {
        Ok(d) => Some(d),
        Err(e) => {
            let field = key.rsplit('.').next().unwrap_or(key);
            check.report(
                Problem::new(format!("invalid `{field}`: {e}"), text.at)
                    .with_key(key)
                    .with_help(e.help()),
            );
            None
        }
    }
}

/// The redelivery policy: what is written over the defaults.
pub(crate) fn redelivery(
    check: &mut Check<'_>,
    spec: &RedeliverySpec,
    key: &str,
) -> Option<RedeliveryPolicy> {
    let field = |k: &str| format!("{key}.{k}");
    let before = check.problems.len();
    let mut policy = RedeliveryPolicy::default();
    if let Some(n) = spec
        .max_attempts
        .as_ref()
        .and_then(|max| max_attempts(check, max, &field("max-attempts")))
    {
        policy.max_attempts = n;
    }
    let (initial, max) = backoffs(check, spec, key);
    if let Some(initial) = initial {
        policy.initial_backoff = initial;
    }
    if let Some(max) = max {
        policy.max_backoff = max;
    }
    if let Some(m) = &spec.multiplier {
        if m.value.is_finite() && m.value >= 1.0 {
            policy.multiplier = m.value;
        } else {
            check.report(
                Problem::new(
                    format!("`multiplier` must be at least 1.0, found {}", m.value),
                    m.at,
                )
                .with_key(field("multiplier"))
                .with_help(
                    "each wait is the previous one times the multiplier; 1.0 keeps it fixed",
                ),
            );
        }
    }
    if let Some(j) = &spec.jitter {
        if (0.0..=1.0).contains(&j.value) {
            policy.jitter = j.value;
        } else {
            check.report(
                Problem::new(
                    format!("`jitter` must be from 0.0 to 1.0, found {}", j.value),
                    j.at,
                )
                .with_key(field("jitter"))
                .with_help("it is the largest fraction of a wait taken off at random"),
            );
        }
    }
    (check.problems.len() == before).then_some(policy)
}

/// `max-attempts`: from 1 (no redelivery) to `u32::MAX`.
fn max_attempts(check: &mut Check<'_>, max: &Located<u64>, key: &str) -> Option<u32> {
    match u32::try_from(max.value) {
        Ok(0) => {
            check.report(
                Problem::new("`max-attempts` must be at least 1, found 0", max.at)
                    .with_key(key)
                    .with_help("it counts deliveries, the first included: 1 means no redelivery"),
            );
            None
        }
        Ok(n) => Some(n),
        Err(_) => {
            check.report(
                Problem::new(
                    format!(
                        "`max-attempts` must be at most {}, found {}",
                        u32::MAX,
                        max.value
                    ),
                    max.at,
                )
                .with_key(key),
            );
            None
        }
    }
}

/// `initial-backoff` and `max-backoff`, each a duration, the longest no shorter than the
/// first.
fn backoffs(
    check: &mut Check<'_>,
    spec: &RedeliverySpec,
    key: &str,
) -> (Option<Duration>, Option<Duration>) {
    let field = |k: &str| format!("{key}.{k}");
    let initial = spec
        .initial_backoff
        .as_ref()
        .and_then(|d| duration(check, d, &field("initial-backoff")));
    let max = spec
        .max_backoff
        .as_ref()
        .and_then(|d| duration(check, d, &field("max-backoff")));
    if let (Some(initial), Some(max), Some(spec_max)) = (initial, max, &spec.max_backoff)
        && initial > max
    {
        check.report(
            Problem::new(
                "`max-backoff` is shorter than `initial-backoff`",
                spec_max.at,
            )
            .with_key(field("max-backoff"))
            .with_help("the longest wait can not be shorter than the first"),
        );
    }
    (initial, max)
}

/// A broker's `url`, which must start with `scheme` (or be a `${VARIABLE}`); `help` shows the
/// form it takes.
pub(crate) fn broker_url(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    scheme: &str,
    broker: &str,
    help: &str,
) -> Option<String> {
    let url = settings.required_text(check, "url", &format!("add `url:` like {help}"))?;
    if !url.value.starts_with(scheme) && !url.value.starts_with("${") {
        settings.report_value(
            check,
            "url",
            &url,
            format!("a {broker} URL starts with `{scheme}`"),
            Some(help),
        );
        return None;
    }
    Some(url.value)
}

/// The settings of one adapter (or one mapping inside it), read by key with their type.
pub(crate) struct Settings<'a> {
    /// The key path of the entry (`adapters.orders-in`, `adapters.db.claim`).
    pub(crate) path: String,
    /// Where the entry starts.
    pub(crate) at: Option<Position>,
    /// The entry, for messages: "`file-in` adapter `incoming`".
    pub(crate) what: String,
    /// The keys and values, as written.
    pub(crate) items: &'a [Setting],
    /// The reading step reported problems in this entry: a required key that is missing may
    /// be one written with a misspelt key, already reported.
    pub(crate) damaged: bool,
}

impl<'a> Settings<'a> {
    pub(crate) fn get(&self, key: &str) -> Option<&'a Located<SettingValue>> {
        self.items
            .iter()
            .find(|s| s.key.value == key)
            .map(|s| &s.value)
    }

    pub(crate) fn key(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// Unknown keys (only possible in a flow made in code: the reader drops them).
    pub(crate) fn check_keys(&self, check: &mut Check<'_>, allowed: &[&str]) {
        for setting in self.items {
            let key = setting.key.value.as_str();
            if !allowed.contains(&key) {
                check.report(
                    Problem::new(
                        format!("unknown key `{key}` in {}", self.what),
                        setting.key.at,
                    )
                    .with_key(self.key(key))
                    .with_help(suggest_key(key, allowed)),
                );
            }
        }
    }

    pub(crate) fn report_entry(&self, check: &mut Check<'_>, message: String, help: Option<&str>) {
        check.report(
            Problem::new(format!("{}: {message}", self.what), self.at)
                .with_key(self.path.as_str())
                .with_help_opt(help.map(str::to_owned)),
        );
    }

    pub(crate) fn report_value(
        &self,
        check: &mut Check<'_>,
        key: &str,
        value: &Located<String>,
        message: String,
        help: Option<&str>,
    ) {
        self.report_at_value(check, key, value.at, message, help);
    }

    pub(crate) fn report_at_value(
        &self,
        check: &mut Check<'_>,
        key: &str,
        at: Option<Position>,
        message: String,
        help: Option<&str>,
    ) {
        check.report(
            Problem::new(message, at)
                .with_key(self.key(key))
                .with_help_opt(help.map(str::to_owned)),
        );
    }

    pub(crate) fn report_at(
        &self,
        check: &mut Check<'_>,
        key: &str,
        message: &str,
        help: Option<&str>,
    ) {
        let at = self.get(key).and_then(|v| v.at).or(self.at);
        self.report_at_value(check, key, at, message.to_owned(), help);
    }

    pub(crate) fn wrong_type(&self, check: &mut Check<'_>, key: &str, expected: &str) {
        if let Some(value) = self.get(key) {
            let message = format!(
                "`{key}` must be {expected}, found {}",
                value.value.describe()
            );
            self.report_at_value(check, key, value.at, message, None);
        }
    }

    pub(crate) fn missing(&self, check: &mut Check<'_>, key: &str, help: &str) {
        if self.damaged {
            return;
        }
        check.report(
            Problem::new(format!("{} has no `{key}`", self.what), self.at)
                .with_key(self.key(key))
                .with_help(help),
        );
    }

    /// A string (a number written without quotes counts, as written).
    pub(crate) fn text(&self, check: &mut Check<'_>, key: &str) -> Option<Located<String>> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::Text(s) | SettingValue::Number(s) => Some(Located {
                value: s.clone(),
                at: value.at,
            }),
            _ => {
                self.wrong_type(check, key, "a string");
                None
            }
        }
    }

    pub(crate) fn required_text(
        &self,
        check: &mut Check<'_>,
        key: &str,
        help: &str,
    ) -> Option<Located<String>> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        let text = self.text(check, key)?;
        if text.value.trim().is_empty() {
            self.report_value(check, key, &text, format!("`{key}` is empty"), Some(help));
            return None;
        }
        Some(text)
    }

    /// A path relative to `base_dir`.
    #[cfg_attr(not(feature = "file"), allow(dead_code))]
    pub(crate) fn required_path(
        &self,
        check: &mut Check<'_>,
        key: &str,
        base_dir: &Path,
        what: &str,
    ) -> Option<std::path::PathBuf> {
        let help = format!("add `{key}:`, {what}, relative to the flow file's directory");
        let text = self.required_text(check, key, &help)?;
        if text.value.contains('\0') {
            self.report_value(
                check,
                key,
                &text,
                format!("`{key}` holds a NUL character"),
                None,
            );
            return None;
        }
        Some(base_dir.join(&text.value))
    }

    /// The name of an environment variable (read when the adapter starts).
    #[cfg_attr(
        not(any(feature = "http", feature = "mqtt", feature = "sql")),
        allow(dead_code)
    )]
    pub(crate) fn env_name(&self, check: &mut Check<'_>, key: &str) -> Option<String> {
        let name = self.text(check, key)?;
        let valid = !name.value.is_empty()
            && !name.value.starts_with(|c: char| c.is_ascii_digit())
            && name
                .value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.report_value(
                check,
                key,
                &name,
                format!("`{}` is not an environment variable name", name.value),
                Some("name the variable that holds the secret, such as `ORDERS_TOKEN`; never the secret itself"),
            );
            return None;
        }
        Some(name.value)
    }

    pub(crate) fn boolean(&self, check: &mut Check<'_>, key: &str) -> Option<bool> {
        match &self.get(key)?.value {
            SettingValue::Bool(b) => Some(*b),
            _ => {
                self.wrong_type(check, key, "`true` or `false`");
                None
            }
        }
    }

    /// `window:` of an inbound bridge: deliveries unacknowledged at most, `default` when not
    /// written.
    #[cfg_attr(
        not(any(
            feature = "amqp",
            feature = "nats",
            feature = "mqtt",
            feature = "redis"
        )),
        allow(dead_code)
    )]
    pub(crate) fn window(&self, check: &mut Check<'_>, default: usize) -> usize {
        self.whole(check, "window", 1)
            .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub(crate) fn whole(&self, check: &mut Check<'_>, key: &str, min: u64) -> Option<u64> {
        let value = self.get(key)?;
        let SettingValue::Number(text) = &value.value else {
            self.wrong_type(check, key, "a whole number");
            return None;
        };
        match text.parse::<u64>() {
            Ok(n) if n >= min => Some(n),
            _ => {
                let message =
                    format!("`{key}` must be a whole number of at least {min}, found {text}");
                self.report_at_value(check, key, value.at, message, None);
                None
            }
        }
    }

    pub(crate) fn required_whole(
        &self,
        check: &mut Check<'_>,
        key: &str,
        min: u64,
        help: &str,
    ) -> Option<u64> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        self.whole(check, key, min)
    }

    pub(crate) fn duration(&self, check: &mut Check<'_>, key: &str) -> Option<Duration> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::Text(text) => {
                let text = Located {
                    value: text.clone(),
                    at: value.at,
                };
                duration(check, &text, &self.key(key))
            }
            SettingValue::Number(n) => {
                let message = format!("`{key}` must be a duration such as `30s`, found {n}");
                self.report_at_value(
                    check,
                    key,
                    value.at,
                    message,
                    Some(&format!("`{n}` has no unit (`{n}s`?)")),
                );
                None
            }
            _ => {
                self.wrong_type(check, key, "a duration such as `30s`");
                None
            }
        }
    }

    pub(crate) fn positive_duration(&self, check: &mut Check<'_>, key: &str) -> Option<Duration> {
        let d = self.duration(check, key)?;
        if d.is_zero() {
            self.report_at(
                check,
                key,
                &format!("`{key}` must be longer than zero"),
                None,
            );
            return None;
        }
        Some(d)
    }

    pub(crate) fn required_duration(
        &self,
        check: &mut Check<'_>,
        key: &str,
        help: &str,
    ) -> Option<Duration> {
        if self.get(key).is_none() {
            self.missing(check, key, help);
            return None;
        }
        self.duration(check, key)
    }

    pub(crate) fn size(&self, check: &mut Check<'_>, key: &str) -> Option<u64> {
        let value = self.get(key)?;
        let (SettingValue::Text(text) | SettingValue::Number(text)) = &value.value else {
            self.wrong_type(check, key, "a size such as `1 MiB`, or a number of bytes");
            return None;
        };
        match parse_byte_size(text) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                check.report(
                    Problem::new(format!("invalid `{key}`: {e}"), value.at)
                        .with_key(self.key(key))
                        .with_help(e.help()),
                );
                None
            }
        }
    }

    #[cfg_attr(
        not(any(
            feature = "jq",
            feature = "http",
            feature = "sql",
            feature = "nats",
            feature = "amqp"
        )),
        allow(dead_code)
    )]
    pub(crate) fn list(&self, check: &mut Check<'_>, key: &str) -> Option<Vec<Located<String>>> {
        let value = self.get(key)?;
        match &value.value {
            SettingValue::List(items) => Some(items.clone()),
            SettingValue::Text(s) => Some(vec![Located {
                value: s.clone(),
                at: value.at,
            }]),
            _ => {
                self.wrong_type(check, key, "a list of names");
                None
            }
        }
    }

    pub(crate) fn one_of<T: Copy>(
        &self,
        check: &mut Check<'_>,
        key: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let text = self.text(check, key)?;
        if let Some((_, value)) = choices.iter().find(|(word, _)| *word == text.value) {
            return Some(*value);
        }
        let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
        self.report_value(
            check,
            key,
            &text,
            format!("`{key}` can not be `{}`", text.value),
            Some(&suggest_key(&text.value, &words)),
        );
        None
    }

    /// A mapping under `key`, its keys checked against `allowed`.
    pub(crate) fn map(
        &self,
        check: &mut Check<'_>,
        key: &str,
        allowed: &[&str],
    ) -> Option<Settings<'a>> {
        let value = self.get(key)?;
        let SettingValue::Map(items) = &value.value else {
            self.wrong_type(check, key, "a mapping");
            return None;
        };
        let inner = Settings {
            path: self.key(key),
            at: value.at,
            what: format!("`{key}` of {}", self.what),
            items,
            damaged: self.damaged,
        };
        let before = check.problems.len();
        inner.check_keys(check, allowed);
        (check.problems.len() == before).then_some(inner)
    }
}
