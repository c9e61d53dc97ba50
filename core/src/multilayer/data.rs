//! Samplers of the multilayer paper, writing icl's token-major batches.
//!
//! * Regression with a covariance resampled per sequence (§1): `U` Haar, `lambda_i ~ U(lmin, lmax)`
//!   (or fixed eigenvalues under a random rotation, C.5), `Sigma = U diag(lambda) U^T`,
//!   `beta ~ N(0, I_d)` (not normalised), `x = U diag(sqrt lambda) g`, `y = beta^T x + eps`; or a
//!   constant Sigma (I, KMS; C.3). Per sequence the stream gives, in order: d^2 normals for U, d
//!   uniforms for lambda (varying only), then d + (L+1) d + (L+1) normals for beta, the
//!   covariates (query last) and the noise (query last).
//! * IV regression (eq. (8), §6.1 with Liang et al.'s laws; query of Algorithm 2): see
//!   [`crate::theory::multilayer::iv_sequence`]. Stage 1 sees `[z; x]` with the query `[z_q; 0]`
//!   and target `x_q`; the one-stage "TF Ref" sees `[x; y]` with query `[x_q; 0]`, target `y_q`.
use super::engine::fill_rows_serial;
use crate::rng::{self, Domain, Rng};
use crate::shift::Shift;
use crate::task::Batch;
use crate::theory::multilayer::{haar_orthogonal, iv_sequence, IvSequence};
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// The covariance of one regression sequence.
#[derive(Debug, Clone, PartialEq)]
pub enum Cov {
    /// `U diag(lambda) U^T`, U Haar and `lambda_i ~ U(lmin, lmax)` per sequence.
    Varying { lmin: f64, lmax: f64 },
    /// `U diag(eigs) U^T` with U Haar per sequence (C.5's fixed eigenvalues).
    Rotated(Vec<f64>),
    /// A constant covariance, by its lower Cholesky factor (row-major d x d).
    Fixed(Vec<f64>),
}

/// A regression task of the multilayer paper.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    pub d: usize,
    /// Noise standard deviation sigma.
    pub sigma: f64,
    pub cov: Cov,
    /// Whether the query target carries noise (training); evaluation uses the noise-free target.
    pub query_noise: bool,
}

/// What a sampled sequence was drawn with (for theory and tests).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawn {
    pub beta: Vec<f64>,
    /// Sigma, row-major d x d.
    pub sigma: Vec<f64>,
    /// The noise-free query target beta^T x_q.
    pub clean: f64,
}

impl Regression {
    /// Sample one sequence of context length `len` into `z` ((len+1)(d+1) values) and `y` (1 value).
    pub fn sample<T: Scalar>(
        &self,
        rng: &mut Rng,
        len: usize,
        normals: &mut Vec<f64>,
        z: &mut [T],
        y: &mut [T],
        drawn: Option<&mut Drawn>,
    ) {
        self.sample_shifted(rng, len, normals, z, y, drawn, None)
    }

    /// [`Regression::sample`] with the task vector and the means of a test-time shift (its
    /// covariance and noise are already in `self`, see [`crate::task::Task::shifted`]).
    #[allow(clippy::too_many_arguments)]
    pub fn sample_shifted<T: Scalar>(
        &self,
        rng: &mut Rng,
        len: usize,
        normals: &mut Vec<f64>,
        z: &mut [T],
        y: &mut [T],
        drawn: Option<&mut Drawn>,
        shift: Option<&Shift>,
    ) {
        let d = self.d;
        // the factor F with x = F g: U diag(sqrt lambda), or the Cholesky factor
        let (f, lam, u) = match &self.cov {
            Cov::Varying { lmin, lmax } => {
                let u = haar_orthogonal(rng, d);
                let lam: Vec<f64> = (0..d)
                    .map(|_| lmin + (lmax - lmin) * rng::uniform(rng))
                    .collect();
                (rotated_factor(&u, &lam, d), lam, u)
            }
            Cov::Rotated(eigs) => {
                let u = haar_orthogonal(rng, d);
                (rotated_factor(&u, eigs, d), eigs.clone(), u)
            }
            Cov::Fixed(chol) => (chol.clone(), Vec::new(), Vec::new()),
        };
        normals.resize(d + (len + 1) * (d + 1), 0.0);
        rng::fill_normal(rng, normals);
        let (beta, rest) = normals.split_at_mut(d);
        if let Some(s) = shift {
            // beta ~ N(0, I_d) in training
            s.map_w(beta, 1.0);
        }
        let (beta, rest) = (&*beta, &*rest);
        let (g, noise) = rest.split_at((len + 1) * d);
        let e = d + 1;
        let mut clean = 0.0;
        for l in 0..=len {
            let gl = &g[l * d..(l + 1) * d];
            let tok = &mut z[l * e..(l + 1) * e];
            let mut yv = 0.0;
            for i in 0..d {
                let mut x: f64 = (0..d).map(|k| f[i * d + k] * gl[k]).sum();
                if let Some(m) = shift.and_then(|s| s.x_mean.get(i)) {
                    x += m;
                }
                tok[i] = T::of(x);
                yv += beta[i] * x;
            }
            let eps = self.sigma * noise[l];
            if l < len {
                tok[d] = T::of(yv + eps);
            } else {
                tok[d] = T::zero();
                clean = yv;
                y[0] = T::of(if self.query_noise { yv + eps } else { yv });
            }
        }
        if let Some(out) = drawn {
            out.beta = beta.to_vec();
            out.clean = clean;
            out.sigma = if u.is_empty() {
                (0..d * d)
                    .map(|k| {
                        (0..d)
                            .map(|m| f[(k / d) * d + m] * f[(k % d) * d + m])
                            .sum()
                    })
                    .collect()
            } else {
                (0..d * d)
                    .map(|k| {
                        (0..d)
                            .map(|m| u[(k / d) * d + m] * lam[m] * u[(k % d) * d + m])
                            .sum()
                    })
                    .collect()
            };
        }
    }

    /// Fill `batch` with the sequences of (seed, domain, step), sequence b from stream
    /// (seed, domain, step, first + b).
    pub fn sample_into<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        first: u64,
        batch: &mut Batch<T>,
        normals: &mut Vec<f64>,
    ) {
        for b in 0..batch.n {
            let mut r = rng::stream(seed, domain, step, first + b as u64);
            let w = (batch.len + 1) * batch.e();
            let (z, y) = (&mut batch.z[b * w..(b + 1) * w], &mut batch.y[b..b + 1]);
            self.sample(&mut r, batch.len, normals, z, y, None);
        }
    }
}

/// `U diag(sqrt lambda)`, row-major.
fn rotated_factor(u: &[f64], lam: &[f64], d: usize) -> Vec<f64> {
    let mut f = vec![0.0; d * d];
    for i in 0..d {
        for k in 0..d {
            f[i * d + k] = u[i * d + k] * libm::sqrt(lam[k]);
        }
    }
    f
}

/// IV dimensions: q instruments, p endogenous regressors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iv {
    pub q: usize,
    pub p: usize,
}

/// A batch of IV sequences in the two views the models need.
#[derive(Debug, Clone, PartialEq)]
pub struct IvBatch<T> {
    /// Stage 1: tokens `[z_l; x_l]`, query `[z_q; 0]`, target `x_q` (n_out = p).
    pub st1: Batch<T>,
    /// The context labels y (n x L).
    pub y: Vec<T>,
    /// The noise-free query targets `y_q = beta^T x_q` (n).
    pub yq: Vec<T>,
}

impl Iv {
    /// Stage-1 view of one sequence into `z` ((L+1)(q+p)) and `t` (p).
    pub fn stage1<T: Scalar>(&self, s: &IvSequence, len: usize, z: &mut [T], t: &mut [T]) {
        let (q, p) = (self.q, self.p);
        let e = q + p;
        for l in 0..=len {
            let tok = &mut z[l * e..(l + 1) * e];
            for i in 0..q {
                tok[i] = T::of(if l < len { s.z[l * q + i] } else { s.zq[i] });
            }
            for j in 0..p {
                tok[q + j] = if l < len {
                    T::of(s.x[l * p + j])
                } else {
                    T::zero()
                };
            }
        }
        for j in 0..p {
            t[j] = T::of(s.xq[j]);
        }
    }

    /// The one-stage view ("TF Ref") into `z` ((L+1)(p+1)) and `y` (1): `[x; y]`, query `[x_q; 0]`,
    /// target the noise-free `y_q`.
    pub fn one_stage<T: Scalar>(&self, s: &IvSequence, len: usize, z: &mut [T], y: &mut [T]) {
        let p = self.p;
        let e = p + 1;
        for l in 0..=len {
            let tok = &mut z[l * e..(l + 1) * e];
            for j in 0..p {
                tok[j] = T::of(if l < len { s.x[l * p + j] } else { s.xq[j] });
            }
            tok[p] = if l < len { T::of(s.y[l]) } else { T::zero() };
        }
        y[0] = T::of(s.yq);
    }

    /// One sequence from `rng`.
    pub fn draw(&self, rng: &mut Rng, len: usize) -> IvSequence {
        iv_sequence(rng, self.q, self.p, len)
    }

    /// Sequence b of (seed, domain, step, first + b) into its blocks of the four buffers of an
    /// [`IvBatch`]: stage-1 tokens ((L+1)(q+p)), stage-1 target (p), labels (L), `y_q` (1).
    #[allow(clippy::too_many_arguments)]
    pub fn write_sequence<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        b: u64,
        len: usize,
        rows: &mut [&mut [T]],
    ) {
        let s = self.draw(&mut rng::stream(seed, domain, step, b), len);
        if let [z, t, y, yq] = rows {
            self.stage1(&s, len, z, t);
            for (v, &x) in y.iter_mut().zip(&s.y) {
                *v = T::of(x);
            }
            yq[0] = T::of(s.yq);
        }
    }

    /// A batch of both-stage views from (seed, domain, step, first + b), one sequence after
    /// another (training fills its batch through the engine, [`crate::multilayer::iv::sample_into`]).
    pub fn sample_batch<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        first: u64,
        n: usize,
        len: usize,
    ) -> Result<IvBatch<T>> {
        let mut out = IvBatch::try_zeros(*self, n, len)?;
        fill_rows_serial(n, &mut out.rows(), &|b, rows, _| {
            self.write_sequence(seed, domain, step, first + b as u64, len, rows)
        });
        Ok(out)
    }
}

impl<T: Scalar> IvBatch<T> {
    /// An all-zero batch of `n` sequences of length `len`.
    pub fn try_zeros(iv: Iv, n: usize, len: usize) -> Result<Self> {
        Ok(IvBatch {
            st1: Batch::try_zeros(n, len, iv.q, iv.p)?,
            y: vec![T::zero(); n * len],
            yq: vec![T::zero(); n],
        })
    }
    /// The four buffers [`Iv::write_sequence`] fills, in its order.
    pub fn rows(&mut self) -> [&mut [T]; 4] {
        [
            &mut self.st1.z[..],
            &mut self.st1.y[..],
            &mut self.y[..],
            &mut self.yq[..],
        ]
    }
}
