//! `merged_reduced`: merged KQ with the zero blocks removed, U_h (d x d) = KQ_11 before the score
//! scale and v_h = OV_22 (Zhang et al. 2025 reduced ATTN_M, eq. (M)): `u` [H, d, d], `v` [H, n_out].
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// KQ_11 = scale U ; OV[o][d+o] = v[o].
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
    let sc = T::of(s.scale);
    let v0 = h_n * d * d;
    for h in 0..h_n {
        for a in 0..d {
            for b in 0..d {
                out.kq[h * e * e + a * e + b] = p[h * d * d + a * d + b] * sc;
            }
        }
        for oo in 0..no {
            out.ov[h * no * e + oo * e + d + oo] = p[v0 + h * no + oo];
        }
    }
}

/// Backward of [`forward`]: dU[a][b] = scale dKQ[a][b] ; dv[o] = dOV[o][d+o].
pub fn backward<T: Scalar>(s: &AttentionSpec, _p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
    let sc = T::of(s.scale);
    let v0 = h_n * d * d;
    for h in 0..h_n {
        let gk = g.kq_head(h);
        for a in 0..d {
            for b in 0..d {
                grad[h * d * d + a * d + b] = gk[a * e + b] * sc;
            }
        }
        for oo in 0..no {
            grad[v0 + h * no + oo] = g.ov_head(h)[oo * e + d + oo];
        }
    }
}
