//! Classical in-context estimators (He et al. 2025 §3, App. F). Each predicts y_q for every output
//! of a sequence from its context (x_l, y_l), l = 1..L, and x_q. Computed in f64.
//!
//! * vanilla GD(eta):    yhat = eta/L sum_l y_l x_l^T x_q
//! * debiased GD(eta):   yhat = eta/L sum_l y_l (x_l - xbar)^T x_q                       (F.1)
//! * preconditioned GD:  x_l^T x_q replaced by x_l^T Gamma^{-1} x_q (optionally debiased)   (B.6)
//! * ridge(lambda):      yhat = x_q^T (X^T X + lambda I)^{-1} X^T y; Bayes: lambda = d sigma^2
//! * OLS:                ridge with lambda = 0 (needs L >= d)
//! * least squares:      yhat = x_q^T X^+ y, the minimum-norm solution (0 at L = 0; any L)
//! * k nearest neighbours: the mean y_l of the k context x_l nearest x_q (all of them when L < k;
//!   0 at L = 0; Garg et al. 2022's `NNModel`, uniform weights)
//! * averaging:          yhat = x_q^T (1/L) sum_l y_l x_l (0 at L = 0; Garg et al.'s `AveragingModel`)
//! * Nadaraya–Watson:    yhat = mu sum_l y_l smax_l(omega X x_q)                            (E.3)
//! * reduced multi-head: yhat = sum_h mu_h sum_l y_l smax_l(omega_h X x_q)                  (3.2)
//! * Lasso(alpha):       x_q^T argmin_w (1/2L) |y - X w|^2 + alpha |w|_1 ([`lasso`]; Garg et al.'s
//!   sparse baseline, 0 at L = 0)
//! * decision tree:      CART of depth <= D or unbounded ([`tree`]; Garg et al.'s tree baseline)
//! * boosted trees:      XGBoost's defaults for squared error ([`tree::boost_predict`])
//! * two-layer network:  100 ReLU units fitted by 100 Adam steps ([`mlp`]; Garg et al.'s baseline
//!   on their two-layer network task)
pub mod lasso;
pub mod mlp;
pub mod tree;

use crate::data::Batch;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

/// A Monte Carlo risk and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskEstimate {
    pub risk: f64,
    pub stderr: f64,
    pub n: usize,
}

/// Running mean and variance of per-sequence squared errors.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acc {
    n: usize,
    sum: f64,
    sumsq: f64,
}

impl Acc {
    /// Add one squared error.
    pub fn push(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        self.sumsq += v * v;
    }
    /// The mean and its standard error (unbiased variance).
    pub fn finish(&self) -> RiskEstimate {
        let n = self.n.max(1) as f64;
        let m = self.sum / n;
        let var = (self.sumsq / n - m * m).max(0.0) * n / (n - 1.0).max(1.0);
        RiskEstimate {
            risk: m,
            stderr: libm::sqrt(var / n),
            n: self.n,
        }
    }
}

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
    /// Minimum-norm least squares (defined for every L, L < d included).
    Lstsq,
    /// The mean label of the `k` nearest context points (Euclidean distance).
    Knn {
        k: usize,
    },
    /// x_q^T times the mean of y_l x_l.
    Averaging,
    Nw {
        omega: f64,
        mu: f64,
    },
    Reduced {
        omega: Vec<f64>,
        mu: Vec<f64>,
    },
    /// The Lasso without intercept at penalty `alpha` (scikit-learn's objective).
    Lasso {
        alpha: f64,
    },
    /// A CART regression tree of depth at most `max_depth` (`None`: unbounded).
    Tree {
        max_depth: Option<usize>,
    },
    /// Gradient-boosted trees with XGBoost's defaults.
    Boost,
    /// A two-layer ReLU network fitted to the context by Adam ([`mlp`]).
    Mlp,
}

/// The prompts a fitted baseline ([`Estimator::fitted`]) is evaluated on at most: Garg et al.'s
/// `num_eval_examples` (their `src/eval.py`), the first of the prompts every estimator sees.
pub const FIT_PROMPTS: usize = 1280;

impl Estimator {
    /// Whether it fits the context by an optimisation (the Lasso, trees, boosted trees, the
    /// two-layer network): thousands of times a closed form's cost, so a GPT-2 evaluation runs it
    /// on the first [`FIT_PROMPTS`] prompts only.
    pub fn fitted(&self) -> bool {
        matches!(
            self,
            Estimator::Lasso { .. } | Estimator::Tree { .. } | Estimator::Boost | Estimator::Mlp
        )
    }

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
            Estimator::Lstsq => "lstsq".into(),
            Estimator::Knn { k } => format!("knn{k}"),
            Estimator::Averaging => "averaging".into(),
            Estimator::Nw { .. } => "nw".into(),
            Estimator::Reduced { .. } => "reduced".into(),
            Estimator::Lasso { alpha } => format!("lasso_{alpha}"),
            Estimator::Tree { max_depth: Some(k) } => format!("tree_depth{k}"),
            Estimator::Tree { max_depth: None } => "tree".into(),
            Estimator::Boost => "boosted_trees".into(),
            Estimator::Mlp => "relu_net_adam".into(),
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
            Estimator::Zero
            | Estimator::Ols
            | Estimator::Lstsq
            | Estimator::Averaging
            | Estimator::Boost
            | Estimator::Mlp => Ok(()),
            Estimator::Lasso { alpha } => {
                fin("alpha", *alpha)?;
                if *alpha <= 0.0 {
                    return Err(Error::InvalidConfig(
                        "lasso alpha must be > 0 (at 0 it is least squares: lstsq)".into(),
                    ));
                }
                Ok(())
            }
            Estimator::Tree { max_depth } => {
                if *max_depth == Some(0) {
                    return Err(Error::InvalidConfig(
                        "a decision tree needs depth >= 1".into(),
                    ));
                }
                Ok(())
            }
            Estimator::Knn { k } => {
                if *k == 0 {
                    return Err(Error::InvalidConfig(
                        "k nearest neighbours needs k >= 1".into(),
                    ));
                }
                Ok(())
            }
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
        let (lf, nout) = (l as f64, out.len());
        match self {
            Estimator::Zero => out.iter_mut().for_each(|v| *v = 0.0),
            Estimator::VanillaGd { eta } | Estimator::DebiasedGd { eta } => {
                let debias = matches!(self, Estimator::DebiasedGd { .. });
                gd_sum(*eta, debias, &xq, l, d, &x, &y, &mut out[..no.min(nout)]);
            }
            Estimator::PrecondGd {
                eta,
                gamma_inv,
                debiased,
            } => {
                let gq: Vec<f64> = (0..d)
                    .map(|r| (0..d).map(|c| gamma_inv[r * d + c] * xq[c]).sum())
                    .collect();
                gd_sum(*eta, *debiased, &gq, l, d, &x, &y, &mut out[..no.min(nout)]);
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
            Estimator::Lstsq => {
                out.iter_mut().for_each(|v| *v = 0.0);
                if l == 0 {
                    return Ok(());
                }
                // X^+ = V S^+ U^T, singular values below max(L, d) eps s_max dropped (numpy's rcond)
                let xm = DMatrix::from_fn(l, d, x);
                let svd = xm.svd(true, true);
                let (Some(u), Some(vt)) = (svd.u, svd.v_t) else {
                    return Err(Error::Numerical("the SVD of X did not converge".into()));
                };
                let s = &svd.singular_values;
                let cut =
                    s.iter().fold(0.0f64, |a, &b| a.max(b)) * (l.max(d) as f64) * f64::EPSILON;
                // v = V S^+ U^T ... applied as (x_q^T V S^+) (U^T y)
                let xv = vt.clone() * DVector::from_column_slice(&xq);
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    let yv = DVector::from_fn(l, |i, _| y(i, o));
                    let uy = u.transpose() * yv;
                    *v = (0..s.len())
                        .filter(|&j| s[j] > cut)
                        .map(|j| xv[j] * uy[j] / s[j])
                        .sum();
                }
            }
            Estimator::Knn { k } => {
                out.iter_mut().for_each(|v| *v = 0.0);
                if l == 0 {
                    return Ok(());
                }
                let mut by_dist: Vec<(f64, usize)> = (0..l)
                    .map(|i| {
                        (
                            (0..d)
                                .map(|c| (x(i, c) - xq[c]) * (x(i, c) - xq[c]))
                                .sum::<f64>(),
                            i,
                        )
                    })
                    .collect();
                by_dist.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let near = &by_dist[..(*k).min(l)];
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    *v = near.iter().map(|&(_, i)| y(i, o)).sum::<f64>() / near.len() as f64;
                }
            }
            Estimator::Averaging => {
                out.iter_mut().for_each(|v| *v = 0.0);
                if l == 0 {
                    return Ok(());
                }
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    *v = (0..l)
                        .map(|i| y(i, o) * (0..d).map(|c| x(i, c) * xq[c]).sum::<f64>())
                        .sum::<f64>()
                        / lf;
                }
            }
            Estimator::Lasso { .. }
            | Estimator::Tree { .. }
            | Estimator::Boost
            | Estimator::Mlp => {
                out.iter_mut().for_each(|v| *v = 0.0);
                if l == 0 {
                    return Ok(());
                }
                let xs: Vec<f64> = (0..l * d).map(|i| x(i / d, i % d)).collect();
                for (o, v) in out.iter_mut().enumerate().take(no) {
                    let ys: Vec<f64> = (0..l).map(|i| y(i, o)).collect();
                    *v = match self {
                        Estimator::Lasso { alpha } => {
                            let w = lasso::fit(&xs, &ys, l, d, *alpha).ok_or_else(|| {
                                Error::Numerical(format!(
                                    "the Lasso (alpha = {alpha}) did not converge in {} sweeps",
                                    lasso::MAX_SWEEPS
                                ))
                            })?;
                            w.iter().zip(&xq).map(|(a, b)| a * b).sum()
                        }
                        Estimator::Tree { max_depth } => {
                            tree::grow(&xs, &ys, l, d, *max_depth, tree::Rule::Cart).predict(&xq)
                        }
                        Estimator::Mlp => mlp::fit_predict(&xs, &ys, l, d, &xq),
                        _ => tree::boost_predict(&xs, &ys, l, d, &xq),
                    };
                }
            }
            Estimator::Nw { omega, mu } => nw_sum(&[*omega], &[*mu], l, d, &x, &y, &xq, out),
            Estimator::Reduced { omega, mu } => nw_sum(omega, mu, l, d, &x, &y, &xq, out),
        }
        Ok(())
    }
}

/// One gradient step from 0 read along `dir`: `out_o = eta / L sum_l y_lo (x_l - [xbar])^T dir`
/// (`dir` = x_q for vanilla and debiased GD, Gamma^-1 x_q preconditioned).
#[allow(clippy::too_many_arguments)]
fn gd_sum(
    eta: f64,
    debias: bool,
    dir: &[f64],
    l: usize,
    d: usize,
    x: &dyn Fn(usize, usize) -> f64,
    y: &dyn Fn(usize, usize) -> f64,
    out: &mut [f64],
) {
    let lf = l as f64;
    let xbar: Vec<f64> = (0..d)
        .map(|k| (0..l).map(|i| x(i, k)).sum::<f64>() / lf)
        .collect();
    for (o, v) in out.iter_mut().enumerate() {
        let mut acc = 0.0;
        for i in 0..l {
            let dot: f64 = (0..d)
                .map(|k| (x(i, k) - if debias { xbar[k] } else { 0.0 }) * dir[k])
                .sum();
            acc += y(i, o) * dot;
        }
        *v = eta * acc / lf;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-sequence batch of context pairs `(x, y)` and the query `xq` (d = xq.len()).
    fn batch(ctx: &[(&[f64], f64)], xq: &[f64]) -> Batch<f64> {
        let d = xq.len();
        let mut b = Batch::zeros(1, ctx.len(), d, 1);
        for (l, (x, y)) in ctx.iter().enumerate() {
            b.z[l * (d + 1)..l * (d + 1) + d].copy_from_slice(x);
            b.z[l * (d + 1) + d] = *y;
        }
        let q = ctx.len() * (d + 1);
        b.z[q..q + d].copy_from_slice(xq);
        b
    }

    fn pred(e: &Estimator, b: &Batch<f64>) -> f64 {
        let mut out = [f64::NAN];
        e.predict(b, 0, &mut out).unwrap();
        out[0]
    }

    /// Hand-computed minimum-norm solutions: with fewer points than dimensions, w = X^T (X X^T)^-1 y.
    #[test]
    fn lstsq_is_the_minimum_norm_solution() {
        // X = [e1; e2] in R^3: w = (2, 3, 0), x_q = (1, 1, 5) -> 5
        let b = batch(
            &[(&[1.0, 0.0, 0.0], 2.0), (&[0.0, 1.0, 0.0], 3.0)],
            &[1.0, 1.0, 5.0],
        );
        assert!((pred(&Estimator::Lstsq, &b) - 5.0).abs() < 1e-12);
        // one point x = (1, 1), y = 2: w = x y / |x|^2 = (1, 1); x_q = (2, 0) -> 2
        let b = batch(&[(&[1.0, 1.0], 2.0)], &[2.0, 0.0]);
        assert!((pred(&Estimator::Lstsq, &b) - 2.0).abs() < 1e-12);
        // rank-deficient: two equal points, the mean label along x: w = x (2 + 4)/2 / |x|^2
        let b = batch(&[(&[1.0, 1.0], 2.0), (&[1.0, 1.0], 4.0)], &[1.0, 0.0]);
        assert!((pred(&Estimator::Lstsq, &b) - 1.5).abs() < 1e-12);
        // overdetermined and exact: y = 2 x1 - x2
        let b = batch(
            &[(&[1.0, 0.0], 2.0), (&[0.0, 1.0], -1.0), (&[1.0, 1.0], 1.0)],
            &[3.0, 4.0],
        );
        assert!((pred(&Estimator::Lstsq, &b) - 2.0).abs() < 1e-12);
        // no context: 0
        assert_eq!(pred(&Estimator::Lstsq, &batch(&[], &[1.0, 2.0])), 0.0);
    }

    #[test]
    fn knn_averages_the_nearest_labels() {
        let ctx: &[(&[f64], f64)] = &[(&[0.0], 1.0), (&[1.0], 2.0), (&[5.0], 10.0), (&[2.0], 4.0)];
        let k3 = Estimator::Knn { k: 3 };
        // from x_q = 0.9 the nearest are 1, 0, 2: (2 + 1 + 4) / 3
        assert!((pred(&k3, &batch(ctx, &[0.9])) - 7.0 / 3.0).abs() < 1e-12);
        // fewer points than k: all of them
        assert!((pred(&k3, &batch(&ctx[..2], &[9.0])) - 1.5).abs() < 1e-12);
        assert_eq!(pred(&k3, &batch(&[], &[9.0])), 0.0);
        assert!(Estimator::Knn { k: 0 }.validate(1).is_err());
        assert_eq!(k3.name(), "knn3");
    }

    #[test]
    fn averaging_is_the_mean_of_y_x() {
        // (1/2) (2 (1, 0) + 3 (1, 1)) = (2.5, 1.5); x_q = (2, -1) -> 3.5
        let b = batch(&[(&[1.0, 0.0], 2.0), (&[1.0, 1.0], 3.0)], &[2.0, -1.0]);
        assert!((pred(&Estimator::Averaging, &b) - 3.5).abs() < 1e-12);
        assert_eq!(pred(&Estimator::Averaging, &batch(&[], &[1.0])), 0.0);
    }
}
