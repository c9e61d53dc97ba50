//! `separate_reduced`: rank-R key/query with the zero blocks removed, k_{h,r}, q_{h,r} in R^d
//! (before the score scale) and v_h = OV_22 (Zhang et al. 2025 reduced ATTN_S, eq. (S)):
//! `k` [H, R, d], `q` [H, R, d], `v` [H, n_out].
use super::lowrank::{kq_lowrank_backward, kq_lowrank_forward};
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// KQ_11 = scale sum_r k_r q_r^T ; OV[o][d+o] = v[o].
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let (h_n, e, no, d, r) = (s.heads, s.e(), s.n_out, s.d, s.rank);
    let sc = T::of(s.scale);
    let (q0, v0) = (h_n * r * d, 2 * h_n * r * d);
    for h in 0..h_n {
        kq_lowrank_forward(
            &p[h * r * d..],
            &p[q0 + h * r * d..],
            r,
            d,
            e,
            sc,
            &mut out.kq[h * e * e..(h + 1) * e * e],
        );
        for oo in 0..no {
            out.ov[h * no * e + oo * e + d + oo] = p[v0 + h * no + oo];
        }
    }
}

/// Backward of [`forward`] (see [`kq_lowrank_backward`]) ; dv[o] = dOV[o][d+o].
pub fn backward<T: Scalar>(s: &AttentionSpec, p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let (h_n, e, no, d, r) = (s.heads, s.e(), s.n_out, s.d, s.rank);
    let sc = T::of(s.scale);
    let q0 = h_n * r * d;
    let (gk, rest) = grad.split_at_mut(q0);
    let (gq, gv) = rest.split_at_mut(q0);
    for h in 0..h_n {
        kq_lowrank_backward(
            &p[h * r * d..],
            &p[q0 + h * r * d..],
            r,
            d,
            e,
            sc,
            g.kq_head(h),
            &mut gk[h * r * d..(h + 1) * r * d],
            &mut gq[h * r * d..(h + 1) * r * d],
        );
        for oo in 0..no {
            gv[h * no + oo] = g.ov_head(h)[oo * e + d + oo];
        }
    }
}
