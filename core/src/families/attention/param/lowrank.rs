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
    // rows of k and q side by side (slices, no index checks in the loops)
    for (kr, qr) in k.chunks_exact(w).zip(q.chunks_exact(w)).take(rank) {
        for (i, &ki) in kr.iter().enumerate() {
            let kri = ki * sc;
            for (o, &qj) in kq[i * e..i * e + w].iter_mut().zip(qr) {
                *o += kri * qj;
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
    let rows = k.chunks_exact(w).zip(q.chunks_exact(w));
    let drows = dk.chunks_exact_mut(w).zip(dq.chunks_exact_mut(w));
    for ((kr, qr), (dkr, dqr)) in rows.zip(drows).take(rank) {
        for (i, (&ki, dki)) in kr.iter().zip(dkr.iter_mut()).enumerate() {
            let kri = ki * sc;
            let mut acc = T::zero();
            for ((dqj, &qj), &gij) in dqr.iter_mut().zip(qr).zip(&gkq[i * e..i * e + w]) {
                *dqj += kri * gij;
                acc += qj * gij;
            }
            *dki += acc * sc;
        }
    }
}
