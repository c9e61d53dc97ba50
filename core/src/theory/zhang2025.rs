//! Zhang, Singh, Latham, Saxe (2025), "Training Dynamics of In-Context Learning in Linear
//! Attention": population theory of the effective matrix `M` (spec `zhang2025-linear-attention-dynamics.md` §3).
//!
//! Conventions: `Lambda` is the covariate covariance with eigenvalues `lambda_1 >= .. >= lambda_D`,
//! `N` the context length (or `E(1/N)` for varying lengths), no label noise, task vector
//! `w ~ N(0, I)`, `beta = 1/N sum_n y_n x_n`, prediction `yhat = beta^T M x_q`, loss `E(y_q - yhat)^2`.
//! Time is in units of the gradient-flow time constant tau (`tau dW/dt = -1/2 dL/dW`); full-batch
//! GD with learning rate eta is Euler with dt = 2 eta.
use super::ode;
use crate::rng::{self, Domain};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::DMatrix;

/// Sorted copy of the eigenvalues, largest first (the order in which the drops happen).
fn sorted_desc(eigs: &[f64]) -> Vec<f64> {
    let mut l = eigs.to_vec();
    l.sort_by(|a, b| b.partial_cmp(a).unwrap_or(core::cmp::Ordering::Equal));
    l
}

fn check_eigs(eigs: &[f64], inv_n: f64) -> Result<()> {
    if eigs.is_empty() {
        return Err(Error::Shape("need at least one eigenvalue".into()));
    }
    if let Some(x) = eigs.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
        return Err(Error::InvalidConfig(format!(
            "eigenvalues of Lambda must be finite and > 0 (got {x})"
        )));
    }
    if !(inv_n >= 0.0 && inv_n.is_finite()) {
        return Err(Error::InvalidConfig(format!(
            "1/N must be finite and >= 0 (got {inv_n})"
        )));
    }
    Ok(())
}

/// Plateau losses `L(M_0), .., L(M_D)` for a fixed context length `n` (Zhang et al. 2025, eqs.
/// (19)/(63)):
///
/// `L(M_m) = tr(Lambda) - sum_{d<=m} lambda_d / (1 + (1 + tr(Lambda)/lambda_d) / N)`,
///
/// with the eigenvalues taken in decreasing order (they are sorted here, so any order may be
/// passed). The list has `D + 1` entries: `L(M_0) = tr(Lambda)` (the zero fixed point) up to
/// `L(M_D) = L*` (the global minimum). These are the levels at which the loss of ATTN_S plateaus
/// (saddle-to-saddle), and the first and last entries are the only levels of ATTN_M.
/// Example: eigenvalues (0.4, 0.3, 0.2, 0.1), N = 31 -> 1, 0.640580, 0.377372, 0.209805, 0.135995.
pub fn plateau_losses(eigs: &[f64], n: f64) -> Vec<f64> {
    plateau_losses_inv_n(eigs, 1.0 / n)
}

/// Plateau losses with `1/N` replaced by its expectation `E(1/N)` (varying context lengths /
/// next-token-prediction training, Zhang et al. 2025 eq. (26)):
///
/// `L(M_m) = tr(Lambda) - sum_{d<=m} lambda_d / (1 + E(1/N) (1 + tr(Lambda)/lambda_d))`.
///
/// For the NTP loss with prefixes of length `1..=N_max` use `e_inv_n = `[`mean_inv_uniform`]`(N_max)`
/// (0.1299111 for N_max = 31; levels 1, 0.725027, 0.533082, 0.420689, 0.379520 for (.4,.3,.2,.1)).
pub fn plateau_losses_inv_n(eigs: &[f64], e_inv_n: f64) -> Vec<f64> {
    let l = sorted_desc(eigs);
    let tr: f64 = l.iter().sum();
    let mut out = Vec::with_capacity(l.len() + 1);
    let mut acc = tr;
    out.push(acc);
    for &lam in &l {
        // lambda / (1 + E(1/N)(1 + tr/lambda)) = lambda^2 / (lambda + E(1/N)(lambda + tr)); 0 for lambda = 0.
        let den = lam + e_inv_n * (lam + tr);
        if den != 0.0 {
            acc -= lam * lam / den;
        }
        out.push(acc);
    }
    out
}

/// `E(1/N)` for `N` uniform on `{1, .., n_max}`: the harmonic number `H_{n_max} / n_max` (App. A.3, eq. 23).
pub fn mean_inv_uniform(n_max: usize) -> f64 {
    if n_max == 0 {
        return f64::NAN;
    }
    let h: f64 = (1..=n_max).map(|k| 1.0 / k as f64).sum();
    h / n_max as f64
}

/// Eigenvalues of `E(Lambda_hat^2)` (eqs. 32–33), in decreasing order of lambda:
/// `a_d = lambda_d^2 + E(1/N) (lambda_d + tr Lambda) lambda_d`.
pub fn a_coeffs(eigs: &[f64], inv_n: f64) -> Result<Vec<f64>> {
    check_eigs(eigs, inv_n)?;
    let l = sorted_desc(eigs);
    let tr: f64 = l.iter().sum();
    Ok(l.iter().map(|&x| x * x + inv_n * (x + tr) * x).collect())
}

/// Value weights of the grown heads at the fixed points, `v*_d = (lambda_d / a_d)^{1/3}` (Eq. 20),
/// in decreasing order of lambda. (1.30967, 1.43005, 1.61204, 1.94702) for (.4,.3,.2,.1), N = 31.
pub fn v_star(eigs: &[f64], inv_n: f64) -> Result<Vec<f64>> {
    let l = sorted_desc(eigs);
    Ok(a_coeffs(eigs, inv_n)?
        .iter()
        .zip(&l)
        .map(|(a, x)| libm::cbrt(x / a))
        .collect())
}

/// Minimum-norm configuration at `M_m` (App. E.7): heads d <= m with `k = q = v e_d`, `v = v*_d`.
/// Returns (v*_1..v*_m, the minimum of `sum_i v_i^2 + |k_i|^2 + |q_i|^2` = `3 sum_{d<=m} (lambda_d/a_d)^{2/3}`).
/// At m = D for (.4,.3,.2,.1), N = 31 the norm is 30.4496.
pub fn min_norm(eigs: &[f64], inv_n: f64, m: usize) -> Result<(Vec<f64>, f64)> {
    let v = v_star(eigs, inv_n)?;
    if m > v.len() {
        return Err(Error::InvalidConfig(format!(
            "m = {m} exceeds D = {}",
            v.len()
        )));
    }
    let vm = v[..m].to_vec();
    let total = 3.0 * vm.iter().map(|x| x * x).sum::<f64>();
    Ok((vm, total))
}

// ------------------------------------------------------------------------------------------------
// Population loss of the effective matrix (App. E.4).

/// Population statistics of a covariance `Lambda` and context length (through `E(1/N)`).
#[derive(Debug, Clone)]
pub struct Population {
    pub d: usize,
    /// Lambda (D x D).
    pub lambda: DMatrix<f64>,
    /// E(1/N) (1/N for a fixed length).
    pub inv_n: f64,
    /// Lambda^2.
    lambda2: DMatrix<f64>,
    /// E(Lambda_hat^2) = Lambda^2 + E(1/N) (Lambda + tr(Lambda) I) Lambda (Eq. 30).
    e_lhat2: DMatrix<f64>,
}

impl Population {
    /// From a row-major symmetric positive-definite `Lambda` (D x D).
    pub fn new(lambda: &[f64], d: usize, inv_n: f64) -> Result<Population> {
        if d == 0 || lambda.len() != d * d {
            return Err(Error::Shape(format!(
                "Lambda needs D*D = {} entries (got {})",
                d * d,
                lambda.len()
            )));
        }
        if !(inv_n >= 0.0 && inv_n.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "1/N must be finite and >= 0 (got {inv_n})"
            )));
        }
        if lambda.iter().any(|x| !x.is_finite()) {
            return Err(Error::NonFinite("Lambda".into()));
        }
        let l = DMatrix::from_row_slice(d, d, lambda);
        if (&l - l.transpose()).amax() > 1e-12 * (1.0 + l.amax()) {
            return Err(Error::InvalidConfig("Lambda must be symmetric".into()));
        }
        if l.clone().cholesky().is_none() {
            return Err(Error::InvalidConfig(
                "Lambda must be positive definite".into(),
            ));
        }
        let lambda2 = &l * &l;
        let tr = l.trace();
        let e_lhat2 = &lambda2 + (&l + DMatrix::identity(d, d) * tr) * &l * inv_n;
        Ok(Population {
            d,
            lambda: l,
            inv_n,
            lambda2,
            e_lhat2,
        })
    }

    /// Diagonal `Lambda = diag(eigs)` (the eigenbasis; any basis gives the same losses).
    pub fn diagonal(eigs: &[f64], inv_n: f64) -> Result<Population> {
        check_eigs(eigs, inv_n)?;
        let d = eigs.len();
        let mut m = vec![0.0; d * d];
        for (i, e) in eigs.iter().enumerate() {
            m[i * d + i] = *e;
        }
        Population::new(&m, d, inv_n)
    }

    /// `E(Lambda_hat^2)` (Eq. 30), row-major.
    pub fn e_lambda_hat_sq(&self) -> Vec<f64> {
        to_rows(&self.e_lhat2)
    }

    fn mat(&self, m: &[f64]) -> Result<DMatrix<f64>> {
        if m.len() != self.d * self.d {
            return Err(Error::Shape(format!(
                "M needs D*D = {} entries (got {})",
                self.d * self.d,
                m.len()
            )));
        }
        Ok(DMatrix::from_row_slice(self.d, self.d, m))
    }

    /// Population loss (App. E.4): `L(M) = tr Lambda - 2 tr(Lambda^2 M) + tr(M^T E(Lambda_hat^2) M Lambda)`.
    pub fn loss(&self, m: &[f64]) -> Result<f64> {
        let m = self.mat(m)?;
        Ok(self.loss_mat(&m))
    }

    fn loss_mat(&self, m: &DMatrix<f64>) -> f64 {
        self.lambda.trace() - 2.0 * (&self.lambda2 * m).trace()
            + (m.transpose() * &self.e_lhat2 * m * &self.lambda).trace()
    }

    /// `G(M) = E[beta (y_q - yhat) x_q^T] = Lambda^2 - E(Lambda_hat^2) M Lambda = -1/2 dL/dM` (Eq. 57), row-major.
    pub fn g(&self, m: &[f64]) -> Result<Vec<f64>> {
        let m = self.mat(m)?;
        Ok(to_rows(&self.g_mat(&m)))
    }

    fn g_mat(&self, m: &DMatrix<f64>) -> DMatrix<f64> {
        &self.lambda2 - &self.e_lhat2 * m * &self.lambda
    }

    /// Global minimiser `M* = E(Lambda_hat^2)^{-1} Lambda` (App. E.4), row-major.
    pub fn m_star(&self) -> Result<Vec<f64>> {
        let inv = self
            .e_lhat2
            .clone()
            .try_inverse()
            .ok_or_else(|| Error::Numerical("E(Lambda_hat^2) is singular".into()))?;
        Ok(to_rows(&(inv * &self.lambda)))
    }

    /// `L* = L(M*)`.
    pub fn loss_star(&self) -> Result<f64> {
        self.loss(&self.m_star()?)
    }
}

fn to_rows(m: &DMatrix<f64>) -> Vec<f64> {
    let (r, c) = m.shape();
    (0..r * c).map(|k| m[(k / c, k % c)]).collect()
}

/// The effective matrix at the fixed point M(S) for a diagonal Lambda (C1, Eqs. 18/59):
/// `M = sum_{d in S} lambda_d / a_d e_d e_d^T` with indices into `eigs` as given (not sorted).
pub fn fixed_point_m(eigs: &[f64], inv_n: f64, subset: &[usize]) -> Result<Vec<f64>> {
    check_eigs(eigs, inv_n)?;
    let d = eigs.len();
    let tr: f64 = eigs.iter().sum();
    let mut m = vec![0.0; d * d];
    for &i in subset {
        if i >= d {
            return Err(Error::InvalidConfig(format!(
                "index {i} out of range for D = {d}"
            )));
        }
        let l = eigs[i];
        m[i * d + i] = l / (l * l + inv_n * (l + tr) * l);
    }
    Ok(m)
}

/// Loss at the fixed point M(S) (Eq. 63): `tr Lambda - sum_{d in S} lambda_d^3 / a_d`.
pub fn fixed_point_loss(eigs: &[f64], inv_n: f64, subset: &[usize]) -> Result<f64> {
    let m = fixed_point_m(eigs, inv_n, subset)?;
    Population::diagonal(eigs, inv_n)?.loss(&m)
}

// ------------------------------------------------------------------------------------------------
// White covariance: analytical time course (App. D.5).

/// ATTN_M with `Lambda = c I` from vanishing, aligned and balanced init (`s(0) = w_init^2`), App. D.5
/// (Eqs. 48–51, c-generalised): `gamma = c^2 sqrt(D)`, `alpha = c^3 (1 + (1+D)/N)`,
/// `s(t) = gamma / (alpha (1 - e^{-2 gamma t}) + gamma/s0 e^{-2 gamma t})`, `yhat = sigma(t) beta^T x_q`
/// with `sigma = s/sqrt(D)`, and `L = c D - 2 c^2 D sigma + c^3 D (1 + (1+D)/N) sigma^2`.
/// Returns (sigma(t), L(t)); t in units of tau.
pub fn white_time_course(t: f64, d: usize, n: f64, c: f64, s0: f64) -> Result<(f64, f64)> {
    if d == 0 || !(n > 0.0) || !(c > 0.0) || !(s0 > 0.0) || !(t >= 0.0) || !t.is_finite() {
        return Err(Error::InvalidConfig(format!("need D >= 1, N > 0, c > 0, s0 > 0, t >= 0 (D = {d}, N = {n}, c = {c}, s0 = {s0}, t = {t})")));
    }
    let df = d as f64;
    let k = 1.0 + (1.0 + df) / n;
    let gamma = c * c * libm::sqrt(df);
    let alpha = c * c * c * k;
    let e = libm::exp(-2.0 * gamma * t);
    let s = gamma / (alpha * (1.0 - e) + gamma / s0 * e);
    let sigma = s / libm::sqrt(df);
    let loss = c * df - 2.0 * c * c * df * sigma + c * c * c * df * k * sigma * sigma;
    Ok((sigma, loss))
}

// ------------------------------------------------------------------------------------------------
// Plateau-duration predictions and the scalar ODE (App. D.6.1, E.5–E.6).

/// ATTN_M plateau length (Eq. 54): `t_plateau ~ ln(1/w_init) / ||Lambda^2||_F` (in tau).
pub fn attn_m_plateau_time(lambda: &[f64], d: usize, w_init: f64) -> Result<f64> {
    let p = Population::new(lambda, d, 0.0)?;
    if !(w_init > 0.0 && w_init < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "w_init must be in (0, 1) (got {w_init})"
        )));
    }
    Ok(libm::log(1.0 / w_init) / p.lambda2.norm())
}

/// Right-hand side of the scalar ODE of the (m+1)-th drop (Eqs. 21, 70, 76):
/// `tau dv/dt = lambda^2 v^2 - lambda a v^5`, with lambda = lambda_{m+1}, a = a_{m+1}.
pub fn scalar_ode_rhs(v: f64, lambda: f64, a: f64) -> f64 {
    lambda * lambda * v * v - lambda * a * v * v * v * v * v
}

/// Loss along the ansatz (§4, App. E, derived): `L = L(M_m) - 2 lambda^2 v^3 + lambda a v^6`.
pub fn ansatz_loss(loss_m: f64, v: f64, lambda: f64, a: f64) -> f64 {
    loss_m - 2.0 * lambda * lambda * v * v * v + lambda * a * v * v * v * v * v * v
}

/// Implicit solution of the scalar ODE (Eq. 71 with the v^5 of the errata):
/// with `kappa = a/lambda` and `u = kappa^{1/3} v`,
/// `F(v) = kappa^{1/3}/6 [ln((u^2+u+1)/(u^2-2u+1)) - 2 sqrt(3) atan((2u+1)/sqrt(3))] - 1/v`,
/// so that `F'(v) = 1/(v^2 - kappa v^5)` and `lambda^2 (t - t0)/tau = F(v) - F(v0)` for 0 < v < v*.
pub fn implicit_f(v: f64, lambda: f64, a: f64) -> f64 {
    let k3 = libm::cbrt(a / lambda);
    let u = k3 * v;
    let s3 = libm::sqrt(3.0);
    k3 / 6.0
        * (libm::log((u * u + u + 1.0) / ((u - 1.0) * (u - 1.0)))
            - 2.0 * s3 * libm::atan((2.0 * u + 1.0) / s3))
        - 1.0 / v
}

/// Time (in tau) for the scalar ODE to go from v0 to v, `0 < v0 <= v < v* = (lambda/a)^{1/3}`.
pub fn scalar_ode_time(v0: f64, v: f64, lambda: f64, a: f64) -> Result<f64> {
    let vs = libm::cbrt(lambda / a);
    if !(v0 > 0.0 && v0 <= v && v < vs) || !(lambda > 0.0) || !(a > 0.0) {
        return Err(Error::InvalidConfig(format!(
            "need 0 < v0 <= v < v* = {vs} (v0 = {v0}, v = {v}), lambda, a > 0"
        )));
    }
    Ok((implicit_f(v, lambda, a) - implicit_f(v0, lambda, a)) / (lambda * lambda))
}

/// v(t) of the scalar ODE from v(0) = v0 (0 < v0 < v*), by bisection on the increasing F.
pub fn scalar_ode_v(t: f64, v0: f64, lambda: f64, a: f64) -> Result<f64> {
    let vs = libm::cbrt(lambda / a);
    if !(v0 > 0.0 && v0 < vs) || !(t >= 0.0) || !(lambda > 0.0) || !(a > 0.0) {
        return Err(Error::InvalidConfig(format!(
            "need 0 < v0 < v* = {vs} and t >= 0 (v0 = {v0}, t = {t})"
        )));
    }
    let target = implicit_f(v0, lambda, a) + lambda * lambda * t;
    let (mut lo, mut hi) = (v0, vs);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if implicit_f(mid, lambda, a) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// Small-init plateau predictions of ATTN_S rank one (Eqs. 72, 77): the m-th plateau lasts
/// `tau / (lambda_m^2 v_m(t_{m-1}))`, where `v_m(t_{m-1})` is the value weight of the head that
/// escapes next when drop m-1 ends (v_1(0) for the first). Returns the durations (in tau).
pub fn attn_s_plateau_times(eigs: &[f64], v_start: &[f64]) -> Result<Vec<f64>> {
    let l = sorted_desc(eigs);
    if v_start.len() > l.len() {
        return Err(Error::Shape(format!(
            "{} starting values for D = {}",
            v_start.len(),
            l.len()
        )));
    }
    v_start
        .iter()
        .zip(&l)
        .map(|(v, lam)| {
            if *v > 0.0 && *lam > 0.0 {
                Ok(1.0 / (lam * lam * v))
            } else {
                Err(Error::InvalidConfig(format!(
                    "need v > 0 and lambda > 0 (v = {v}, lambda = {lam})"
                )))
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Exact population gradient flow in weight space (App. C).

/// Reduced architectures of Zhang et al. (2025).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// ATTN_M (Eq. M): state `[v_1..v_H, U_1 (D x D row-major), .., U_H]`, `M = sum_i v_i U_i`.
    Merged { heads: usize },
    /// ATTN_S of rank R (Eq. S): state `[v_1..v_H, k_{1,1}..k_{H,R}, q_{1,1}..q_{H,R}]` (each D),
    /// `M = sum_i v_i sum_r k_{i,r} q_{i,r}^T`.
    Separate { heads: usize, rank: usize },
}

impl Arch {
    /// Length of the state vector for dimension D.
    pub fn state_len(&self, d: usize) -> usize {
        match *self {
            Arch::Merged { heads } => heads + heads * d * d,
            Arch::Separate { heads, rank } => heads + 2 * heads * rank * d,
        }
    }

    fn heads(&self) -> usize {
        match *self {
            Arch::Merged { heads } | Arch::Separate { heads, .. } => heads,
        }
    }

    /// Effective matrix M of a state (row-major D x D).
    pub fn m(&self, d: usize, y: &[f64]) -> Vec<f64> {
        let mut m = vec![0.0; d * d];
        let h = self.heads();
        match *self {
            Arch::Merged { .. } => {
                for i in 0..h {
                    let u = &y[h + i * d * d..h + (i + 1) * d * d];
                    m.iter_mut().zip(u).for_each(|(a, b)| *a += y[i] * b);
                }
            }
            Arch::Separate { rank, .. } => {
                let (k0, q0) = (h, h + h * rank * d);
                for i in 0..h {
                    for r in 0..rank {
                        let o = (i * rank + r) * d;
                        let (k, q) = (&y[k0 + o..k0 + o + d], &y[q0 + o..q0 + o + d]);
                        for a in 0..d {
                            for b in 0..d {
                                m[a * d + b] += y[i] * k[a] * q[b];
                            }
                        }
                    }
                }
            }
        }
        m
    }

    /// Gradient flow `tau dy/dt` given G = G(M) (row-major): ATTN_M (Eq. 8) `U_i' = v_i G`,
    /// `v_i' = <U_i, G>_F`; ATTN_S (Eq. 84) `v_i' = sum_r k^T G q`, `k' = v_i G q`, `q' = v_i G^T k`.
    pub fn flow(&self, d: usize, y: &[f64], g: &[f64], dy: &mut [f64]) {
        let h = self.heads();
        match *self {
            Arch::Merged { .. } => {
                for i in 0..h {
                    let o = h + i * d * d;
                    let u = &y[o..o + d * d];
                    dy[i] = u.iter().zip(g).map(|(a, b)| a * b).sum();
                    for (j, gj) in g.iter().enumerate() {
                        dy[o + j] = y[i] * gj;
                    }
                }
            }
            Arch::Separate { rank, .. } => {
                let (k0, q0) = (h, h + h * rank * d);
                for i in 0..h {
                    dy[i] = 0.0;
                    for r in 0..rank {
                        let o = (i * rank + r) * d;
                        for a in 0..d {
                            let (mut gq, mut gtk) = (0.0, 0.0);
                            for b in 0..d {
                                gq += g[a * d + b] * y[q0 + o + b];
                                gtk += g[b * d + a] * y[k0 + o + b];
                            }
                            dy[i] += y[k0 + o + a] * gq;
                            dy[k0 + o + a] = y[i] * gq;
                            dy[q0 + o + a] = y[i] * gtk;
                        }
                    }
                }
            }
        }
    }

    /// Small random init of Zhang et al. App. C.2: `v_i ~ N(0, w^2/H)`; ATTN_M `U_i^{ab} ~ N(0, w^2/(H D^2))`;
    /// ATTN_S `k, q ~ N(0, w^2/(H R D))`. Drawn from `stream(seed, Init, 0, 0)`.
    pub fn init(&self, d: usize, w_init: f64, seed: u64) -> Vec<f64> {
        let mut y = vec![0.0; self.state_len(d)];
        let mut r = rng::stream(seed, Domain::Init, 0, 0);
        rng::fill_normal(&mut r, &mut y);
        let h = self.heads();
        let hf = h as f64;
        let (sv, sw) = match *self {
            Arch::Merged { .. } => (
                w_init / libm::sqrt(hf),
                w_init / libm::sqrt(hf * (d * d) as f64),
            ),
            Arch::Separate { rank, .. } => (
                w_init / libm::sqrt(hf),
                w_init / libm::sqrt(hf * (rank * d) as f64),
            ),
        };
        for (j, v) in y.iter_mut().enumerate() {
            *v *= if j < h { sv } else { sw };
        }
        y
    }
}

/// Integration scheme of the population flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheme {
    /// Forward Euler, identical to full-batch GD with learning rate dt/2.
    Euler,
    /// Classical RK4.
    Rk4,
}

/// Integrate the exact population gradient flow of `arch` from `y0` for `t_end` (in tau) with
/// step `dt`. `obs(t, loss, y)` is called at t = 0 and every `every` steps (and at the end);
/// returning `false` stops. Returns the final state.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    pop: &Population,
    arch: Arch,
    y0: &[f64],
    scheme: Scheme,
    dt: f64,
    t_end: f64,
    every: usize,
    obs: &mut dyn FnMut(f64, f64, &[f64]) -> bool,
) -> Result<Vec<f64>> {
    let d = pop.d;
    if y0.len() != arch.state_len(d) {
        return Err(Error::Shape(format!(
            "state needs {} entries (got {})",
            arch.state_len(d),
            y0.len()
        )));
    }
    if arch.heads() == 0 || matches!(arch, Arch::Separate { rank: 0, .. }) {
        return Err(Error::InvalidConfig(
            "need at least one head (and rank >= 1)".into(),
        ));
    }
    if !(dt > 0.0 && dt.is_finite()) || !(t_end >= 0.0 && t_end.is_finite()) {
        return Err(Error::InvalidConfig(format!(
            "need dt > 0 and t_end >= 0 (dt = {dt}, t_end = {t_end})"
        )));
    }
    let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| {
        let m = DMatrix::from_row_slice(d, d, &arch.m(d, y));
        let g = to_rows(&pop.g_mat(&m));
        arch.flow(d, y, &g, dy);
    };
    let loss = |y: &[f64]| pop.loss_mat(&DMatrix::from_row_slice(d, d, &arch.m(d, y)));
    let mut y = y0.to_vec();
    let mut dy = vec![0.0; y.len()];
    let mut rk = ode::Rk4::new(y.len());
    let steps = crate::budget::steps(libm::ceil(t_end / dt - 1e-9), || {
        format!("the population flow to t = {t_end} with dt = {dt}: t_end / dt")
    })? as usize;
    let every = every.max(1);
    if !obs(0.0, loss(&y), &y) {
        return Ok(y);
    }
    for s in 1..=steps {
        let t0 = (s - 1) as f64 * dt;
        let h = if s == steps { t_end - t0 } else { dt };
        match scheme {
            Scheme::Euler => {
                f(t0, &y, &mut dy);
                y.iter_mut().zip(&dy).for_each(|(a, b)| *a += h * b);
            }
            Scheme::Rk4 => rk.step(&mut f, t0, &mut y, h),
        }
        if y.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "population flow diverged at t = {} (reduce dt)",
                t0 + h
            )));
        }
        if (s % every == 0 || s == steps) && !obs(t0 + h, loss(&y), &y) {
            break;
        }
    }
    Ok(y)
}

/// Ordered crossings of the midpoints between consecutive plateau levels (the drop times of Figs. 3–4):
/// `levels` is `L(M_0) > .. > L(M_D)`; returns, for each m, the first time the loss falls below
/// `(L(M_m) + L(M_{m+1}))/2`, from a trajectory of (t, loss) rows.
pub fn crossings(levels: &[f64], traj: &[(f64, f64)]) -> Vec<Option<f64>> {
    levels
        .windows(2)
        .map(|w| {
            let mid = 0.5 * (w[0] + w[1]);
            traj.iter().find(|(_, l)| *l < mid).map(|(t, _)| *t)
        })
        .collect()
}
