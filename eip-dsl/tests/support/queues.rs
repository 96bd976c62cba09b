//! The three channels most flows under test start from.

pub const QUEUES: &[&str] = &[
    "channels:",
    "  in:  {kind: point-to-point}",
    "  out: {kind: point-to-point}",
    "  news: {kind: publish-subscribe}",
];

/// `QUEUES` and then `more`.
pub fn with_queues<'a>(more: &[&'a str]) -> Vec<&'a str> {
    QUEUES.iter().copied().chain(more.iter().copied()).collect()
}
