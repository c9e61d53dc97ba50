//! Attention temperature at evaluation (temperature paper eq. (4) and §9): every attention logit
//! of every head (and of every layer of a transformer) is divided by tau, `softmax(S / tau)`.
//!
//! The logits are linear in the effective circuits (`s_l = z_l^T KQ z_q`, `s_ij = z_i^T Phi z_j`),
//! so a model at temperature tau is the same model with `KQ / tau` (`Phi / tau`): every engine
//! runs it unchanged. Linear attention (`w_l = s_l / L_0`) then computes `s_l / (tau L_0)`, the
//! paper's "linear attention with temperature" (spec §2.3, eq. (6) divided by tau).
//!
//! `opt` picks tau on a held-out set drawn from the [`Domain::Tune`](crate::rng::Domain::Tune)
//! streams (independent of the evaluation streams): the minimum of the held-out risk over a
//! log-spaced grid, refined by golden-section search in log tau ([`select_tau`]).
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// A temperature to evaluate at: a number, or the one chosen on held-out data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tau {
    Value(f64),
    Opt,
}

impl core::fmt::Display for Tau {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Tau::Value(t) => write!(f, "{t}"),
            Tau::Opt => f.write_str("opt"),
        }
    }
}

/// Smallest and largest temperature `opt` searches, and its grid (log-spaced, both ends included).
pub const OPT_MIN: f64 = 0.05;
pub const OPT_MAX: f64 = 20.0;
pub const OPT_GRID: usize = 49;
/// Golden-section steps after the grid (the bracket shrinks by 0.618 per step).
pub const OPT_REFINE: usize = 30;

/// The [`OPT_GRID`] temperatures `opt` tries first: log-spaced from [`OPT_MIN`] to [`OPT_MAX`]
/// (a factor of about 1.133 between neighbours).
pub fn opt_grid() -> impl Iterator<Item = f64> {
    let (lo, hi) = (libm::log(OPT_MIN), libm::log(OPT_MAX));
    let h = (hi - lo) / (OPT_GRID - 1) as f64;
    (0..OPT_GRID).map(move |i| libm::exp(lo + h * i as f64))
}

/// Check one temperature: finite and > 0.
pub fn check_tau(tau: f64) -> Result<()> {
    if !tau.is_finite() {
        return Err(Error::NonFinite(format!("temperature tau = {tau}")));
    }
    if !(tau > 0.0) {
        return Err(Error::InvalidArgument(format!(
            "temperature tau = {tau} must be > 0"
        )));
    }
    Ok(())
}

/// Parse `0.5,1,2,opt` (numbers > 0 and `opt`).
pub fn parse_taus(text: &str) -> Result<Vec<Tau>> {
    let mut out = Vec::new();
    for p in crate::list::items("--tau", text)? {
        if p.eq_ignore_ascii_case("opt") {
            out.push(Tau::Opt);
            continue;
        }
        let t: f64 = p.parse().map_err(|_| {
            Error::InvalidArgument(format!(
                "temperature {p:?} is not a number or \"opt\" (--tau 0.5,1,2,opt)"
            ))
        })?;
        check_tau(t)?;
        out.push(Tau::Value(t));
    }
    if out.is_empty() {
        return Err(Error::InvalidArgument("no temperature given".into()));
    }
    Ok(out)
}

/// Check a list of temperatures (non-empty, numbers finite and > 0).
pub fn check_taus(taus: &[Tau]) -> Result<()> {
    if taus.is_empty() {
        return Err(Error::InvalidArgument("no temperature given".into()));
    }
    for t in taus {
        if let Tau::Value(v) = t {
            check_tau(*v)?;
        }
    }
    Ok(())
}

/// `x / tau` for every logit-producing value (`tau = 1` leaves them untouched, bit for bit).
pub fn divide_logits<T: Scalar>(v: &mut [T], tau: f64) {
    if tau != 1.0 {
        let t = T::of(tau);
        v.iter_mut().for_each(|x| *x /= t);
    }
}

/// The temperature minimising `risk(tau)` (a held-out risk) over [OPT_MIN, OPT_MAX]: the best of
/// [`OPT_GRID`] log-spaced points, then [`OPT_REFINE`] golden-section steps in log tau within
/// the grid neighbours of that point. Returns (tau, risk(tau)); the refined point is kept only
/// when it is at least as good as the grid's.
pub fn select_tau(mut risk: impl FnMut(f64) -> Result<f64>) -> Result<(f64, f64)> {
    let (lo, hi) = (libm::log(OPT_MIN), libm::log(OPT_MAX));
    let h = (hi - lo) / (OPT_GRID - 1) as f64;
    let mut best = (0usize, f64::INFINITY);
    for (i, tau) in opt_grid().enumerate() {
        let r = risk(tau)?;
        if r < best.1 {
            best = (i, r);
        }
    }
    if !best.1.is_finite() {
        return Err(Error::Numerical(String::from(
            "the held-out risk is not finite at any temperature of the grid",
        )));
    }
    let (mut a, mut b) = (
        lo + h * best.0.saturating_sub(1) as f64,
        lo + h * (best.0 + 1).min(OPT_GRID - 1) as f64,
    );
    let g = (libm::sqrt(5.0) - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (risk(libm::exp(c))?, risk(libm::exp(d))?);
    for _ in 0..OPT_REFINE {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = risk(libm::exp(c))?;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = risk(libm::exp(d))?;
        }
    }
    let (x, fx) = if fc <= fd { (c, fc) } else { (d, fd) };
    let grid_tau = libm::exp(lo + h * best.0 as f64);
    Ok(if fx <= best.1 {
        (libm::exp(x), fx)
    } else {
        (grid_tau, best.1)
    })
}
