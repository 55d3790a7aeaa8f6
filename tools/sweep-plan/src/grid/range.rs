//! Inclusive ranges in `--values`: `1..10` and `2..16:2` (START..END[:STEP]),
//! as hyperfine's `--parameter-scan` takes them (issue 46: the reference
//! campaign wrote `--values 1..10`, which was one literal value that failed
//! pre-flight). Decimals are counted in whole units of the finest one given
//! (`0.80..0.90:0.05`), so no float rounding adds or drops an end.

/// Most values one range may make: a typo such as `1..100000` would
/// otherwise make a grid of days.
pub const MAX_VALUES: usize = 1000;

/// Why a range item does not expand (each names the item).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RangeError {
    #[error("--values '{item}': a range is START..END or START..END:STEP, numbers with START <= END and STEP > 0 (as 1..10, 2..16:2)")]
    Malformed { item: String },
    #[error("--values '{}': {} is not {} plus a multiple of {}; end the range at {} or {}", .0.item, .0.end, .0.start, .0.step, .0.below, .0.above)]
    Uneven(Box<Uneven>),
    #[error("--values '{item}': {n} values; at most {MAX_VALUES} in one range")]
    TooMany { item: String, n: u128 },
}

/// A range whose END is not START plus whole STEPs, with the two ENDs
/// that would be (boxed: errors stay small).
#[derive(Debug, PartialEq)]
pub struct Uneven {
    item: String,
    start: String,
    end: String,
    step: String,
    below: String,
    above: String,
}

/// Does `item` mean a range (a number, then `..`)? `../model` does not.
pub fn is_range(item: &str) -> bool {
    let Some((start, _)) = item.split_once("..") else {
        return false;
    };
    let digits = start.strip_prefix('-').unwrap_or(start);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The values of the range `item` (START..END[:STEP], STEP 1 by default),
/// written with as many decimals as the finest of the three.
pub fn expand(item: &str) -> Result<Vec<String>, RangeError> {
    let malformed = || RangeError::Malformed { item: item.into() };
    let (start, rest) = item.split_once("..").ok_or_else(malformed)?;
    let (end, step) = rest.split_once(':').unwrap_or((rest, "1"));
    let scale = [start, end, step]
        .iter()
        .map(|n| n.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let [a, b, s] = [start, end, step].map(|n| units(n, scale));
    let (Some(a), Some(b), Some(s)) = (a, b, s) else {
        return Err(malformed());
    };
    if s <= 0 || a > b {
        return Err(malformed());
    }
    let n = ((b - a) / s) as u128 + 1;
    if (b - a) % s != 0 {
        let below = a + (n as i128 - 1) * s;
        return Err(RangeError::Uneven(Box::new(Uneven {
            item: item.into(),
            start: start.into(),
            end: end.into(),
            step: step.into(),
            below: text(below, scale),
            above: text(below + s, scale),
        })));
    }
    if n > MAX_VALUES as u128 {
        return Err(RangeError::TooMany {
            item: item.into(),
            n,
        });
    }
    Ok((0..n as i128).map(|i| text(a + i * s, scale)).collect())
}

/// `n` (digits, one optional `.`, an optional leading `-`) in units of
/// 10^-scale; None when it is no such number or too large.
fn units(n: &str, scale: usize) -> Option<i128> {
    let (neg, digits) = match n.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, n),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty()
        || !all_digits(int)
        || !all_digits(frac)
        || (digits.contains('.') && frac.is_empty())
    {
        return None;
    }
    let padded = format!("{int}{frac:0<scale$}");
    let v: i128 = padded.parse().ok().filter(|_| padded.len() <= 30)?;
    Some(if neg { -v } else { v })
}

/// `v` units of 10^-scale as text: `scale` decimals, no sign for zero.
fn text(v: i128, scale: usize) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let v = v.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{v}");
    }
    let p = 10u128.pow(scale as u32);
    format!("{sign}{}.{:0scale$}", v / p, v % p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(item: &str) -> Vec<String> {
        expand(item).unwrap()
    }

    #[test]
    fn inclusive_ranges_with_an_optional_step() {
        assert_eq!(ok("1..10").len(), 10);
        assert_eq!(ok("1..10")[9], "10");
        assert_eq!(ok("2..16:2"), ["2", "4", "6", "8", "10", "12", "14", "16"]);
        assert_eq!(ok("3..3"), ["3"]);
        assert_eq!(ok("-2..1"), ["-2", "-1", "0", "1"]);
        assert_eq!(ok("0.80..0.90:0.05"), ["0.80", "0.85", "0.90"]);
        assert_eq!(ok("1..2:0.5"), ["1.0", "1.5", "2.0"]);
    }

    #[test]
    fn what_is_a_range() {
        for r in ["1..10", "2..16:2", "0.5..1", "-1..1", "1..x"] {
            assert!(is_range(r), "{r}");
        }
        for not in ["../model", "a..b", "1", "EAGLE", "..5", "1:2"] {
            assert!(!is_range(not), "{not}");
        }
    }

    #[test]
    fn bad_ranges_say_how_to_write_one() {
        let e = |item: &str| expand(item).unwrap_err().to_string();
        for bad in [
            "10..1", "1..10:0", "1..x", "1..", "1..10:-1", "1.5.2..3", "1...3",
        ] {
            let msg = e(bad);
            assert!(
                msg.contains("START..END or START..END:STEP"),
                "{bad}: {msg}"
            );
            assert!(msg.starts_with(&format!("--values '{bad}'")), "{msg}");
        }
        assert_eq!(
            e("2..15:2"),
            "--values '2..15:2': 15 is not 2 plus a multiple of 2; end the range at 14 or 16"
        );
        assert!(
            e("1..100000").contains("at most 1000"),
            "{}",
            e("1..100000")
        );
    }
}
