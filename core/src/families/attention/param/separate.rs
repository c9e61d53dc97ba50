//! `separate`: key and query of rank R per head with full weights, KQ = scale K^T Q, and OV
//! (Zhang et al. 2025 ATTN_S): `k` [H, R, E], `q` [H, R, E] (before the score scale),
//! `ov` [H, n_out, E].
use super::lowrank::{kq_lowrank_backward, kq_lowrank_forward};
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// KQ = scale K^T Q (rank R) ; OV = ov.
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let (h_n, e, r) = (s.heads, s.e(), s.rank);
    let sc = T::of(s.scale);
    let (q0, ov0) = (h_n * r * e, 2 * h_n * r * e);
    for h in 0..h_n {
        kq_lowrank_forward(
            &p[h * r * e..],
            &p[q0 + h * r * e..],
            r,
            e,
            e,
            sc,
            &mut out.kq[h * e * e..(h + 1) * e * e],
        );
    }
    out.ov.copy_from_slice(&p[ov0..]);
}

/// Backward of [`forward`] (see [`kq_lowrank_backward`]) ; dov = dOV.
pub fn backward<T: Scalar>(s: &AttentionSpec, p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let (h_n, e, r) = (s.heads, s.e(), s.rank);
    let sc = T::of(s.scale);
    let q0 = h_n * r * e;
    let (gk, rest) = grad.split_at_mut(q0);
    let (gq, gov) = rest.split_at_mut(q0);
    for h in 0..h_n {
        kq_lowrank_backward(
            &p[h * r * e..],
            &p[q0 + h * r * e..],
            r,
            e,
            e,
            sc,
            g.kq_head(h),
            &mut gk[h * r * e..(h + 1) * r * e],
            &mut gq[h * r * e..(h + 1) * r * e],
        );
    }
    gov.copy_from_slice(&g.ov);
}
