//! The GPT-2 engine's row operations as forward/backward pairs (the matrix products are
//! [`super::gemm`]'s): LayerNorm, gelu_new, causal attention with temperature, over the rows
//! (tokens) of one chunk, the formulas of [`icl_core::families::gpt2::ops`].
//!
//! Every loop is elementwise over a row, or a reduction kept in [`LANES`] interleaved partial
//! sums added pairwise in a fixed order, so the compiler turns each into vector instructions of
//! whatever width the calling entry point is compiled for ([`crate::dispatch`]) and every level
//! gives the same bits: the lane count does not depend on the level, nothing is fused but the
//! exponential's explicit `mul_add`s, and `e^x` is [`LaneScalar::exp_lanes`].
use super::gemm::{gemm, gemm_strided, GemmScalar, Mat};
use crate::lane::LaneScalar;
use icl_core::families::gpt2::spec::LN_EPS;
use icl_core::Scalar;

/// The scalars of the GPT-2 engine's row operations.
pub trait RowScalar: Scalar + LaneScalar {}
impl<T: Scalar + LaneScalar> RowScalar for T {}

/// Partial sums of a reduction, and the block of `e^x` and `tanh`.
pub const LANES: usize = 16;

/// The lanes of a reduction added pairwise (lane k + 8 to lane k, then k + 4, k + 2, k + 1): a
/// fixed order, four additions deep instead of sixteen.
#[inline(always)]
fn fold<T: RowScalar>(mut acc: [T; LANES]) -> T {
    let mut w = LANES / 2;
    while w > 0 {
        for k in 0..w {
            acc[k] += acc[k + w];
        }
        w /= 2;
    }
    acc[0]
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

/// `y_k <- f(y_k, a_k, b_k)` along a row: one plain loop over the row, which the compiler
/// vectorises (checking at run time that the buffers are apart). Blocks of [`LANES`] copied into
/// arrays vectorise worse: the compiler unrolls the block and vectorises across blocks with
/// gathers (measured 0.5 G values/s for a LayerNorm row at AVX-512).
#[inline(always)]
fn map3<T: RowScalar>(y: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T, T) -> T) {
    for ((y, &a), &b) in y.iter_mut().zip(a).zip(b) {
        *y = f(*y, a, b);
    }
}

/// `y_k <- f(y_k, a_k)`, as [`map3`].
#[inline(always)]
fn map2<T: RowScalar>(y: &mut [T], a: &[T], f: impl Fn(T, T) -> T) {
    map3(y, a, a, |y, a, _| f(y, a));
}

/// `y += a x`.
#[inline(always)]
pub fn axpy<T: RowScalar>(y: &mut [T], a: T, x: &[T]) {
    map2(y, x, |y, x| y + a * x);
}

/// `y += x`.
#[inline(always)]
pub fn add<T: RowScalar>(y: &mut [T], x: &[T]) {
    map2(y, x, |y, x| y + x);
}

/// `y *= a`.
#[inline(always)]
fn scale<T: RowScalar>(y: &mut [T], a: T) {
    for v in y {
        *v *= a;
    }
}

/// `out = x + v`.
#[inline(always)]
fn sum_into<T: RowScalar>(out: &mut [T], x: &[T], v: &[T]) {
    map3(out, x, v, |_, x, v| x + v);
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
        sum_into(o, x, v);
    }
}

/// `acc[j] = sum_r f(r, j0 + j)` over the `n` rows, for W columns at once in registers (rows
/// inner: no chain of stores and loads through the output from one row to the next).
#[inline(always)]
fn colsum_cols<T: RowScalar, const W: usize>(
    db: &mut [T],
    n: usize,
    j0: usize,
    f: impl Fn(usize, usize) -> [T; W],
) {
    let mut acc = [T::zero(); W];
    for r in 0..n {
        let v = f(r, j0);
        for k in 0..W {
            acc[k] += v[k];
        }
    }
    let (d, _) = db[j0..].as_chunks_mut::<W>();
    let mut dv = d[0];
    for k in 0..W {
        dv[k] += acc[k];
    }
    d[0] = dv;
}

/// `db[j] += sum_r f(r, j)` for the `n` rows, j < db.len(), each sum in order of r, added to db
/// once; `f(r, j0)` returns columns `j0..j0 + W` of row r.
#[inline(always)]
fn colsum_by<T: RowScalar>(
    db: &mut [T],
    n: usize,
    f4: impl Fn(usize, usize) -> [T; 4 * LANES],
    f1: impl Fn(usize, usize) -> [T; LANES],
    f0: impl Fn(usize, usize) -> T,
) {
    let c = db.len();
    let mut j0 = 0;
    while j0 + 4 * LANES <= c {
        colsum_cols(db, n, j0, &f4);
        j0 += 4 * LANES;
    }
    while j0 + LANES <= c {
        colsum_cols(db, n, j0, &f1);
        j0 += LANES;
    }
    for (j, d) in db.iter_mut().enumerate().skip(j0) {
        let mut acc = T::zero();
        for r in 0..n {
            acc += f0(r, j);
        }
        *d += acc;
    }
}

/// `W` values of `x` from `at`.
#[inline(always)]
fn block<T: RowScalar, const W: usize>(x: &[T], at: usize) -> [T; W] {
    x[at..].as_chunks::<W>().0[0]
}

/// `db += sum_r dout[r]` over the `n` rows of `dout: [n, db.len()]` (a bias's gradient).
#[inline(always)]
pub fn colsum<T: RowScalar>(db: &mut [T], dout: &[T], n: usize) {
    let c = db.len();
    colsum_by(
        db,
        n,
        |r, j| block(dout, r * c + j),
        |r, j| block(dout, r * c + j),
        |r, j| dout[r * c + j],
    );
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
        map3(y, x, w, |_, x, w| (x - m) * s * w);
        map2(y, b, |y, b| y + b);
        mean[r] = m;
        rstd[r] = s;
    }
}

/// Backward of [`layernorm_forward`]: with `norm_i = (x_i - mean) rstd`, `db += dout`,
/// `dw += norm dout`, `dinp_i += rstd (w_i dout_i - mean_j(w_j dout_j) - norm_i
/// mean_j(w_j dout_j norm_j))`; `scratch` holds C values.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn layernorm_backward<T: RowScalar>(
    dinp: &mut [T],
    scratch: &mut [T],
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
    let (inp, dout) = (&inp[..n * c], &dout[..n * c]);
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
        // norm_i = (x_i - mean) rstd, through mean and rstd:
        // dinp_i += rstd (w_i dout_i - mean(w dout) - norm_i mean(w dout norm)); wg = w dout
        // first (in the row's scratch), then the update
        let dx = &mut dinp[r * c..][..c];
        let wg = &mut scratch[..c];
        map3(wg, w, g, |_, w, g| w * g);
        map3(dx, x, wg, |dx, x, wg| {
            dx + s * (wg - gm - (x - m) * s * gnm)
        });
    }
    // out_i = norm_i w_i + b_i: db_i += sum_r dout_ri, dw_i += sum_r norm_ri dout_ri
    colsum(db, dout, n);
    let nd = |r: usize, j: usize| (inp[r * c + j] - mean[r]) * rstd[r] * dout[r * c + j];
    colsum_by(
        dw,
        n,
        |r, j| {
            let (x, g): ([T; 4 * LANES], [T; 4 * LANES]) =
                (block(inp, r * c + j), block(dout, r * c + j));
            let (m, s) = (mean[r], rstd[r]);
            core::array::from_fn(|k| (x[k] - m) * s * g[k])
        },
        |r, j| {
            let (x, g): ([T; LANES], [T; LANES]) = (block(inp, r * c + j), block(dout, r * c + j));
            let (m, s) = (mean[r], rstd[r]);
            core::array::from_fn(|k| (x[k] - m) * s * g[k])
        },
        nd,
    );
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
fn gelu_block<T: RowScalar>(out: &mut [T; LANES], th: &mut [T; LANES], x: &[T; LANES]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    let x = *x;
    let (mut u, mut y) = ([T::zero(); LANES], [T::zero(); LANES]);
    for k in 0..LANES {
        let x = x[k];
        u[k] = s * (x + a * x * x * x);
    }
    tanh_block(&mut u);
    for k in 0..LANES {
        y[k] = half * x[k] * (T::one() + u[k]);
    }
    *th = u;
    *out = y;
}

/// `out = 0.5 x (1 + th)`, `th = tanh(sqrt(2/pi) (x + 0.044715 x^3))`, elementwise (`th` kept
/// for the backward).
#[inline(always)]
pub fn gelu_forward<T: RowScalar>(out: &mut [T], th: &mut [T], inp: &[T]) {
    let n = out.len().min(inp.len()).min(th.len());
    let (ob, orest) = out[..n].as_chunks_mut::<LANES>();
    let (tb, trest) = th[..n].as_chunks_mut::<LANES>();
    let (ib, irest) = inp[..n].as_chunks::<LANES>();
    for ((o, t), x) in ob.iter_mut().zip(tb).zip(ib) {
        gelu_block(o, t, x);
    }
    let r = irest.len();
    if r > 0 {
        let (mut o, mut t, mut x) = ([T::zero(); LANES], [T::zero(); LANES], [T::zero(); LANES]);
        x[..r].copy_from_slice(irest);
        gelu_block(&mut o, &mut t, &x);
        orest.copy_from_slice(&o[..r]);
        trest.copy_from_slice(&t[..r]);
    }
}

/// Backward of [`gelu_forward`], in place: `d <- d gelu'(inp)` (`d` holds the output's gradient
/// and becomes the input's), with the forward's `th`:
/// `gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 0.044715 x^2)`.
#[inline(always)]
pub fn gelu_backward<T: RowScalar>(d: &mut [T], inp: &[T], th: &[T]) {
    let (s, a, half) = (T::of(GELU_S), T::of(GELU_A), T::of(0.5));
    let (one, three) = (T::one(), T::of(3.0));
    map3(d, inp, th, |g, x, th| {
        let du = s * (one + three * a * x * x);
        g * (half * (one + th) + half * x * (one - th * th) * du)
    });
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
        *blk = e;
        for k in 0..LANES {
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
/// s_tu  = (q_t . k_u) / (sqrt(hd) tau)     (all of q k^T as one product)
/// p_tu  = softmax_u(s_tu)                  (att[h][t][u]; 0 for u > t)
/// out_t = sum_u p_tu v_u                   (out[t][h hd..(h+1) hd]: p v, one product)
/// ```
/// The products run over the whole `[n, n]` square, twice the causal half's work, at the matrix
/// product's speed (measured faster than vector loops over the half at T = 82, hd = 32).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_forward<T: RowScalar + GemmScalar>(
    out: &mut [T],
    att: &mut [T],
    qkv: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let factor: T = logit_scale(hd, tau);
    for h in 0..heads {
        let q = Mat::cols_of(qkv, n, 3 * c, h * hd, hd);
        let k = Mat::cols_of(qkv, n, 3 * c, c + h * hd, hd);
        let v = Mat::cols_of(qkv, n, 3 * c, 2 * c + h * hd, hd);
        let p = &mut att[h * n * n..][..n * n];
        // q_t . k_u for every pair (the half u > t is overwritten below)
        gemm(q, k.t(), p, false);
        for (t, row) in p.chunks_exact_mut(n).enumerate() {
            let (live, dead) = row.split_at_mut(t + 1);
            // s_tu = (q_t . k_u) factor; p_tu = exp(s_tu - max) / sum_u' exp(s_tu' - max)
            scale(live, factor);
            let mx = max(live);
            let inv = T::one() / exp_shifted(live, mx);
            scale(live, inv);
            dead.iter_mut().for_each(|v| *v = T::zero());
        }
        // out_t = sum_u p_tu v_u
        gemm_strided(Mat::rows(p, n, n), v, &mut out[h * hd..], c, false);
    }
}

/// Backward of [`attention_forward`]: `dqkv: [n, 3C]` is overwritten; `dp: [n, n]` is scratch.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_backward<T: RowScalar + GemmScalar>(
    dqkv: &mut [T],
    dp: &mut [T],
    dout: &[T],
    qkv: &[T],
    att: &[T],
    n: usize,
    c: usize,
    heads: usize,
    tau: f64,
) {
    let hd = c / heads;
    let factor: T = logit_scale(hd, tau);
    let dp = &mut dp[..n * n];
    for h in 0..heads {
        let q = Mat::cols_of(qkv, n, 3 * c, h * hd, hd);
        let k = Mat::cols_of(qkv, n, 3 * c, c + h * hd, hd);
        let v = Mat::cols_of(qkv, n, 3 * c, 2 * c + h * hd, hd);
        let g = Mat::cols_of(dout, n, c, h * hd, hd);
        let p = &att[h * n * n..][..n * n];
        // out = p v: dp = dout v^T, dv = p^T dout
        gemm(g, v.t(), dp, false);
        gemm_strided(
            Mat::rows(p, n, n).t(),
            g,
            &mut dqkv[2 * c + h * hd..],
            3 * c,
            false,
        );
        // p_t = softmax(s_t): ds_tu = p_tu (dp_tu - sum_u' p_tu' dp_tu') factor (p_tu = 0 for
        // u > t, so ds_tu = 0 there)
        for (pr, dr) in p.chunks_exact(n).zip(dp.chunks_exact_mut(n)) {
            let tot = dot(pr, dr);
            map2(dr, pr, |d, p| p * (d - tot) * factor);
        }
        // s = q k^T factor: dq = ds k, dk = ds^T q
        let ds = Mat::rows(&*dp, n, n);
        gemm_strided(ds, k, &mut dqkv[h * hd..], 3 * c, false);
        gemm_strided(ds.t(), q, &mut dqkv[c + h * hd..], 3 * c, false);
    }
}
