//! `full`: Q, K, V per head and a shared output projection O, in the reference code's PyTorch
//! layout (He et al. 2025 eq. (2.1)): `q_proj.weight` [H E, E], `k_proj.weight` [H E, E],
//! `v_proj.weight` [H E, E], `o_proj.weight` [n_out, H E]; rows h E..(h+1) E of the projections
//! are head h's matrices, columns h E..(h+1) E of `o_proj` its O.
use super::lowrank::{kq_lowrank_backward, kq_lowrank_forward};
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// Offsets of Q, K, V and O in the flat buffer.
fn offsets(s: &AttentionSpec) -> (usize, usize, usize, usize) {
    let hee = s.heads * s.e() * s.e();
    (0, hee, 2 * hee, 3 * hee)
}

/// KQ = scale K^T Q (rank E), OV = O_h V_h.
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let (h_n, e, no) = (s.heads, s.e(), s.n_out);
    let sc = T::of(s.scale);
    let (q, k, v, o) = offsets(s);
    for h in 0..h_n {
        let hb = h * e * e;
        // KQ = scale K^T Q : KQ[i][j] = scale sum_r K[r][i] Q[r][j] (rank E)
        kq_lowrank_forward(
            &p[k + hb..],
            &p[q + hb..],
            e,
            e,
            e,
            sc,
            &mut out.kq[hb..hb + e * e],
        );
        // OV = O_h V_h : OV[o][c] = sum_r O[o][h E + r] V[r][c]
        let ov = &mut out.ov[h * no * e..(h + 1) * no * e];
        for oo in 0..no {
            for r in 0..e {
                let orr = p[o + oo * h_n * e + h * e + r];
                for c in 0..e {
                    ov[oo * e + c] += orr * p[v + hb + r * e + c];
                }
            }
        }
    }
}

/// Backward of [`forward`].
pub fn backward<T: Scalar>(s: &AttentionSpec, p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let (h_n, e, no) = (s.heads, s.e(), s.n_out);
    let sc = T::of(s.scale);
    let (q, k, v, o) = offsets(s);
    for h in 0..h_n {
        let (gkq, gov) = (g.kq_head(h), g.ov_head(h));
        let hb = h * e * e;
        // forward KQ = scale K^T Q (rank E): the shared low-rank backward
        let (gq, gk) = grad[..k + (h + 1) * e * e].split_at_mut(k);
        kq_lowrank_backward(
            &p[k + hb..k + hb + e * e],
            &p[q + hb..q + hb + e * e],
            e,
            e,
            e,
            sc,
            gkq,
            &mut gk[hb..hb + e * e],
            &mut gq[hb..hb + e * e],
        );
        // forward OV[o][c] = sum_r O[o][hE+r] V[r][c]
        //   => dO[o][hE+r] = sum_c dOV[o][c] V[r][c];  dV[r][c] = sum_o O[o][hE+r] dOV[o][c]
        for oo in 0..no {
            for r in 0..e {
                let oi = o + oo * h_n * e + h * e + r;
                let orr = p[oi];
                let mut dov = T::zero();
                for c in 0..e {
                    let goc = gov[oo * e + c];
                    dov += goc * p[v + hb + r * e + c];
                    grad[v + hb + r * e + c] += orr * goc;
                }
                grad[oi] += dov;
            }
        }
    }
}
