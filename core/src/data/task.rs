//! Data samplers for in-context linear regression (He et al. 2025 §1, §B.3–B.4).
//!
//! A sequence is embedded as `Z = [z_1 .. z_L z_q]`, columns `z_l = [x_l; y_l]` of length
//! `E = d + n_out`, and the query column `z_q = [x_q; 0]` last. Its target is `y_q` (n_out values).
//!
//! Each sequence draws all its normals in one call to [`crate::rng::fill_normal`] from its own
//! stream, in this order: task vector(s), then the L+1 covariates (query last), then the L+1 noise
//! vectors (query last). Fast engines reproduce this order exactly.
use super::batch::Batch;
use super::covariance::{cholesky, kms};
use super::functions::{self, FunctionClass};
use super::iv::Iv;
use super::regression::{Cov, Regression};
use super::shift::{Factor, Shift};
use crate::config::{Basis, Config, CovFamily, MultiTaskVariant, TaskKind};
use crate::rng::{self, Domain, Law, Rng};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::DMatrix;

/// A data distribution ready to sample (covariance factored once).
#[derive(Debug, Clone)]
pub struct Task {
    pub kind: TaskKind,
    pub d: usize,
    pub n_out: usize,
    pub sigma: f64,
    /// Lower Cholesky factor of Sigma, row-major (anisotropic only).
    chol: Vec<f64>,
    pub supports: Vec<Vec<usize>>,
    pub variant: MultiTaskVariant,
    pub query_noise: bool,
    /// `eigs` task: the eigenvalues as given and the eigenbasis Q (row-major d x d, column i
    /// is the eigenvector of `eigs[i]`); empty otherwise.
    pub eigs: Vec<f64>,
    pub basis: Vec<f64>,
    /// `eigs` task: fraction of sequences with a random task vector, and the fixed w* (norm sqrt(d)).
    pub icl_fraction: f64,
    pub w_star: Vec<f64>,
    /// The multilayer paper's samplers (`varying` and `iv` tasks), `None` otherwise.
    pub ml: Option<MlTask>,
    /// Garg et al.'s function classes (`sparse`, `relu2nn` and `tree` tasks), `None` otherwise.
    pub func: Option<FunctionClass>,
    /// A test-time shift of the task vector and the means ([`Task::shifted`]); the shifted
    /// covariance of x and noise are folded into `chol` / `sigma` (or the `ml` sampler).
    pub shift: Option<Shift>,
    /// The data law of the streams (`task.data_law`).
    pub law: Law,
}

/// A task a device sampler can make ([`Task::plain_gaussian`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlainGaussian<'a> {
    pub d: usize,
    pub n_out: usize,
    /// The task vector's scale (1/sqrt(d), or 1).
    pub scale: f64,
    /// The noise's standard deviation.
    pub sigma: f64,
    /// Whether the query target carries its noise.
    pub query_noise: bool,
    /// The lower triangular factor F of x = F g, row-major d x d; empty for the identity.
    pub factor: &'a [f64],
}

/// A task of the multilayer paper.
#[derive(Debug, Clone, PartialEq)]
pub enum MlTask {
    /// Regression with a covariance per sequence (§1).
    Regression(Regression),
    /// IV regression (§6.1); batches of the task are the one-stage view `[x; y]` ("TF Ref").
    Iv(Iv),
}

/// Which task vector a sequence of the `eigs` task uses (Zhang et al. 2025 App. G).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskVector {
    /// w ~ N(0, I_d) from the sequence's stream.
    Random,
    /// The fixed w*, clean context labels y_l = w*.x_l.
    Fixed,
    /// The fixed w* for the query target, pure-noise context labels y_l ~ N(0, 1) (the reference
    /// code's icl = 0 training set and in-weight test set).
    FixedNoiseContext,
}

/// The eigenbasis of the `eigs` task (row-major d x d, orthonormal columns): the identity, or Q of
/// the QR decomposition of a Gaussian matrix from stream (seed, Task, 0, 0), with the signs of Q's
/// columns chosen so that diag(R) > 0 (Haar distributed).
pub fn eig_basis(d: usize, basis: Basis, seed: u64) -> Vec<f64> {
    let mut q = vec![0.0; d * d];
    match basis {
        Basis::Identity => (0..d).for_each(|i| q[i * d + i] = 1.0),
        Basis::Haar => {
            let mut g = vec![0.0; d * d];
            rng::fill_normal(&mut rng::stream(seed, Domain::Task, 0, 0), &mut g);
            let qr = DMatrix::from_row_slice(d, d, &g).qr();
            let (qm, rm) = (qr.q(), qr.r());
            for j in 0..d {
                let s = if rm[(j, j)] < 0.0 { -1.0 } else { 1.0 };
                for i in 0..d {
                    q[i * d + j] = s * qm[(i, j)];
                }
            }
        }
    }
    q
}

/// The fixed task vector w* of the `eigs` task: N(0, I_d) from stream (seed, Task, 0, 1), rescaled
/// to norm sqrt(d) (reference code).
pub fn fixed_task_vector(d: usize, seed: u64) -> Vec<f64> {
    let mut w = vec![0.0; d];
    rng::fill_normal(&mut rng::stream(seed, Domain::Task, 0, 1), &mut w);
    let n = libm::sqrt(w.iter().map(|x| x * x).sum::<f64>());
    let s = libm::sqrt(d as f64) / n;
    w.iter_mut().for_each(|x| *x *= s);
    w
}

impl Task {
    /// Build the sampler of a validated config.
    pub fn new(cfg: &Config) -> Result<Task> {
        cfg.validate()?;
        let t = &cfg.task;
        let (eigs, basis) = if t.kind == TaskKind::Eigs {
            (t.eigs.clone(), eig_basis(t.d, t.basis, t.basis_seed))
        } else {
            (Vec::new(), Vec::new())
        };
        let chol = match t.kind {
            TaskKind::Eigs => {
                // Lambda = Q diag(eigs) Q^T
                let d = t.d;
                let mut lam = vec![0.0; d * d];
                for i in 0..d {
                    for j in 0..d {
                        lam[i * d + j] = (0..d)
                            .map(|k| basis[i * d + k] * eigs[k] * basis[j * d + k])
                            .sum();
                    }
                }
                for i in 0..d {
                    for j in 0..i {
                        let a = 0.5 * (lam[i * d + j] + lam[j * d + i]);
                        lam[i * d + j] = a;
                        lam[j * d + i] = a;
                    }
                }
                cholesky(d, &lam)?
            }
            TaskKind::Anisotropic => {
                let sigma = if t.cov.is_empty() {
                    kms(t.d, t.rho)
                } else {
                    t.cov.clone()
                };
                cholesky(t.d, &sigma)?
            }
            _ => Vec::new(),
        };
        let query_noise = t.query_noise
            && !(t.kind == TaskKind::MultiTask && t.variant == MultiTaskVariant::Code);
        let ml = match t.kind {
            TaskKind::Varying => Some(MlTask::Regression(Regression {
                d: t.d,
                sigma: libm::sqrt(t.sigma2),
                cov: match t.covariance {
                    CovFamily::Varying => Cov::Varying {
                        lmin: t.lambda_min,
                        lmax: t.lambda_max,
                    },
                    CovFamily::Rotated => Cov::Rotated(t.eigs.clone()),
                    CovFamily::Identity => Cov::Fixed(cholesky(t.d, &kms(t.d, 0.0))?),
                    CovFamily::Kms => Cov::Fixed(cholesky(t.d, &kms(t.d, t.rho))?),
                },
                query_noise: t.query_noise,
                data_law: Law::of(t.data_law),
            })),
            TaskKind::Iv => Some(MlTask::Iv(Iv::of_task(t))),
            _ => None,
        };
        let func = match t.kind {
            TaskKind::Sparse => Some(FunctionClass::Sparse { k: t.sparsity }),
            TaskKind::Relu2nn => Some(FunctionClass::Relu2nn { hidden: t.hidden }),
            TaskKind::Tree => Some(FunctionClass::Tree { depth: t.depth }),
            _ => None,
        };
        Ok(Task {
            kind: t.kind,
            d: t.d,
            n_out: cfg.n_out(),
            sigma: libm::sqrt(t.sigma2),
            chol,
            supports: t.supports.clone(),
            variant: t.variant,
            query_noise,
            w_star: if t.kind == TaskKind::Eigs && t.icl_fraction < 1.0 {
                fixed_task_vector(t.d, t.basis_seed)
            } else {
                Vec::new()
            },
            icl_fraction: t.icl_fraction,
            eigs,
            basis,
            ml,
            func,
            shift: None,
            law: Law::of(t.data_law),
        })
    }

    /// This task under the test-time shift `cfg` (temperature paper §1.3; see [`crate::data::shift`]).
    /// Supported for the isotropic and anisotropic tasks, Garg et al.'s `linear` regression and
    /// the multilayer paper's `varying` regression; an empty shift returns the task unchanged (same samples, bit for bit).
    pub fn shifted(&self, cfg: &crate::config::ShiftConfig) -> Result<Task> {
        let Some(s) = Shift::resolve(cfg, self.d)? else {
            return Ok(self.clone());
        };
        let mut t = self.clone();
        match (&mut t.ml, self.kind) {
            (None, TaskKind::Isotropic | TaskKind::Anisotropic | TaskKind::Linear) => {
                if s.x != Factor::Train {
                    t.chol = s.x.apply_to(self.d, &self.chol);
                }
                if let Some(sig) = s.sigma {
                    t.sigma = sig;
                }
            }
            (Some(MlTask::Regression(r)), _) => {
                r.cov = match (&s.x, &r.cov) {
                    (Factor::Train, c) => c.clone(),
                    (Factor::Scale(f), Cov::Varying { lmin, lmax }) => Cov::Varying {
                        lmin: f * f * lmin,
                        lmax: f * f * lmax,
                    },
                    (Factor::Scale(f), Cov::Rotated(e)) => {
                        Cov::Rotated(e.iter().map(|x| f * f * x).collect())
                    }
                    (Factor::Scale(_), Cov::Fixed(c)) => Cov::Fixed(s.x.apply_to(self.d, c)),
                    (Factor::Chol(l), _) => Cov::Fixed(l.clone()),
                };
                if let Some(sig) = s.sigma {
                    r.sigma = sig;
                }
            }
            _ => {
                return Err(Error::Unsupported(format!(
                    "test-time shifts (shift.*) apply to the isotropic, anisotropic, linear and varying tasks, not task.kind = {}",
                    self.kind.as_str()
                )))
            }
        }
        t.shift = Some(s);
        Ok(t)
    }

    /// Embedding width E = d + n_out.
    pub fn e(&self) -> usize {
        self.d + self.n_out
    }

    /// The covariance Sigma of x (row-major).
    pub fn covariance(&self) -> Vec<f64> {
        let d = self.d;
        if self.chol.is_empty() {
            let mut s = vec![0.0; d * d];
            for i in 0..d {
                s[i * d + i] = 1.0;
            }
            return s;
        }
        let mut s = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                s[i * d + j] = (0..d)
                    .map(|k| self.chol[i * d + k] * self.chol[j * d + k])
                    .sum();
            }
        }
        s
    }

    fn beta_len(&self) -> usize {
        match (self.kind, self.variant) {
            (TaskKind::MultiTask, MultiTaskVariant::Code) => {
                self.supports.iter().map(|s| s.len()).sum()
            }
            _ => self.d,
        }
    }

    /// How many normals one sequence of context length `len` draws.
    pub fn normals_per_sequence(&self, len: usize) -> usize {
        self.beta_len() + (len + 1) * self.d + (len + 1) * self.n_out
    }

    /// Sample one sequence from `rng` into `z` ((len+1) * E values) and `y` (n_out values).
    /// `normals` is scratch space, resized as needed. For the `eigs` task with
    /// `icl_fraction < 1`, one uniform drawn first decides the task vector (fixed w* when
    /// `u >= icl_fraction`).
    pub fn sample_sequence<T: Scalar>(
        &self,
        rng: &mut Rng,
        len: usize,
        normals: &mut Vec<f64>,
        z: &mut [T],
        y: &mut [T],
    ) {
        match &self.ml {
            Some(MlTask::Regression(r)) => {
                return r.sample_shifted(rng, len, normals, z, y, None, self.shift.as_ref())
            }
            Some(MlTask::Iv(iv)) => return iv.one_stage(&iv.draw(rng, len), len, z, y),
            None => {}
        }
        // (function-class tasks have no w*: `sample_sequence_as` draws their function)
        let tv = if self.w_star.is_empty() || rng::uniform(rng) < self.icl_fraction {
            TaskVector::Random
        } else if self.icl_fraction == 0.0 {
            TaskVector::FixedNoiseContext
        } else {
            TaskVector::Fixed
        };
        self.sample_sequence_as(rng, len, normals, z, y, tv, &mut []);
    }

    /// [`Task::sample_sequence`] with the task vector chosen by the caller (`Fixed*` need the
    /// `eigs` task with `icl_fraction < 1`, otherwise they act as `Random`). The task vector used
    /// is written to `w_out` when it has d values (nothing when it is empty).
    #[allow(clippy::too_many_arguments)]
    pub fn sample_sequence_as<T: Scalar>(
        &self,
        rng: &mut Rng,
        len: usize,
        normals: &mut Vec<f64>,
        z: &mut [T],
        y: &mut [T],
        tv: TaskVector,
        w_out: &mut [f64],
    ) {
        if self.func.is_some() {
            let f = self.sample_function(rng, len, self.d, normals, z, y);
            if let (functions::Function::Linear { w }, true) = (&f, w_out.len() == self.d) {
                w_out.copy_from_slice(w);
            }
            return;
        }
        let (d, e, no) = (self.d, self.e(), self.n_out);
        let fixed = tv != TaskVector::Random && self.w_star.len() == d;
        normals.resize(self.normals_per_sequence(len), 0.0);
        rng::fill_normal(rng, normals);
        let nb = self.beta_len();
        let (beta, rest) = normals.split_at_mut(nb);
        let (xs, noise) = rest.split_at_mut((len + 1) * d);
        let paper = !(self.kind == TaskKind::MultiTask && self.variant == MultiTaskVariant::Code);
        if let Some(sh) = &self.shift {
            // the kinds `shifted` accepts: beta ~ N(0, I_d / d) in training, N(0, I_d) for Garg
            // et al.'s linear regression
            let train_scale = if self.kind == TaskKind::Linear {
                1.0
            } else {
                1.0 / libm::sqrt(d as f64)
            };
            sh.map_w(beta, train_scale);
        } else if let Some(s) = self.beta_scale() {
            beta.iter_mut().for_each(|b| *b *= s);
        }
        if fixed {
            beta.copy_from_slice(&self.w_star);
        }
        if w_out.len() == d {
            w_out.copy_from_slice(&beta[..d]);
        }
        let noise_context = fixed && tv == TaskVector::FixedNoiseContext;
        if !self.chol.is_empty() {
            let mut tmp = vec![0.0; d];
            for x in xs.chunks_exact_mut(d) {
                for i in 0..d {
                    tmp[i] = (0..=i).map(|k| self.chol[i * d + k] * x[k]).sum();
                }
                x.copy_from_slice(&tmp);
            }
        }
        if let Some(sh) = &self.shift {
            xs.chunks_exact_mut(d).for_each(|x| sh.add_x_mean(x));
        }
        for l in 0..=len {
            let x = &xs[l * d..(l + 1) * d];
            let tok = &mut z[l * e..(l + 1) * e];
            for i in 0..d {
                tok[i] = T::of(x[i]);
            }
            for o in 0..no {
                let (clean, std) = match self.kind {
                    TaskKind::MultiTask => {
                        let s = &self.supports[o];
                        if paper {
                            (s.iter().map(|&i| beta[i] * x[i]).sum::<f64>(), self.sigma)
                        } else {
                            let off: usize = self.supports[..o].iter().map(|s| s.len()).sum();
                            let b = &beta[off..off + s.len()];
                            let std = libm::sqrt(s.len() as f64) * self.sigma;
                            (s.iter().zip(b).map(|(&i, bi)| bi * x[i]).sum::<f64>(), std)
                        }
                    }
                    _ => ((0..d).map(|i| beta[i] * x[i]).sum::<f64>(), self.sigma),
                };
                let eps = noise[l * no + o] * std;
                if l < len && noise_context {
                    tok[d + o] = T::of(noise[l * no + o]);
                } else if l < len {
                    tok[d + o] = T::of(clean + eps);
                } else {
                    tok[d + o] = T::zero();
                    y[o] = T::of(if self.query_noise { clean + eps } else { clean });
                }
            }
        }
    }

    /// A sequence of the function-class task ([`crate::data::functions`]) with `dt` of the d
    /// coordinates active; the function drawn. Not for other tasks (it samples a sparse
    /// function of one coordinate there).
    pub fn sample_function<T: Scalar>(
        &self,
        rng: &mut Rng,
        len: usize,
        dt: usize,
        normals: &mut Vec<f64>,
        z: &mut [T],
        y: &mut [T],
    ) -> functions::Function {
        let class = self.func.unwrap_or(FunctionClass::Sparse { k: 1 });
        functions::sample_sequence(
            &class,
            rng,
            self.d,
            dt.min(self.d),
            len,
            self.sigma,
            self.query_noise,
            normals,
            z,
            y,
        )
    }

    /// The data stream (seed, domain, step, seq) of this task's law.
    #[inline]
    pub fn stream(&self, seed: u64, domain: Domain, step: u64, seq: u64) -> Rng {
        rng::stream_in(self.law, seed, domain, step, seq)
    }

    /// The lower triangular factor F of x = F g (row-major d x d; the Cholesky factor of the
    /// anisotropic and `eigs` tasks' covariance, with a shift's folded in), empty for x = g.
    pub fn factor(&self) -> &[f64] {
        &self.chol
    }

    /// The scale of the task vector's normals in training without a shift: 1/sqrt(d) for He et
    /// al.'s tasks (isotropic, anisotropic, the multi-task paper generator), none otherwise
    /// (Garg et al.'s linear regression, `eigs`, the multi-task `code` generator).
    pub fn beta_scale(&self) -> Option<f64> {
        let he = match self.kind {
            TaskKind::Isotropic | TaskKind::Anisotropic => true,
            TaskKind::MultiTask => self.variant != MultiTaskVariant::Code,
            _ => false,
        };
        he.then(|| 1.0 / libm::sqrt(self.d as f64))
    }

    /// Whether every sequence is Gaussian regression drawn by one call of normals (task vector,
    /// covariates, noise) and composed by [`Task::sample_sequence_as`] alone: the isotropic,
    /// anisotropic, multi-task, linear and `eigs` tasks without a shift or a fixed task vector.
    /// Fused generators make these tasks' sequences themselves.
    pub fn is_gaussian(&self) -> bool {
        matches!(
            self.kind,
            TaskKind::Isotropic
                | TaskKind::Anisotropic
                | TaskKind::MultiTask
                | TaskKind::Linear
                | TaskKind::Eigs
        ) && self.shift.is_none()
            && self.w_star.is_empty()
            && self.ml.is_none()
            && self.func.is_none()
    }

    /// The task as a device sampler makes it (`gpu-vulkan/shaders/sample.wgsl`), or `None` when
    /// it is not one of these: under data law 2, every sequence's normals drawn in one call
    /// (d task-vector coordinates, (L + 1) d covariates, (L + 1) n_out noises), the task vector
    /// `scale` times its normals, x = F g (F lower triangular, or the identity), every output's
    /// clean label the task vector's sum `sum_i beta_i x_i` in order, the noise `sigma` times its
    /// normal. That is the `isotropic`, `anisotropic`, `linear` and `eigs` (a random task vector
    /// in every sequence) tasks without a shift.
    pub fn plain_gaussian(&self) -> Option<PlainGaussian<'_>> {
        if self.law != Law::V2 || !self.is_gaussian() || self.kind == TaskKind::MultiTask {
            return None;
        }
        Some(PlainGaussian {
            d: self.d,
            n_out: self.n_out,
            scale: self.beta_scale().unwrap_or(1.0),
            sigma: self.sigma,
            query_noise: self.query_noise,
            factor: &self.chol,
        })
    }

    /// Fill `batch` (shape preserved) with the sequences of (seed, domain, step), sequence b from
    /// stream (seed, domain, step, first_seq + b).
    pub fn sample_into<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        first_seq: u64,
        batch: &mut Batch<T>,
        normals: &mut Vec<f64>,
    ) {
        let (len, no) = (batch.len, batch.n_out);
        let w = (len + 1) * batch.e();
        for b in 0..batch.n {
            let mut r = self.stream(seed, domain, step, first_seq + b as u64);
            let (z, y) = (
                &mut batch.z[b * w..(b + 1) * w],
                &mut batch.y[b * no..(b + 1) * no],
            );
            self.sample_sequence(&mut r, len, normals, z, y);
        }
    }

    /// A fresh batch of `n` sequences of context length `len`.
    pub fn sample_batch<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        n: usize,
        len: usize,
    ) -> Batch<T> {
        let mut b = Batch::zeros(n, len, self.d, self.n_out);
        self.sample_into(seed, domain, step, 0, &mut b, &mut Vec::new());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isotropic_moments() {
        // E[y_l^2] = E[(beta.x)^2] + sigma^2 = 1 + 0.1 ; E[x^2] = 1
        let cfg = Config::default();
        let task = Task::new(&cfg).unwrap();
        let b: Batch<f64> = task.sample_batch(3, Domain::Eval, 0, 4000, 10);
        let e = b.e();
        let (mut sy, mut sx, mut n) = (0.0, 0.0, 0.0);
        for s in 0..b.n {
            let q = b.seq(s);
            for l in 0..b.len {
                sy += q[l * e + 5] * q[l * e + 5];
                sx += q[l * e] * q[l * e];
                n += 1.0;
            }
            assert_eq!(q[b.len * e + 5], 0.0);
        }
        // y^2 is a product of correlated normals; sd of the mean with 40k draws (4000 betas) ~0.03
        assert!((sy / n - 1.1).abs() < 0.06, "{}", sy / n);
        assert!((sx / n - 1.0).abs() < 0.03, "{}", sx / n);
    }

    /// Garg et al.'s linear regression under a test-time shift: x_cov = 3 gives E|x|^2 = 3 d and,
    /// with w ~ N(0, I_d) kept (not 1/d as He et al.'s tasks), E[y^2] = E[w^T x x^T w] = 3 d;
    /// shift.w_cov = 4 scales w: E[y^2] = 4 d. Unshifted: d and d.
    #[test]
    fn linear_task_under_a_shift() {
        let mut cfg = crate::presets::preset("garg-linear-tiny").unwrap();
        cfg.set("task.d", "4").unwrap();
        let base = Task::new(&cfg).unwrap();
        let moments = |t: &Task| {
            let b: Batch<f64> = t.sample_batch(5, Domain::Eval, 0, 4000, 10);
            let e = b.e();
            let (mut sy, mut sx, mut n) = (0.0, 0.0, 0.0);
            for s in 0..b.n {
                let q = b.seq(s);
                for l in 0..b.len {
                    sy += q[l * e + 4] * q[l * e + 4];
                    sx += (0..4).map(|i| q[l * e + i] * q[l * e + i]).sum::<f64>();
                    n += 1.0;
                }
            }
            (sx / n, sy / n)
        };
        let shift = |k: &str, v: &str| {
            let mut c = crate::config::ShiftConfig::default();
            c.set(k, v).unwrap();
            base.shifted(&c).unwrap()
        };
        // 4000 task vectors: the mean of y^2 has a relative sd of about sqrt(2 / 4000) * 1.5
        for (t, (x2, y2)) in [
            (base.clone(), (4.0, 4.0)),
            (shift("x_cov", "3"), (12.0, 12.0)),
            (shift("w_cov", "4"), (4.0, 16.0)),
        ] {
            let (mx, my) = moments(&t);
            assert!((mx / x2 - 1.0).abs() < 0.02, "{mx} vs {x2}");
            assert!((my / y2 - 1.0).abs() < 0.1, "{my} vs {y2}");
        }
    }

    /// The temperature paper's eq. (2) with Σx = I (`task.kind = varying`,
    /// `task.covariance = identity`) and Garg et al.'s `linear` task with the same σ² draw the
    /// same batches bit for bit, with and without the Fig. 6 shift Σx = 3I: the fact that lets
    /// `temperature-fig6-gpt2` train on `linear` (which takes the curriculum) and still be eq. (2).
    #[test]
    fn eq2_with_identity_covariance_is_the_linear_task() {
        let mut lin = crate::presets::preset("temperature-fig6-gpt2").unwrap();
        lin.set("task.curriculum", "false").unwrap();
        lin.set("task.d", "6").unwrap();
        let mut var = lin.clone();
        var.set("task.kind", "varying").unwrap();
        var.set("task.covariance", "identity").unwrap();
        assert_eq!(lin.task.kind, TaskKind::Linear);
        let mut shift = crate::config::ShiftConfig::default();
        shift.set("x_cov", "3").unwrap();
        for s in [None, Some(&shift)] {
            let task = |c: &Config| {
                let t = Task::new(c).unwrap();
                s.map_or(t.clone(), |s| t.shifted(s).unwrap())
            };
            for (seed, domain, step) in [(0, Domain::Train, 0), (7, Domain::Eval, 3)] {
                let a: Batch<f64> = task(&lin).sample_batch(seed, domain, step, 16, 9);
                let b: Batch<f64> = task(&var).sample_batch(seed, domain, step, 16, 9);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a.z), bits(&b.z));
                assert_eq!(bits(&a.y), bits(&b.y));
            }
        }
    }

    /// A batch whose element count fits in usize but whose bytes do not (found by the C API
    /// property test: `icl_model_risk` at L = 768614336404564650) is an error naming its memory,
    /// not an overflow panic while the message is written.
    #[test]
    fn try_zeros_refuses_batches_beyond_the_address_space() {
        for (n, len) in [
            (2, 768_614_336_404_564_650usize),
            (1, usize::MAX / 7),
            (usize::MAX / 6, 0),
        ] {
            match Batch::<f64>::try_zeros(n, len, 5, 1) {
                Err(Error::Shape(m)) => {
                    assert!(m.contains("needs") || m.contains("overflows"), "{m}")
                }
                other => panic!("n={n} L={len}: {:?}", other.map(|b| b.z.len())),
            }
        }
    }

    #[test]
    fn kms_cholesky_reproduces_sigma() {
        let mut cfg = Config::default();
        cfg.set("task.kind", "anisotropic").unwrap();
        let task = Task::new(&cfg).unwrap();
        let s = task.covariance();
        let k = kms(5, 0.5);
        for (a, b) in s.iter().zip(&k) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!(cholesky(2, &[1.0, 2.0, 2.0, 1.0]).is_err());
    }
}
