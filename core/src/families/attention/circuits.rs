//! The effective circuits of one-layer attention (He et al. 2025 §2.2): `KQ^(h)` (E x E, score
//! scale included, so `s_l = z_l^T KQ z_q`) and `OV^(h)` (n_out x E, the rows of O V that
//! produce the outputs). Engines compute losses and gradients with respect to the circuits; the
//! parametrisations ([`super::param`]) map circuit gradients to parameter gradients.
use super::spec::AttentionSpec;
use crate::tempered::{check_tau, divide_logits};
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Effective circuits of all heads: `kq` is [H, E, E], `ov` is [H, n_out, E].
#[derive(Debug, Clone, PartialEq)]
pub struct Circuits<T> {
    pub heads: usize,
    pub e: usize,
    pub n_out: usize,
    pub kq: Vec<T>,
    pub ov: Vec<T>,
}

impl<T: Scalar> Circuits<T> {
    /// All-zero circuits (also used as gradient accumulators).
    pub fn zeros(spec: &AttentionSpec) -> Self {
        let (h, e, no) = (spec.heads, spec.e(), spec.n_out);
        Circuits {
            heads: h,
            e,
            n_out: no,
            kq: vec![T::zero(); h * e * e],
            ov: vec![T::zero(); h * no * e],
        }
    }
    /// Reset to zero.
    pub fn clear(&mut self) {
        self.kq.iter_mut().for_each(|x| *x = T::zero());
        self.ov.iter_mut().for_each(|x| *x = T::zero());
    }
    /// KQ of head h (E x E, row-major).
    pub fn kq_head(&self, h: usize) -> &[T] {
        let s = self.e * self.e;
        &self.kq[h * s..(h + 1) * s]
    }
    /// OV of head h (n_out x E, row-major).
    pub fn ov_head(&self, h: usize) -> &[T] {
        let s = self.n_out * self.e;
        &self.ov[h * s..(h + 1) * s]
    }
    /// Circuits of the same shape, all zero.
    pub fn zeros_like<U: Scalar>(other: &Circuits<U>) -> Self {
        Circuits {
            heads: other.heads,
            e: other.e,
            n_out: other.n_out,
            kq: vec![T::zero(); other.kq.len()],
            ov: vec![T::zero(); other.ov.len()],
        }
    }
    /// Widened to f64.
    pub fn to_f64(&self) -> Circuits<f64> {
        Circuits {
            heads: self.heads,
            e: self.e,
            n_out: self.n_out,
            kq: self.kq.iter().map(|x| x.to_f64()).collect(),
            ov: self.ov.iter().map(|x| x.to_f64()).collect(),
        }
    }
    /// Overwrite with f64 circuits of the same shape (rounded to `T`).
    pub fn copy_from_f64(&mut self, src: &Circuits<f64>) {
        for (a, &b) in self.kq.iter_mut().zip(&src.kq) {
            *a = T::of(b);
        }
        for (a, &b) in self.ov.iter_mut().zip(&src.ov) {
            *a = T::of(b);
        }
    }
    /// Add another accumulator (same shape) into this one.
    pub fn add(&mut self, other: &Circuits<T>) {
        for (a, b) in self.kq.iter_mut().zip(&other.kq) {
            *a += *b;
        }
        for (a, b) in self.ov.iter_mut().zip(&other.ov) {
            *a += *b;
        }
    }
}

impl<T: Scalar> Circuits<T> {
    /// The circuits at temperature tau: `KQ / tau` (every head's logits divided by tau).
    pub fn tempered(&self, tau: f64) -> Result<Circuits<T>> {
        check_tau(tau)?;
        let mut c = self.clone();
        divide_logits(&mut c.kq, tau);
        Ok(c)
    }
}
