//! The ridge baselines of the temperature paper's figures (spec §4): the Bayes ridge estimator
//! on a prompt's context, and the Monte Carlo of its test error.
//!
//! `w_hat = (X^T X + Lambda)^{-1} (X^T y + Lambda mu_0)` with `Lambda = sigma_0^2 Sigma_0^{-1}` for
//! a prior `w ~ N(mu_0, Sigma_0)` and noise `sigma_0^2` (eq. 9, its sigma = 0-safe second form),
//! and `yhat = w_hat^T x_l`. X holds the l - 1 context inputs, centred by their own mean
//! ([`Centring::Context`], the figures' baseline: the centred labels then carry no intercept) or
//! not ([`Centring::None`]; with the test prior this is the exact MMSE, the lower bound of spec
//! §10 test 9).
//!
//! Given X, with `K = (X^T X + Lambda)^{-1}` and `t = K x_l`: `w_hat - w = -K Lambda (w - mu_0) +
//! K X^T eps` (centring subtracts the label mean, and the centred columns of X sum to zero, so the
//! noise enters as `X^T eps` either way), hence for `w ~ N(mu_w, Sigma_w)` of the test distribution
//! `E[(y_l - yhat)^2 | X] = (t^T Lambda (mu_w - mu_0))^2 + t^T Lambda Sigma_w Lambda t +
//! sigma^2 t^T X^T X t + sigma^2`. The Monte Carlo averages this over X (prompt i from
//! [`super::mc::Sampler`], so the ridge sees the layer's prompts).
use super::mc::{mean_cov, Sampler};
use super::{mat, Gaussian};
use crate::{Error, Result};
use alloc::format;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

/// How the ridge centres the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Centring {
    /// Subtract the context's own mean from the l - 1 inputs and labels (spec §4, recommended).
    Context,
    /// Use the raw inputs (with the test prior: the exact MMSE given known mu_x).
    None,
}

/// Monte Carlo test error of ridge with `prior` (its mu_w, Sigma_w and sigma^2) on prompts of `l`
/// tokens from `test`: `(mean, standard error)` over `n` prompts.
pub fn error(
    prior: &Gaussian,
    test: &Gaussian,
    l: usize,
    centring: Centring,
    n: usize,
    seed: u64,
) -> Result<(f64, f64)> {
    prior.validate()?;
    test.validate()?;
    let d = test.d;
    if prior.d != d {
        return Err(Error::Shape(format!(
            "prior for d = {}, test distribution for d = {d}",
            prior.d
        )));
    }
    if l < 2 || n < 2 {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2 tokens and n >= 2 prompts (l = {l}, n = {n})"
        )));
    }
    let lam = mat(d, &prior.sigma_w)
        .try_inverse()
        .ok_or_else(|| Error::Numerical("the prior's Sigma_w is singular".into()))?
        * prior.sigma2;
    let dmu = DVector::from_column_slice(&test.mu_w) - DVector::from_column_slice(&prior.mu_w);
    let lam_dmu = &lam * dmu;
    let lsl = &lam * mat(d, &test.sigma_w) * &lam;
    let nc = l - 1;
    let mut smp = Sampler::new(test, l)?;
    let mut rows: Vec<[f64; 1]> = Vec::with_capacity(n);
    for i in 0..n {
        smp.draw(seed, i);
        let mut xc = DMatrix::from_row_slice(nc, d, &smp.x[..nc * d]);
        if centring == Centring::Context {
            for j in 0..d {
                let m = xc.column(j).sum() / nc as f64;
                xc.column_mut(j).add_scalar_mut(-m);
            }
        }
        let xtx = xc.transpose() * &xc;
        let k = (&xtx + &lam).cholesky().ok_or_else(|| {
            Error::Numerical(
                "X^T X + sigma_0^2 Sigma_0^-1 is singular (noise-free ridge needs l - 1 > d)"
                    .into(),
            )
        })?;
        let t = k.solve(&DVector::from_column_slice(&smp.x[nc * d..]));
        let bias = t.dot(&lam_dmu);
        let e = bias * bias + t.dot(&(&lsl * &t)) + test.sigma2 * t.dot(&(&xtx * &t)) + test.sigma2;
        rows.push([e]);
    }
    let (m, c) = mean_cov(&rows);
    Ok((m[0], libm::sqrt(c[0][0].max(0.0))))
}

/// The ridge prediction `w_hat^T x_l` on one prompt (`x`: l rows, query last; `y`: l - 1 labels).
pub fn predict(prior: &Gaussian, x: &[f64], y: &[f64], centring: Centring) -> Result<f64> {
    let d = prior.d;
    let nc = y.len();
    if x.len() != (nc + 1) * d || nc == 0 {
        return Err(Error::Shape(format!(
            "x needs (labels + 1) * d = {} entries",
            (nc + 1) * d
        )));
    }
    let mut xc = DMatrix::from_row_slice(nc, d, &x[..nc * d]);
    let mut yc = DVector::from_column_slice(y);
    if centring == Centring::Context {
        for j in 0..d {
            let m = xc.column(j).sum() / nc as f64;
            xc.column_mut(j).add_scalar_mut(-m);
        }
        let m = yc.sum() / nc as f64;
        yc.add_scalar_mut(-m);
    }
    let lam = mat(d, &prior.sigma_w)
        .try_inverse()
        .ok_or_else(|| Error::Numerical("the prior's Sigma_w is singular".into()))?
        * prior.sigma2;
    let rhs = xc.transpose() * yc + &lam * DVector::from_column_slice(&prior.mu_w);
    let w = (xc.transpose() * &xc + lam)
        .cholesky()
        .ok_or_else(|| Error::Numerical("X^T X + sigma_0^2 Sigma_0^-1 is singular".into()))?
        .solve(&rhs);
    Ok(w.dot(&DVector::from_column_slice(&x[nc * d..])))
}
