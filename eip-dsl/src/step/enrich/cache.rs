//! An enricher's cache: what was found, by the request made, for a time to live, at most so
//! many answers (when full, the oldest goes first).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::diagnostic::Check;
use crate::settings::Settings;

/// The keys of `cache:`.
const KEYS: &[&str] = &["ttl", "max-entries"];

/// The answers kept when `max-entries` is not written.
const DEFAULT_ENTRIES: usize = 10_000;

/// How long, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CacheSettings {
    ttl: Duration,
    max_entries: usize,
}

/// `cache: {ttl: 60s, max-entries: 10000}`: `ttl` is required.
pub(super) fn read(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<CacheSettings> {
    settings.get("cache")?;
    let cache = settings.map(check, "cache", KEYS)?;
    if cache.get("ttl").is_none() {
        cache.missing(
            check,
            "ttl",
            "add `ttl:`, how long an answer is kept, such as `60s`",
        );
        return None;
    }
    let ttl = cache.positive_duration(check, "ttl")?;
    let max_entries = match cache.get("max-entries") {
        None => DEFAULT_ENTRIES,
        Some(_) => usize::try_from(cache.whole(check, "max-entries", 1)?).unwrap_or(usize::MAX),
    };
    Some(CacheSettings { ttl, max_entries })
}

/// The answers kept.
#[derive(Debug)]
pub(super) struct Cache {
    settings: CacheSettings,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Each answer and when it was kept.
    answers: HashMap<String, (Instant, Value)>,
    /// The keys in the order they were kept (a key kept again is listed again: an entry whose
    /// time is not the answer's is stale and skipped).
    order: VecDeque<(Instant, String)>,
}

impl Cache {
    pub(super) fn new(settings: CacheSettings) -> Self {
        Cache {
            settings,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The answer kept for `key`, if it is younger than the time to live.
    pub(super) fn get(&self, key: &str) -> Option<Value> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, answer) = kept.answers.get(key)?;
        if at.elapsed() < self.settings.ttl {
            return Some(answer.clone());
        }
        kept.answers.remove(key);
        None
    }

    /// Keeps `answer` for `key`, making room first.
    pub(super) fn put(&self, key: String, answer: Value) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        while kept.answers.len() >= self.settings.max_entries && !kept.answers.contains_key(&key) {
            let Some((at, oldest)) = kept.order.pop_front() else {
                break;
            };
            if kept
                .answers
                .get(&oldest)
                .is_some_and(|(kept_at, _)| *kept_at == at)
            {
                kept.answers.remove(&oldest);
            }
        }
        // The order list holds stale entries too: past twice the room, drop those.
        if kept.order.len() >= self.settings.max_entries.saturating_mul(2) {
            let Kept { answers, order } = &mut *kept;
            order.retain(|(at, k)| answers.get(k).is_some_and(|(kept_at, _)| kept_at == at));
        }
        kept.order.push_back((now, key.clone()));
        kept.answers.insert(key, (now, answer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(ttl: u64, max_entries: usize) -> Cache {
        Cache::new(CacheSettings {
            ttl: Duration::from_secs(ttl),
            max_entries,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_kept_for_its_time_to_live() {
        let cache = cache(60, 10);
        cache.put("a".into(), Value::from(1));
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(cache.get("a"), Some(Value::from(1)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(cache.get("a"), None, "60 s old");
    }

    #[tokio::test(start_paused = true)]
    async fn when_full_the_oldest_answer_goes() {
        let cache = cache(60, 2);
        cache.put("a".into(), Value::from(1));
        tokio::time::advance(Duration::from_secs(1)).await;
        cache.put("b".into(), Value::from(2));
        // `a` kept again: it is now younger than `b`.
        tokio::time::advance(Duration::from_secs(1)).await;
        cache.put("a".into(), Value::from(3));
        cache.put("c".into(), Value::from(4));
        assert_eq!(cache.get("b"), None);
        assert_eq!(cache.get("a"), Some(Value::from(3)));
        assert_eq!(cache.get("c"), Some(Value::from(4)));
        for n in 0..100 {
            cache.put(format!("k{n}"), Value::from(n));
        }
        let kept = cache.kept.lock().unwrap();
        assert_eq!(kept.answers.len(), 2);
        assert!(kept.order.len() <= 4, "{}", kept.order.len());
    }
}
