//! `reduced`: omega (scalar, before the score scale) and mu (n_out) per head, with
//! KQ_11 = scale omega I_d and OV_22 = mu (He et al. 2025 §4, the (omega, mu) model of App. D):
//! `omega` [H], `mu` [H, n_out].
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// KQ[i][i] = scale omega (i < d) ; OV[o][d+o] = mu[o].
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
    let sc = T::of(s.scale);
    for h in 0..h_n {
        let w = p[h] * sc;
        for i in 0..d {
            out.kq[h * e * e + i * e + i] = w;
        }
        for oo in 0..no {
            out.ov[h * no * e + oo * e + d + oo] = p[h_n + h * no + oo];
        }
    }
}

/// Backward of [`forward`]: domega = scale sum_i dKQ[i][i] ; dmu[o] = dOV[o][d+o].
pub fn backward<T: Scalar>(s: &AttentionSpec, _p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
    let sc = T::of(s.scale);
    for h in 0..h_n {
        let gk = g.kq_head(h);
        grad[h] = (0..d).fold(T::zero(), |acc, i| acc + gk[i * e + i]) * sc;
        for oo in 0..no {
            grad[h_n + h * no + oo] = g.ov_head(h)[oo * e + d + oo];
        }
    }
}
