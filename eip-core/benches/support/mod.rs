//! What every eip benchmark shares: reading a run's command line, and the compare line measured
//! by alternating rounds.
//!
//! Criterion's samples run one side after the other; on a shared two-core machine the load
//! drifts between the two, so the compare lines come from eip and baseline runs alternated
//! round by round, summarised by their medians.

/// Whether this is a real `cargo bench` run (not `--test` or `--list`), worth the extra
/// alternating rounds behind the compare lines.
pub fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

/// Runs `rounds` rounds of eip then baseline (each given the round number and returning
/// ns/msg) and returns the two medians.
pub fn alternating_medians(
    rounds: usize,
    mut eip: impl FnMut(usize) -> f64,
    mut baseline: impl FnMut(usize) -> f64,
) -> (f64, f64) {
    let (mut x, mut y) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds {
        x.push(eip(round));
        y.push(baseline(round));
    }
    (median(&mut x), median(&mut y))
}

/// Prints `compare: NAME: eip X ns/msg, baseline Y ns/msg (LABEL), ratio R`; small ratios get
/// five decimals so that they do not read as zero.
pub fn print_compare(name: &str, eip_ns: f64, baseline_ns: f64, baseline_label: &str) {
    let ratio = eip_ns / baseline_ns;
    let ratio = if ratio < 0.1 {
        format!("{ratio:.5}")
    } else {
        format!("{ratio:.2}")
    };
    println!(
        "compare: {name}: eip {eip_ns:.1} ns/msg, baseline {baseline_ns:.1} ns/msg ({baseline_label}), ratio {ratio}"
    );
}

/// The middle value (the upper one of an even count); sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
