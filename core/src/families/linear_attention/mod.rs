//! Training dynamics of linear attention (Zhang, Singh, Latham & Saxe 2025): merged (ATTN_M) and
//! separate rank-R (ATTN_S) key/query, saddle-to-saddle plateaus and principal component
//! regression (spec `zhang2025-linear-attention-dynamics.md`).
//!
//! The models themselves are ordinary [`crate::model`] parametrisations (`merged`,
//! `merged_reduced`, `separate`, `separate_reduced`, linear or softmax attention); this module holds
//! what the paper's protocol adds on top:
//!
//! * [`moments`]: the sufficient-statistics objective of any linear-attention model on a fixed set
//!   (exact: the prediction is linear in the features `S z_q^T / L_0`), whose cost per step does not
//!   depend on P;
//! * [`mlp`]: the two-layer network on the cubic feature `z = vec(beta x_q^T)`, ATTN_M's twin (eqs. 6-7);
//! * [`metrics`]: effective matrix M, plateau and drop detection, PCR distance, alignment of the
//!   keys with the eigenvectors, conservation-law residuals;
//!
//! Training itself is the one trainer's ([`crate::train`]): full-batch gradient descent on the
//! fixed set (the paper's protocol) or fresh data every step.
pub mod metrics;
pub mod mlp;
pub mod moments;
pub mod objective;
pub mod probe;

pub use metrics::{detect_plateaus, Plateau};

use crate::config::{Config, LinNorm};
use crate::data::Task;
use crate::theory::zhang2025::{mean_inv_uniform, plateau_losses_inv_n};
use alloc::vec::Vec;

/// What the theory says about a run of the `eigs` task: the spectrum, 1/N (or E(1/N) under
/// next-token prediction), the factor N / L_0 that takes the model's M to the paper's 1/N
/// convention, and the plateau levels L(M_0) > .. > L(M_D) (eqs. 19, 26).
#[derive(Debug, Clone, PartialEq)]
pub struct LinattnTheory {
    pub spectrum: Spectrum,
    pub inv_n: f64,
    pub m_factor: f64,
    pub levels: Vec<f64>,
}

impl LinattnTheory {
    /// For a run of `cfg` on `task`.
    pub fn of(cfg: &Config, task: &Task) -> Self {
        let n = cfg.task.len;
        let inv_n = if cfg.task.ntp {
            mean_inv_uniform(n)
        } else {
            1.0 / n as f64
        };
        let m_factor = match cfg.model.lin_norm {
            LinNorm::Value(x) => n as f64 / x,
            _ => 1.0,
        };
        let spectrum = Spectrum::of(task);
        let levels = plateau_losses_inv_n(&spectrum.lambda, inv_n);
        LinattnTheory {
            spectrum,
            inv_n,
            m_factor,
            levels,
        }
    }
}

/// Eigenpairs of the covariance in decreasing order of eigenvalue.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    /// lambda_1 >= .. >= lambda_D.
    pub lambda: Vec<f64>,
    /// e_d (unit vectors, d values each), same order.
    pub vectors: Vec<Vec<f64>>,
}

impl Spectrum {
    /// The spectrum of an `eigs` task (identity with unit eigenvalues for other tasks).
    pub fn of(task: &Task) -> Spectrum {
        let d = task.d;
        let (eigs, basis) = if task.eigs.len() == d {
            (task.eigs.clone(), task.basis.clone())
        } else {
            let mut q = alloc::vec![0.0; d * d];
            (0..d).for_each(|i| q[i * d + i] = 1.0);
            (alloc::vec![1.0; d], q)
        };
        let mut idx: Vec<usize> = (0..d).collect();
        idx.sort_by(|&a, &b| {
            eigs[b]
                .partial_cmp(&eigs[a])
                .unwrap_or(core::cmp::Ordering::Equal)
        });
        Spectrum {
            lambda: idx.iter().map(|&i| eigs[i]).collect(),
            vectors: idx
                .iter()
                .map(|&i| (0..d).map(|r| basis[r * d + i]).collect())
                .collect(),
        }
    }

    /// Dimension D.
    pub fn d(&self) -> usize {
        self.lambda.len()
    }

    /// Principal component regression with m components (§3.4, eq. 22):
    /// `M_m = sum_{d<=m} lambda_d / a_d e_d e_d^T`, `a_d = lambda_d^2 + inv_n (lambda_d + tr) lambda_d`
    /// (row-major D x D). `inv_n` is 1/N, or E(1/N) for next-token prediction.
    pub fn pcr_matrix(&self, m: usize, inv_n: f64) -> Vec<f64> {
        let d = self.d();
        let tr: f64 = self.lambda.iter().sum();
        let mut out = alloc::vec![0.0; d * d];
        for k in 0..m.min(d) {
            let l = self.lambda[k];
            let c = l / (l * l + inv_n * (l + tr) * l);
            let e = &self.vectors[k];
            for i in 0..d {
                for j in 0..d {
                    out[i * d + j] += c * e[i] * e[j];
                }
            }
        }
        out
    }
}
