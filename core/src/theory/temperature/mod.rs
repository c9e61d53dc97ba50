//! "Optimal Attention Temperature Enhances In-Context Learning Under Distribution Shift"
//! (anonymous ICLR submission; spec `temperature-distribution-shift.md`).
//!
//! A one-layer linearized-softmax attention with temperature tau, its parameters set in closed form
//! to imitate Bayes ridge at tau = 1 (Lemma 4.1), and the closed-form test error
//! `G(tau) = a/tau^2 - b/tau + c` under arbitrary Gaussian train/test distributions (Theorem 4.6),
//! minimised at `tau_opt = 2a/b` (Theorem 4.7). The corrected formulas of the spec's errata are used
//! (B = Sigma_w + mu_w mu_w^T; the sign of (96); the v22 factor of (132)–(135)).
//!
//! Prompts have l tokens: l - 1 context pairs and the query (token l); errors include the query noise.
//!
//! * this file: the paper's form (Lemma 4.1, Theorems 4.6–4.7, the isotropic reduction, the
//!   heuristic) and the layer's exact prediction;
//! * [`exact`]: the exact finite-size a, b, c of the same layer (no large-d or large-l step);
//! * [`mc`]: Monte Carlo of the layer's test error (plain and conditional, with standard errors);
//! * [`linear`]: linear attention (eq. 6) with the same parameters, the Fig. 4 contrast;
//! * [`ridge`]: the Bayes ridge baselines (spec §4) and their Monte Carlo error;
//! * [`fit`]: pretraining the layer by gradient descent instead of Lemma 4.1.
pub mod exact;
pub mod fit;
pub mod linear;
pub mod mc;
mod moments;
pub mod ridge;
pub mod trained;

use crate::rng::{self, Domain};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

/// A Gaussian data distribution: `x ~ N(mu_x, Sigma_x)`, `w ~ N(mu_w, Sigma_w)`, noise variance sigma^2
/// (matrices row-major d x d).
#[derive(Debug, Clone, PartialEq)]
pub struct Gaussian {
    pub d: usize,
    pub mu_x: Vec<f64>,
    pub sigma_x: Vec<f64>,
    pub mu_w: Vec<f64>,
    pub sigma_w: Vec<f64>,
    pub sigma2: f64,
}

fn eye(d: usize, c: f64) -> Vec<f64> {
    (0..d * d)
        .map(|k| if k / d == k % d { c } else { 0.0 })
        .collect()
}

pub(crate) fn mat(d: usize, v: &[f64]) -> DMatrix<f64> {
    DMatrix::from_row_slice(d, d, v)
}

pub(crate) fn rows(m: &DMatrix<f64>) -> Vec<f64> {
    let (r, c) = m.shape();
    (0..r * c).map(|k| m[(k / c, k % c)]).collect()
}

impl Gaussian {
    /// Centred isotropic distribution: Sigma_x = alpha I, Sigma_w = beta I, noise sigma^2.
    pub fn isotropic(d: usize, alpha: f64, beta: f64, sigma2: f64) -> Gaussian {
        Gaussian {
            d,
            mu_x: vec![0.0; d],
            sigma_x: eye(d, alpha),
            mu_w: vec![0.0; d],
            sigma_w: eye(d, beta),
            sigma2,
        }
    }

    /// Check shapes, finiteness, symmetry and positive definiteness.
    pub fn validate(&self) -> Result<()> {
        let d = self.d;
        if d == 0 {
            return Err(Error::InvalidConfig("d must be >= 1".into()));
        }
        for (what, v, n) in [
            ("mu_x", &self.mu_x, d),
            ("mu_w", &self.mu_w, d),
            ("Sigma_x", &self.sigma_x, d * d),
            ("Sigma_w", &self.sigma_w, d * d),
        ] {
            if v.len() != n {
                return Err(Error::Shape(format!(
                    "{what} needs {n} entries (got {})",
                    v.len()
                )));
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(Error::NonFinite(what.into()));
            }
        }
        for (what, v) in [("Sigma_x", &self.sigma_x), ("Sigma_w", &self.sigma_w)] {
            let m = mat(d, v);
            if (&m - m.transpose()).amax() > 1e-10 * (1.0 + m.amax()) || m.cholesky().is_none() {
                return Err(Error::InvalidConfig(format!(
                    "{what} must be symmetric positive definite"
                )));
            }
        }
        if !(self.sigma2 >= 0.0 && self.sigma2.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "sigma^2 must be finite and >= 0 (got {})",
                self.sigma2
            )));
        }
        Ok(())
    }
}

/// Parameters of the reparametrised layer (eq. 7): only M11 (d x d), m21, v21 (d) and v22 affect
/// yhat; and which tokens are the keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub d: usize,
    pub m11: Vec<f64>,
    pub m21: Vec<f64>,
    pub v21: Vec<f64>,
    pub v22: f64,
    /// Whether the query is one of the keys (attends to itself). The paper's layer (eq. 5) has
    /// all l tokens as keys (`true`): its statistics divide by l and include the query. icl's
    /// softmax runs default to `false` (`model.self_attend`): the keys are the l - 1 context
    /// tokens, and the statistics are theirs, divided by l - 1 ([`trained`]).
    pub self_attend: bool,
}

impl Params {
    /// The number of keys on prompts of l tokens: l, or l - 1 without the query.
    pub fn keys(&self, l: usize) -> usize {
        if self.self_attend {
            l
        } else {
            l - 1
        }
    }
}

/// Lemma 4.1 (eq. 11) in its population form (X^T X/(ml) replaced by Sigma_x^tr):
/// `M11 = d (Sigma_x + sigma^2/l Sigma_w^{-1})^{-1}`, `m21 = 0`,
/// `v21 = sigma^2/(d l) Sigma_x^{-1} Sigma_w^{-1} mu_w`, `v22 = 1/d` (all train quantities).
pub fn lemma41(train: &Gaussian, l: usize) -> Result<Params> {
    lemma41_with_cov(train, l, &train.sigma_x)
}

/// Lemma 4.1 with an explicit estimate `xx` of `X^T X/(m l)` (e.g. the average per-prompt centred
/// covariance of m pretraining prompts, whose expectation is (l-1)/l Sigma_x).
pub fn lemma41_with_cov(train: &Gaussian, l: usize, xx: &[f64]) -> Result<Params> {
    train.validate()?;
    let d = train.d;
    if l < 2 {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2 tokens (got {l})"
        )));
    }
    if xx.len() != d * d {
        return Err(Error::Shape(format!("X^T X/(ml) needs {} entries", d * d)));
    }
    let lf = l as f64;
    let df = d as f64;
    let swi = mat(d, &train.sigma_w)
        .try_inverse()
        .ok_or_else(|| Error::Numerical("Sigma_w is singular".into()))?;
    let xxm = mat(d, xx);
    let inner = &xxm + &swi * (train.sigma2 / lf);
    let m11 = inner
        .try_inverse()
        .ok_or_else(|| Error::Numerical("X^T X/(ml) + sigma^2/l Sigma_w^-1 is singular".into()))?
        * df;
    let xxi = xxm
        .try_inverse()
        .ok_or_else(|| Error::Numerical("X^T X/(ml) is singular".into()))?;
    let v21 = xxi * &swi * DVector::from_column_slice(&train.mu_w) * (train.sigma2 / (df * lf));
    Ok(Params {
        d,
        m11: rows(&m11),
        m21: vec![0.0; d],
        v21: v21.iter().copied().collect(),
        v22: 1.0 / df,
        self_attend: true,
    })
}

/// Finite-m estimate of `X^T X/(m l)` for Lemma 4.1 (App. F eq. 57, per-prompt centring): the average
/// over m pretraining prompts of `C_xx = 1/l sum_i x_i x_i^T - s_x s_x^T` (l tokens each, query
/// included), x ~ N(mu_x, Sigma_x) of `train`. Prompt k draws from `stream(seed, Train, 0, k)`.
/// Its expectation is (l-1)/l Sigma_x.
pub fn pretraining_cov(train: &Gaussian, l: usize, m: usize, seed: u64) -> Result<Vec<f64>> {
    train.validate()?;
    if l < 2 || m == 0 {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2 and m >= 1 (l = {l}, m = {m})"
        )));
    }
    let d = train.d;
    // the normals, Z, Z^T and a temporary of the product (l x d each)
    crate::budget::reserve(crate::budget::product(&[4 * 8, l as u64, d as u64]), || {
        format!("the sampled pretraining prompts of l = {l} tokens in d = {d} (l x d)")
    })?;
    let chol = mat(d, &train.sigma_x)
        .cholesky()
        .ok_or_else(|| Error::Numerical("Sigma_x is not positive definite".into()))?
        .l();
    let lf = l as f64;
    let mut acc = DMatrix::<f64>::zeros(d, d);
    let mut g = vec![0.0; l * d];
    for k in 0..m {
        let mut r = rng::stream(seed, Domain::Train, 0, k as u64);
        rng::fill_normal(&mut r, &mut g);
        let z = DMatrix::from_row_slice(l, d, &g) * chol.transpose(); // rows ~ N(0, Sigma_x); the mean cancels
        let mut sx = DVector::<f64>::zeros(d);
        for t in 0..l {
            sx += z.row(t).transpose() / lf;
        }
        acc += (z.transpose() * &z / lf - &sx * sx.transpose()) / m as f64;
    }
    Ok(rows(&acc))
}

/// How the pretrained parameters are obtained (Lemma 4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pretrain {
    /// `X^T X/(ml)` replaced by its limit Sigma_x^tr ([`lemma41`]).
    Population,
    /// `X^T X/(ml)` from m sampled pretraining prompts ([`pretraining_cov`]) with this seed.
    Sampled { m: usize, seed: u64 },
}

/// Lemma 4.1 parameters for prompts of `l_train` tokens from `train`.
pub fn pretrained(train: &Gaussian, l_train: usize, how: Pretrain) -> Result<Params> {
    match how {
        Pretrain::Population => lemma41(train, l_train),
        Pretrain::Sampled { m, seed } => {
            let xx = pretraining_cov(train, l_train, m, seed)?;
            lemma41_with_cov(train, l_train, &xx)
        }
    }
}

/// `k = 1/(1 + sigma_tr^2/l)`: the isotropic training gives v22 M11 = k I.
pub fn k_iso(l: usize, sigma2_train: f64) -> f64 {
    1.0 / (1.0 + sigma2_train / l as f64)
}

/// Coefficients of `G(tau) = a/tau^2 - b/tau + c` (Theorem 4.6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coeffs {
    pub a: f64,
    pub b: f64,
    pub c: f64,
}

impl Coeffs {
    /// G(tau).
    pub fn g(&self, tau: f64) -> f64 {
        self.a / (tau * tau) - self.b / tau + self.c
    }

    /// Theorem 4.7: `tau_opt = 2a/b` (needs a > 0 and b > 0; otherwise G has no finite minimiser).
    pub fn tau_opt(&self) -> Result<f64> {
        if !(self.a > 0.0 && self.b > 0.0) {
            return Err(Error::Numerical(format!("no finite optimal temperature (a = {}, b = {}): G decreases towards c as tau -> inf", self.a, self.b)));
        }
        Ok(2.0 * self.a / self.b)
    }

    /// `G_min = c - b^2/(4a)` (at tau_opt).
    pub fn g_min(&self) -> Result<f64> {
        self.tau_opt()?;
        Ok(self.c - self.b * self.b / (4.0 * self.a))
    }
}

/// Theorem 4.6 (eqs. 12–14, corrected): with test `A = Sigma_x + mu_x mu_x^T`, `B = Sigma_w + mu_w mu_w^T`,
/// `B^ = v22 mu_w v21^T + v22 v21 mu_w^T + v22^2 B`,
/// `F1 = (Sigma_x B^ + (v22^2 sigma^2 + Tr(B^ Sigma_x))/l I) Sigma_x`, `F2 = (mu_w v21^T + v22 B) Sigma_x`:
/// `a = Tr(A M11^T F1 M11)`, `b = Tr(A (F2 M11 + M11^T F2^T))`, `c = Tr(A B) + sigma^2`.
/// Requires m21 = 0 (Assumption 4.5).
pub fn coefficients(p: &Params, test: &Gaussian, l: usize) -> Result<Coeffs> {
    test.validate()?;
    let d = test.d;
    if p.d != d || p.m11.len() != d * d || p.v21.len() != d || p.m21.len() != d {
        return Err(Error::Shape(format!(
            "parameters are for d = {}, test distribution for d = {d}",
            p.d
        )));
    }
    if p.m21.iter().any(|v| *v != 0.0) {
        return Err(Error::Unsupported(
            "Theorem 4.6 needs m21 = 0 (Assumption 4.5)".into(),
        ));
    }
    if l < 2 {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2 tokens (got {l})"
        )));
    }
    let lf = l as f64;
    let sx = mat(d, &test.sigma_x);
    let mux = DVector::from_column_slice(&test.mu_x);
    let muw = DVector::from_column_slice(&test.mu_w);
    let v21 = DVector::from_column_slice(&p.v21);
    let m11 = mat(d, &p.m11);
    let v22 = p.v22;
    let a_m = &sx + &mux * mux.transpose();
    let b_m = mat(d, &test.sigma_w) + &muw * muw.transpose();
    let bh = (&muw * v21.transpose() + &v21 * muw.transpose()) * v22 + &b_m * (v22 * v22);
    let tr_term = (v22 * v22 * test.sigma2 + (&bh * &sx).trace()) / lf;
    let f1 = (&sx * &bh + DMatrix::identity(d, d) * tr_term) * &sx;
    let f2 = (&muw * v21.transpose() + &b_m * v22) * &sx;
    let a = (&a_m * m11.transpose() * &f1 * &m11).trace();
    let b = (&a_m * (&f2 * &m11 + m11.transpose() * f2.transpose())).trace();
    let c = (&a_m * &b_m).trace() + test.sigma2;
    Ok(Coeffs { a, b, c })
}

/// Isotropic reduction of Thm 4.6 (derived in icl): train isotropic (v21 = 0, v22 M11 = k I), test Sigma_x = alpha I,
/// Sigma_w = beta I, zero means, noise sigma^2:
/// `a = k^2 alpha^2 d (alpha beta + (sigma^2 + alpha beta d)/l)`, `b = 2 k alpha^2 beta d`, `c = alpha beta d + sigma^2`,
/// so `tau_opt = k (alpha + (sigma^2/beta + alpha d)/l)`.
pub fn isotropic(d: usize, l: usize, alpha: f64, beta: f64, sigma2: f64, k: f64) -> Coeffs {
    let (df, lf) = (d as f64, l as f64);
    Coeffs {
        a: k * k * alpha * alpha * df * (alpha * beta + (sigma2 + alpha * beta * df) / lf),
        b: 2.0 * k * alpha * alpha * beta * df,
        c: alpha * beta * df + sigma2,
    }
}

/// Moment-ratio heuristic (App. J, eq. 136 with the v22 factor restored):
/// `tau_heur = v22 Tr(M11 Sigma_x M11^T Sigma_x) / Tr(Sigma_x M11) + (sigma^2/beta + alpha d)/l`,
/// with the shift factors taken as alpha = tr(Sigma_x)/d and beta = tr(Sigma_w)/d of the test distribution.
pub fn tau_heuristic(p: &Params, test: &Gaussian, l: usize) -> Result<f64> {
    test.validate()?;
    let d = test.d;
    if p.d != d {
        return Err(Error::Shape(
            "parameter and distribution dimensions differ".into(),
        ));
    }
    let sx = mat(d, &test.sigma_x);
    let m11 = mat(d, &p.m11);
    let r = (&m11 * &sx * m11.transpose() * &sx).trace() / (&sx * &m11).trace();
    let alpha = sx.trace() / d as f64;
    let beta = mat(d, &test.sigma_w).trace() / d as f64;
    Ok(p.v22 * r + (test.sigma2 / beta + alpha * d as f64) / l as f64)
}

/// The exact prediction of the linearized layer (App. E, eqs. 44–47), split as
/// `yhat = u/tau + b_att`: returns `(u, b_att)` with `u = w_att^T x_l`,
/// `w_att = M11^T (C_xx v21 + v22 C_xy) + (v21^T C_xy + v22 C_yy) m21`, `b_att = v21^T s_x + v22 s_y`.
/// `x` holds the l tokens' covariates row by row (query last), `y` the l - 1 context labels.
/// The statistics are those of the keys: with the query a key (the paper's layer) they divide by
/// l and s_x, C_xx include the query with its zero label (App. E, eqs. 44–47); without it
/// ([`Params::self_attend`] false) they are the l - 1 context tokens', divided by l - 1.
pub fn predict_parts(p: &Params, x: &[f64], y: &[f64]) -> Result<(f64, f64)> {
    let d = p.d;
    let l = y.len() + 1;
    if x.len() != l * d || (l < 2 && !p.self_attend) {
        return Err(Error::Shape(format!(
            "x needs l*d = {} entries for {} labels (and at least one context token)",
            l * d,
            y.len()
        )));
    }
    let nk = p.keys(l);
    let lf = nk as f64;
    let mut sx = vec![0.0; d];
    for t in 0..nk {
        for i in 0..d {
            sx[i] += x[t * d + i] / lf;
        }
    }
    let sy: f64 = y.iter().sum::<f64>() / lf;
    // C_xx v21 = 1/l sum_i x_i (x_i . v21) - s_x (s_x . v21)
    let mut cv = vec![0.0; d];
    let sxv: f64 = sx.iter().zip(&p.v21).map(|(a, b)| a * b).sum();
    for t in 0..nk {
        let xv: f64 = (0..d).map(|i| x[t * d + i] * p.v21[i]).sum();
        for i in 0..d {
            cv[i] += x[t * d + i] * xv / lf;
        }
    }
    for i in 0..d {
        cv[i] -= sx[i] * sxv;
    }
    // C_xy = 1/l sum_{i<l} y_i x_i - s_y s_x ; C_yy = 1/l sum y_i^2 - s_y^2
    let mut cxy = vec![0.0; d];
    for (t, yt) in y.iter().enumerate() {
        for i in 0..d {
            cxy[i] += yt * x[t * d + i] / lf;
        }
    }
    for i in 0..d {
        cxy[i] -= sy * sx[i];
    }
    let cyy = y.iter().map(|v| v * v).sum::<f64>() / lf - sy * sy;
    let inner: Vec<f64> = (0..d).map(|i| cv[i] + p.v22 * cxy[i]).collect();
    let coef = p.v21.iter().zip(&cxy).map(|(a, b)| a * b).sum::<f64>() + p.v22 * cyy;
    let xq = &x[(l - 1) * d..];
    let mut u = 0.0;
    for (j, xqj) in xq.iter().enumerate() {
        // w_att_j = sum_i M11[i][j] inner_i + coef m21_j
        let wj: f64 = (0..d).map(|i| p.m11[i * d + j] * inner[i]).sum::<f64>() + coef * p.m21[j];
        u += wj * xqj;
    }
    let b = p.v21.iter().zip(&sx).map(|(a, b)| a * b).sum::<f64>() + p.v22 * sy;
    Ok((u, b))
}

/// The linearised softmax (App. B, eqs. 26–34; spec §2.2): the first-order Taylor expansion of
/// softmax around 0, `lin_sm(z)_i = 1/l + (z_i - mean(z))/l` (sums to 1, can be negative).
pub fn linearized_softmax(z: &[f64]) -> Vec<f64> {
    let l = z.len() as f64;
    let mean = z.iter().sum::<f64>() / l;
    z.iter().map(|v| 1.0 / l + (v - mean) / l).collect()
}

/// Softmax (max-subtracted), for comparison with [`linearized_softmax`].
pub fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| libm::exp(v - m)).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// App. J eq. (123): `tau_opt` with mu_x = mu_w = m21 = 0, Sigma_w = I **and the 1/l terms
/// dropped**: `v22 Tr(Sigma_x M11 Sigma_x M11^T Sigma_x) / (1/2 Tr(Sigma_x (Sigma_x M11 + M11^T Sigma_x)))`
/// (Theorem 4.7 with F1's `1/l (.) I` term removed; spec §7.2).
pub fn tau_opt_eq123(p: &Params, sigma_x: &[f64]) -> Result<f64> {
    let d = p.d;
    if sigma_x.len() != d * d || p.m11.len() != d * d {
        return Err(Error::Shape(format!(
            "Sigma_x and M11 need {} entries",
            d * d
        )));
    }
    let s = mat(d, sigma_x);
    let m = mat(d, &p.m11);
    let num = p.v22 * (&s * &m * &s * m.transpose() * &s).trace();
    let den = 0.5 * (&s * (&s * &m + m.transpose() * &s)).trace();
    Ok(num / den)
}

/// App. M eqs. (132)–(135) with the v22 factor restored (spec §7.3): for test Sigma_x = alpha I,
/// Sigma_w = beta I, noise sigma^2, zero means,
/// `tau_opt = v22 (alpha + (sigma^2/beta + alpha d)/l) Tr(M11^T M11)/Tr(M11)` (exact for M11 ∝ I).
pub fn tau_opt_eq133(p: &Params, alpha: f64, beta: f64, sigma2: f64, l: usize) -> f64 {
    let d = p.d;
    let m = mat(d, &p.m11);
    let ratio = (m.transpose() * &m).trace() / m.trace();
    p.v22 * (alpha + (sigma2 / beta + alpha * d as f64) / l as f64) * ratio
}

/// The centred statistics of one prompt (App. E, eqs. 44–47): `s_x`, `s_y`, `C_xx` (d x d row-major),
/// `C_xy`, `C_yy`, all divided by l with the query inside `s_x` and `C_xx` (its label 0).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptStats {
    pub sx: Vec<f64>,
    pub sy: f64,
    pub cxx: Vec<f64>,
    pub cxy: Vec<f64>,
    pub cyy: f64,
}

/// [`PromptStats`] of a prompt (`x`: l rows, query last; `y`: the l - 1 context labels).
pub fn prompt_stats(d: usize, x: &[f64], y: &[f64]) -> Result<PromptStats> {
    let l = y.len() + 1;
    if x.len() != l * d || d == 0 {
        return Err(Error::Shape(format!("x needs l*d = {} entries", l * d)));
    }
    let lf = l as f64;
    let mut sx = vec![0.0; d];
    for t in 0..l {
        for i in 0..d {
            sx[i] += x[t * d + i] / lf;
        }
    }
    let sy = y.iter().sum::<f64>() / lf;
    let mut cxx = vec![0.0; d * d];
    let mut cxy = vec![0.0; d];
    for t in 0..l {
        let xt = &x[t * d..(t + 1) * d];
        for i in 0..d {
            for j in 0..d {
                cxx[i * d + j] += xt[i] * xt[j] / lf;
            }
            if t + 1 < l {
                cxy[i] += y[t] * xt[i] / lf;
            }
        }
    }
    for i in 0..d {
        for j in 0..d {
            cxx[i * d + j] -= sx[i] * sx[j];
        }
        cxy[i] -= sy * sx[i];
    }
    let cyy = y.iter().map(|v| v * v).sum::<f64>() / lf - sy * sy;
    Ok(PromptStats {
        sx,
        sy,
        cxx,
        cxy,
        cyy,
    })
}

/// Monte Carlo of App. J's moment ratio `R = E[(z_i^T M z_j)^2]_{i != j} / E[z_i^T M z_i]` with
/// `M = blockdiag(M11, 0)` from `n` independent pairs `x_i, x_j ~ N(0, Sigma_x)` of `test` (means
/// ignored, as App. J assumes mu = 0): `(R, delta-method standard error)`. Its population value is
/// `Tr(M11 Sigma_x M11^T Sigma_x) / Tr(Sigma_x M11)` (the ratio inside [`tau_heuristic`]).
pub fn moment_ratio_mc(p: &Params, test: &Gaussian, n: usize, seed: u64) -> Result<(f64, f64)> {
    test.validate()?;
    let d = test.d;
    if p.d != d || n < 2 {
        return Err(Error::InvalidConfig(format!(
            "need matching d and n >= 2 (n = {n})"
        )));
    }
    let chol = mat(d, &test.sigma_x)
        .cholesky()
        .ok_or_else(|| Error::Numerical("Sigma_x is not positive definite".into()))?
        .l();
    let m = mat(d, &p.m11);
    let mut g = vec![0.0; 2 * d];
    let mut rows: Vec<[f64; 2]> = Vec::with_capacity(n);
    for i in 0..n {
        let mut r = rng::stream(seed, Domain::Eval, 0, i as u64);
        rng::fill_normal(&mut r, &mut g);
        let xi = &chol * DVector::from_column_slice(&g[..d]);
        let xj = &chol * DVector::from_column_slice(&g[d..]);
        let off = xi.dot(&(&m * &xj));
        rows.push([off * off, xi.dot(&(&m * &xi))]);
    }
    let (mean, cov) = mc::mean_cov(&rows);
    let r = mean[0] / mean[1];
    let g2 = [1.0 / mean[1], -mean[0] / (mean[1] * mean[1])];
    let mut v = 0.0;
    for a in 0..2 {
        for b in 0..2 {
            v += g2[a] * cov[a][b] * g2[b];
        }
    }
    Ok((r, libm::sqrt(v.max(0.0))))
}
