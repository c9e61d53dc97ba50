//! The GPT-2 engine's row operations as forward/backward pairs (the matrix products are
//! [`super::gemm`]'s): LayerNorm, gelu_new, causal attention with temperature, over the rows
//! (tokens) of one chunk, the formulas of [`icl_core::families::gpt2::ops`].
//!
//! Every loop is elementwise over a row, or a reduction kept in [`LANES`] interleaved partial
//! sums added in lane order, so the compiler turns each into vector instructions of whatever
//! width the calling entry point is compiled for ([`crate::dispatch`]) and every level gives
//! the same bits: the lane count does not depend on the level, nothing is fused but the
//! exponential's explicit `mul_add`s, and `e^x` is [`LaneScalar::exp_lanes`].
use crate::lane::LaneScalar;
use icl_core::families::gpt2::spec::LN_EPS;
use icl_core::Scalar;

/// The scalars of the GPT-2 engine's row operations.
pub trait RowScalar: Scalar + LaneScalar {}
impl<T: Scalar + LaneScalar> RowScalar for T {}

/// Partial sums of a reduction, and the block of `e^x` and `tanh`.
pub const LANES: usize = 16;

/// The lanes of a reduction added in lane order.
#[inline(always)]
fn fold<T: RowScalar>(acc: [T; LANES]) -> T {
    let mut s = T::zero();
    for v in acc {
        s += v;
    }
    s
}

/// `sum_i x_i`.
#[inline(always)]
pub fn sum<T: RowScalar>(x: &[T]) -> T {
    let mut acc = [T::zero(); LANES];
    let (blocks, rest) = x.as_chunks::<LANES>();
    for blk in blocks {
        for k in 0..LANES {
            acc[k] += blk[k];
        }
    }
    for (k, v) in rest.iter().enumerate() {
        acc[k] += *v;
    }
    fold(acc)
}

/// `sum_i (x_i - m)^2`.
#[inline(always)]
fn sum_sq_dev<T: RowScalar>(x: &[T], m: T) -> T {
    let mut acc = [T::zero(); LANES];
    let (blocks, rest) = x.as_chunks::<LANES>();
    for blk in blocks {
        for k in 0..LANES {
            let e = blk[k] - m;
            acc[k] += e * e;
        }
    }
    for (k, v) in rest.iter().enumerate() {
        let e = *v - m;
        acc[k] += e * e;
    }
    fold(acc)
}

/// `sum_i a_i b_i`.
#[inline(always)]
pub fn dot<T: RowScalar>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [T::zero(); LANES];
    let (ba, ra) = a.as_chunks::<LANES>();
    let (bb, rb) = b.as_chunks::<LANES>();
    for (x, y) in ba.iter().zip(bb) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
        acc[k] += *x * *y;
    }
    fold(acc)
}

/// `max_i x_i` (`x` not empty).
#[inline(always)]
fn max<T: RowScalar>(x: &[T]) -> T {
    let mut acc = [x[0]; LANES];
    let (blocks, rest) = x.as_chunks::<LANES>();
    for blk in blocks {
        for k in 0..LANES {
            acc[k] = if blk[k] > acc[k] { blk[k] } else { acc[k] };
        }
    }
    for (k, v) in rest.iter().enumerate() {
        acc[k] = if *v > acc[k] { *v } else { acc[k] };
    }
    let mut m = acc[0];
    for v in acc {
        m = if v > m { v } else { m };
    }
    m
}

/// `y += a x`.
#[inline(always)]
pub fn axpy<T: RowScalar>(y: &mut [T], a: T, x: &[T]) {
    for (v, u) in y.iter_mut().zip(x) {
        *v += a * *u;
    }
}

/// `y += x`.
#[inline(always)]
pub fn add<T: RowScalar>(y: &mut [T], x: &[T]) {
    for (v, u) in y.iter_mut().zip(x) {
        *v += *u;
    }
}

/// `out[r] = v` for each of the `n` rows of `out: [n, v.len()]` (a bias before a product).
#[inline(always)]
pub fn broadcast_rows<T: RowScalar>(out: &mut [T], v: &[T], n: usize) {
    for row in out[..n * v.len()].chunks_exact_mut(v.len()) {
        row.copy_from_slice(v);
    }
}

/// `out = a + v` row-wise: `out, a: [n, v.len()]` (a residual and a bias before a product).
#[inline(always)]
pub fn add_rows<T: RowScalar>(out: &mut [T], a: &[T], v: &[T], n: usize) {
    let c = v.len();
    for (o, x) in out[..n * c].chunks_exact_mut(c).zip(a.chunks_exact(c)) {
        for ((y, &p), &q) in o.iter_mut().zip(x).zip(v) {
            *y = p + q;
        }
    }
}

/// `db += sum_r dout[r]` over the `n` rows of `dout: [n, db.len()]` (a bias's gradient).
#[inline(always)]
pub fn colsum<T: RowScalar>(db: &mut [T], dout: &[T], n: usize) {
    let c = db.len();
    for row in dout[..n * c].chunks_exact(c) {
        add(db, row);
    }
}

// ---------------------------------------------------------------------------------------------
// LayerNorm over the C columns of every row

/// `out = (x - mean) rstd w + b` row-wise, keeping `mean` and `rstd = 1/sqrt(var + 1e-5)`:
/// `inp`, `out: [N, C]`, `w`, `b: [C]`, `mean`, `rstd: [N]`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn layernorm_forward<T: RowScalar>(
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
    let eps = T::of(LN_EPS);
    let (w, b) = (&w[..c], &b[..c]);
    for r in 0..n {
        let x = &inp[r * c..][..c];
        let m = sum(x) * inv_c;
        let var = sum_sq_dev(x, m) * inv_c;
        let s = T::one() / (var + eps).lane_sqrt();
        let y = &mut out[r * c..][..c];
        for (((y, &x), &w), &b) in y.iter_mut().zip(x).zip(w).zip(b) {
            *y = (x - m) * s * w + b;
        }
        mean[r] = m;
        rstd[r] = s;
    }
}

/// Backward of [`layernorm_forward`]: with `norm_i = (x_i - mean) rstd`, `db += dout`,
/// `dw += norm dout`, `dinp_i += rstd (w_i dout_i - mean_j(w_j dout_j) - norm_i
/// mean_j(w_j dout_j norm_j))`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn layernorm_backward<T: RowScalar>(
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
    let (w, dw, db) = (&w[..c], &mut dw[..c], &mut db[..c]);
    for r in 0..n {
        let x = &inp[r * c..][..c];
        let g = &dout[r * c..][..c];
        let (m, s) = (mean[r], rstd[r]);
        // the two reductions: mean_j(w_j dout_j), mean_j(w_j dout_j norm_j)
        let (mut am, mut anm) = ([T::zero(); LANES], [T::zero(); LANES]);
        let ((xb, xr), (gb, gr), (wb, wr)) = (
            x.as_chunks::<LANES>(),
            g.as_chunks::<LANES>(),
            w.as_chunks::<LANES>(),
        );
        for ((x, g), w) in xb.iter().zip(gb).zip(wb) {
            for k in 0..LANES {
                let dnorm = w[k] * g[k];
                am[k] += dnorm;
                anm[k] += dnorm * ((x[k] - m) * s);
            }
        }
        for (k, ((&x, &g), &w)) in xr.iter().zip(gr).zip(wr).enumerate() {
            let dnorm = w * g;
            am[k] += dnorm;
            anm[k] += dnorm * ((x - m) * s);
        }
        let (gm, gnm) = (fold(am) * inv_c, fold(anm) * inv_c);
        let dx = &mut dinp[r * c..][..c];
        for (((((dx, &x), &g), &w), dw), db) in dx
            .iter_mut()
            .zip(x)
            .zip(g)
            .zip(w)
            .zip(dw.iter_mut())
            .zip(db.iter_mut())
        {
            let norm = (x - m) * s;
            let dnorm = w * g;
            // out_i = norm_i w_i + b_i: db_i += dout_i, dw_i += norm_i dout_i
            *db += g;
            *dw += norm * g;
            // norm_i = (x_i - mean) rstd, through mean and rstd
            *dx += s * (dnorm - gm - norm * gnm);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gelu_new, with tanh u = 1 - 2 / (e^{2u} + 1)

/// `sqrt(2 / pi)`.
const GELU_S: f64 = 0.797_884_560_802_865_4;
const GELU_A: f64 = 0.044_715;

/// tanh of a block: `th_k = 1 - 2 / (e^{2 u_k} + 1)` (the exponential saturates, so +-1 at the
/// ends without overflow trouble).
#[inline(always)]
fn tanh_block<T: RowScalar>(u: &mut [T; LANES]) {
    for v in u.iter_mut() {
        *v = *v + *v;
    }
    T::exp_lanes(u);
    let (one, two) = (T::one(), T::one() + T::one());
    for v in u.iter_mut() {
        *v = one - two / (*v + one);
    }
}

/// One block of [`gelu_forward`].
#[inline(always)]
fn gelu_block<T: RowScalar>(out: &mut [T], x: &[T; LANES]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    let mut th = [T::zero(); LANES];
    for k in 0..LANES {
        let x = x[k];
        th[k] = s * (x + a * x * x * x);
    }
    tanh_block(&mut th);
    for (k, y) in out.iter_mut().enumerate().take(LANES) {
        *y = half * x[k] * (T::one() + th[k]);
    }
}

/// `out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, elementwise.
#[inline(always)]
pub fn gelu_forward<T: RowScalar>(out: &mut [T], inp: &[T]) {
    let n = out.len().min(inp.len());
    let (ob, orest) = out[..n].as_chunks_mut::<LANES>();
    let (ib, irest) = inp[..n].as_chunks::<LANES>();
    for (o, x) in ob.iter_mut().zip(ib) {
        gelu_block(o, x);
    }
    if !irest.is_empty() {
        let mut x = [T::zero(); LANES];
        x[..irest.len()].copy_from_slice(irest);
        gelu_block(orest, &x);
    }
}

/// One block of [`gelu_backward`].
#[inline(always)]
fn gelu_backward_block<T: RowScalar>(d: &mut [T], x: &[T; LANES]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    let (one, three) = (T::one(), T::of(3.0));
    let mut th = [T::zero(); LANES];
    for k in 0..LANES {
        let x = x[k];
        th[k] = s * (x + a * x * x * x);
    }
    tanh_block(&mut th);
    for (k, g) in d.iter_mut().enumerate().take(LANES) {
        let (x, th) = (x[k], th[k]);
        let du = s * (one + three * a * x * x);
        *g = *g * (half * (one + th) + half * x * (one - th * th) * du);
    }
}

/// Backward of [`gelu_forward`], in place: `d <- d gelu'(inp)` (`d` holds the output's gradient
/// and becomes the input's), with `u = sqrt(2/pi) (x + 0.044715 x^3)`, `th = tanh u`,
/// `gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 0.044715 x^2)`.
#[inline(always)]
pub fn gelu_backward<T: RowScalar>(d: &mut [T], inp: &[T]) {
    let n = d.len().min(inp.len());
    let (db, drest) = d[..n].as_chunks_mut::<LANES>();
    let (ib, irest) = inp[..n].as_chunks::<LANES>();
    for (g, x) in db.iter_mut().zip(ib) {
        gelu_backward_block(g, x);
    }
    if !irest.is_empty() {
        let mut x = [T::zero(); LANES];
        x[..irest.len()].copy_from_slice(irest);
        gelu_backward_block(drest, &x);
    }
}

// ---------------------------------------------------------------------------------------------
// Causal multi-head self-attention with temperature, over one sequence

/// `p_u <- e^(p_u - mx)`, returning `sum_u p_u`.
#[inline(always)]
fn exp_shifted<T: RowScalar>(p: &mut [T], mx: T) -> T {
    let mut acc = [T::zero(); LANES];
    let (blocks, rest) = p.as_chunks_mut::<LANES>();
    for blk in blocks {
        let mut e = [T::zero(); LANES];
        for k in 0..LANES {
            e[k] = blk[k] - mx;
        }
        T::exp_lanes(&mut e);
        for k in 0..LANES {
            blk[k] = e[k];
            acc[k] += e[k];
        }
    }
    if !rest.is_empty() {
        let mut e = [T::zero(); LANES];
        for (k, v) in rest.iter().enumerate() {
            e[k] = *v - mx;
        }
        T::exp_lanes(&mut e);
        for (k, v) in rest.iter_mut().enumerate() {
            *v = e[k];
            acc[k] += e[k];
        }
    }
    fold(acc)
}

/// `1 / (sqrt(hd) tau)`, the logits' factor.
#[inline(always)]
fn logit_scale<T: RowScalar>(hd: usize, tau: f64) -> T {
    T::one() / (T::of(hd as f64).lane_sqrt() * T::of(tau))
}

/// Causal attention of one sequence of `n` tokens: `qkv: [n, 3C]` (q | k | v, head h at columns
/// `h hd..(h+1) hd` of each), per head, for token t and u <= t:
/// ```text
/// s_tu  = (q_t . k_u) / (sqrt(hd) tau)
/// p_tu  = softmax_u(s_tu)              (att[h][t][u], u <= t; the rest is not written)
/// out_t = sum_u p_tu v_u               (out[t][h hd..(h+1) hd])
/// ```
/// `kt: [hd, n]` is scratch (head h's keys, transposed, so the logits of a query are `hd`
/// vector updates over u).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_forward<T: RowScalar>(
    out: &mut [T],
    att: &mut [T],
    kt: &mut [T],
    qkv: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let scale: T = logit_scale(hd, tau);
    for h in 0..heads {
        for u in 0..n {
            let k = &qkv[u * 3 * c + c + h * hd..][..hd];
            for (i, &v) in k.iter().enumerate() {
                kt[i * n + u] = v;
            }
        }
        for t in 0..n {
            let q = &qkv[t * 3 * c + h * hd..][..hd];
            let p = &mut att[(h * n + t) * n..][..t + 1];
            // s_tu = (q_t . k_u) scale (the dot in order of i, as the reference's)
            p.iter_mut().for_each(|v| *v = T::zero());
            for (i, &qi) in q.iter().enumerate() {
                axpy(p, qi, &kt[i * n..][..t + 1]);
            }
            p.iter_mut().for_each(|v| *v *= scale);
            // p_tu = exp(s_tu - max) / sum_u' exp(s_tu' - max)
            let mx = max(p);
            let inv = T::one() / exp_shifted(p, mx);
            p.iter_mut().for_each(|v| *v *= inv);
            // out_t = sum_u p_tu v_u
            let o = &mut out[t * c + h * hd..][..hd];
            o.iter_mut().for_each(|x| *x = T::zero());
            for (u, &pu) in p.iter().enumerate() {
                axpy(o, pu, &qkv[u * 3 * c + 2 * c + h * hd..][..hd]);
            }
        }
    }
}

/// Backward of [`attention_forward`]: `dqkv: [n, 3C]` is overwritten; `vt: [hd, n]`, `drow: [n]`
/// and `dq: [hd]` are scratch.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_backward<T: RowScalar>(
    dqkv: &mut [T],
    vt: &mut [T],
    drow: &mut [T],
    dq: &mut [T],
    dout: &[T],
    qkv: &[T],
    att: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let scale: T = logit_scale(hd, tau);
    dqkv[..n * 3 * c].iter_mut().for_each(|v| *v = T::zero());
    let dq = &mut dq[..hd];
    for h in 0..heads {
        for u in 0..n {
            let v = &qkv[u * 3 * c + 2 * c + h * hd..][..hd];
            for (i, &x) in v.iter().enumerate() {
                vt[i * n + u] = x;
            }
        }
        for t in 0..n {
            let p = &att[(h * n + t) * n..][..t + 1];
            let g = &dout[t * c + h * hd..][..hd];
            let dp = &mut drow[..t + 1];
            // out_t = sum_u p_tu v_u: dp_tu = v_u . dout_t, dv_u += p_tu dout_t
            dp.iter_mut().for_each(|v| *v = T::zero());
            for (i, &gi) in g.iter().enumerate() {
                axpy(dp, gi, &vt[i * n..][..t + 1]);
            }
            for (u, &pu) in p.iter().enumerate() {
                axpy(&mut dqkv[u * 3 * c + 2 * c + h * hd..][..hd], pu, g);
            }
            // p_tu = softmax_u(s_tu): ds_tu = p_tu (dp_tu - sum_u' p_tu' dp_tu'), times scale
            let tot = dot(p, dp);
            for (d, &pu) in dp.iter_mut().zip(p) {
                *d = pu * (*d - tot) * scale;
            }
            // s_tu = (q_t . k_u) scale: dq_t += ds_tu k_u, dk_u += ds_tu q_t
            let q = &qkv[t * 3 * c + h * hd..][..hd];
            dq.iter_mut().for_each(|v| *v = T::zero());
            for (u, &ds) in dp.iter().enumerate() {
                axpy(dq, ds, &qkv[u * 3 * c + c + h * hd..][..hd]);
                axpy(&mut dqkv[u * 3 * c + c + h * hd..][..hd], ds, q);
            }
            add(&mut dqkv[t * 3 * c + h * hd..][..hd], dq);
        }
    }
}
