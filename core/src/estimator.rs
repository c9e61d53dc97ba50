//! Classical in-context estimators (He et al. 2025 §3, App. F). Each predicts y_q for every output
//! of a sequence from its context (x_l, y_l), l = 1..L, and x_q. Computed in f64.
//!
//! * vanilla GD(eta):    yhat = eta/L sum_l y_l x_l^T x_q
//! * debiased GD(eta):   yhat = eta/L sum_l y_l (x_l - xbar)^T x_q                       (F.1)
//! * preconditioned GD:  x_l^T x_q replaced by x_l^T Gamma^{-1} x_q (optionally debiased)   (B.6)
//! * ridge(lambda):      yhat = x_q^T (X^T X + lambda I)^{-1} X^T y; Bayes: lambda = d sigma^2
//! * OLS:                ridge with lambda = 0 (needs L >= d)
//! * Nadaraya–Watson:    yhat = mu sum_l y_l smax_l(omega X x_q)                            (E.3)
//! * reduced multi-head: yhat = sum_h mu_h sum_l y_l smax_l(omega_h X x_q)                  (3.2)
use crate::data::Batch;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

/// An estimator of y_q.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimator {
    /// Predicts 0.
    Zero,
    VanillaGd {
        eta: f64,
    },
    DebiasedGd {
        eta: f64,
    },
    /// `gamma_inv` is Gamma^{-1}, row-major d x d.
    PrecondGd {
        eta: f64,
        gamma_inv: Vec<f64>,
        debiased: bool,
    },
    Ridge {
        lambda: f64,
    },
    Ols,
    Nw {
        omega: f64,
        mu: f64,
    },
    Reduced {
        omega: Vec<f64>,
        mu: Vec<f64>,
    },
}

impl Estimator {
    /// Stable short name used in reports (`vanilla_gd`, `debiased_gd`, `ridge`, `ols`, `nw`, ...).
    pub fn name(&self) -> String {
        match self {
            Estimator::Zero => "zero".into(),
            Estimator::VanillaGd { .. } => "vanilla_gd".into(),
            Estimator::DebiasedGd { .. } => "debiased_gd".into(),
            Estimator::PrecondGd { debiased, .. } => if *debiased {
                "precond_debiased_gd"
            } else {
                "precond_gd"
            }
            .into(),
            Estimator::Ridge { .. } => "ridge".into(),
            Estimator::Ols => "ols".into(),
            Estimator::Nw { .. } => "nw".into(),
            Estimator::Reduced { .. } => "reduced".into(),
        }
    }

    /// Check parameters (finite, matching sizes) for dimension `d`.
    pub fn validate(&self, d: usize) -> Result<()> {
        let fin = |what: &str, x: f64| {
            if x.is_finite() {
                Ok(())
            } else {
                Err(Error::NonFinite(format!("estimator {what}")))
            }
        };
        match self {
            Estimator::Zero | Estimator::Ols => Ok(()),
            Estimator::VanillaGd { eta } | Estimator::DebiasedGd { eta } => fin("eta", *eta),
            Estimator::PrecondGd { eta, gamma_inv, .. } => {
                fin("eta", *eta)?;
                if gamma_inv.len() != d * d {
                    return Err(Error::Shape(format!("Gamma^-1 needs {} entries", d * d)));
                }
                gamma_inv.iter().try_for_each(|&x| fin("Gamma^-1", x))
            }
            Estimator::Ridge { lambda } => {
                fin("lambda", *lambda)?;
                if *lambda < 0.0 {
                    return Err(Error::InvalidConfig("ridge lambda must be >= 0".into()));
                }
                Ok(())
            }
            Estimator::Nw { omega, mu } => fin("omega", *omega).and(fin("mu", *mu)),
            Estimator::Reduced { omega, mu } => {
                if omega.len() != mu.len() || omega.is_empty() {
                    return Err(Error::Shape(
                        "reduced estimator needs as many mu as omega (>= 1)".into(),
                    ));
                }
                omega.iter().chain(mu).try_for_each(|&x| fin("omega/mu", x))
            }
        }
    }

    /// Predict every output of sequence `b` of `batch` into `out` (n_out values).
    pub fn predict<T: Scalar>(&self, batch: &Batch<T>, b: usize, out: &mut [f64]) -> Result<()> {
        let (d, l, e, no) = (batch.d, batch.len, batch.e(), batch.n_out);
        let seq = batch.seq(b);
        let x = |i: usize, k: usize| seq[i * e + k].to_f64();
        let y = |i: usize, o: usize| seq[i * e + d + o].to_f64();
        let xq: Vec<f64> = (0..d).map(|k| x(l, k)).collect();
        let lf = l as f64;
        match self {
            Estimator::Zero => out.iter_mut().for_each(|v| *v = 0.0),
            Estimator::VanillaGd { eta } | Estimator::DebiasedGd { eta } => {
                let debias = matches!(self, Estimator::DebiasedGd { .. });
                let xbar: Vec<f64> = (0..d)
                    .map(|k| (0..l).map(|i| x(i, k)).sum::<f64>() / lf)
                    .collect();
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    let mut acc = 0.0;
                    for i in 0..l {
                        let dot: f64 = (0..d)
                            .map(|k| (x(i, k) - if debias { xbar[k] } else { 0.0 }) * xq[k])
                            .sum();
                        acc += y(i, o) * dot;
                    }
                    *v = eta * acc / lf;
                }
            }
            Estimator::PrecondGd {
                eta,
                gamma_inv,
                debiased,
            } => {
                let gq: Vec<f64> = (0..d)
                    .map(|r| (0..d).map(|c| gamma_inv[r * d + c] * xq[c]).sum())
                    .collect();
                let xbar: Vec<f64> = (0..d)
                    .map(|k| (0..l).map(|i| x(i, k)).sum::<f64>() / lf)
                    .collect();
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    let mut acc = 0.0;
                    for i in 0..l {
                        let dot: f64 = (0..d)
                            .map(|k| (x(i, k) - if *debiased { xbar[k] } else { 0.0 }) * gq[k])
                            .sum();
                        acc += y(i, o) * dot;
                    }
                    *v = eta * acc / lf;
                }
            }
            Estimator::Ridge { .. } | Estimator::Ols => {
                let lambda = if let Estimator::Ridge { lambda } = self {
                    *lambda
                } else {
                    0.0
                };
                if lambda == 0.0 && l < d {
                    return Err(Error::Numerical(format!(
                        "OLS needs L >= d (L = {l}, d = {d})"
                    )));
                }
                let xm = DMatrix::from_fn(l, d, x);
                let mut a = xm.transpose() * &xm;
                for k in 0..d {
                    a[(k, k)] += lambda;
                }
                let chol = a
                    .cholesky()
                    .ok_or_else(|| Error::Numerical("X^T X + lambda I is singular".into()))?;
                let xqv = DVector::from_column_slice(&xq);
                // yhat = x_q^T A^{-1} X^T y = (A^{-1} x_q)^T X^T y
                let w = chol.solve(&xqv);
                let xw = &xm * w;
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    *v = (0..l).map(|i| xw[i] * y(i, o)).sum();
                }
            }
            Estimator::Nw { omega, mu } => nw_sum(&[*omega], &[*mu], l, d, &x, &y, &xq, out),
            Estimator::Reduced { omega, mu } => nw_sum(omega, mu, l, d, &x, &y, &xq, out),
        }
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
fn nw_sum(
    omega: &[f64],
    mu: &[f64],
    l: usize,
    d: usize,
    x: &dyn Fn(usize, usize) -> f64,
    y: &dyn Fn(usize, usize) -> f64,
    xq: &[f64],
    out: &mut [f64],
) {
    let dots: Vec<f64> = (0..l)
        .map(|i| (0..d).map(|k| x(i, k) * xq[k]).sum())
        .collect();
    out.iter_mut().for_each(|v| *v = 0.0);
    let mut w = vec![0.0; l];
    for (&om, &m) in omega.iter().zip(mu) {
        let mx = dots
            .iter()
            .map(|s| om * s)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for i in 0..l {
            w[i] = libm::exp(om * dots[i] - mx);
            sum += w[i];
        }
        for (o, v) in out.iter_mut().enumerate() {
            *v += m * (0..l).map(|i| w[i] * y(i, o)).sum::<f64>() / sum;
        }
    }
}
