//! In-context IV regression data (multilayer paper eq. (8), §6.1, with Liang et al.'s laws; the
//! query of Algorithm 2). Stage 1 sees `[z; x]` with the query `[z_q; 0]` and target `x_q`; the
//! one-stage "TF Ref" sees `[x; y]` with query `[x_q; 0]`, target `y_q`.
use super::batch::{fill_rows_serial, Batch};
use crate::rng::{self, Domain, Rng};
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

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
    /// another (training fills its batch through the engine, [`crate::families::iv::sample_into`]).
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

/// One IV sequence (eq. 8, Liang et al. 2024 conventions): `z ~ N(0, I_q)`, confounder `u ~ N(0, I_p)`,
/// `x = theta^T z + Phi^T u + omega`, `y = beta^T x + phi^T u + eps`, with theta (q x p) iid N(0,1)
/// rescaled to ||theta||_F = sqrt(q p), Phi iid N(0,1), phi ~ N(0, I_p), beta ~ N(0, I_p/p),
/// omega ~ N(0, I_p), eps ~ N(0, 1). Query: z_q ~ N(0, I_q), noise-free x_q = theta^T z_q, y_q = beta^T x_q.
#[derive(Debug, Clone, PartialEq)]
pub struct IvSequence {
    pub z: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub zq: Vec<f64>,
    pub xq: Vec<f64>,
    pub yq: f64,
    pub beta: Vec<f64>,
    pub theta: Vec<f64>,
}

/// The ideal stage-1 fit of §6.2 (what the stage-1 block is meant to compute): the one-step GD
/// estimate with the leave-one-out inference mask,
/// `xhat_l = 1/L sum_{l' != l} x_l' z_l'^T z_l` for the L context rows (L x p, row-major) and
/// `xhat_q = 1/L sum_l' x_l' z_l'^T z_q` (p).
pub fn iv_ideal_stage1(s: &IvSequence, q: usize, p: usize) -> (Vec<f64>, Vec<f64>) {
    let l = s.y.len();
    // G = 1/L sum_l x_l z_l^T (p x q)
    let mut g = vec![0.0; p * q];
    for t in 0..l {
        for j in 0..p {
            for i in 0..q {
                g[j * q + i] += s.x[t * p + j] * s.z[t * q + i] / l as f64;
            }
        }
    }
    let apply = |zv: &[f64]| -> Vec<f64> {
        (0..p)
            .map(|j| (0..q).map(|i| g[j * q + i] * zv[i]).sum())
            .collect()
    };
    let mut xh = Vec::with_capacity(l * p);
    for t in 0..l {
        let zt = &s.z[t * q..(t + 1) * q];
        let own: f64 = zt.iter().map(|v| v * v).sum::<f64>() / l as f64;
        let full = apply(zt);
        xh.extend((0..p).map(|j| full[j] - own * s.x[t * p + j]));
    }
    (xh, apply(&s.zq))
}

/// Sample an [`IvSequence`] with `l` context rows.
pub fn iv_sequence(rng: &mut Rng, q: usize, p: usize, l: usize) -> IvSequence {
    let mut n = |k: usize| {
        let mut v = vec![0.0; k];
        rng::fill_normal(rng, &mut v);
        v
    };
    let mut theta = n(q * p);
    let fro = libm::sqrt(theta.iter().map(|v| v * v).sum::<f64>());
    theta
        .iter_mut()
        .for_each(|v| *v *= libm::sqrt((q * p) as f64) / fro);
    let phi_m = n(p * p);
    let phi = n(p);
    let beta: Vec<f64> = n(p).iter().map(|v| v / libm::sqrt(p as f64)).collect();
    let z = n(l * q);
    let u = n(l * p);
    let om = n(l * p);
    let eps = n(l);
    let zq = n(q);
    let mut x = vec![0.0; l * p];
    let mut y = vec![0.0; l];
    for t in 0..l {
        for j in 0..p {
            let tz: f64 = (0..q).map(|i| theta[i * p + j] * z[t * q + i]).sum();
            let pu: f64 = (0..p).map(|i| phi_m[i * p + j] * u[t * p + i]).sum();
            x[t * p + j] = tz + pu + om[t * p + j];
        }
        y[t] = (0..p)
            .map(|j| beta[j] * x[t * p + j] + phi[j] * u[t * p + j])
            .sum::<f64>()
            + eps[t];
    }
    let xq: Vec<f64> = (0..p)
        .map(|j| (0..q).map(|i| theta[i * p + j] * zq[i]).sum())
        .collect();
    let yq = (0..p).map(|j| beta[j] * xq[j]).sum();
    IvSequence {
        z,
        x,
        y,
        zq,
        xq,
        yq,
        beta,
        theta,
    }
}
