//! One attention layer over one sequence: forward and backward side by side (llm.c style).
//!
//! Shapes: `z` is the sequence, N = L+1 tokens of width D, token-major (`z[j*D + r]` is row r of
//! column j); the first L tokens are the keys, token L is the query. Per head h the layer uses the
//! effective circuits `phi` = Phi_h (D x D) and `psi` = Psi_h (D x D), row-major.
//!
//! Forward, per head (the paper's eq. (2) with scores `s_ij = z_i^T Phi z_j`, key i, query j):
//! ```text
//! p_j   = Phi z_j                              (N x D)
//! s_ij  = z_i . p_j                            (i < L keys, j < N queries)
//! a_ij  = softmax_i(s_ij)  or  s_ij / K_j      (linear attention, eq. (20); K_j keys of column j)
//! m_j   = sum_i a_ij z_i                       (N x D)
//! out_j = out_j + Psi m_j                      (summed over heads; the layer adds out to z)
//! ```
//! With `exclude_self` a context column does not attend to itself (the IV stage-1 inference mask
//! of §6.2, B.2); the query is never a key either way.
use crate::config::AttentionKind;
use crate::Scalar;
use alloc::vec;
use alloc::vec::Vec;

/// What one head's forward keeps for the backward: `p` (N x D), `a` (column j's L weights at
/// `a[j*L..]`) and `m` (N x D).
#[derive(Debug, Clone, Default)]
pub struct HeadCache<T> {
    pub p: Vec<T>,
    pub a: Vec<T>,
    pub m: Vec<T>,
}

impl<T: Scalar> HeadCache<T> {
    fn resize(&mut self, n: usize, dd: usize) {
        let l = n - 1;
        self.p.resize(n * dd, T::zero());
        self.a.resize(n * l, T::zero());
        self.m.resize(n * dd, T::zero());
    }
}

/// Masking and normalisation of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask {
    pub attention: AttentionKind,
    /// Context columns do not attend to themselves.
    pub exclude_self: bool,
}

impl Mask {
    /// Whether key i is masked for column j.
    #[inline]
    fn masked(&self, i: usize, j: usize) -> bool {
        self.exclude_self && i == j
    }
    /// Number of keys of column j (linear attention's normaliser).
    #[inline]
    fn keys(&self, l: usize, j: usize) -> usize {
        if self.exclude_self && j < l {
            l - 1
        } else {
            l
        }
    }
}

/// Forward of one layer: `zo = z + sum_h Psi_h m_h` (see the module docs). `phi`, `psi` hold the
/// H heads' circuits ([H, D, D] each); `cache` gets one entry per head.
#[allow(clippy::too_many_arguments)]
pub fn forward<T: Scalar>(
    z: &[T],
    n: usize,
    dd: usize,
    phi: &[T],
    psi: &[T],
    heads: usize,
    mask: Mask,
    cache: &mut Vec<HeadCache<T>>,
    zo: &mut [T],
) {
    let l = n - 1;
    cache.resize_with(heads, HeadCache::default);
    zo.copy_from_slice(z);
    let mut s = vec![T::zero(); l];
    for h in 0..heads {
        let (ph, ps) = (
            &phi[h * dd * dd..][..dd * dd],
            &psi[h * dd * dd..][..dd * dd],
        );
        let c = &mut cache[h];
        c.resize(n, dd);
        // p_j = Phi z_j
        for j in 0..n {
            let zj = &z[j * dd..][..dd];
            for r in 0..dd {
                let row = &ph[r * dd..][..dd];
                c.p[j * dd + r] = dot(row, zj);
            }
        }
        for j in 0..n {
            let pj = &c.p[j * dd..][..dd];
            let aj = &mut c.a[j * l..][..l];
            // s_ij = z_i . p_j ; a_ij = softmax_i(s_ij) or s_ij / K_j
            match mask.attention {
                AttentionKind::Softmax => {
                    let mut mx = T::of(f64::NEG_INFINITY);
                    for i in 0..l {
                        s[i] = dot(&z[i * dd..][..dd], pj);
                        if !mask.masked(i, j) && s[i] > mx {
                            mx = s[i];
                        }
                    }
                    let mut tot = T::zero();
                    for i in 0..l {
                        aj[i] = if mask.masked(i, j) {
                            T::zero()
                        } else {
                            (s[i] - mx).exp_l()
                        };
                        tot += aj[i];
                    }
                    let inv = T::one() / tot;
                    aj.iter_mut().for_each(|v| *v *= inv);
                }
                AttentionKind::Linear => {
                    let inv = T::one() / T::of(mask.keys(l, j) as f64);
                    for i in 0..l {
                        aj[i] = if mask.masked(i, j) {
                            T::zero()
                        } else {
                            dot(&z[i * dd..][..dd], pj) * inv
                        };
                    }
                }
            }
            // m_j = sum_i a_ij z_i
            let mj = &mut c.m[j * dd..][..dd];
            mj.iter_mut().for_each(|v| *v = T::zero());
            for i in 0..l {
                let a = aj[i];
                for (mv, zv) in mj.iter_mut().zip(&z[i * dd..][..dd]) {
                    *mv += a * *zv;
                }
            }
            // out_j += Psi m_j
            for r in 0..dd {
                zo[j * dd + r] += dot(&ps[r * dd..][..dd], mj);
            }
        }
    }
}

/// Backward of [`forward`]: from `dzo` (gradient of the layer's output) to `dz` (overwritten) and
/// the circuit gradients `dphi`, `dpsi` (accumulated), walking the forward in reverse.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Scalar>(
    z: &[T],
    n: usize,
    dd: usize,
    phi: &[T],
    psi: &[T],
    heads: usize,
    mask: Mask,
    cache: &[HeadCache<T>],
    dzo: &[T],
    dz: &mut [T],
    dphi: &mut [T],
    dpsi: &mut [T],
) {
    let l = n - 1;
    // zo = z + ... : the residual passes dzo through
    dz.copy_from_slice(dzo);
    let mut dm = vec![T::zero(); dd];
    let mut da = vec![T::zero(); l];
    let mut dp = vec![T::zero(); dd];
    for h in 0..heads {
        let (ph, ps) = (
            &phi[h * dd * dd..][..dd * dd],
            &psi[h * dd * dd..][..dd * dd],
        );
        let dph = &mut dphi[h * dd * dd..][..dd * dd];
        let dps = &mut dpsi[h * dd * dd..][..dd * dd];
        let c = &cache[h];
        for j in 0..n {
            let dout = &dzo[j * dd..][..dd];
            let mj = &c.m[j * dd..][..dd];
            let aj = &c.a[j * l..][..l];
            let pj = &c.p[j * dd..][..dd];
            // out_j = Psi m_j: dPsi += dout_j m_j^T, dm_j = Psi^T dout_j
            dm.iter_mut().for_each(|v| *v = T::zero());
            for r in 0..dd {
                let g = dout[r];
                for k in 0..dd {
                    dps[r * dd + k] += g * mj[k];
                    dm[k] += ps[r * dd + k] * g;
                }
            }
            // m_j = sum_i a_ij z_i: da_ij = dm_j . z_i, dz_i += a_ij dm_j
            for i in 0..l {
                da[i] = dot(&dm, &z[i * dd..][..dd]);
                let a = aj[i];
                for (dv, mv) in dz[i * dd..][..dd].iter_mut().zip(&dm) {
                    *dv += a * *mv;
                }
            }
            // a_ij = softmax_i(s_ij): ds_ij = a_ij (da_ij - sum_i' a_i'j da_i'j); linear: da_ij / K_j
            match mask.attention {
                AttentionKind::Softmax => {
                    let mut sum = T::zero();
                    for i in 0..l {
                        sum += aj[i] * da[i];
                    }
                    for i in 0..l {
                        da[i] = aj[i] * (da[i] - sum);
                    }
                }
                AttentionKind::Linear => {
                    let inv = T::one() / T::of(mask.keys(l, j) as f64);
                    for i in 0..l {
                        da[i] = if mask.masked(i, j) {
                            T::zero()
                        } else {
                            da[i] * inv
                        };
                    }
                }
            }
            // s_ij = z_i . p_j: dz_i += ds_ij p_j, dp_j = sum_i ds_ij z_i
            dp.iter_mut().for_each(|v| *v = T::zero());
            for i in 0..l {
                let g = da[i];
                let zi = &z[i * dd..][..dd];
                for k in 0..dd {
                    dz[i * dd + k] += g * pj[k];
                    dp[k] += g * zi[k];
                }
            }
            // p_j = Phi z_j: dPhi += dp_j z_j^T, dz_j += Phi^T dp_j
            let zj = &z[j * dd..][..dd];
            for r in 0..dd {
                let g = dp[r];
                for k in 0..dd {
                    dph[r * dd + k] += g * zj[k];
                    dz[j * dd + k] += ph[r * dd + k] * g;
                }
            }
        }
    }
}

#[inline]
fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    let mut s = T::zero();
    for (x, y) in a.iter().zip(b) {
        s += *x * *y;
    }
    s
}
