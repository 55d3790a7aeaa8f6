//! The adaptive search's knobs as its flags take them (`next`, `step`,
//! and `sweep --adaptive`'s own, parsed as `step` parses them).

/// The adaptive search's knobs.
#[derive(Debug, Clone, clap::Args)]
pub struct SearchArgs {
    /// Stop after K further values past the best showed the plateau
    #[arg(long, value_name = "K", default_value_t = 2)]
    pub patience: usize,

    /// Weighted-score gap that counts as a close call (and a drop that
    /// counts as a clear peak) until repeats measure the noise
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = parse_pct)]
    pub noise_margin: f64,

    /// Extra config starts allowed for re-measuring close calls
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub repeat_budget: usize,
}

/// clap's parser for a percentage (`5%` or `5`), as a fraction.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    let x: f64 = t
        .parse()
        .map_err(|_| format!("\"{s}\": expected a percentage like 5%"))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(format!("\"{s}\": must be between 0% and 100%"));
    }
    Ok(x / 100.0)
}
