//! GPT-2's operations as forward/backward pairs, side by side (llm.c's `train_gpt2.c`), over one
//! sequence of N rows (tokens): every activation is row-major `[N, width]`.
//!
//! Each `_backward` takes the forward's arguments with `d` in front of what gets a gradient,
//! walks the forward's lines in reverse quoting each, and accumulates (`+=`) into its input and
//! parameter gradients: the caller zeroes them once. Sizes are checked by the caller
//! ([`super::model`] checks every shape at its entry).
use super::spec::LN_EPS;
use crate::Scalar;

#[inline]
fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    let mut s = T::zero();
    for (x, y) in a.iter().zip(b) {
        s += *x * *y;
    }
    s
}

/// `y += a x`
#[inline]
fn axpy<T: Scalar>(y: &mut [T], a: T, x: &[T]) {
    for (v, u) in y.iter_mut().zip(x) {
        *v += a * *u;
    }
}

// ---------------------------------------------------------------------------------------------
// nn.Linear (read_in, read_out): weight [OC, IC], out = inp W^T + b

/// `out[n][o] = b[o] + sum_i w[o][i] inp[n][i]`: `inp: [N, IC]`, `w: [OC, IC]` (PyTorch's
/// `nn.Linear` layout), `b: [OC]`, `out: [N, OC]`.
pub fn linear_forward<T: Scalar>(
    out: &mut [T],
    inp: &[T],
    w: &[T],
    b: &[T],
    n: usize,
    ic: usize,
    oc: usize,
) {
    for t in 0..n {
        let x = &inp[t * ic..][..ic];
        let y = &mut out[t * oc..][..oc];
        for o in 0..oc {
            y[o] = b[o] + dot(&w[o * ic..][..ic], x);
        }
    }
}

/// Backward of [`linear_forward`]: `dinp` (when given), `dw`, `db` accumulate.
#[allow(clippy::too_many_arguments)]
pub fn linear_backward<T: Scalar>(
    mut dinp: Option<&mut [T]>,
    dw: &mut [T],
    db: &mut [T],
    dout: &[T],
    inp: &[T],
    w: &[T],
    n: usize,
    ic: usize,
    oc: usize,
) {
    for t in 0..n {
        let x = &inp[t * ic..][..ic];
        let g = &dout[t * oc..][..oc];
        for o in 0..oc {
            // out[n][o] = b[o] + sum_i w[o][i] inp[n][i]:
            // db[o] += dout; dw[o][i] += dout inp[n][i]; dinp[n][i] += dout w[o][i]
            db[o] += g[o];
            axpy(&mut dw[o * ic..][..ic], g[o], x);
            if let Some(dx) = dinp.as_deref_mut() {
                axpy(&mut dx[t * ic..][..ic], g[o], &w[o * ic..][..ic]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Conv1D (every matrix inside GPT-2): weight [IC, OC], out = inp W + b

/// `out[n][o] = b[o] + sum_i inp[n][i] w[i][o]`: `inp: [N, IC]`, `w: [IC, OC]` (transformers'
/// `Conv1D` layout), `b: [OC]`, `out: [N, OC]`.
pub fn conv1d_forward<T: Scalar>(
    out: &mut [T],
    inp: &[T],
    w: &[T],
    b: &[T],
    n: usize,
    ic: usize,
    oc: usize,
) {
    for t in 0..n {
        let x = &inp[t * ic..][..ic];
        let y = &mut out[t * oc..][..oc];
        y.copy_from_slice(&b[..oc]);
        for i in 0..ic {
            axpy(y, x[i], &w[i * oc..][..oc]);
        }
    }
}

/// Backward of [`conv1d_forward`]: `dinp`, `dw`, `db` accumulate.
#[allow(clippy::too_many_arguments)]
pub fn conv1d_backward<T: Scalar>(
    dinp: &mut [T],
    dw: &mut [T],
    db: &mut [T],
    dout: &[T],
    inp: &[T],
    w: &[T],
    n: usize,
    ic: usize,
    oc: usize,
) {
    for t in 0..n {
        let x = &inp[t * ic..][..ic];
        let g = &dout[t * oc..][..oc];
        // out[n][o] = b[o] + ...: db[o] += dout[n][o]
        for o in 0..oc {
            db[o] += g[o];
        }
        // ... + sum_i inp[n][i] w[i][o]: dw[i][o] += inp[n][i] dout[n][o];
        // dinp[n][i] += sum_o w[i][o] dout[n][o]
        let dx = &mut dinp[t * ic..][..ic];
        for i in 0..ic {
            let wi = &w[i * oc..][..oc];
            axpy(&mut dw[i * oc..][..oc], x[i], g);
            dx[i] += dot(wi, g);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LayerNorm over the C columns of every row

/// `mean = sum_i x_i / C`, `var = sum_i (x_i - mean)^2 / C` (biased), `rstd = 1/sqrt(var + 1e-5)`,
/// `out_i = (x_i - mean) rstd w_i + b_i`: `inp`, `out: [N, C]`, `w`, `b: [C]`, `mean`, `rstd: [N]`
/// (kept for the backward).
#[allow(clippy::too_many_arguments)]
pub fn layernorm_forward<T: Scalar>(
    out: &mut [T],
    mean: &mut [T],
    rstd: &mut [T],
    inp: &[T],
    w: &[T],
    b: &[T],
    n: usize,
    c: usize,
) {
    let inv_c = T::one() / T::of(c as f64);
    for t in 0..n {
        let x = &inp[t * c..][..c];
        let mut m = T::zero();
        for v in x {
            m += *v;
        }
        m *= inv_c;
        let mut var = T::zero();
        for v in x {
            let e = *v - m;
            var += e * e;
        }
        var *= inv_c;
        let s = T::one() / (var + T::of(LN_EPS)).sqrt();
        let y = &mut out[t * c..][..c];
        for i in 0..c {
            y[i] = (x[i] - m) * s * w[i] + b[i];
        }
        mean[t] = m;
        rstd[t] = s;
    }
}

/// Backward of [`layernorm_forward`]: with `norm_i = (x_i - mean) rstd`,
/// `db += dout`, `dw += norm dout`,
/// `dinp_i += rstd (w_i dout_i - mean_j(w_j dout_j) - norm_i mean_j(w_j dout_j norm_j))`.
#[allow(clippy::too_many_arguments)]
pub fn layernorm_backward<T: Scalar>(
    dinp: &mut [T],
    dw: &mut [T],
    db: &mut [T],
    dout: &[T],
    inp: &[T],
    w: &[T],
    mean: &[T],
    rstd: &[T],
    n: usize,
    c: usize,
) {
    let inv_c = T::one() / T::of(c as f64);
    for t in 0..n {
        let x = &inp[t * c..][..c];
        let g = &dout[t * c..][..c];
        let (m, s) = (mean[t], rstd[t]);
        // the two reductions of the normalisation's backward
        let (mut gm, mut gnm) = (T::zero(), T::zero());
        for i in 0..c {
            let norm = (x[i] - m) * s;
            let dnorm = w[i] * g[i];
            gm += dnorm;
            gnm += dnorm * norm;
        }
        gm *= inv_c;
        gnm *= inv_c;
        let dx = &mut dinp[t * c..][..c];
        for i in 0..c {
            let norm = (x[i] - m) * s;
            let dnorm = w[i] * g[i];
            // out_i = norm_i w_i + b_i: db_i += dout_i, dw_i += norm_i dout_i
            db[i] += g[i];
            dw[i] += norm * g[i];
            // norm_i = (x_i - mean) rstd, through mean and rstd
            dx[i] += s * (dnorm - gm - norm * gnm);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GELU (transformers' `gelu_new`, the tanh approximation)

/// `sqrt(2 / pi)`.
const GELU_S: f64 = 0.797_884_560_802_865_4;
const GELU_A: f64 = 0.044_715;

/// `out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, elementwise.
pub fn gelu_forward<T: Scalar>(out: &mut [T], inp: &[T]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    for (y, &x) in out.iter_mut().zip(inp) {
        let u = s * (x + a * x * x * x);
        *y = half * x * (T::one() + u.tanh_l());
    }
}

/// Backward of [`gelu_forward`]: with `u = sqrt(2/pi) (x + 0.044715 x^3)`, `th = tanh u`,
/// `dinp += dout (0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 0.044715 x^2))`.
pub fn gelu_backward<T: Scalar>(dinp: &mut [T], inp: &[T], dout: &[T]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    let three = T::of(3.0);
    for ((dx, &x), &g) in dinp.iter_mut().zip(inp).zip(dout) {
        let u = s * (x + a * x * x * x);
        let th = u.tanh_l();
        let du = s * (T::one() + three * a * x * x);
        *dx += g * (half * (T::one() + th) + half * x * (T::one() - th * th) * du);
    }
}

// ---------------------------------------------------------------------------------------------
// Causal multi-head self-attention with temperature

/// `qkv: [N, 3C]` holds `q = qkv[.., 0..C]`, `k = qkv[.., C..2C]`, `v = qkv[.., 2C..3C]`; head h
/// reads columns `h hd..(h+1) hd` of each (hd = C / H). Per head, for token t and u <= t:
/// ```text
/// s_tu  = (q_t . k_u) / (sqrt(hd) tau)
/// p_tu  = softmax_u(s_tu)              (att[h][t][u]; 0 for u > t)
/// out_t = sum_u p_tu v_u               (out[t][h hd..(h+1) hd])
/// ```
/// `att: [H, N, N]` keeps the weights for the backward.
#[allow(clippy::too_many_arguments)]
pub fn attention_forward<T: Scalar>(
    out: &mut [T],
    att: &mut [T],
    qkv: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let scale = T::one() / (T::of(hd as f64).sqrt() * T::of(tau));
    for h in 0..heads {
        for t in 0..n {
            let q = &qkv[t * 3 * c + h * hd..][..hd];
            let p = &mut att[(h * n + t) * n..][..n];
            // s_tu = (q_t . k_u) scale, and its maximum over u <= t
            let mut mx = T::of(f64::NEG_INFINITY);
            for u in 0..=t {
                let s = dot(q, &qkv[u * 3 * c + c + h * hd..][..hd]) * scale;
                p[u] = s;
                if s > mx {
                    mx = s;
                }
            }
            // p_tu = exp(s_tu - max) / sum_u' exp(s_tu' - max)
            let mut tot = T::zero();
            for u in 0..=t {
                p[u] = (p[u] - mx).exp_l();
                tot += p[u];
            }
            let inv = T::one() / tot;
            for u in 0..=t {
                p[u] *= inv;
            }
            for v in &mut p[t + 1..] {
                *v = T::zero();
            }
            // out_t = sum_u p_tu v_u
            let o = &mut out[t * c + h * hd..][..hd];
            o.iter_mut().for_each(|x| *x = T::zero());
            for u in 0..=t {
                axpy(o, p[u], &qkv[u * 3 * c + 2 * c + h * hd..][..hd]);
            }
        }
    }
}

/// Backward of [`attention_forward`]: `dqkv` accumulates; `drow` is scratch of N values.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward<T: Scalar>(
    dqkv: &mut [T],
    drow: &mut [T],
    dout: &[T],
    qkv: &[T],
    att: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let scale = T::one() / (T::of(hd as f64).sqrt() * T::of(tau));
    let (qo, ko, vo) = (0, c, 2 * c);
    for h in 0..heads {
        for t in 0..n {
            let p = &att[(h * n + t) * n..][..n];
            let g = &dout[t * c + h * hd..][..hd];
            // out_t = sum_u p_tu v_u: dp_tu = v_u . dout_t, dv_u += p_tu dout_t
            for u in 0..=t {
                let v = u * 3 * c + vo + h * hd;
                drow[u] = dot(&qkv[v..][..hd], g);
                axpy(&mut dqkv[v..][..hd], p[u], g);
            }
            // p_tu = softmax_u(s_tu): ds_tu = p_tu (dp_tu - sum_u' p_tu' dp_tu')
            let mut sum = T::zero();
            for u in 0..=t {
                sum += p[u] * drow[u];
            }
            for u in 0..=t {
                drow[u] = p[u] * (drow[u] - sum);
            }
            // s_tu = (q_t . k_u) scale: dq_t += scale ds_tu k_u, dk_u += scale ds_tu q_t
            let q = t * 3 * c + qo + h * hd;
            for u in 0..=t {
                let k = u * 3 * c + ko + h * hd;
                let ds = drow[u] * scale;
                for i in 0..hd {
                    let (qi, ki) = (qkv[q + i], qkv[k + i]);
                    dqkv[q + i] += ds * ki;
                    dqkv[k + i] += ds * qi;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Residual connection

/// `out = a + b`, elementwise.
pub fn residual_forward<T: Scalar>(out: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

/// Backward of [`residual_forward`]: `da += dout`, `db += dout`.
pub fn residual_backward<T: Scalar>(da: &mut [T], db: &mut [T], dout: &[T]) {
    for ((x, y), &g) in da.iter_mut().zip(db.iter_mut()).zip(dout) {
        *x += g;
        *y += g;
    }
}

// ---------------------------------------------------------------------------------------------
// Learned positions

/// `h[t] += wpe[t]` for the N rows of `h: [N, C]` (`wpe: [>= N, C]`).
pub fn position_forward<T: Scalar>(h: &mut [T], wpe: &[T], n: usize, c: usize) {
    for (x, &p) in h[..n * c].iter_mut().zip(&wpe[..n * c]) {
        *x += p;
    }
}

/// Backward of [`position_forward`]: `dwpe[t] += dh[t]` (the input's gradient is `dh` itself).
pub fn position_backward<T: Scalar>(dwpe: &mut [T], dh: &[T], n: usize, c: usize) {
    for (g, &x) in dwpe[..n * c].iter_mut().zip(&dh[..n * c]) {
        *g += x;
    }
}

// ---------------------------------------------------------------------------------------------
// The predictions: read_out's output at the x tokens

/// `preds[i] = out[2 i]`: the prediction of pair i is read at its x token (token 2i) of `out`
/// `[2K]` (read_out at every token, as PyTorch's `prediction[:, ::2, 0]`).
pub fn select_forward<T: Scalar>(preds: &mut [T], out: &[T], k: usize) {
    for i in 0..k {
        preds[i] = out[2 * i];
    }
}

/// Backward of [`select_forward`]: `dout[2 i] += dpreds[i]` (the y tokens get nothing).
pub fn select_backward<T: Scalar>(dout: &mut [T], dpreds: &[T], k: usize) {
    for i in 0..k {
        dout[2 * i] += dpreds[i];
    }
}

// ---------------------------------------------------------------------------------------------
// Squared-error loss over the K positions

/// `loss = w sum_i (preds_i - y_i)^2` (w = 1 / (n K) makes a batch's sum the mean).
pub fn mse_forward<T: Scalar>(preds: &[T], ys: &[T], w: T) -> T {
    let mut l = T::zero();
    for (&p, &y) in preds.iter().zip(ys) {
        l += (p - y) * (p - y);
    }
    w * l
}

/// Backward of [`mse_forward`]: `dpreds_i += 2 w (preds_i - y_i)`.
pub fn mse_backward<T: Scalar>(dpreds: &mut [T], preds: &[T], ys: &[T], w: T) {
    for ((g, &p), &y) in dpreds.iter_mut().zip(preds).zip(ys) {
        *g += (w + w) * (p - y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::rel_error;
    use crate::rng::{self, Domain};
    use alloc::vec;
    use alloc::vec::Vec;

    const TOL: f64 = 1e-6;

    /// `grad(x, r)`: the gradient of `r . f(x)` at `x`.
    type Grad<'a> = dyn Fn(&[f64], &[f64]) -> Vec<f64> + 'a;

    fn normals(seq: u64, n: usize) -> Vec<f64> {
        let mut r = rng::stream(11, Domain::Eval, 0, seq);
        let mut v = vec![0.0; n];
        rng::fill_normal(&mut r, &mut v);
        v
    }

    /// Check an op's backward: `f(x)` is the op's output as a function of the packed inputs
    /// `x`; the scalar checked is `sum r . f(x)` for a random `r`, whose gradient `grad(x, r)`
    /// returns.
    fn check(name: &str, x: &[f64], n_out: usize, f: &dyn Fn(&[f64]) -> Vec<f64>, grad: &Grad<'_>) {
        let r = normals(99, n_out);
        let g = grad(x, &r);
        let mut obj = |x: &[f64]| f(x).iter().zip(&r).map(|(a, b)| a * b).sum::<f64>();
        let e = rel_error(&mut obj, x, &g, 1e-6, 1e-8);
        assert!(e < TOL, "{name}: relative error {e}");
    }

    #[test]
    fn gpt2_linear_backward_matches_fd() {
        let (n, ic, oc) = (3, 4, 5);
        let x = normals(1, n * ic + oc * ic + oc);
        let split = |x: &[f64]| {
            let (i, r) = x.split_at(n * ic);
            let (w, b) = r.split_at(oc * ic);
            (i.to_vec(), w.to_vec(), b.to_vec())
        };
        let f = |x: &[f64]| {
            let (i, w, b) = split(x);
            let mut o = vec![0.0; n * oc];
            linear_forward(&mut o, &i, &w, &b, n, ic, oc);
            o
        };
        let g = |x: &[f64], r: &[f64]| {
            let (i, w, _) = split(x);
            let (mut di, mut dw, mut db) = (vec![0.0; n * ic], vec![0.0; oc * ic], vec![0.0; oc]);
            linear_backward(Some(&mut di), &mut dw, &mut db, r, &i, &w, n, ic, oc);
            [di, dw, db].concat()
        };
        check("linear", &x, n * oc, &f, &g);
    }

    #[test]
    fn gpt2_conv1d_backward_matches_fd() {
        let (n, ic, oc) = (3, 4, 6);
        let x = normals(2, n * ic + ic * oc + oc);
        let split = |x: &[f64]| {
            let (i, r) = x.split_at(n * ic);
            let (w, b) = r.split_at(ic * oc);
            (i.to_vec(), w.to_vec(), b.to_vec())
        };
        let f = |x: &[f64]| {
            let (i, w, b) = split(x);
            let mut o = vec![0.0; n * oc];
            conv1d_forward(&mut o, &i, &w, &b, n, ic, oc);
            o
        };
        let g = |x: &[f64], r: &[f64]| {
            let (i, w, _) = split(x);
            let (mut di, mut dw, mut db) = (vec![0.0; n * ic], vec![0.0; ic * oc], vec![0.0; oc]);
            conv1d_backward(&mut di, &mut dw, &mut db, r, &i, &w, n, ic, oc);
            [di, dw, db].concat()
        };
        check("conv1d", &x, n * oc, &f, &g);
    }

    #[test]
    fn gpt2_layernorm_backward_matches_fd() {
        let (n, c) = (3, 5);
        let mut x = normals(3, n * c + 2 * c);
        // weights near 1, as trained LayerNorms are
        x[n * c..n * c + c].iter_mut().for_each(|v| *v += 1.0);
        let split = |x: &[f64]| {
            let (i, r) = x.split_at(n * c);
            let (w, b) = r.split_at(c);
            (i.to_vec(), w.to_vec(), b.to_vec())
        };
        let f = |x: &[f64]| {
            let (i, w, b) = split(x);
            let (mut o, mut m, mut s) = (vec![0.0; n * c], vec![0.0; n], vec![0.0; n]);
            layernorm_forward(&mut o, &mut m, &mut s, &i, &w, &b, n, c);
            o
        };
        let g = |x: &[f64], r: &[f64]| {
            let (i, w, b) = split(x);
            let (mut o, mut m, mut s) = (vec![0.0; n * c], vec![0.0; n], vec![0.0; n]);
            layernorm_forward(&mut o, &mut m, &mut s, &i, &w, &b, n, c);
            let (mut di, mut dw, mut db) = (vec![0.0; n * c], vec![0.0; c], vec![0.0; c]);
            layernorm_backward(&mut di, &mut dw, &mut db, r, &i, &w, &m, &s, n, c);
            [di, dw, db].concat()
        };
        check("layernorm", &x, n * c, &f, &g);
    }

    #[test]
    fn gpt2_gelu_backward_matches_fd() {
        let mut x = normals(4, 12);
        x.iter_mut().for_each(|v| *v *= 2.0);
        let f = |x: &[f64]| {
            let mut o = vec![0.0; x.len()];
            gelu_forward(&mut o, x);
            o
        };
        let g = |x: &[f64], r: &[f64]| {
            let mut d = vec![0.0; x.len()];
            gelu_backward(&mut d, x, r);
            d
        };
        check("gelu", &x, 12, &f, &g);
        // gelu_new at a few points: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        let mut o = [0.0; 3];
        gelu_forward(&mut o, &[0.0, 1.0, -2.0]);
        let want = |x: f64| {
            0.5 * x
                * (1.0
                    + libm::tanh(
                        libm::sqrt(2.0 / core::f64::consts::PI) * (x + 0.044715 * x * x * x),
                    ))
        };
        for (a, x) in o.iter().zip([0.0, 1.0, -2.0]) {
            assert!((a - want(x)).abs() < 1e-15);
        }
    }

    #[test]
    fn gpt2_attention_backward_matches_fd() {
        let (n, c, h, tau) = (4, 6, 2, 0.7);
        let x = normals(5, n * 3 * c);
        let f = |x: &[f64]| {
            let (mut o, mut a) = (vec![0.0; n * c], vec![0.0; h * n * n]);
            attention_forward(&mut o, &mut a, x, n, c, h, tau);
            o
        };
        let g = |x: &[f64], r: &[f64]| {
            let (mut o, mut a) = (vec![0.0; n * c], vec![0.0; h * n * n]);
            attention_forward(&mut o, &mut a, x, n, c, h, tau);
            let (mut d, mut row) = (vec![0.0; n * 3 * c], vec![0.0; n]);
            attention_backward(&mut d, &mut row, r, x, &a, n, c, h, tau);
            d
        };
        check("attention", &x, n * c, &f, &g);
        // the first token attends to itself alone: out_0 = v_0
        let o = f(&x);
        for i in 0..c {
            assert!((o[i] - x[2 * c + i]).abs() < 1e-15);
        }
    }

    #[test]
    fn gpt2_residual_position_select_mse_backward_match_fd() {
        let n = 6;
        let x = normals(6, 2 * n);
        let f = |x: &[f64]| {
            let mut o = vec![0.0; n];
            residual_forward(&mut o, &x[..n], &x[n..]);
            o
        };
        let g = |_: &[f64], r: &[f64]| {
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            residual_backward(&mut a, &mut b, r);
            [a, b].concat()
        };
        check("residual", &x, n, &f, &g);

        // position: h [2, 3] += wpe[..2] (a table of 3 rows); the gradient of wpe's
        // unused row is zero
        let (t, c) = (2, 3);
        let x = normals(7, t * c + 3 * c);
        let f = |x: &[f64]| {
            let mut h = x[..t * c].to_vec();
            position_forward(&mut h, &x[t * c..], t, c);
            h
        };
        let g = |_: &[f64], r: &[f64]| {
            let mut dwpe = vec![0.0; 3 * c];
            position_backward(&mut dwpe, r, t, c);
            [r.to_vec(), dwpe].concat()
        };
        check("position", &x, t * c, &f, &g);

        // select then mse: a scalar, checked with r = [1]
        let k = 3;
        let x = normals(8, 2 * k + k);
        let w = 0.3;
        let f = |x: &[f64]| {
            let mut p = vec![0.0; k];
            select_forward(&mut p, &x[..2 * k], k);
            vec![mse_forward(&p, &x[2 * k..], w)]
        };
        let g = |x: &[f64], r: &[f64]| {
            let mut p = vec![0.0; k];
            select_forward(&mut p, &x[..2 * k], k);
            let mut dp = vec![0.0; k];
            mse_backward(&mut dp, &p, &x[2 * k..], w * r[0]);
            let mut dout = vec![0.0; 2 * k];
            select_backward(&mut dout, &dp, k);
            // d/dy = -d/dpred
            let dy: Vec<f64> = dp.iter().map(|v| -v).collect();
            [dout, dy].concat()
        };
        check("select+mse", &x, 1, &f, &g);
    }
}
