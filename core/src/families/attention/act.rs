//! One head of one-layer attention for the query column, forward and backward on the effective
//! circuits (He et al. 2025 eq. (2.2)/(E.1), App. B).
//!
//! For one sequence with tokens z_1..z_L and query z_q (E = d + n_out values each):
//!
//! ```text
//! q   = KQ z_q                       (E)      effective KQ includes the score scale
//! s_l = z_l . q                      (keys l = 1..L, plus the query when self-attending)
//! w_l = f(s_l) / sum_j f(s_j)        (softmax family)   or   w_l = s_l / L_0   (linear)
//! a   = sum_l w_l z_l                (E)
//! yhat_o += OV[o] . a                (n_out)
//! ```
//!
//! The forward stores `s`, `f(s)`, `w`, `a` (what the backward needs), llm.c style.
use crate::config::{Activation, AttentionKind};
use crate::Scalar;
use alloc::vec::Vec;

/// Activation and normalisation of one head.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Act {
    pub kind: AttentionKind,
    pub f: Activation,
    /// The constant C of the affine/square activations.
    pub c: f64,
    /// The frozen normaliser L_0 of linear attention.
    pub lin_norm: f64,
}

/// What the forward pass keeps for the backward pass.
#[derive(Debug, Clone, Default)]
pub struct HeadCache<T> {
    /// q = KQ z_q.
    pub q: Vec<T>,
    /// Scores s_l.
    pub s: Vec<T>,
    /// f(s_l) (softmax family; for exp, exp(s_l - max s)).
    pub fs: Vec<T>,
    /// Weights w_l.
    pub w: Vec<T>,
    /// a = sum_l w_l z_l.
    pub a: Vec<T>,
    /// sum_j f(s_j).
    pub fsum: T,
}

impl<T: Scalar> HeadCache<T> {
    /// Scratch for `nk` keys and width `e`.
    pub fn new(nk: usize, e: usize) -> Self {
        let z = T::zero();
        HeadCache {
            q: alloc::vec![z; e],
            s: alloc::vec![z; nk],
            fs: alloc::vec![z; nk],
            w: alloc::vec![z; nk],
            a: alloc::vec![z; e],
            fsum: z,
        }
    }
    fn fit(&mut self, nk: usize, e: usize) {
        let z = T::zero();
        self.q.resize(e, z);
        self.a.resize(e, z);
        self.s.resize(nk, z);
        self.fs.resize(nk, z);
        self.w.resize(nk, z);
    }
}

/// f(x) for the normalised activations.
#[inline(always)]
pub fn act_f<T: Scalar>(f: Activation, c: T, x: T) -> T {
    match f {
        Activation::Exp => x.exp_l(),
        Activation::Affine => T::one() + c * x,
        Activation::Square => {
            let u = T::one() + c * x;
            u * u
        }
        Activation::Tanh => T::one() + x.tanh_l(),
    }
}

/// f'(x) for the normalised activations.
#[inline(always)]
pub fn act_df<T: Scalar>(f: Activation, c: T, x: T) -> T {
    match f {
        Activation::Exp => x.exp_l(),
        Activation::Affine => c,
        Activation::Square => (T::one() + T::one()) * c * (T::one() + c * x),
        Activation::Tanh => {
            let t = x.tanh_l();
            T::one() - t * t
        }
    }
}

/// Forward of one head on one sequence. `keys` holds `nk` tokens of width `e` (row-major), `zq`
/// the query token. Adds the head's output into `yhat` (n_out values).
#[allow(clippy::too_many_arguments)]
pub fn head_forward<T: Scalar>(
    act: &Act,
    e: usize,
    n_out: usize,
    kq: &[T],
    ov: &[T],
    keys: &[T],
    zq: &[T],
    cache: &mut HeadCache<T>,
    yhat: &mut [T],
) {
    let nk = keys.len() / e;
    cache.fit(nk, e);
    // q = KQ z_q
    for i in 0..e {
        let row = &kq[i * e..(i + 1) * e];
        cache.q[i] = row
            .iter()
            .zip(zq)
            .fold(T::zero(), |acc, (&k, &z)| acc + k * z);
    }
    // s_l = z_l . q
    for l in 0..nk {
        let z = &keys[l * e..(l + 1) * e];
        cache.s[l] = z
            .iter()
            .zip(&cache.q)
            .fold(T::zero(), |acc, (&a, &b)| acc + a * b);
    }
    match act.kind {
        AttentionKind::Linear => {
            // w_l = s_l / L_0
            let inv = T::one() / T::of(act.lin_norm);
            for l in 0..nk {
                cache.w[l] = cache.s[l] * inv;
            }
        }
        AttentionKind::Softmax => {
            // w_l = f(s_l) / sum_j f(s_j); for exp subtract max s first (same w).
            let shift = if act.f == Activation::Exp {
                cache
                    .s
                    .iter()
                    .copied()
                    .fold(cache.s[0], |m, x| if x > m { x } else { m })
            } else {
                T::zero()
            };
            let c = T::of(act.c);
            let mut sum = T::zero();
            for l in 0..nk {
                let v = act_f(act.f, c, cache.s[l] - shift);
                cache.fs[l] = v;
                sum += v;
            }
            cache.fsum = sum;
            let inv = T::one() / sum;
            for l in 0..nk {
                cache.w[l] = cache.fs[l] * inv;
            }
        }
    }
    // a = sum_l w_l z_l
    cache.a.iter_mut().for_each(|x| *x = T::zero());
    for l in 0..nk {
        let z = &keys[l * e..(l + 1) * e];
        let w = cache.w[l];
        for (a, &zi) in cache.a.iter_mut().zip(z) {
            *a += w * zi;
        }
    }
    // yhat_o += OV[o] . a
    for o in 0..n_out {
        let row = &ov[o * e..(o + 1) * e];
        yhat[o] += row
            .iter()
            .zip(&cache.a)
            .fold(T::zero(), |acc, (&v, &a)| acc + v * a);
    }
}

/// Backward of one head on one sequence, given `g_o = dLoss/dyhat_o`. Accumulates into the
/// effective-circuit gradients `gkq` (E x E) and `gov` (n_out x E). `u` is scratch (nk values).
#[allow(clippy::too_many_arguments)]
pub fn head_backward<T: Scalar>(
    act: &Act,
    e: usize,
    n_out: usize,
    ov: &[T],
    keys: &[T],
    zq: &[T],
    cache: &HeadCache<T>,
    g: &[T],
    gkq: &mut [T],
    gov: &mut [T],
    scratch: &mut Vec<T>,
) {
    let nk = keys.len() / e;
    // forward: yhat_o += OV[o] . a  =>  dOV[o] += g_o a ;  da = OV^T g =: c
    let mut c = [T::zero(); 64];
    let mut cvec;
    let c: &mut [T] = if e <= 64 {
        &mut c[..e]
    } else {
        cvec = alloc::vec![T::zero(); e];
        &mut cvec
    };
    for o in 0..n_out {
        let row = &ov[o * e..(o + 1) * e];
        let grow = &mut gov[o * e..(o + 1) * e];
        for i in 0..e {
            grow[i] += g[o] * cache.a[i];
            c[i] += g[o] * row[i];
        }
    }
    // forward: a = sum_l w_l z_l  =>  dw_l = z_l . c =: u_l
    scratch.resize(nk, T::zero());
    let u = scratch;
    for l in 0..nk {
        let z = &keys[l * e..(l + 1) * e];
        u[l] = z
            .iter()
            .zip(c.iter())
            .fold(T::zero(), |acc, (&a, &b)| acc + a * b);
    }
    // forward: w = f(s)/sum f(s)  =>  ds_l = f'(s_l)/F (u_l - sum_j w_j u_j)
    //          w = s / L_0        =>  ds_l = u_l / L_0
    match act.kind {
        AttentionKind::Linear => {
            let inv = T::one() / T::of(act.lin_norm);
            u.iter_mut().for_each(|x| *x *= inv);
        }
        AttentionKind::Softmax => {
            let ubar = (0..nk).fold(T::zero(), |acc, l| acc + cache.w[l] * u[l]);
            if act.f == Activation::Exp {
                for l in 0..nk {
                    u[l] = cache.w[l] * (u[l] - ubar);
                }
            } else {
                let (cc, inv) = (T::of(act.c), T::one() / cache.fsum);
                for l in 0..nk {
                    u[l] = act_df(act.f, cc, cache.s[l]) * inv * (u[l] - ubar);
                }
            }
        }
    }
    // forward: s_l = z_l . (KQ z_q)  =>  dKQ += (sum_l ds_l z_l) z_q^T
    let mut b = [T::zero(); 64];
    let mut bvec;
    let b: &mut [T] = if e <= 64 {
        &mut b[..e]
    } else {
        bvec = alloc::vec![T::zero(); e];
        &mut bvec
    };
    for l in 0..nk {
        let z = &keys[l * e..(l + 1) * e];
        let ds = u[l];
        for i in 0..e {
            b[i] += ds * z[i];
        }
    }
    for i in 0..e {
        let row = &mut gkq[i * e..(i + 1) * e];
        for j in 0..e {
            row[j] += b[i] * zq[j];
        }
    }
}
