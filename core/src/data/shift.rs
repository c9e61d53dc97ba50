//! Test-time distribution shifts (temperature paper §1.3): the covariance and mean of the inputs x,
//! the covariance and mean of the task vector w, and the label noise, changed at evaluation only.
//! The keys are `shift.*` ([`crate::config::ShiftConfig`], option types in [`crate::config::shift`]); the context length is the test length L'
//! of every evaluation.
//!
//! * A covariance is `c` (c > 0: c times the training covariance), `[a_1, ..., a_d]` (the diagonal
//!   covariance diag(a), a_i > 0, replacing the training one) or `[d*d numbers]` (a full SPD
//!   covariance, row-major, replacing the training one).
//! * A mean is `[m_1, ..., m_d]` or `"Ce<k>"`, C times the k-th basis vector (1-based; the paper's
//!   mu_x = 2e_1 is `2e1`). A bare number is refused: `2e1` would read as 20.
//! * The noise is the standard deviation sigma of the test labels (the query target included).
//!
//! Sampling with a shift draws the same normals from the same streams as without one, then maps
//! them: `x = mu_x + F_x g`, `w = mu_w + F_w g_w`, `y = w^T x + sigma_test eps`, where F is the
//! training factor times sqrt(c), or the Cholesky factor of the given covariance.
use crate::config::shift::{CovShift, MeanShift};
use crate::{Error, Result};
use alloc::format;
use alloc::vec::Vec;

/// How a factor F (x = F g) changes under a shift.
#[derive(Debug, Clone, PartialEq)]
pub enum Factor {
    /// The training factor.
    Train,
    /// sqrt(c) times the training factor.
    Scale(f64),
    /// This lower Cholesky factor (row-major d x d) instead of the training one.
    Chol(Vec<f64>),
}

impl Factor {
    fn of(key: &str, c: &CovShift, d: usize) -> Result<Factor> {
        Ok(match c {
            CovShift::Train => Factor::Train,
            CovShift::Scale(c) => {
                if !(*c > 0.0 && c.is_finite()) {
                    return Err(Error::InvalidConfig(format!("{key} = {c} must be > 0")));
                }
                Factor::Scale(libm::sqrt(*c))
            }
            CovShift::Matrix(m) if m.len() == d => {
                if let Some((i, a)) = m.iter().enumerate().find(|(_, a)| !(**a > 0.0)) {
                    return Err(Error::InvalidConfig(format!(
                        "{key}: diagonal entry {} = {a} must be > 0 (not positive definite)",
                        i + 1
                    )));
                }
                let mut l = alloc::vec![0.0; d * d];
                for i in 0..d {
                    l[i * d + i] = libm::sqrt(m[i]);
                }
                Factor::Chol(l)
            }
            CovShift::Matrix(m) if m.len() == d * d => {
                Factor::Chol(super::covariance::cholesky(d, m).map_err(|e| {
                    Error::InvalidConfig(format!(
                        "{key} is not a symmetric positive definite matrix ({e})"
                    ))
                })?)
            }
            CovShift::Matrix(m) => {
                return Err(Error::InvalidConfig(format!(
                    "{key} has {} entries; d = {d} (a diagonal) or d*d = {} (a matrix) needed",
                    m.len(),
                    d * d
                )))
            }
        })
    }

    /// `f` (row-major d x d lower factor; empty = the identity) after the shift.
    pub fn apply_to(&self, d: usize, f: &[f64]) -> Vec<f64> {
        let base = || -> Vec<f64> {
            if f.is_empty() {
                let mut i = alloc::vec![0.0; d * d];
                (0..d).for_each(|k| i[k * d + k] = 1.0);
                i
            } else {
                f.to_vec()
            }
        };
        match self {
            Factor::Train => f.to_vec(),
            Factor::Scale(s) => base().iter().map(|x| x * s).collect(),
            Factor::Chol(l) => l.clone(),
        }
    }
}

fn mean_of(key: &str, m: &MeanShift, d: usize) -> Result<Vec<f64>> {
    Ok(match m {
        MeanShift::Zero => Vec::new(),
        MeanShift::Basis { c, k } => {
            if *k >= d {
                return Err(Error::InvalidConfig(format!(
                    "{key} = {c}e{}: the basis vector e_{} does not exist for d = {d}",
                    k + 1,
                    k + 1
                )));
            }
            let mut v = alloc::vec![0.0; d];
            v[*k] = *c;
            v
        }
        MeanShift::Vector(v) if v.len() == d => v.clone(),
        MeanShift::Vector(v) => {
            return Err(Error::InvalidConfig(format!(
                "{key} has {} entries; d = {d} needed",
                v.len()
            )))
        }
    })
}

/// A shift resolved for dimension d (what the samplers apply).
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// The factor of x.
    pub x: Factor,
    /// The mean of x (empty: 0).
    pub x_mean: Vec<f64>,
    /// The factor of the task vector w.
    pub w: Factor,
    /// The mean of w (empty: 0).
    pub w_mean: Vec<f64>,
    /// The test noise standard deviation (`None`: the training one).
    pub sigma: Option<f64>,
}

impl Shift {
    /// Resolve the keys for dimension `d`; `None` when nothing is shifted. Errors name the key:
    /// a covariance that is not positive definite, a mean or matrix of the wrong length, a
    /// negative or non-finite noise.
    pub fn resolve(cfg: &crate::config::ShiftConfig, d: usize) -> Result<Option<Shift>> {
        cfg.check()?;
        if cfg.is_empty() {
            return Ok(None);
        }
        if let Some(s) = cfg.noise {
            if !(s >= 0.0 && s.is_finite()) {
                return Err(Error::InvalidConfig(format!(
                    "shift.noise = {s} must be a finite sigma >= 0"
                )));
            }
        }
        Ok(Some(Shift {
            x: Factor::of("shift.x_cov", &cfg.x_cov, d)?,
            x_mean: mean_of("shift.x_mean", &cfg.x_mean, d)?,
            w: Factor::of("shift.w_cov", &cfg.w_cov, d)?,
            w_mean: mean_of("shift.w_mean", &cfg.w_mean, d)?,
            sigma: cfg.noise,
        }))
    }

    /// Map the standard normals `w` drawn for the task vector to the test task vector in place:
    /// `mu_w + F_w g`, where the training factor is `train_scale` I (He et al.: 1/sqrt(d)).
    pub fn map_w(&self, w: &mut [f64], train_scale: f64) {
        let d = w.len();
        match &self.w {
            Factor::Train => w.iter_mut().for_each(|x| *x *= train_scale),
            Factor::Scale(s) => w.iter_mut().for_each(|x| *x *= train_scale * s),
            Factor::Chol(l) => {
                for i in (0..d).rev() {
                    // row i uses g_0..g_i only, so going down from the last row keeps them unread
                    w[i] = (0..=i).map(|k| l[i * d + k] * w[k]).sum();
                }
            }
        }
        for (a, m) in w.iter_mut().zip(&self.w_mean) {
            *a += m;
        }
    }

    /// Add the mean of x to one covariate vector.
    #[inline]
    pub fn add_x_mean(&self, x: &mut [f64]) {
        for (a, m) in x.iter_mut().zip(&self.x_mean) {
            *a += m;
        }
    }
}
