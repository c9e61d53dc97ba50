//! "Interpreting Multi-Layer Transformers for In-Context Linear Regression with Varying Covariance"
//! (anonymous submission; spec `multilayer-varying-covariance.md`).
//!
//! * Algorithm 1, the "interpreted algorithm" of looped softmax/linear attention, in token form
//!   (§4.4) and in summary-statistics form (§4.5) with its effective weight `w_eff`;
//! * standard multi-step GD, ridge and OLS (§5);
//! * 2SLS and OLS for instrumental-variable data (§6.3);
//! * the varying-covariance and IV samplers of the paper (§1, §6.1) are in [`crate::data`].
//!
//! Layouts: `x` holds the L context covariates row by row (L x d); `xq` the query; `y` the L labels.
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

fn check(x: &[f64], y: &[f64], xq: &[f64]) -> Result<(usize, usize)> {
    let d = xq.len();
    let l = y.len();
    if d == 0 || l == 0 || x.len() != l * d {
        return Err(Error::Shape(format!(
            "x needs L*d = {} entries (L = {l}, d = {d}), got {}",
            l * d,
            x.len()
        )));
    }
    if x.iter().chain(y).chain(xq).any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("regression data".into()));
    }
    Ok((l, d))
}

/// Algorithm 1 in token form (Algorithm 1 of the paper, as printed): with `x^(0) = x`, `y^(0) = y`, `y_q^(0) = 0`,
/// for t = 0..T-1 and all tokens l in [L] + {q} simultaneously,
/// `x_l <- x_l - eta_x/L sum_{l'<=L} x_l' x_l'^T x_l` and `y_l <- y_l + eta_y/L sum_{l'<=L} y_l' x_l'^T x_l`.
/// Returns `y_q^(t)` for t = 1..=T.
pub fn algorithm1_tokens(
    x: &[f64],
    y: &[f64],
    xq: &[f64],
    eta_x: f64,
    eta_y: f64,
    steps: usize,
) -> Result<Vec<f64>> {
    let (l, d) = check(x, y, xq)?;
    let lf = l as f64;
    // tokens 0..L-1 context, token L the query
    let mut xs: Vec<f64> = x.iter().chain(xq).copied().collect();
    let mut ys: Vec<f64> = y.to_vec();
    ys.push(0.0);
    let mut out = Vec::with_capacity(steps);
    let mut nx = xs.clone();
    let mut ny = ys.clone();
    for _ in 0..steps {
        // C = 1/L sum x x^T, b = 1/L sum y x over the context tokens at step t
        let mut c = vec![0.0; d * d];
        let mut b = vec![0.0; d];
        for t in 0..l {
            let xt = &xs[t * d..(t + 1) * d];
            for i in 0..d {
                b[i] += ys[t] * xt[i] / lf;
                for j in 0..d {
                    c[i * d + j] += xt[i] * xt[j] / lf;
                }
            }
        }
        for t in 0..=l {
            let xt = &xs[t * d..(t + 1) * d];
            for i in 0..d {
                let cx: f64 = (0..d).map(|j| c[i * d + j] * xt[j]).sum();
                nx[t * d + i] = xt[i] - eta_x * cx;
            }
            ny[t] = ys[t] + eta_y * (0..d).map(|j| b[j] * xt[j]).sum::<f64>();
        }
        core::mem::swap(&mut xs, &mut nx);
        core::mem::swap(&mut ys, &mut ny);
        out.push(ys[l]);
    }
    Ok(out)
}

/// Result of Algorithm 1 in summary-statistics form.
#[derive(Debug, Clone, PartialEq)]
pub struct Alg1 {
    /// `yhat^(t)` for t = 1..=T.
    pub preds: Vec<f64>,
    /// `w_eff = d yhat^(T) / d x_q = eta_y sum_t A_0 .. A_{t-1} b_t`, so `yhat^(T) = w_eff^T x_q`.
    pub w_eff: Vec<f64>,
}

/// Algorithm 1 in summary-statistics form (derived in icl; equal to the token form to 1e-12 in the tests): `C_0 = 1/L sum x x^T`, `b_0 = 1/L sum y x`;
/// `A_t = I - eta_x C_t`, `yhat^(t+1) = yhat^(t) + eta_y b_t^T x_q^(t)`, `b_{t+1} = A_t (I + eta_y C_t) b_t`,
/// `C_{t+1} = A_t C_t A_t`, `x_q^(t+1) = A_t x_q^(t)`. O(T d^3) per sequence.
pub fn algorithm1(
    x: &[f64],
    y: &[f64],
    xq: &[f64],
    eta_x: f64,
    eta_y: f64,
    steps: usize,
) -> Result<Alg1> {
    algorithm1_schedule(x, y, xq, &vec![(eta_x, eta_y); steps])
}

/// [`algorithm1`] with step sizes `(eta_x^t, eta_y^t)` per step (non-looped "structured" models
/// take each layer's own, C.1).
pub fn algorithm1_schedule(x: &[f64], y: &[f64], xq: &[f64], etas: &[(f64, f64)]) -> Result<Alg1> {
    let (c, b) = alg1_moments(x, y, xq)?;
    Ok(algorithm1_moments(&c, &b, xq, etas))
}

/// The sample moments `C_0 = 1/L sum x x^T` (d x d) and `b_0 = 1/L sum y x` that Algorithm 1
/// needs, for many step sizes on one sequence (grid tuning).
pub fn alg1_moments(x: &[f64], y: &[f64], xq: &[f64]) -> Result<(DMatrix<f64>, DVector<f64>)> {
    let (l, d) = check(x, y, xq)?;
    let xm = DMatrix::from_row_slice(l, d, x);
    let c = xm.transpose() * &xm / l as f64;
    let b = xm.transpose() * DVector::from_column_slice(y) / l as f64;
    Ok((c, b))
}

/// [`algorithm1_schedule`] from the moments of [`alg1_moments`]; `xq.len()` must equal their d.
pub fn algorithm1_moments(
    c0: &DMatrix<f64>,
    b0: &DVector<f64>,
    xq: &[f64],
    etas: &[(f64, f64)],
) -> Alg1 {
    let steps = etas.len();
    let d = xq.len();
    let mut c = c0.clone();
    let mut b = b0.clone();
    let mut q = DVector::from_column_slice(xq);
    let mut prod = DMatrix::<f64>::identity(d, d); // A_0 .. A_{t-1}
    let mut w = DVector::<f64>::zeros(d);
    let mut yhat = 0.0;
    let mut preds = Vec::with_capacity(steps);
    let eye = DMatrix::<f64>::identity(d, d);
    for &(eta_x, eta_y) in etas {
        let a = &eye - &c * eta_x;
        yhat += eta_y * b.dot(&q);
        w += &prod * &b * eta_y;
        preds.push(yhat);
        b = &a * ((&eye + &c * eta_y) * &b);
        c = &a * &c * &a;
        q = &a * q;
        prod *= &a;
    }
    Alg1 {
        preds,
        w_eff: w.iter().copied().collect(),
    }
}

/// [`algorithm1_moments`]'s last prediction with constant step sizes, for every pair of a grid:
/// `out[i * eta_ys.len() + j]` is the prediction after `steps` steps of `(eta_xs[i], eta_ys[j])`
/// (the same recursion; only the rounding differs, the products being summed in another order).
/// `A_t = I - eta_x C_t`, `C_{t+1} = A_t C_t A_t` and `x_q^(t+1) = A_t x_q^(t)` depend on eta_x
/// alone, so they are formed once per eta_x and only `b_{t+1} = A_t (I + eta_y C_t) b_t` runs per
/// eta_y: O(|eta_x| T d^3 + |eta_x| |eta_y| T d^2) with no allocation per pair, where calling
/// [`algorithm1_moments`] per pair costs O(|eta_x| |eta_y| T d^3) (grid tuning).
/// `out.len()` must be `eta_xs.len() * eta_ys.len()` and `xq.len()` the moments' d.
pub fn algorithm1_grid(
    c0: &DMatrix<f64>,
    b0: &DVector<f64>,
    xq: &[f64],
    steps: usize,
    eta_xs: &[f64],
    eta_ys: &[f64],
    out: &mut [f64],
) {
    let (d, ny) = (xq.len(), eta_ys.len());
    if ny == 0 {
        return;
    }
    let dd = d * d;
    // per step t (row-major): C_t, A_t and x_q^(t)
    let (mut cs, mut as_, mut qs) = (
        vec![0.0; steps * dd],
        vec![0.0; steps * dd],
        vec![0.0; steps * d],
    );
    let mut ac = vec![0.0; dd];
    // per eta_y (column j): b_j, v_j (d x ny, row-major), the prediction and a dot product
    let (mut bs, mut vs) = (vec![0.0; d * ny], vec![0.0; d * ny]);
    let (mut yhat, mut dot) = (vec![0.0; ny], vec![0.0; ny]);
    // Y = M X for a row-major d x d block M and d x ny blocks X, Y
    let matmul = |m: &[f64], x: &[f64], y: &mut [f64]| {
        for (mr, yr) in m.chunks_exact(d).zip(y.chunks_exact_mut(ny)) {
            combine(mr, x, yr);
        }
    };
    // y = M x for a row-major d x d block M
    let matvec = |m: &[f64], x: &[f64], y: &mut [f64]| {
        for (r, yr) in y.iter_mut().enumerate() {
            *yr = (0..d).map(|k| m[r * d + k] * x[k]).sum();
        }
    };
    // C_0 and x_q^(0) are the same for every eta_x
    if steps > 0 {
        for r in 0..d {
            for k in 0..d {
                cs[r * d + k] = c0[(r, k)];
            }
        }
        qs[..d].copy_from_slice(xq);
    }
    for (i, &ex) in eta_xs.iter().enumerate() {
        for t in 0..steps {
            let (c, a) = (&cs[t * dd..(t + 1) * dd], &mut as_[t * dd..(t + 1) * dd]);
            for r in 0..d {
                for k in 0..d {
                    a[r * d + k] = if r == k { 1.0 } else { 0.0 } - c[r * d + k] * ex;
                }
            }
            if t + 1 < steps {
                let a = &as_[t * dd..(t + 1) * dd];
                for r in 0..d {
                    for k in 0..d {
                        ac[r * d + k] = (0..d).map(|u| a[r * d + u] * cs[t * dd + u * d + k]).sum();
                    }
                }
                let next = &mut cs[(t + 1) * dd..(t + 2) * dd];
                for r in 0..d {
                    for k in 0..d {
                        next[r * d + k] = (0..d).map(|u| ac[r * d + u] * a[u * d + k]).sum();
                    }
                }
                let (qd, qn) = qs.split_at_mut((t + 1) * d);
                matvec(a, &qd[t * d..], &mut qn[..d]);
            }
        }
        // every eta_y at once, column j of the d x ny blocks (row-major) for eta_ys[j]: the
        // same sums per pair as one pair at a time, in the same order (each from -0.0 like
        // `Iterator::sum`), with the loops over j innermost (contiguous, vectorisable)
        for (bk, &b0k) in bs.chunks_exact_mut(ny).zip(b0.iter()) {
            bk.fill(b0k);
        }
        yhat.fill(0.0);
        for t in 0..steps {
            // yhat_j += eta_y_j (b_j . x_q^(t))
            let q = &qs[t * d..(t + 1) * d];
            combine(q, &bs, &mut dot);
            for ((y, &s), &ey) in yhat.iter_mut().zip(dot.iter()).zip(eta_ys) {
                *y += ey * s;
            }
            if t + 1 < steps {
                // v_j = (I + eta_y_j C_t) b_j, b_j = A_t v_j
                matmul(&cs[t * dd..(t + 1) * dd], &bs, &mut vs);
                for (vk, bk) in vs.chunks_exact_mut(ny).zip(bs.chunks_exact(ny)) {
                    for ((v, &b), &ey) in vk.iter_mut().zip(bk).zip(eta_ys) {
                        *v = b + ey * *v;
                    }
                }
                matmul(&as_[t * dd..(t + 1) * dd], &vs, &mut bs);
            }
        }
        out[i * ny..(i + 1) * ny].copy_from_slice(&yhat);
    }
}

/// `out_j = sum_k c_k x_k[j]` for the rows `x_k` (length `out.len()`) of `x`, each sum from -0.0
/// over k in order (as `Iterator::sum` of the products), eight columns at a time in registers.
fn combine(c: &[f64], x: &[f64], out: &mut [f64]) {
    const B: usize = 8;
    let n = out.len();
    let full = n - n % B;
    for j0 in (0..full).step_by(B) {
        let mut acc = [-0.0f64; B];
        for (&ck, xk) in c.iter().zip(x.chunks_exact(n)) {
            let xs: &[f64; B] = xk[j0..j0 + B].try_into().unwrap_or(&[0.0; B]);
            for (a, &xv) in acc.iter_mut().zip(xs) {
                *a += ck * xv;
            }
        }
        out[j0..j0 + B].copy_from_slice(&acc);
    }
    for (j, o) in out.iter_mut().enumerate().skip(full) {
        *o = c
            .iter()
            .zip(x.chunks_exact(n))
            .map(|(&ck, xk)| ck * xk[j])
            .sum();
    }
}

/// Standard K-step GD from w_0 = 0 (§4.1 baselines): `w_{k+1} = w_k - eta/L X^T (X w_k - y)`.
/// Returns the predictions `w_k^T x_q` for k = 1..=K.
pub fn gd_steps(x: &[f64], y: &[f64], xq: &[f64], eta: f64, steps: usize) -> Result<Vec<f64>> {
    let (l, d) = check(x, y, xq)?;
    let xm = DMatrix::from_row_slice(l, d, x);
    let c = xm.transpose() * &xm / l as f64;
    let b = xm.transpose() * DVector::from_column_slice(y) / l as f64;
    let q = DVector::from_column_slice(xq);
    let mut w = DVector::<f64>::zeros(d);
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        w -= (&c * &w - &b) * eta;
        out.push(w.dot(&q));
    }
    Ok(out)
}

/// Ridge `(X^T X + lambda I)^{-1} X^T y` (lambda = 0: OLS, needs X^T X invertible).
pub fn ridge(x: &[f64], y: &[f64], d: usize, lambda: f64) -> Result<Vec<f64>> {
    if d == 0 || x.len() != y.len() * d {
        return Err(Error::Shape(format!(
            "x needs L*d = {} entries",
            y.len() * d
        )));
    }
    if !(lambda >= 0.0 && lambda.is_finite()) {
        return Err(Error::InvalidConfig(format!(
            "ridge lambda must be finite and >= 0 (got {lambda})"
        )));
    }
    let xm = DMatrix::from_row_slice(y.len(), d, x);
    let a = xm.transpose() * &xm + DMatrix::<f64>::identity(d, d) * lambda;
    let rhs = xm.transpose() * DVector::from_column_slice(y);
    let sol = a
        .cholesky()
        .ok_or_else(|| Error::Numerical("X^T X + lambda I is singular".into()))?
        .solve(&rhs);
    Ok(sol.iter().copied().collect())
}

/// OLS `(X^T X)^{-1} X^T y`.
pub fn ols(x: &[f64], y: &[f64], d: usize) -> Result<Vec<f64>> {
    ridge(x, y, d, 0.0)
}

/// Expected excess risk of OLS over the noise for Gaussian covariates with any covariance:
/// `E[(beta_hat - beta)^T x_q]^2 = sigma^2 d / (L - d - 1)` (needs L > d + 1).
pub fn ols_excess_risk(d: usize, l: usize, sigma2: f64) -> Result<f64> {
    if l <= d + 1 {
        return Err(Error::InvalidConfig(format!(
            "OLS excess risk needs L > d + 1 (d = {d}, L = {l})"
        )));
    }
    Ok(sigma2 * d as f64 / (l - d - 1) as f64)
}

/// Two-stage least squares (§5) from instruments `z` (L x q), regressors `x` (L x p), `y` (L):
/// `theta_hat = (Z^T Z)^{-1} Z^T X`, `X_hat = Z theta_hat`, `beta_2sls = (X_hat^T X_hat)^{-1} X_hat^T y`.
/// Returns (beta_2sls (p), theta_hat (q x p row-major)).
pub fn two_sls(
    z: &[f64],
    x: &[f64],
    y: &[f64],
    q: usize,
    p: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let l = y.len();
    if q == 0 || p == 0 || z.len() != l * q || x.len() != l * p {
        return Err(Error::Shape(format!(
            "IV data: z needs L*q = {}, x needs L*p = {} entries",
            l * q,
            l * p
        )));
    }
    let zm = DMatrix::from_row_slice(l, q, z);
    let xm = DMatrix::from_row_slice(l, p, x);
    let zz = (zm.transpose() * &zm)
        .cholesky()
        .ok_or_else(|| Error::Numerical("Z^T Z is singular".into()))?;
    let theta = zz.solve(&(zm.transpose() * &xm));
    let xh = &zm * &theta;
    let beta = (xh.transpose() * &xh)
        .cholesky()
        .ok_or_else(|| Error::Numerical("X_hat^T X_hat is singular (weak instruments)".into()))?
        .solve(&(xh.transpose() * DVector::from_column_slice(y)));
    Ok((
        beta.iter().copied().collect(),
        (0..q * p).map(|k| theta[(k / p, k % p)]).collect(),
    ))
}

// The samplers of the paper (§1, §6.1) are data: [`crate::data`]. Re-exported for the theory's
// callers.
pub use crate::data::covariance::haar_orthogonal;
pub use crate::data::iv::{iv_ideal_stage1, iv_sequence, IvSequence};
pub use crate::data::regression::{varying_cov_sequence, Sequence};
