//! The plain scalar reference engine: one sequence at a time, one thread, no SIMD; the per-sequence
//! forward and backward of all heads (He et al. 2025 eq. (2.2)) that it runs.
use super::kernels::{AttentionKernels, MAX_OUTPUTS};
use crate::data::Batch;
use crate::families::attention::act::{head_backward, head_forward, HeadCache};
use crate::families::attention::{AttentionSpec, Circuits};
use crate::{Result, Scalar};
use alloc::boxed::Box;
use alloc::vec::Vec;

/// Per-sequence forward of all heads: fills `caches` and `yhat`.
pub fn sequence_forward<T: Scalar>(
    spec: &AttentionSpec,
    circ: &Circuits<T>,
    seq: &[T],
    len: usize,
    caches: &mut [HeadCache<T>],
    yhat: &mut [T],
) {
    let e = spec.e();
    let act = spec.act();
    let keys = &seq[..spec.keys(len) * e];
    let zq = &seq[len * e..(len + 1) * e];
    yhat.iter_mut().for_each(|y| *y = T::zero());
    for (h, cache) in caches.iter_mut().enumerate() {
        head_forward(
            &act,
            e,
            spec.n_out,
            circ.kq_head(h),
            circ.ov_head(h),
            keys,
            zq,
            cache,
            yhat,
        );
    }
}

#[allow(clippy::too_many_arguments)]
/// Per-sequence backward of all heads given `g = dLoss/dyhat`; accumulates into `grad`.
pub fn sequence_backward<T: Scalar>(
    spec: &AttentionSpec,
    circ: &Circuits<T>,
    seq: &[T],
    len: usize,
    caches: &[HeadCache<T>],
    g: &[T],
    grad: &mut Circuits<T>,
    scratch: &mut Vec<T>,
) {
    let (e, no) = (spec.e(), spec.n_out);
    let act = spec.act();
    let keys = &seq[..spec.keys(len) * e];
    let zq = &seq[len * e..(len + 1) * e];
    for (h, cache) in caches.iter().enumerate() {
        let (kqs, ovs) = (e * e, no * e);
        let (gkq, gov) = (
            &mut grad.kq[h * kqs..(h + 1) * kqs],
            &mut grad.ov[h * ovs..(h + 1) * ovs],
        );
        head_backward(
            &act,
            e,
            no,
            circ.ov_head(h),
            keys,
            zq,
            cache,
            g,
            gkq,
            gov,
            scratch,
        );
    }
}

/// The plain scalar reference engine: one sequence at a time, one thread, no SIMD.
#[derive(Debug, Default)]
pub struct AttentionReference<T> {
    caches: Vec<HeadCache<T>>,
    scratch: Vec<T>,
}

impl<T: Scalar> AttentionReference<T> {
    /// A new engine.
    pub fn new() -> Self {
        AttentionReference {
            caches: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Boxed, for `dyn AttentionKernels` use.
    pub fn boxed() -> Box<dyn AttentionKernels<T>> {
        Box::new(Self::new())
    }

    fn fit(&mut self, spec: &AttentionSpec, len: usize) {
        let nk = spec.keys(len);
        if self.caches.len() != spec.heads {
            self.caches = (0..spec.heads)
                .map(|_| HeadCache::new(nk, spec.e()))
                .collect();
        }
    }
}

impl<T: Scalar> AttentionKernels<T> for AttentionReference<T> {
    fn name(&self) -> &'static str {
        "scalar"
    }

    fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        self.fit(spec, batch.len);
        grad.clear();
        let no = spec.n_out;
        let inv = T::one() / T::of((batch.n * no) as f64);
        let two = T::one() + T::one();
        let (mut yhat, mut g) = ([T::zero(); MAX_OUTPUTS], [T::zero(); MAX_OUTPUTS]);
        let mut loss = T::zero();
        for b in 0..batch.n {
            let seq = batch.seq(b);
            sequence_forward(
                spec,
                circ,
                seq,
                batch.len,
                &mut self.caches,
                &mut yhat[..no],
            );
            // loss = sum_o r_o^2 / (n n_out)  =>  g_o = 2 r_o / (n n_out)
            for o in 0..no {
                let r = yhat[o] - batch.target(b)[o];
                loss += r * r * inv;
                g[o] = two * r * inv;
            }
            sequence_backward(
                spec,
                circ,
                seq,
                batch.len,
                &self.caches,
                &g[..no],
                grad,
                &mut self.scratch,
            );
        }
        Ok(loss)
    }

    fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        let no = spec.n_out;
        self.fit(spec, batch.len);
        for b in 0..batch.n {
            sequence_forward(
                spec,
                circ,
                batch.seq(b),
                batch.len,
                &mut self.caches,
                &mut out[b * no..(b + 1) * no],
            );
        }
        Ok(())
    }
}
