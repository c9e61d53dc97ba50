//! [`MlSimd`]: the multi-layer transformer engine. One sequence per lane of [`Lv`] (8 sequences
//! per group), the kernel's token width D a compile-time constant (tokens of width 2..=24, so d
//! up to 23 for regression, each run at the smallest of the kernel widths in `with_d!` that holds
//! it, zero-padded; wider tokens run the scalar reference, single-threaded), rayon over fixed chunks of
//! [`ML_CHUNK`] sequences whose partial gradients are added in chunk order, so any thread count
//! gives the same bits. The arithmetic is
//! [`icl_core::families::stack::layer`]'s, lane-wise; the kernels are compiled inside AVX2 /
//! AVX-512 entry points ([`crate::dispatch`]) and at the baseline (on x86-64 one kernel for every
//! width, `group_any`).
use crate::dispatch::{self, Level};
use crate::lane::{LaneScalar, Lv, W};
use crate::par;
use icl_core::config::AttentionKind;
use icl_core::data::batch::RowsFill;
use icl_core::families::stack::layers::{Pass, StackCircuits, StackSpec};
use icl_core::families::stack::{StackKernels, StackReference};
use icl_core::{Batch, Result, Scalar};

/// Sequences per chunk: the unit of parallel work and of the fixed reduction order.
pub const ML_CHUNK: usize = 16;

/// The scalars the engine runs in, with the widest level worth using: on the Zen 4 machine this
/// was measured on (`examples/multilayer.rs`, paper's 3-layer size, one thread), f32 runs fastest
/// at AVX-512 (26 vs 23 steps per CPU-second at AVX2; the exponentials of four keys run as two
/// 512-bit chains), f64 too (11 vs 7.7).
pub trait MlScalar: Scalar + LaneScalar {
    const WIDEST: Level;
}
impl MlScalar for f32 {
    const WIDEST: Level = Level::Avx512;
}
impl MlScalar for f64 {
    const WIDEST: Level = Level::Avx512;
}

/// The SIMD engine for transformer stacks.
#[derive(Debug, Clone)]
pub struct MlSimd<T> {
    level: Level,
    _t: core::marker::PhantomData<T>,
}

impl<T: MlScalar> Default for MlSimd<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: MlScalar> MlSimd<T> {
    /// At the process's [`dispatch::level`], at most [`MlScalar::WIDEST`].
    pub fn new() -> Self {
        Self::with_level(dispatch::level().min(T::WIDEST))
    }
    /// At `level` (capped at what the CPU has).
    pub fn with_level(level: Level) -> Self {
        MlSimd {
            level: level.min(dispatch::detected()),
            _t: core::marker::PhantomData,
        }
    }
    /// The level the kernels run at.
    pub fn level(&self) -> Level {
        self.level
    }
}

/// What one group computes.
#[derive(Clone, Copy)]
struct Job<'a, T> {
    spec: &'a StackSpec,
    /// The tokens' stride in the workspace: the kernel's width D (zero rows and columns past the
    /// token width `spec.e`), or `spec.e` for the kernel of any width ([`group_any`]).
    d: usize,
    /// Circuits splatted to lanes and padded to the stride d: phi, psi, each [sets, H, d, d].
    phi: &'a [Lv<T>],
    psi: &'a [Lv<T>],
    pass: Pass,
    batch: &'a Batch<T>,
    /// First sequence of the group and how many are real (the rest are padding of weight 0).
    b0: usize,
    real: usize,
    /// Loss weight of a real sequence: 1 / (n n_out).
    w: T,
}

/// Per-thread workspace of one group.
#[derive(Debug, Default)]
struct Ws<T: LaneScalar> {
    zs: Vec<Lv<T>>,
    p: Vec<Lv<T>>,
    m: Vec<Lv<T>>,
    a: Vec<Lv<T>>,
    dz: Vec<Lv<T>>,
    dz2: Vec<Lv<T>>,
    dphi: Vec<Lv<T>>,
    dpsi: Vec<Lv<T>>,
    /// One column's da_ij (backward).
    da: Vec<Lv<T>>,
    loss: Lv<T>,
}

/// A chunk's partial results.
struct Partial<T> {
    loss: T,
    phi: Vec<T>,
    psi: Vec<T>,
}

/// `v` with `n` zeros.
#[inline(always)]
fn resize<T: LaneScalar>(v: &mut Vec<Lv<T>>, n: usize) {
    v.clear();
    v.resize(n, Lv::zero());
}

/// `v` with `n` values, for buffers that are written before they are read (no clearing).
#[inline(always)]
fn fit<T: LaneScalar>(v: &mut Vec<Lv<T>>, n: usize) {
    v.resize(n, Lv::zero());
}

/// Load the group's tokens (lane k = sequence b0 + k, padding repeats the first) into `z`, each
/// token's `e` rows followed by d - e zero rows.
#[inline(always)]
fn gather<T: LaneScalar>(job: &Job<'_, T>, z: &mut [Lv<T>], d: usize) {
    let b = job.batch;
    let e = job.spec.e;
    let w = (b.len + 1) * e;
    for k in 0..W {
        let s = job.b0 + if k < job.real { k } else { 0 };
        let src = &b.z[s * w..(s + 1) * w];
        for (tok, zt) in src.chunks_exact(e).zip(z.chunks_exact_mut(d)) {
            for (v, &x) in zt.iter_mut().zip(tok) {
                v.0[k] = x;
            }
        }
    }
    if e < d {
        for zt in z.chunks_exact_mut(d) {
            zt[e..].fill(Lv::zero());
        }
    }
}

/// The d rows of one token (or circuit row) at the front of `src`, in an array of the kernel's
/// width D >= d (rows past d zero).
#[inline(always)]
fn load<T: LaneScalar, const D: usize>(src: &[Lv<T>], d: usize) -> [Lv<T>; D] {
    let src = &src[..d];
    core::array::from_fn(|k| if k < d { src[k] } else { Lv::zero() })
}

/// The tokens of `z` (d rows each) from token `first` on. Loops over keys go through this rather
/// than index `z[i * d + k]`: each token is then a slice of length d, so the compiler drops the
/// bounds checks that it otherwise keeps in every key's iteration (one compare and branch per row:
/// 15-31 % of the hot loops' cycles by `llvm-mca`'s Alder Lake-P model, up to 29 % by its Zen 3
/// one; docs/speed.md).
#[inline(always)]
fn tokens<T: LaneScalar>(
    z: &[Lv<T>],
    first: usize,
    d: usize,
) -> core::slice::ChunksExact<'_, Lv<T>> {
    z[first * d..].chunks_exact(d)
}

/// `a . b` over the d rows of one token.
#[inline(always)]
fn dot<T: LaneScalar>(a: &[Lv<T>], b: &[Lv<T>], d: usize) -> Lv<T> {
    let (a, b) = (&a[..d], &b[..d]);
    let mut acc = Lv::zero();
    for k in 0..d {
        acc += a[k] * b[k];
    }
    acc
}

/// Keys per block of the softmax's exponentials: independent polynomial chains side by side
/// (one chain is ~25 dependent operations; one at a time leaves the vector pipes idle).
const EXP_BLOCK: usize = 4;

/// `x_i <- e^(x_i - mx)` and `tot + sum_i x_i` (added in order of i).
#[inline(always)]
fn exp_shifted<T: LaneScalar>(x: &mut [Lv<T>], mx: Lv<T>, mut tot: Lv<T>) -> Lv<T> {
    let mut blocks = x.chunks_exact_mut(EXP_BLOCK);
    for blk in &mut blocks {
        let mut buf = [T::ZERO; EXP_BLOCK * W];
        for (b, v) in blk.iter().enumerate() {
            for k in 0..W {
                buf[b * W + k] = v.0[k] - mx.0[k];
            }
        }
        T::exp_lanes(&mut buf);
        for (b, v) in blk.iter_mut().enumerate() {
            for k in 0..W {
                v.0[k] = buf[b * W + k];
            }
            tot += *v;
        }
    }
    for v in blocks.into_remainder() {
        let e = (*v - mx).exp();
        *v = e;
        tot += e;
    }
    tot
}

/// The keys of column `j` as at most two ranges (the column itself left out under
/// `exclude_self`).
#[inline(always)]
fn key_ranges(l: usize, j: usize, excl: bool) -> [core::ops::Range<usize>; 2] {
    if excl && j < l {
        [0..j, j + 1..l]
    } else {
        [0..l, l..l]
    }
}

/// Forward of layer `t` (parameter set `set`) from `zs[t]` to `zs[t+1]` for the columns `j0..n`
/// (the others keep the residual only), keeping p, m and, with `keep`, the attention weights a
/// (without, at most two columns' weights at a time in `ws.a[..2L]`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn layer_forward<T: LaneScalar, const D: usize>(
    job: &Job<'_, T>,
    ws: &mut Ws<T>,
    t: usize,
    set: usize,
    n: usize,
    j0: usize,
    keep: bool,
    d: usize,
) {
    let (l, h_n) = (n - 1, job.spec.heads);
    let nd = n * d;
    let (zin, zout) = ws.zs.split_at_mut((t + 1) * nd);
    let zin = &zin[t * nd..];
    let zout = &mut zout[..nd];
    zout.copy_from_slice(&zin[..nd]);
    let linear = job.spec.attention == AttentionKind::Linear;
    let excl = job.pass.exclude_self;
    for h in 0..h_n {
        let c = (set * h_n + h) * d * d;
        let (phi, psi) = (&job.phi[c..c + d * d], &job.psi[c..c + d * d]);
        let base = (t * h_n + h) * nd;
        let p = &mut ws.p[base..base + nd];
        let m = &mut ws.m[base..base + nd];
        let a = if keep {
            &mut ws.a[(t * h_n + h) * n * l..][..n * l]
        } else {
            &mut ws.a[..2 * l]
        };
        // p_j = Phi z_j
        for j in j0..n {
            let zj: [Lv<T>; D] = load::<T, D>(&zin[j * d..], d);
            for r in 0..d {
                p[j * d + r] = dot(&phi[r * d..r * d + d], &zj, d);
            }
        }
        let mut j = j0;
        while j < n {
            if !linear && !keep && j + 1 < n {
                // forward-only softmax passes run the columns two at a time: each key's tokens
                // feed both (same arithmetic per column as one at a time; measured faster for the
                // IV leave-one-out pass, not for training's forward, which keeps every weight)
                let (aj, ak) = if keep {
                    a[j * l..(j + 2) * l].split_at_mut(l)
                } else {
                    a[..2 * l].split_at_mut(l)
                };
                softmax_pair::<T, D>(zin, p, m, zout, psi, aj, ak, j, l, excl, d);
                j += 2;
                continue;
            }
            let aj = if keep {
                &mut a[j * l..(j + 1) * l]
            } else {
                &mut a[..l]
            };
            let pj: [Lv<T>; D] = load::<T, D>(&p[j * d..], d);
            let keys = key_ranges(l, j, excl);
            // s_ij = z_i . p_j; a_ij = s_ij / K_j (linear) or, by way of e_ij = exp(s_ij - max_i
            // s_ij) kept in a, softmax_i(s_ij)
            let inv = if linear {
                let k_j = if excl && j < l { l - 1 } else { l };
                for r in &keys {
                    for (a, zi) in aj[r.clone()].iter_mut().zip(tokens(zin, r.start, d)) {
                        *a = dot(zi, &pj, d);
                    }
                }
                Lv::splat(T::lane_of(1.0 / k_j as f64))
            } else {
                let mut mx = Lv::splat(T::lane_of(f64::NEG_INFINITY));
                for r in &keys {
                    for (a, zi) in aj[r.clone()].iter_mut().zip(tokens(zin, r.start, d)) {
                        let s = dot(zi, &pj, d);
                        *a = s;
                        mx = mx.max(s);
                    }
                }
                let mut tot = Lv::zero();
                for r in &keys {
                    tot = exp_shifted::<T>(&mut aj[r.clone()], mx, tot);
                }
                tot.recip()
            };
            if excl && j < l {
                aj[j] = Lv::zero();
            }
            // a_ij = e_ij / sum_i e_ij (or s_ij / K_j); m_j = sum_i a_ij z_i
            let mut mj = [Lv::<T>::zero(); D];
            for (a, zi) in aj[..l].iter_mut().zip(tokens(zin, 0, d)) {
                let ai = *a * inv;
                *a = ai;
                for (mk, &z) in mj.iter_mut().zip(zi) {
                    *mk += ai * z;
                }
            }
            m[j * d..(j + 1) * d].copy_from_slice(&mj[..d]);
            // out_j += Psi m_j
            for r in 0..d {
                zout[j * d + r] += dot(&psi[r * d..r * d + d], &mj, d);
            }
            j += 1;
        }
    }
}

/// The softmax forward of columns `j` and `j+1` of one head (the single-column loop of
/// [`layer_forward`] for both, sharing the sweeps over the keys): scores, per-column maximum over
/// its keys, exponentials, then normalisation and mixing, and `out += Psi m`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn softmax_pair<T: LaneScalar, const D: usize>(
    zin: &[Lv<T>],
    p: &[Lv<T>],
    m: &mut [Lv<T>],
    zout: &mut [Lv<T>],
    psi: &[Lv<T>],
    aj: &mut [Lv<T>],
    ak: &mut [Lv<T>],
    j: usize,
    l: usize,
    excl: bool,
    d: usize,
) {
    let pj: [Lv<T>; D] = load::<T, D>(&p[j * d..], d);
    let pk: [Lv<T>; D] = load::<T, D>(&p[(j + 1) * d..], d);
    // s_ij = z_i . p_j for every key (a masked key's score is never read)
    for ((a, b), zi) in aj[..l].iter_mut().zip(&mut ak[..l]).zip(tokens(zin, 0, d)) {
        *a = dot(zi, &pj, d);
        *b = dot(zi, &pk, d);
    }
    let mut inv = [Lv::<T>::zero(); 2];
    for (c, a) in [&mut *aj, &mut *ak].into_iter().enumerate() {
        let col = j + c;
        let keys = key_ranges(l, col, excl);
        let mut mx = Lv::splat(T::lane_of(f64::NEG_INFINITY));
        for r in &keys {
            for &s in &a[r.clone()] {
                mx = mx.max(s);
            }
        }
        let mut tot = Lv::zero();
        for r in &keys {
            tot = exp_shifted::<T>(&mut a[r.clone()], mx, tot);
        }
        inv[c] = tot.recip();
        if excl && col < l {
            a[col] = Lv::zero();
        }
    }
    // a_ij = e_ij / sum_i e_ij; m_j = sum_i a_ij z_i
    let mut mj = [Lv::<T>::zero(); D];
    let mut mk = [Lv::<T>::zero(); D];
    for ((a, b), zi) in aj[..l].iter_mut().zip(&mut ak[..l]).zip(tokens(zin, 0, d)) {
        let (a1, a2) = (*a * inv[0], *b * inv[1]);
        *a = a1;
        *b = a2;
        for ((j, k), &z) in mj.iter_mut().zip(mk.iter_mut()).zip(zi) {
            *j += a1 * z;
            *k += a2 * z;
        }
    }
    m[j * d..(j + 1) * d].copy_from_slice(&mj[..d]);
    m[(j + 1) * d..(j + 2) * d].copy_from_slice(&mk[..d]);
    // out_j += Psi m_j
    for r in 0..d {
        let row = &psi[r * d..r * d + d];
        zout[j * d + r] += dot(row, &mj, d);
        zout[(j + 1) * d + r] += dot(row, &mk, d);
    }
}

/// Backward of layer `t` from `ws.dz` (gradient of its output, zero outside the columns `j0..n`)
/// into `ws.dz2` (of its input; with `input_grad`, else left alone), accumulating the circuit
/// gradients of `set`. A column whose output gradient is zero adds exact zeros to every
/// accumulator, so leaving it out changes no bit.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn layer_backward<T: LaneScalar, const D: usize>(
    job: &Job<'_, T>,
    ws: &mut Ws<T>,
    t: usize,
    set: usize,
    n: usize,
    j0: usize,
    input_grad: bool,
    d: usize,
) {
    let (l, h_n) = (n - 1, job.spec.heads);
    let nd = n * d;
    let zin = &ws.zs[t * nd..(t + 1) * nd];
    let dzo = &ws.dz[..nd];
    let dz = &mut ws.dz2[..nd];
    // zo = z + ...: the residual passes dzo through
    if input_grad {
        dz.copy_from_slice(dzo);
    }
    let linear = job.spec.attention == AttentionKind::Linear;
    let excl = job.pass.exclude_self;
    let da = &mut ws.da[..l];
    for h in 0..h_n {
        let c = (set * h_n + h) * d * d;
        let (phi, psi) = (&job.phi[c..c + d * d], &job.psi[c..c + d * d]);
        let base = (t * h_n + h) * nd;
        let p = &ws.p[base..base + nd];
        let m = &ws.m[base..base + nd];
        let a = &ws.a[(t * h_n + h) * n * l..][..n * l];
        let dphi = &mut ws.dphi[c..c + d * d];
        let dpsi = &mut ws.dpsi[c..c + d * d];
        for j in j0..n {
            let aj = &a[j * l..(j + 1) * l];
            // out_j = Psi m_j: dPsi += dout_j m_j^T, dm_j = Psi^T dout_j
            let mut dm = [Lv::<T>::zero(); D];
            for r in 0..d {
                let g = dzo[j * d + r];
                for k in 0..d {
                    dpsi[r * d + k] += g * m[j * d + k];
                    dm[k] += psi[r * d + k] * g;
                }
            }
            // m_j = sum_i a_ij z_i: da_ij = dm_j . z_i (and dz_i += a_ij dm_j, below)
            // softmax: ds_ij = a_ij (da_ij - sum_i' a_i'j da_i'j); linear: da_ij / K_j
            let mut sum = Lv::zero();
            for ((dai, &ai), zi) in da.iter_mut().zip(aj).zip(tokens(zin, 0, d)) {
                let v = dot(zi, &dm, d);
                *dai = v;
                sum += ai * v;
            }
            let inv = if excl && j < l {
                Lv::splat(T::lane_of(1.0 / (l - 1) as f64))
            } else {
                Lv::splat(T::lane_of(1.0 / l as f64))
            };
            if linear && excl && j < l {
                da[j] = Lv::zero();
            }
            // dz_i += a_ij dm_j + ds_ij p_j (in that order), dp_j = sum_i ds_ij z_i
            let mut dp = [Lv::<T>::zero(); D];
            let pj: [Lv<T>; D] = load::<T, D>(&p[j * d..], d);
            let keys = aj.iter().zip(da.iter()).zip(tokens(zin, 0, d));
            if input_grad {
                for (((&ai, &dai), zi), dzi) in keys.zip(dz.chunks_exact_mut(d)) {
                    let g = if linear { dai * inv } else { ai * (dai - sum) };
                    for k in 0..d {
                        dzi[k] = (dzi[k] + ai * dm[k]) + g * pj[k];
                        dp[k] += g * zi[k];
                    }
                }
            } else {
                for ((&ai, &dai), zi) in keys {
                    let g = if linear { dai * inv } else { ai * (dai - sum) };
                    for (dpk, &z) in dp.iter_mut().zip(zi) {
                        *dpk += g * z;
                    }
                }
            }
            // p_j = Phi z_j: dPhi += dp_j z_j^T, dz_j += Phi^T dp_j
            for r in 0..d {
                let g = dp[r];
                for k in 0..d {
                    dphi[r * d + k] += g * zin[j * d + k];
                }
            }
            if input_grad {
                for r in 0..d {
                    let g = dp[r];
                    for k in 0..d {
                        dz[j * d + k] += phi[r * d + k] * g;
                    }
                }
            }
        }
    }
}

/// Forward (and with `grad`, loss and backward) of one group.
#[inline(always)]
fn group<T: LaneScalar, const D: usize>(job: &Job<'_, T>, ws: &mut Ws<T>, grad: bool, d: usize) {
    let sp = job.spec;
    let n = job.batch.len + 1;
    let (l, h_n, nl) = (n - 1, sp.heads, job.pass.layers);
    let nd = n * d;
    fit(&mut ws.zs, (nl + 1) * nd);
    fit(&mut ws.p, nl * h_n * nd);
    fit(&mut ws.m, nl * h_n * nd);
    fit(&mut ws.a, if grad { nl * h_n * n * l } else { 2 * l });
    gather::<T>(job, &mut ws.zs[..nd], d);
    for t in 0..nl {
        let set = if sp.looped { 0 } else { t % sp.layers };
        // the loss reads the last layer at the query column only
        let j0 = if grad && t + 1 == nl { l } else { 0 };
        layer_forward::<T, D>(job, ws, t, set, n, j0, grad, d);
    }
    if !grad {
        return;
    }
    // loss: w sum_o (yhat_o - y_o)^2 at the last n_out rows of the query column
    let no = sp.n_out;
    resize(&mut ws.dz, nd);
    fit(&mut ws.dz2, nd);
    fit(&mut ws.da, l);
    let out = &ws.zs[nl * nd..];
    let mut wl = Lv::zero();
    let mut y = Lv::zero();
    ws.loss = Lv::zero();
    for o in 0..no {
        for k in 0..W {
            wl.0[k] = if k < job.real { job.w } else { T::ZERO };
            y.0[k] = job.batch.y[(job.b0 + k.min(job.real - 1)) * no + o];
        }
        let q = l * d + job.spec.e - no + o;
        let r = out[q] - y;
        ws.loss += wl * r * r;
        ws.dz[q] = (wl + wl) * r;
    }
    // the output gradient is zero outside the query column; nothing reads the input's gradient
    for t in (0..nl).rev() {
        let set = if sp.looped { 0 } else { t };
        let j0 = if t + 1 == nl { l } else { 0 };
        layer_backward::<T, D>(job, ws, t, set, n, j0, t > 0, d);
        core::mem::swap(&mut ws.dz, &mut ws.dz2);
    }
}

// Each level's entry point in a module of its own: rustc compiles a generic function's instances
// in the code-generation unit of the function's module, so with the entries here every width's
// AVX2 and AVX-512 kernels were one unit with the baseline's, compiled on one core. In three
// modules they are three units, which the build compiles side by side.
macro_rules! entry {
    ($module:ident, $feat:literal) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            use super::{group, Job, LaneScalar, Ws};
            #[target_feature(enable = $feat)]
            pub(super) fn run<T: LaneScalar, const D: usize>(
                job: &Job<'_, T>,
                ws: &mut Ws<T>,
                grad: bool,
            ) {
                group::<T, D>(job, ws, grad, D)
            }
        }
    };
}
entry!(group_avx2, "avx2,fma");
entry!(group_avx512, "avx512f,avx2,fma");

/// One group at `level`.
fn run_group<T: LaneScalar, const D: usize>(
    level: Level,
    job: &Job<'_, T>,
    ws: &mut Ws<T>,
    grad: bool,
) {
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level` is capped at `dispatch::detected()`, so the CPU has these features.
        Level::Avx512 => unsafe { group_avx512::run::<T, D>(job, ws, grad) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Level::Avx2 => unsafe { group_avx2::run::<T, D>(job, ws, grad) },
        #[cfg(target_arch = "x86_64")]
        _ => group_any(job, ws, grad),
        #[cfg(not(target_arch = "x86_64"))]
        _ => group::<T, D>(job, ws, grad, D),
    }
}

/// The x86-64 baseline's kernel (SSE2: CPUs without AVX2, and `ICL_SIMD=sse2`): one kernel for
/// every token width, the stride d = e a value, instead of one per width (each width's kernel at
/// this level cost as long to compile as at the others: 77 of the crate's 336 CPU-seconds in a
/// release build). The same arithmetic in the same order as the kernel of width D >= e, whose
/// zero rows add zeros to sums that start at +0 (so never -0): the same bits.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn group_any<T: LaneScalar>(job: &Job<'_, T>, ws: &mut Ws<T>, grad: bool) {
    group::<T, ML_MAX_E>(job, ws, grad, job.d)
}

/// Whether `level` runs [`group_any`] (tokens at stride e) rather than a kernel of width D.
fn any_width(level: Level) -> bool {
    cfg!(target_arch = "x86_64") && !matches!(level, Level::Avx2 | Level::Avx512)
}

// The kernels' token widths D: every width up to 8, then the widths of the papers' models (IV
// stage 1: 10 and 11, multilayer B.1's d = 12: 13, the temperature paper's d = 20: 21) and a few
// between; a token of width e runs the smallest D >= e, its rows padded with zeros (exact: the
// padding adds zeros to every sum and is never read back). Each D is a monomorphisation at AVX2
// and AVX-512 (and, off x86-64, the baseline) in each precision, the longest part of the crate's
// compile time (23 widths were 2..=24); the x86-64 baseline runs [`group_any`].
macro_rules! with_d {
    ($e:expr, $d:ident => $body:expr, $else:expr) => {
        match $e {
            2 => { const $d: usize = 2; $body }
            3 => { const $d: usize = 3; $body }
            4 => { const $d: usize = 4; $body }
            5 => { const $d: usize = 5; $body }
            6 => { const $d: usize = 6; $body }
            7 => { const $d: usize = 7; $body }
            8 => { const $d: usize = 8; $body }
            9 | 10 => { const $d: usize = 10; $body }
            11 => { const $d: usize = 11; $body }
            12 => { const $d: usize = 12; $body }
            13 => { const $d: usize = 13; $body }
            14..=16 => { const $d: usize = 16; $body }
            17..=21 => { const $d: usize = 21; $body }
            22..=24 => { const $d: usize = 24; $body }
            _ => $else,
        }
    };
}

/// The widest token the vectorised kernels take ([`vectorised`]: 2 ..= this).
pub const ML_MAX_E: usize = 24;

/// Whether tokens of width `e` run the vectorised kernels (otherwise the scalar reference).
pub fn vectorised(e: usize) -> bool {
    with_d!(e, D => D >= e, false)
}

impl<T: MlScalar> MlSimd<T> {
    /// The stride of tokens for a kernel of width D at this engine's level ([`Job::d`]).
    fn stride<const D: usize>(&self, e: usize) -> usize {
        if any_width(self.level) {
            e
        } else {
            D
        }
    }

    /// The circuits ([sets, H, e, e] each) splatted to lanes and padded to [sets, H, d, d].
    fn splat(c: &StackCircuits<T>, e: usize, d: usize) -> (Vec<Lv<T>>, Vec<Lv<T>>) {
        let pad = |m: &[T]| {
            let mut v = vec![Lv::zero(); m.len() / (e * e) * d * d];
            for (blk, src) in v.chunks_exact_mut(d * d).zip(m.chunks_exact(e * e)) {
                for (row, r) in blk.chunks_exact_mut(d).zip(src.chunks_exact(e)) {
                    for (x, &y) in row.iter_mut().zip(r) {
                        *x = Lv::splat(y);
                    }
                }
            }
            v
        };
        (pad(&c.phi), pad(&c.psi))
    }

    /// Run the groups of chunk `ch` (sequences ch*ML_CHUNK ..).
    fn chunk<const D: usize>(
        &self,
        job: Job<'_, T>,
        ch: usize,
        ws: &mut Ws<T>,
        grad: bool,
        out: Option<&mut [T]>,
    ) -> Partial<T> {
        let nb = job.batch.n;
        let first = ch * ML_CHUNK;
        let last = (first + ML_CHUNK).min(nb);
        let (e, d, sz) = (job.spec.e, job.d, job.phi.len());
        let unpadded = sz / (d * d) * e * e;
        let mut part = Partial {
            loss: T::ZERO,
            phi: vec![T::ZERO; if grad { unpadded } else { 0 }],
            psi: vec![T::ZERO; if grad { unpadded } else { 0 }],
        };
        let mut out = out;
        let mut b0 = first;
        while b0 < last {
            let real = (last - b0).min(W);
            let j = Job { b0, real, ..job };
            if grad {
                resize(&mut ws.dphi, sz);
                resize(&mut ws.dpsi, sz);
            }
            run_group::<T, D>(self.level, &j, ws, grad);
            if grad {
                // lane partials -> chunk partials, lanes in order (the padding's rows and
                // columns dropped)
                part.loss += ws.loss.sum();
                unpad_sum(&mut part.phi, &ws.dphi, e, d);
                unpad_sum(&mut part.psi, &ws.dpsi, e, d);
            }
            if let Some(o) = out.as_deref_mut() {
                let n = job.batch.len + 1;
                let nl = job.pass.layers;
                let fin = &ws.zs[nl * n * d..(nl + 1) * n * d];
                for k in 0..real {
                    let dst = &mut o[(b0 - first + k) * n * e..(b0 - first + k + 1) * n * e];
                    for (tok, zt) in dst.chunks_exact_mut(e).zip(fin.chunks_exact(d)) {
                        for (x, v) in tok.iter_mut().zip(zt) {
                            *x = v.0[k];
                        }
                    }
                }
            }
            b0 += W;
        }
        part
    }
}

/// `dst[b, r, k] += lane sum of src[b, r, k]` for r, k < e: [sets, H, d, d] lane partials into
/// [sets, H, e, e] sums.
fn unpad_sum<T: LaneScalar>(dst: &mut [T], src: &[Lv<T>], e: usize, d: usize) {
    for (blk, m) in dst.chunks_exact_mut(e * e).zip(src.chunks_exact(d * d)) {
        for (row, r) in blk.chunks_exact_mut(e).zip(m.chunks_exact(d)) {
            for (d, v) in row.iter_mut().zip(r) {
                *d = *d + v.sum();
            }
        }
    }
}

/// [`StackKernels::fill_rows`] over rayon's threads, [`ML_CHUNK`] sequences at a time.
fn par_fill_rows<U: Send>(n: usize, bufs: &mut [&mut [U]], fill: &RowsFill<'_, U>) {
    if n == 0 {
        return;
    }
    let widths: Vec<usize> = bufs.iter().map(|v| v.len() / n).collect();
    // chunk c: the blocks of sequences c*ML_CHUNK.. of every buffer
    let mut chunks: Vec<Vec<&mut [U]>> = (0..n.div_ceil(ML_CHUNK)).map(|_| Vec::new()).collect();
    for (v, &w) in bufs.iter_mut().zip(&widths) {
        let mut rest: &mut [U] = v;
        for (c, ch) in chunks.iter_mut().enumerate() {
            let k = (n - c * ML_CHUNK).min(ML_CHUNK) * w;
            let (head, tail) = core::mem::take(&mut rest).split_at_mut(k);
            ch.push(head);
            rest = tail;
        }
    }
    par::each_mut_with(&mut chunks, |scratch, c, parts| {
        let count = (n - c * ML_CHUNK).min(ML_CHUNK);
        for k in 0..count {
            let mut rows: Vec<&mut [U]> = parts
                .iter_mut()
                .zip(&widths)
                .map(|(p, &w)| &mut p[k * w..(k + 1) * w])
                .collect();
            fill(c * ML_CHUNK + k, &mut rows, scratch);
        }
    });
}

impl<T: MlScalar> StackKernels<T> for MlSimd<T> {
    fn name(&self) -> &'static str {
        "simd"
    }

    /// The sequences over rayon's threads, [`ML_CHUNK`] at a time.
    fn fill_rows(&mut self, n: usize, bufs: &mut [&mut [T]], fill: &RowsFill<'_, T>) {
        par_fill_rows(n, bufs, fill);
    }

    /// As [`StackKernels::fill_rows`].
    fn fill_rows_f64(&mut self, n: usize, bufs: &mut [&mut [f64]], fill: &RowsFill<'_, f64>) {
        par_fill_rows(n, bufs, fill);
    }

    fn loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        batch: &Batch<T>,
        g: &mut StackCircuits<T>,
    ) -> Result<T> {
        let chunks = batch.n.div_ceil(ML_CHUNK);
        let parts: Option<Vec<Partial<T>>> = with_d!(spec.e, D => {
            let d = self.stride::<D>(spec.e);
            let (phi, psi) = Self::splat(c, spec.e, d);
            let job = Job {
                spec,
                d,
                phi: &phi,
                psi: &psi,
                pass: Pass::of(spec),
                batch,
                b0: 0,
                real: 0,
                w: T::lane_of(1.0 / (batch.n * batch.n_out) as f64),
            };
            Some(par::map_with(chunks, |ws, ch| self.chunk::<D>(job, ch, ws, true, None)))
        }, None);
        let Some(parts) = parts else {
            return StackReference::new().loss_grad(spec, c, batch, g);
        };
        g.clear();
        let mut loss = T::ZERO;
        for p in &parts {
            loss += p.loss;
            for (d, v) in g.phi.iter_mut().zip(&p.phi) {
                *d += *v;
            }
            for (d, v) in g.psi.iter_mut().zip(&p.psi) {
                *d += *v;
            }
        }
        Ok(loss)
    }

    fn forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        pass: Pass,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        let per = (batch.len + 1) * spec.e * ML_CHUNK;
        let done: bool = with_d!(spec.e, D => {
            let d = self.stride::<D>(spec.e);
            let (phi, psi) = Self::splat(c, spec.e, d);
            let job = Job {
                spec,
                d,
                phi: &phi,
                psi: &psi,
                pass,
                batch,
                b0: 0,
                real: 0,
                w: T::ZERO,
            };
            let mut outs: Vec<&mut [T]> = out.chunks_mut(per).collect();
            par::each_mut_with(&mut outs, |ws, ch, o| {
                self.chunk::<D>(job, ch, ws, false, Some(o));
            });
            true
        }, false);
        if !done {
            return StackReference::new().forward(spec, c, pass, batch, out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use icl_core::data::batch::{fill_rows_serial, fill_serial};

    #[test]
    fn widths_2_to_24_are_vectorised() {
        assert!((2..=24).all(vectorised));
        assert!(!vectorised(1) && !vectorised(25));
        assert!(vectorised(ML_MAX_E) && !vectorised(ML_MAX_E + 1));
    }

    #[test]
    fn parallel_fill_is_the_serial_fill() {
        // 37 sequences: two full chunks and a partial one
        let fill = |b: usize, z: &mut [f32], y: &mut [f32], s: &mut Vec<f64>| {
            s.resize(z.len(), 0.0);
            for (i, v) in z.iter_mut().enumerate() {
                *v = (b * 1000 + i) as f32;
            }
            y[0] = -(b as f32);
        };
        let mut a = Batch::<f32>::zeros(37, 9, 5, 1);
        let mut b = a.clone();
        fill_serial(&mut a, &fill);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| MlSimd::<f32>::new().fill_batch(&mut b, &fill));
        assert_eq!(a, b);
        assert_eq!(b.y[36], -36.0);
    }

    #[test]
    fn parallel_rows_are_the_serial_rows() {
        // 37 sequences into blocks of 3, 0 and 2 values
        let fill = |b: usize, rows: &mut [&mut [f64]], s: &mut Vec<f64>| {
            s.push(0.0);
            for (k, r) in rows.iter_mut().enumerate() {
                for (i, v) in r.iter_mut().enumerate() {
                    *v = (b * 100 + k * 10 + i) as f64;
                }
            }
        };
        let mut a = (vec![0.0; 37 * 3], vec![0.0; 0], vec![0.0; 37 * 2]);
        let mut b = a.clone();
        fill_rows_serial(37, &mut [&mut a.0[..], &mut a.1[..], &mut a.2[..]], &fill);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            MlSimd::<f64>::new().fill_rows(
                37,
                &mut [&mut b.0[..], &mut b.1[..], &mut b.2[..]],
                &fill,
            )
        });
        assert_eq!(a, b);
        assert_eq!(b.2[73], 3621.0);
        // f64 rows through an f32 engine (the evaluation's classical estimators)
        let mut c = (vec![0.0; 37 * 3], vec![0.0; 0], vec![0.0; 37 * 2]);
        pool.install(|| {
            MlSimd::<f32>::new().fill_rows_f64(
                37,
                &mut [&mut c.0[..], &mut c.1[..], &mut c.2[..]],
                &fill,
            )
        });
        assert_eq!(a, c);
    }
}
