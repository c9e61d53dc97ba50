//! Circuit analysis of a trained model (He et al. 2025 §3, Obs. 1–3, eqs. (3.1)–(3.2), App. E).
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;
use alloc::vec::Vec;

/// Head classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadKind {
    Positive,
    Negative,
    Dummy,
}

impl HeadKind {
    /// `positive`, `negative` or `dummy`.
    pub fn as_str(&self) -> &'static str {
        match self {
            HeadKind::Positive => "positive",
            HeadKind::Negative => "negative",
            HeadKind::Dummy => "dummy",
        }
    }
}

/// One head's effective circuits and pattern metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadReport {
    /// omega = mean of the diagonal of KQ_11 (effective, score scale included).
    pub omega: f64,
    /// mu = OV_22 of the first output (OV[0][d]).
    pub mu: f64,
    /// OV[o][d + o] for every output.
    pub mu_all: Vec<f64>,
    /// Diagonal of KQ_11.
    pub omega_diag: Vec<f64>,
    pub kind: HeadKind,
    /// max |off-diagonal of KQ_11| / |omega|.
    pub offdiag_ratio: f64,
    /// ||KQ_21|| (the y row of the key side, x columns of the query side).
    pub kq21_norm: f64,
    /// ||OV_21|| (x columns of the output rows).
    pub ov21_norm: f64,
    /// sign(omega) == sign(mu) (first output).
    pub sign_match: bool,
    /// Effective KQ (E x E) and OV (n_out x E), row-major.
    pub kq: Vec<f64>,
    pub ov: Vec<f64>,
}

/// Whole-model report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub heads: Vec<HeadReport>,
    /// Every non-dummy head has sign(omega) = sign(mu).
    pub sign_matching: bool,
    /// max |omega| / min |omega| over non-dummy heads (1 = homogeneous).
    pub omega_homogeneity: f64,
    /// gamma = mean |omega| over non-dummy heads.
    pub gamma: f64,
    /// mu_+ and mu_-: sums of mu over positive and negative heads.
    pub mu_plus: f64,
    pub mu_minus: f64,
    /// sum_h mu_h (zero-sum OV) and |sum mu| / max(mu_+, |mu_-|).
    pub mu_sum: f64,
    pub zero_sum_ratio: f64,
    /// eta_eff = 2 C_f gamma mu_+ (for H = 1: C_f omega mu); None for linear attention.
    pub eta_eff: Option<f64>,
}

/// A head whose |omega mu| is below this fraction of the largest head's is a dummy.
pub const DUMMY_FRACTION: f64 = 0.1;

/// Analyse the effective circuits of a model.
pub fn analyze<T: Scalar>(spec: &AttentionSpec, circ: &Circuits<T>) -> Report {
    let (e, d, no) = (spec.e(), spec.d, spec.n_out);
    let mut heads: Vec<HeadReport> = (0..spec.heads)
        .map(|h| {
            let kq: Vec<f64> = circ.kq_head(h).iter().map(|x| x.to_f64()).collect();
            let ov: Vec<f64> = circ.ov_head(h).iter().map(|x| x.to_f64()).collect();
            let omega_diag: Vec<f64> = (0..d).map(|i| kq[i * e + i]).collect();
            let omega = omega_diag.iter().sum::<f64>() / d as f64;
            let mu_all: Vec<f64> = (0..no).map(|o| ov[o * e + d + o]).collect();
            let mu = mu_all[0];
            let mut off: f64 = 0.0;
            for i in 0..d {
                for j in 0..d {
                    if i != j {
                        off = off.max(kq[i * e + j].abs());
                    }
                }
            }
            let kq21: f64 = (0..no)
                .flat_map(|o| (0..d).map(move |j| (o, j)))
                .map(|(o, j)| sq(kq[(d + o) * e + j]))
                .sum();
            let ov21: f64 = (0..no)
                .flat_map(|o| (0..d).map(move |j| (o, j)))
                .map(|(o, j)| sq(ov[o * e + j]))
                .sum();
            HeadReport {
                omega,
                mu,
                mu_all,
                omega_diag,
                kind: if omega > 0.0 {
                    HeadKind::Positive
                } else {
                    HeadKind::Negative
                },
                offdiag_ratio: if omega != 0.0 {
                    off / omega.abs()
                } else {
                    f64::INFINITY
                },
                kq21_norm: libm::sqrt(kq21),
                ov21_norm: libm::sqrt(ov21),
                sign_match: (omega > 0.0) == (mu > 0.0),
                kq,
                ov,
            }
        })
        .collect();
    let strength: Vec<f64> = heads.iter().map(|h| (h.omega * h.mu).abs()).collect();
    let max_s = strength.iter().cloned().fold(0.0, f64::max);
    if heads.len() > 1 {
        for (h, s) in heads.iter_mut().zip(&strength) {
            if *s < DUMMY_FRACTION * max_s {
                h.kind = HeadKind::Dummy;
            }
        }
    }
    let active: Vec<&HeadReport> = heads.iter().filter(|h| h.kind != HeadKind::Dummy).collect();
    let abs_om: Vec<f64> = active.iter().map(|h| h.omega.abs()).collect();
    let gamma = if abs_om.is_empty() {
        0.0
    } else {
        abs_om.iter().sum::<f64>() / abs_om.len() as f64
    };
    let homog = if abs_om.is_empty() {
        f64::NAN
    } else {
        abs_om.iter().cloned().fold(0.0, f64::max)
            / abs_om.iter().cloned().fold(f64::INFINITY, f64::min)
    };
    let mu_plus: f64 = heads
        .iter()
        .filter(|h| h.kind == HeadKind::Positive)
        .map(|h| h.mu)
        .sum();
    let mu_minus: f64 = heads
        .iter()
        .filter(|h| h.kind == HeadKind::Negative)
        .map(|h| h.mu)
        .sum();
    let mu_sum: f64 = heads.iter().map(|h| h.mu).sum();
    let denom = mu_plus.abs().max(mu_minus.abs());
    let eta_eff = spec.c_f().map(|cf| {
        if heads.len() == 1 {
            cf * heads[0].omega * heads[0].mu
        } else {
            2.0 * cf * gamma * mu_plus
        }
    });
    Report {
        sign_matching: active.iter().all(|h| h.sign_match),
        omega_homogeneity: homog,
        gamma,
        mu_plus,
        mu_minus,
        mu_sum,
        zero_sum_ratio: if denom > 0.0 {
            mu_sum.abs() / denom
        } else {
            f64::NAN
        },
        eta_eff,
        heads,
    }
}

#[inline]
fn sq(x: f64) -> f64 {
    x * x
}
