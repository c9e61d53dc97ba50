//! The multilayer paper's regression sampler (§1), writing icl's token-major batches.
//!
//! * Regression with a covariance resampled per sequence (§1): `U` Haar, `lambda_i ~ U(lmin, lmax)`
//!   (or fixed eigenvalues under a random rotation, C.5), `Sigma = U diag(lambda) U^T`,
//!   `beta ~ N(0, I_d)` (not normalised), `x = U diag(sqrt lambda) g`, `y = beta^T x + eps`; or a
//!   constant Sigma (I, KMS; C.3). Per sequence the stream gives, in order: d^2 normals for U, d
//!   uniforms for lambda (varying only), then d + (L+1) d + (L+1) normals for beta, the
//!   covariates (query last) and the noise (query last).
use super::batch::Batch;
use super::covariance::haar_orthogonal;
use super::shift::Shift;
use crate::rng::{self, Domain, Rng};
use crate::Scalar;
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
    /// The data law of the streams.
    pub data_law: crate::rng::Law,
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
    /// covariance and noise are already in `self`, see [`crate::data::Task::shifted`]).
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
            let mut r = rng::stream_in(self.data_law, seed, domain, step, first + b as u64);
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

/// One varying-covariance regression sequence (§3.1, §4.1).
#[derive(Debug, Clone, PartialEq)]
pub struct Sequence {
    /// Context covariates, L x d row-major.
    pub x: Vec<f64>,
    /// Context labels y = beta^T x + eps.
    pub y: Vec<f64>,
    pub xq: Vec<f64>,
    /// Noise-free target beta^T x_q (add sigma^2 to a risk for the noisy target).
    pub yq: f64,
    pub beta: Vec<f64>,
    /// Sigma = U diag(lambda) U^T, row-major.
    pub sigma: Vec<f64>,
}

/// Sample `U` Haar, `lambda_i ~ U(lmin, lmax)`, `beta ~ N(0, I_d)`, `x = U diag(sqrt lambda) g`,
/// `y = beta^T x + eps` with eps ~ N(0, sigma^2); the query from the same N(0, Sigma).
pub fn varying_cov_sequence(
    rng: &mut Rng,
    d: usize,
    l: usize,
    sigma2: f64,
    lmin: f64,
    lmax: f64,
) -> Sequence {
    let u = haar_orthogonal(rng, d);
    let lam: Vec<f64> = (0..d)
        .map(|_| lmin + (lmax - lmin) * rng::uniform(rng))
        .collect();
    let mut g = vec![0.0; d + (l + 1) * d + l];
    rng::fill_normal(rng, &mut g);
    let beta = g[..d].to_vec();
    let mut xs = vec![0.0; (l + 1) * d];
    for t in 0..=l {
        let gt = &g[d + t * d..d + (t + 1) * d];
        for i in 0..d {
            xs[t * d + i] = (0..d)
                .map(|k| u[i * d + k] * libm::sqrt(lam[k]) * gt[k])
                .sum();
        }
    }
    let s = libm::sqrt(sigma2);
    let y: Vec<f64> = (0..l)
        .map(|t| (0..d).map(|i| beta[i] * xs[t * d + i]).sum::<f64>() + s * g[d + (l + 1) * d + t])
        .collect();
    let xq = xs[l * d..].to_vec();
    let yq = (0..d).map(|i| beta[i] * xq[i]).sum();
    let sigma = (0..d * d)
        .map(|k| {
            (0..d)
                .map(|m| u[(k / d) * d + m] * lam[m] * u[(k % d) * d + m])
                .sum()
        })
        .collect();
    xs.truncate(l * d);
    Sequence {
        x: xs,
        y,
        xq,
        yq,
        beta,
        sigma,
    }
}
