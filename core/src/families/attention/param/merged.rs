//! `merged`: KQ (E x E, before the score scale) and OV (n_out x E) per head: `kq` [H, E, E],
//! `ov` [H, n_out, E].
use crate::families::attention::{AttentionSpec, Circuits};
use crate::Scalar;

/// KQ_eff = scale kq ; OV_eff = ov.
pub fn forward<T: Scalar>(s: &AttentionSpec, p: &[T], out: &mut Circuits<T>) {
    let n = s.heads * s.e() * s.e();
    let sc = T::of(s.scale);
    for (dst, &src) in out.kq.iter_mut().zip(&p[..n]) {
        *dst = src * sc;
    }
    out.ov.copy_from_slice(&p[n..]);
}

/// Backward of [`forward`]: dkq = scale dKQ_eff ; dov = dOV_eff.
pub fn backward<T: Scalar>(s: &AttentionSpec, _p: &[T], g: &Circuits<T>, grad: &mut [T]) {
    let n = s.heads * s.e() * s.e();
    let sc = T::of(s.scale);
    for (dst, &src) in grad.iter_mut().zip(&g.kq) {
        *dst = src * sc;
    }
    grad[n..].copy_from_slice(&g.ov);
}
