//! Tick positions and tick labels of the figures' axes.
//!
//! * log axes label every decade in range; a range with fewer than three decades also labels
//!   the 2 and 5 multiples, one too short for that every 1..9 multiple; the other multiples of
//!   each decade are light grid lines;
//! * linear axes take a 1-2-5 step giving about six ticks;
//! * step axes print integers with SI suffixes (`500`, `5k`, `2.5k`, `1.2M`), never `50000.0`.
//!
//! Every tick is parsed from its decimal text (`"5e-2"`), so a label prints the number a reader
//! expects (`0.05`, not `0.05000000000000001`).

/// The ticks of an axis: labelled (bold grid lines) and light grid lines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ticks {
    pub major: Vec<f64>,
    pub minor: Vec<f64>,
}

/// `m * 10^k`, as the double closest to its decimal text.
fn dec(m: i64, k: i32) -> f64 {
    format!("{m}e{k}").parse().unwrap_or(f64::NAN)
}

fn inside(v: f64, lo: f64, hi: f64) -> bool {
    let tol = 1e-9 * (hi - lo).abs().max(hi.abs());
    v >= lo - tol && v <= hi + tol
}

/// Ticks of a log axis over `[lo, hi]` (`0 < lo < hi`).
pub fn log_ticks(lo: f64, hi: f64) -> Ticks {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Ticks::default();
    }
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let multiples = |ms: &[i64]| -> Vec<f64> {
        (k0..=k1)
            .flat_map(|k| ms.iter().map(move |&m| dec(m, k)))
            .filter(|&v| inside(v, lo, hi))
            .collect()
    };
    let all = multiples(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let decades = multiples(&[1]);
    let major = if decades.len() >= 3 {
        decades
    } else {
        let m125 = multiples(&[1, 2, 5]);
        if m125.len() >= 3 {
            m125
        } else if all.len() >= 2 {
            all.clone()
        } else {
            // shorter than one step between multiples: linear ticks inside the range
            return Ticks {
                major: linear_ticks(lo, hi),
                minor: Vec::new(),
            };
        }
    };
    let minor = all.into_iter().filter(|v| !major.contains(v)).collect();
    Ticks { major, minor }
}

/// `[lo, hi]` widened to the labelled ticks just outside it, so that the bottom and the top
/// of the axis carry a label (a curve's lowest value is read off its own tick, not guessed
/// below the lowest label). Log axes (`log`) widen to the next value of their labels' family
/// (decades, or the 1-2-5 multiples), linear ones to the next multiple of their step. A range
/// whose ticks cannot be made (empty, not finite, not positive on a log axis) is returned as
/// given.
pub fn outer(lo: f64, hi: f64, log: bool) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) || (log && lo <= 0.0) {
        return (lo, hi);
    }
    let (mut a, mut b) = (lo, hi);
    // twice: widening may change the family (1-2-5 to decades) or the step
    for _ in 0..2 {
        if log {
            let major = log_ticks(a, b).major;
            let decades = major
                .iter()
                .all(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
            let ms: &[i64] = if decades && major.len() >= 3 {
                &[1]
            } else {
                &[1, 2, 5]
            };
            let k0 = a.log10().floor() as i32 - 1;
            let k1 = b.log10().ceil() as i32 + 1;
            let family: Vec<f64> = (k0..=k1)
                .flat_map(|k| ms.iter().map(move |&m| dec(m, k)))
                .collect();
            let tol = 1e-9;
            if let Some(&v) = family.iter().rev().find(|&&v| v <= a * (1.0 + tol)) {
                a = v;
            }
            if let Some(&v) = family.iter().find(|&&v| v >= b * (1.0 - tol)) {
                b = v;
            }
        } else {
            let (m, k) = nice_step(b - a, 6.0);
            let step = dec(m, k);
            let (i0, i1) = ((a / step + 1e-9).floor(), (b / step - 1e-9).ceil());
            let (na, nb) = (i0 * step, i1 * step);
            if na.is_finite() && nb.is_finite() && nb > na {
                a = dec(i0 as i64 * m, k).min(a);
                b = dec(i1 as i64 * m, k).max(b);
            }
        }
    }
    (a, b)
}

/// The 1-2-5 step giving about `n` intervals over `span`, as (mantissa, exponent).
fn nice_step(span: f64, n: f64) -> (i64, i32) {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let k = raw.log10().floor() as i32;
    let f = raw / 10f64.powi(k);
    match f {
        f if f <= 1.5 => (1, k),
        f if f <= 3.5 => (2, k),
        f if f <= 7.5 => (5, k),
        _ => (1, k + 1),
    }
}

/// Ticks of a linear axis over `[lo, hi]`: multiples of a 1-2-5 step, about six of them.
pub fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (m, k) = nice_step(hi - lo, 6.0);
    let step = dec(m, k);
    // (a tolerance: -0.6 / 0.2 is -2.9999999999999996)
    let (i0, i1) = (
        (lo / step - 1e-9).ceil() as i64,
        (hi / step + 1e-9).floor() as i64,
    );
    (i0..=i1)
        .map(|i| dec(i * m, k))
        .filter(|&v| inside(v, lo, hi))
        .collect()
}

/// How an axis prints its ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// Numbers (`0.05`, `1e-5`).
    Number,
    /// Counts such as training steps: integers with SI suffixes (`500`, `5k`, `1.2M`).
    Steps,
}

/// A number without trailing zeros: `2.50` -> `2.5`, `3.0` -> `3`.
fn trim(s: String) -> String {
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An integer count with an SI suffix: `0`, `500`, `5k`, `2.5k`, `50k`, `1.2M`, `3G`.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if suffix.is_empty() {
        return format!("{}", v.round() as i64);
    }
    let s = trim(format!("{x:.2}"));
    format!("{s}{suffix}")
}

/// A tick number: plain decimal text between 1e-3 and 1e5 (`0.05`, `120`), otherwise
/// scientific (`1e-5`, `2.5e6`), with `decimals` decimals for linear ticks (`None`: shortest).
pub fn number(v: f64, decimals: Option<usize>) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:e}");
        // 1.5e-5 stays, 1e-5 stays; drop noise such as 2.0000000000000004e-5
        return match s.split_once('e') {
            Some((m, e)) => {
                let m: f64 = m.parse().unwrap_or(0.0);
                format!("{}e{e}", trim(format!("{m:.3}")))
            }
            None => s,
        };
    }
    match decimals {
        Some(d) => format!("{v:.d$}"),
        None => trim(format!("{v:.6}")),
    }
}

/// The decimals a linear axis with these ticks needs (the step's, e.g. 0.05 -> 2).
pub fn decimals(ticks: &[f64]) -> usize {
    match ticks {
        [a, b, ..] => {
            let step = (b - a).abs();
            if step <= 0.0 || !step.is_finite() {
                0
            } else {
                (-(step.log10() + 1e-9).floor()).max(0.0) as usize
            }
        }
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decade_is_labelled() {
        let t = log_ticks(2e-4, 3.0);
        assert_eq!(t.major, vec![1e-3, 1e-2, 1e-1, 1.0]);
        assert!(t.minor.contains(&2e-4) && t.minor.contains(&3.0) && t.minor.contains(&0.05));
    }

    #[test]
    fn short_log_ranges_get_intermediate_labels() {
        // the he2025 loss: 0.38 .. 3.2 holds the one decade 1
        assert_eq!(log_ticks(0.38, 3.2).major, vec![0.5, 1.0, 2.0]);
        // 0.42 .. 0.95: no 1-2-5 pair, every multiple
        assert_eq!(log_ticks(0.42, 0.95).major, vec![0.5, 0.6, 0.7, 0.8, 0.9]);
        // 0.401 .. 0.43: no multiple at all, linear ticks
        let t = log_ticks(0.401, 0.43);
        assert!(t.major.len() >= 3 && t.major.iter().all(|v| (0.401..=0.43).contains(v)));
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 1.0), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(
            linear_ticks(-0.13, 0.52),
            vec![-0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
        );
        assert_eq!(linear_ticks(0.0, 500_000.0)[1], 100_000.0);
        assert_eq!(decimals(&linear_ticks(0.0, 0.3)), 2);
        assert_eq!(decimals(&linear_ticks(0.0, 30.0)), 0);
    }

    #[test]
    fn labels() {
        assert_eq!(si(50_000.0), "50k");
        assert_eq!(si(2_500.0), "2.5k");
        assert_eq!(si(500.0), "500");
        assert_eq!(si(1_200_000.0), "1.2M");
        assert_eq!(si(0.0), "0");
        assert_eq!(number(0.05, None), "0.05");
        assert_eq!(number(1.0, None), "1");
        assert_eq!(number(1e-5, None), "1e-5");
        assert_eq!(number(2.5e6, None), "2.5e6");
        assert_eq!(number(0.5, Some(2)), "0.50");
        assert_eq!(number(-0.1, Some(1)), "-0.1");
    }
}
