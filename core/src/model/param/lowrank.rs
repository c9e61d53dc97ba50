//! The low-rank key/query product shared by the `full` (rank E), `separate` and
//! `separate_reduced` parametrisations (Zhang et al. 2025 ATTN_S).
use crate::Scalar;

/// For one head with `k`, `q` of shape [R, w] (w = E for full weights, d for the reduced form):
/// `KQ[i][j] += scale sum_r k[r][i] q[r][j]` for i, j < w, into `kq` (E x E, row-major).
pub fn kq_lowrank_forward<T: Scalar>(
    k: &[T],
    q: &[T],
    rank: usize,
    w: usize,
    e: usize,
    sc: T,
    kq: &mut [T],
) {
    for r in 0..rank {
        for i in 0..w {
            let kri = k[r * w + i] * sc;
            for j in 0..w {
                kq[i * e + j] += kri * q[r * w + j];
            }
        }
    }
}

/// Backward of [`kq_lowrank_forward`]: forward `KQ[i][j] += scale sum_r k[r][i] q[r][j]`, so
/// `dq[r][j] += scale sum_i k[r][i] dKQ[i][j]` and `dk[r][i] += scale sum_j q[r][j] dKQ[i][j]`.
#[allow(clippy::too_many_arguments)]
pub fn kq_lowrank_backward<T: Scalar>(
    k: &[T],
    q: &[T],
    rank: usize,
    w: usize,
    e: usize,
    sc: T,
    gkq: &[T],
    dk: &mut [T],
    dq: &mut [T],
) {
    for r in 0..rank {
        for i in 0..w {
            let kri = k[r * w + i] * sc;
            let mut acc = T::zero();
            for j in 0..w {
                let gij = gkq[i * e + j];
                dq[r * w + j] += kri * gij;
                acc += q[r * w + j] * gij;
            }
            dk[r * w + i] += acc * sc;
        }
    }
}
