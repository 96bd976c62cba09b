//! What every eip benchmark shares: reading a run's command line and summarising rounds.

/// Whether this is a real `cargo bench` run (not `--test` or `--list`), worth the extra
/// alternating rounds behind the compare lines.
pub fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

/// The median of the rounds (sorts them).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
