//! The batched kernel: one *group* of `W` sequences, one per SIMD lane, through every head,
//! forward and backward on the effective circuits. The formulas are those of the scalar
//! reference (`icl_core::families::attention::act`), applied lane-wise:
//!
//! ```text
//! q   = KQ z_q                      s_l = z_l . q
//! w_l = f(s_l) / sum_j f(s_j)       (softmax family)   or   w_l = s_l / L_0   (linear)
//! a   = sum_l w_l z_l               yhat_o = sum_h OV_h[o] . a_h
//! ```
//!
//! Layout (structure of arrays): token l, component i of the group is the vector `z[l E + i]`.
use crate::lanes::{cast, cast_mut, one, Lanes, SameLayout};
use icl_core::config::{Activation, AttentionKind};
use icl_core::families::attention::act::Act;
use icl_core::families::attention::Circuits;
use icl_core::Scalar;

/// The embedding width E, either a compile-time constant (so that the loops over E unroll and
/// their accumulators stay in registers) or a runtime value.
pub trait Dim: Copy + Send + Sync {
    /// The width.
    fn get(self) -> usize;
}

/// E known at compile time.
#[derive(Debug, Clone, Copy)]
pub struct Fixed<const E: usize>;

impl<const E: usize> Dim for Fixed<E> {
    #[inline(always)]
    fn get(self) -> usize {
        E
    }
}

/// E known at run time only.
#[derive(Debug, Clone, Copy)]
pub struct Dynamic(pub usize);

impl Dim for Dynamic {
    #[inline(always)]
    fn get(self) -> usize {
        self.0
    }
}

/// Evaluate `$body` with `$d` bound to a [`Fixed`] width for E in 2..=12 and to [`Dynamic`]
/// otherwise (each arm is its own monomorphisation).
#[macro_export]
macro_rules! with_dim {
    ($e:expr, $d:ident => $body:expr) => {
        match $e {
            2 => {
                let $d = $crate::kernel::Fixed::<2>;
                $body
            }
            3 => {
                let $d = $crate::kernel::Fixed::<3>;
                $body
            }
            4 => {
                let $d = $crate::kernel::Fixed::<4>;
                $body
            }
            5 => {
                let $d = $crate::kernel::Fixed::<5>;
                $body
            }
            6 => {
                let $d = $crate::kernel::Fixed::<6>;
                $body
            }
            7 => {
                let $d = $crate::kernel::Fixed::<7>;
                $body
            }
            8 => {
                let $d = $crate::kernel::Fixed::<8>;
                $body
            }
            9 => {
                let $d = $crate::kernel::Fixed::<9>;
                $body
            }
            10 => {
                let $d = $crate::kernel::Fixed::<10>;
                $body
            }
            11 => {
                let $d = $crate::kernel::Fixed::<11>;
                $body
            }
            12 => {
                let $d = $crate::kernel::Fixed::<12>;
                $body
            }
            e => {
                let $d = $crate::kernel::Dynamic(e);
                $body
            }
        }
    };
}

/// The largest E with a [`Fixed`] monomorphisation (`with_dim!`); up to it the kernel keeps its
/// per-component accumulators in local arrays, which the compiler holds in registers.
pub const MAX_FIXED_E: usize = 12;

/// `acc[i] = sum_l wt_l z_l[i]` for i < E, summed over l in order. For E up to [`MAX_FIXED_E`]
/// the sums run in a local array (registers; a slice of run-time length stays in memory, a
/// store-to-load chain per key), with the same operations in the same order.
#[inline(always)]
fn weighted_sum<V: Lanes, D: Dim>(dim: D, wt: &[V], keys: &[V], acc: &mut [V]) {
    let e = dim.get();
    if e <= MAX_FIXED_E {
        let mut r = [V::zero(); MAX_FIXED_E];
        sum_weighted(wt, keys, &mut r[..e]);
        acc[..e].copy_from_slice(&r[..e]);
    } else {
        sum_weighted(wt, keys, &mut acc[..e]);
    }
}

/// `acc = sum_l wt_l z_l` (E = `acc.len()`), from zero.
#[inline(always)]
fn sum_weighted<V: Lanes>(wt: &[V], keys: &[V], acc: &mut [V]) {
    acc.iter_mut().for_each(|x| *x = V::zero());
    for (&wl, z) in wt.iter().zip(keys.chunks_exact(acc.len())) {
        for (ai, &zi) in acc.iter_mut().zip(z) {
            *ai = wl.mul_add_unfused(zi, *ai);
        }
    }
}

/// `out_l = z_l . x` for every key l, with `x` copied into a local array (registers) for E up
/// to [`MAX_FIXED_E`]; the same sums either way.
#[inline(always)]
fn dots<V: Lanes, D: Dim>(dim: D, keys: &[V], x: &[V], out: &mut [V]) {
    let e = dim.get();
    let mut r = [V::zero(); MAX_FIXED_E];
    let x = if e <= MAX_FIXED_E {
        r[..e].copy_from_slice(&x[..e]);
        &r[..e]
    } else {
        &x[..e]
    };
    for (o, z) in out.iter_mut().zip(keys.chunks_exact(e)) {
        *o = dot(z, x);
    }
}

/// [`dots`] for two heads in one pass over the keys: `o1_l = z_l . x1`, `o2_l = z_l . x2` (each
/// key's components loaded once; each sum as in [`dots`]).
#[inline(always)]
fn dots2<V: Lanes, D: Dim>(dim: D, keys: &[V], x1: &[V], x2: &[V], o1: &mut [V], o2: &mut [V]) {
    let e = dim.get();
    if e > MAX_FIXED_E {
        dots(dim, keys, x1, o1);
        dots(dim, keys, x2, o2);
        return;
    }
    let mut r1 = [V::zero(); MAX_FIXED_E];
    let mut r2 = [V::zero(); MAX_FIXED_E];
    r1[..e].copy_from_slice(&x1[..e]);
    r2[..e].copy_from_slice(&x2[..e]);
    for ((p1, p2), z) in o1.iter_mut().zip(o2.iter_mut()).zip(keys.chunks_exact(e)) {
        let mut zl = [V::zero(); MAX_FIXED_E];
        zl[..e].copy_from_slice(z);
        *p1 = dot(&zl[..e], &r1[..e]);
        *p2 = dot(&zl[..e], &r2[..e]);
    }
}

/// [`weighted_sum`] for two heads in one pass over the keys (each sum as in [`weighted_sum`]).
#[inline(always)]
fn weighted_sum2<V: Lanes, D: Dim>(
    dim: D,
    wt1: &[V],
    wt2: &[V],
    keys: &[V],
    acc1: &mut [V],
    acc2: &mut [V],
) {
    let e = dim.get();
    if e > MAX_FIXED_E {
        weighted_sum(dim, wt1, keys, acc1);
        weighted_sum(dim, wt2, keys, acc2);
        return;
    }
    let mut r1 = [V::zero(); MAX_FIXED_E];
    let mut r2 = [V::zero(); MAX_FIXED_E];
    for ((&w1, &w2), z) in wt1.iter().zip(wt2).zip(keys.chunks_exact(e)) {
        for i in 0..e {
            r1[i] = w1.mul_add_unfused(z[i], r1[i]);
            r2[i] = w2.mul_add_unfused(z[i], r2[i]);
        }
    }
    acc1[..e].copy_from_slice(&r1[..e]);
    acc2[..e].copy_from_slice(&r2[..e]);
}

/// Shape of the work: what every group of a batch shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub heads: usize,
    pub e: usize,
    pub n_out: usize,
    /// Context length L (tokens are L + 1 with the query).
    pub len: usize,
    /// Keys the query attends to (L, or L + 1 with self-attention).
    pub nk: usize,
}

/// Scratch of one group: tokens, targets, the forward's caches, and gradient accumulators.
#[derive(Debug, Clone)]
pub struct Group<V> {
    pub shape: Shape,
    /// Tokens, `(L + 1) E` vectors.
    pub z: Vec<V>,
    /// Targets, `n_out` vectors.
    pub y: Vec<V>,
    /// 1 for lanes holding a sequence of the batch, 0 for padding.
    pub mask: V,
    /// Per head: q (E), a (E), s (nk), w (nk), 1/F with F = sum_l f(s_l).
    q: Vec<V>,
    a: Vec<V>,
    s: Vec<V>,
    w: Vec<V>,
    finv: Vec<V>,
    /// Predictions, `n_out` vectors.
    pub yhat: Vec<V>,
    g: Vec<V>,
    c: Vec<V>,
    u: Vec<V>,
    b: Vec<V>,
    /// Gradient accumulators, lane-wise: [H, E, E] and [H, n_out, E] (zero between steps:
    /// [`Group::drain_grad`]).
    pub gkq: Vec<V>,
    pub gov: Vec<V>,
    /// Lane-wise sum of squared residuals.
    pub sse: V,
}

impl<V: Lanes> Group<V> {
    /// Scratch for `shape`.
    pub fn new(shape: Shape) -> Self {
        let Shape {
            heads: h,
            e,
            n_out: no,
            len,
            nk,
        } = shape;
        let z = V::zero();
        Group {
            shape,
            z: vec![z; (len + 1) * e],
            y: vec![z; no],
            mask: z,
            q: vec![z; h * e],
            a: vec![z; h * e],
            s: vec![z; h * nk],
            w: vec![z; h * nk],
            finv: vec![z; h],
            yhat: vec![z; no],
            g: vec![z; no],
            c: vec![z; 2 * e],
            u: vec![z; 2 * nk],
            b: vec![z; 2 * e],
            gkq: vec![z; h * e * e],
            gov: vec![z; h * no * e],
            sse: z,
        }
    }

    /// The gradient accumulators summed over the lanes (lane order) into `gkq` and `gov`, and the
    /// lanes' summed squared residuals returned; the accumulators are left zero for the next
    /// backward (they start zero: one pass instead of a separate clearing `memset`, which costs
    /// more than the sums at these sizes).
    #[inline(always)]
    pub fn drain_grad(&mut self, gkq: &mut [V::T], gov: &mut [V::T]) -> V::T {
        for (dst, v) in gkq.iter_mut().zip(self.gkq.iter_mut()) {
            *dst = v.sum();
            *v = V::zero();
        }
        for (dst, v) in gov.iter_mut().zip(self.gov.iter_mut()) {
            *dst = v.sum();
            *v = V::zero();
        }
        core::mem::replace(&mut self.sse, V::zero()).sum()
    }

    /// Forward of all heads into `yhat`, computed in lane type `C` (`V` itself, or a 512-bit
    /// register type at AVX-512: the same operations, so the same bits). With
    /// [`Lanes::PAIRS`] the heads go two at a time through each pass over the keys (each head's
    /// operations unchanged).
    #[inline(always)]
    pub fn forward<C: SameLayout<V> + Lanes<T = V::T>, D: Dim>(
        &mut self,
        dim: D,
        act: &Act,
        circ: &Circuits<V::T>,
    ) {
        let Shape {
            heads,
            n_out: no,
            len,
            nk,
            ..
        } = self.shape;
        let e = dim.get();
        let z: &[C] = cast(&self.z);
        let yhat: &mut [C] = cast_mut(&mut self.yhat);
        let (qs, as_): (&mut [C], &mut [C]) = (cast_mut(&mut self.q), cast_mut(&mut self.a));
        let (ss, ws): (&mut [C], &mut [C]) = (cast_mut(&mut self.s), cast_mut(&mut self.w));
        let finv: &mut [C] = cast_mut(&mut self.finv);
        yhat.iter_mut().for_each(|x| *x = C::zero());
        let zq = &z[len * e..(len + 1) * e];
        let keys = &z[..nk * e];
        let mut h = 0;
        while h < heads {
            if C::PAIRS && h + 1 < heads {
                let (q1, q2) = qs[h * e..(h + 2) * e].split_at_mut(e);
                let (a1, a2) = as_[h * e..(h + 2) * e].split_at_mut(e);
                let (s1, s2) = ss[h * nk..(h + 2) * nk].split_at_mut(nk);
                let (w1, w2) = ws[h * nk..(h + 2) * nk].split_at_mut(nk);
                query(e, circ.kq_head(h), zq, q1);
                query(e, circ.kq_head(h + 1), zq, q2);
                dots2(dim, keys, q1, q2, s1, s2);
                finv[h] = activate(act, s1, w1);
                finv[h + 1] = activate(act, s2, w2);
                weighted_sum2(dim, w1, w2, keys, a1, a2);
                project(e, no, circ.ov_head(h), a1, yhat);
                project(e, no, circ.ov_head(h + 1), a2, yhat);
                h += 2;
            } else {
                let q = &mut qs[h * e..(h + 1) * e];
                let a = &mut as_[h * e..(h + 1) * e];
                let s = &mut ss[h * nk..(h + 1) * nk];
                let w = &mut ws[h * nk..(h + 1) * nk];
                query(e, circ.kq_head(h), zq, q);
                dots(dim, keys, q, s);
                finv[h] = activate(act, s, w);
                weighted_sum(dim, w, keys, a);
                project(e, no, circ.ov_head(h), a, yhat);
                h += 1;
            }
        }
    }

    /// Loss terms and `g = dLoss/dyhat = 2 r / (n n_out)` (masked), then the backward of all
    /// heads, computed in lane type `C` (as [`Group::forward`], heads in pairs likewise).
    #[inline(always)]
    pub fn backward<C: SameLayout<V> + Lanes<T = V::T>, D: Dim>(
        &mut self,
        dim: D,
        act: &Act,
        circ: &Circuits<V::T>,
        inv: V::T,
    ) {
        let Shape {
            heads,
            n_out: no,
            len,
            nk,
            ..
        } = self.shape;
        let e = dim.get();
        let two_inv = C::splat(inv + inv);
        let mask = cast::<V, C>(core::slice::from_ref(&self.mask))[0];
        let mut sse = cast::<V, C>(core::slice::from_ref(&self.sse))[0];
        let (yhat, y): (&[C], &[C]) = (cast(&self.yhat), cast(&self.y));
        let g: &mut [C] = cast_mut(&mut self.g);
        for o in 0..no {
            // loss = sum_o r_o^2 / (n n_out)  =>  g_o = 2 r_o / (n n_out)
            let r = (yhat[o] - y[o]) * mask;
            sse = r.mul_add_unfused(r, sse);
            g[o] = r * two_inv;
        }
        cast_mut::<V, C>(core::slice::from_mut(&mut self.sse))[0] = sse;
        let g: &[C] = g;
        let z: &[C] = cast(&self.z);
        let zq = &z[len * e..(len + 1) * e];
        let keys = &z[..nk * e];
        let (ss, ws, as_, finv) = (
            cast::<V, C>(&self.s),
            cast::<V, C>(&self.w),
            cast::<V, C>(&self.a),
            cast::<V, C>(&self.finv),
        );
        let (c, u, b) = (
            cast_mut::<V, C>(&mut self.c),
            cast_mut::<V, C>(&mut self.u),
            cast_mut::<V, C>(&mut self.b),
        );
        let (gkq, gov) = (
            cast_mut::<V, C>(&mut self.gkq),
            cast_mut::<V, C>(&mut self.gov),
        );
        let (ee, oe) = (e * e, no * e);
        let mut h = 0;
        while h < heads {
            if C::PAIRS && h + 1 < heads {
                let (c1, c2) = c.split_at_mut(e);
                let (u1, u2) = u.split_at_mut(nk);
                let (b1, b2) = b.split_at_mut(e);
                let (gkq1, gkq2) = gkq[h * ee..(h + 2) * ee].split_at_mut(ee);
                let (gov1, gov2) = gov[h * oe..(h + 2) * oe].split_at_mut(oe);
                let (s1, s2) = ss[h * nk..(h + 2) * nk].split_at(nk);
                let (w1, w2) = ws[h * nk..(h + 2) * nk].split_at(nk);
                let (a1, a2) = as_[h * e..(h + 2) * e].split_at(e);
                project_back(e, no, circ.ov_head(h), g, a1, gov1, c1);
                project_back(e, no, circ.ov_head(h + 1), g, a2, gov2, c2);
                dots2(dim, keys, c1, c2, u1, &mut u2[..nk]);
                activate_back(act, s1, w1, finv[h], u1);
                activate_back(act, s2, w2, finv[h + 1], &mut u2[..nk]);
                weighted_sum2(dim, u1, &u2[..nk], keys, b1, &mut b2[..e]);
                query_back(e, b1, zq, gkq1);
                query_back(e, &b2[..e], zq, gkq2);
                h += 2;
            } else {
                let (c, u, b) = (&mut c[..e], &mut u[..nk], &mut b[..e]);
                let (s, w, a) = (
                    &ss[h * nk..(h + 1) * nk],
                    &ws[h * nk..(h + 1) * nk],
                    &as_[h * e..(h + 1) * e],
                );
                project_back(
                    e,
                    no,
                    circ.ov_head(h),
                    g,
                    a,
                    &mut gov[h * oe..(h + 1) * oe],
                    c,
                );
                dots(dim, keys, c, u);
                activate_back(act, s, w, finv[h], u);
                weighted_sum(dim, u, keys, b);
                query_back(e, b, zq, &mut gkq[h * ee..(h + 1) * ee]);
                h += 1;
            }
        }
    }
}

/// `sum_i x_i y_i` over lanes.
#[inline(always)]
fn dot<V: Lanes>(x: &[V], y: &[V]) -> V {
    x.iter()
        .zip(y)
        .fold(V::zero(), |acc, (&a, &b)| a.mul_add_unfused(b, acc))
}

/// `q = KQ z_q`.
#[inline(always)]
fn query<V: Lanes>(e: usize, kq: &[V::T], zq: &[V], q: &mut [V]) {
    for (qi, row) in q.iter_mut().zip(kq.chunks_exact(e)) {
        *qi = row.iter().zip(zq).fold(V::zero(), |acc, (&k, &z)| {
            V::splat(k).mul_add_unfused(z, acc)
        });
    }
}

/// Backward of [`query`] and the scores: s_l = z_l . (KQ z_q)  =>  dKQ += b z_q^T with
/// `b = sum_l ds_l z_l`.
#[inline(always)]
fn query_back<V: Lanes>(e: usize, b: &[V], zq: &[V], gkq: &mut [V]) {
    for (row, &bi) in gkq.chunks_exact_mut(e).zip(b.iter()) {
        for (gij, &zj) in row.iter_mut().zip(zq) {
            *gij = bi.mul_add_unfused(zj, *gij);
        }
    }
}

/// The attention weights `w` from the scores `s`; returns 1/F (softmax family; 1 for linear
/// attention).
#[inline(always)]
fn activate<V: Lanes>(act: &Act, s: &[V], w: &mut [V]) -> V {
    match act.kind {
        AttentionKind::Linear => {
            // w_l = s_l / L_0
            let inv = V::splat(one::<V::T>() / <V::T as Scalar>::of(act.lin_norm));
            for (wl, &sl) in w.iter_mut().zip(s.iter()) {
                *wl = sl * inv;
            }
            V::splat(one::<V::T>())
        }
        AttentionKind::Softmax => {
            // w_l = f(s_l) / sum_j f(s_j); for exp subtract the lane max first (same w)
            let mut sum = V::zero();
            if act.f == Activation::Exp {
                let m = s.iter().fold(s[0], |m, &x| m.vmax(x));
                for (wl, &sl) in w.iter_mut().zip(s.iter()) {
                    *wl = (sl - m).vexp();
                    sum += *wl;
                }
            } else {
                let (one, c) = (
                    V::splat(one::<V::T>()),
                    V::splat(<V::T as Scalar>::of(act.c)),
                );
                for (wl, &sl) in w.iter_mut().zip(s.iter()) {
                    *wl = match act.f {
                        Activation::Affine => c.mul_add_unfused(sl, one),
                        Activation::Square => {
                            let u = c.mul_add_unfused(sl, one);
                            u * u
                        }
                        Activation::Tanh | Activation::Exp => one + sl.vtanh(),
                    };
                    sum += *wl;
                }
            }
            let inv = V::splat(one::<V::T>()) / sum;
            w.iter_mut().for_each(|wl| *wl = *wl * inv);
            inv
        }
    }
}

/// Backward of [`activate`], in place: `u_l = dw_l` in, `ds_l` out.
/// w = f(s)/F  =>  ds_l = f'(s_l)/F (u_l - sum_j w_j u_j)  (exp: f'/F = w);
/// w = s / L_0 =>  ds_l = u_l / L_0.
#[inline(always)]
fn activate_back<V: Lanes>(act: &Act, s: &[V], w: &[V], finv: V, u: &mut [V]) {
    match act.kind {
        AttentionKind::Linear => {
            let inv = V::splat(one::<V::T>() / <V::T as Scalar>::of(act.lin_norm));
            u.iter_mut().for_each(|x| *x = *x * inv);
        }
        AttentionKind::Softmax => {
            let ubar = dot(w, u);
            if act.f == Activation::Exp {
                for (ul, &wl) in u.iter_mut().zip(w) {
                    *ul = wl * (*ul - ubar);
                }
            } else {
                let (one, cc, inv) = (
                    V::splat(one::<V::T>()),
                    V::splat(<V::T as Scalar>::of(act.c)),
                    finv,
                );
                for (ul, &sl) in u.iter_mut().zip(s) {
                    let df = match act.f {
                        Activation::Affine => cc,
                        Activation::Square => (cc + cc) * cc.mul_add_unfused(sl, one),
                        Activation::Tanh | Activation::Exp => {
                            let t = sl.vtanh();
                            one - t * t
                        }
                    };
                    *ul = df * inv * (*ul - ubar);
                }
            }
        }
    }
}

/// `yhat_o += OV[o] . a`.
#[inline(always)]
fn project<V: Lanes>(e: usize, no: usize, ov: &[V::T], a: &[V], yhat: &mut [V]) {
    for (yo, row) in yhat.iter_mut().zip(ov.chunks_exact(e)).take(no) {
        *yo = row
            .iter()
            .zip(a.iter())
            .fold(*yo, |acc, (&v, &ai)| V::splat(v).mul_add_unfused(ai, acc));
    }
}

/// Backward of [`project`]: `dOV[o] += g_o a` and `c = da = OV^T g`.
#[inline(always)]
fn project_back<V: Lanes>(
    e: usize,
    no: usize,
    ov: &[V::T],
    g: &[V],
    a: &[V],
    gov: &mut [V],
    c: &mut [V],
) {
    c.iter_mut().for_each(|x| *x = V::zero());
    for o in 0..no {
        let (row, grow, go) = (&ov[o * e..(o + 1) * e], &mut gov[o * e..(o + 1) * e], g[o]);
        for i in 0..e {
            grow[i] = go.mul_add_unfused(a[i], grow[i]);
            c[i] = go.mul_add_unfused(V::splat(row[i]), c[i]);
        }
    }
}
