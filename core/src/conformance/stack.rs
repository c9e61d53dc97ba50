//! The conformance suite of stack engines, written once: losses, circuit gradients and forward
//! passes (stacked, leave-one-out mask) against the scalar reference, for softmax and linear
//! attention, looped and not, T = 1..3, odd batch sizes and lengths. Engines run it through
//! [`crate::engine_conformance!`].
//!
//! Tolerances are norm-wise relative differences ||a - b|| / ||b||.
use crate::config::AttentionKind;
use crate::data::Batch;
use crate::families::stack::kernels::{StackKernels, StackReference};
use crate::families::stack::layers::{Pass, StackCircuits, StackSpec};
use crate::rng::{self, Domain};
use crate::Scalar;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// How a suite makes a fresh engine.
pub type Make<'a, T> = &'a dyn Fn() -> Box<dyn StackKernels<T>>;

/// The specs the suite covers.
pub fn specs() -> Vec<StackSpec> {
    let mut out = Vec::new();
    for attention in [AttentionKind::Softmax, AttentionKind::Linear] {
        for (layers, looped, heads, e, n_out) in [
            (1, true, 2, 6, 1),
            (2, true, 1, 4, 1),
            (3, true, 2, 6, 1),
            (2, false, 3, 5, 1),
            (3, false, 2, 10, 4),
            // a width the SIMD engine runs padded (to 10), with two outputs
            (2, false, 2, 9, 2),
            // d = 20 (the temperature paper's width)
            (2, true, 2, 21, 1),
        ] {
            out.push(StackSpec {
                e,
                n_out,
                heads,
                layers,
                looped,
                attention,
                scale: 0.7,
            });
        }
    }
    out
}

/// Random circuits (entry std `s`) and a random batch (n sequences of length len), from seed.
pub fn inputs<T: Scalar>(
    spec: &StackSpec,
    n: usize,
    len: usize,
    s: f64,
    seed: u64,
) -> (StackCircuits<T>, Batch<T>) {
    let mut r = rng::stream(seed, Domain::Eval, 0, 0);
    let mut c = StackCircuits::<T>::zeros(spec);
    let mut v = vec![0.0; c.phi.len() * 2];
    rng::fill_normal(&mut r, &mut v);
    for (k, x) in c.phi.iter_mut().chain(c.psi.iter_mut()).enumerate() {
        *x = T::of(s * v[k]);
    }
    let mut b = Batch::zeros(n, len, spec.e - spec.n_out, spec.n_out);
    let mut z = vec![0.0; b.z.len() + b.y.len()];
    rng::fill_normal(&mut r, &mut z);
    for (k, x) in b.z.iter_mut().chain(b.y.iter_mut()).enumerate() {
        *x = T::of(z[k]);
    }
    // the query's label slots are zero, as in every batch
    let (e, no) = (spec.e, spec.n_out);
    for q in 0..n {
        let base = (q * (len + 1) + len) * e;
        for o in 0..no {
            b.z[base + e - no + o] = T::zero();
        }
    }
    (c, b)
}

fn rel<T: Scalar>(a: &[T], b: &[T]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| sq(x.to_f64() - y.to_f64()))
        .sum();
    let den: f64 = b.iter().map(|y| sq(y.to_f64())).sum();
    libm::sqrt(num) / libm::sqrt(den).max(1e-300)
}

/// Loss and circuit gradient against the scalar reference for every spec.
pub fn loss_grad_matches<T: Scalar>(make: Make<T>, tol: f64) -> Result<(), String> {
    for (k, spec) in specs().iter().enumerate() {
        for (n, len) in [(1, 2), (5, 9), (19, 13)] {
            let (c, b) = inputs::<T>(spec, n, len, 0.3, k as u64 * 31 + n as u64);
            let mut g0 = StackCircuits::zeros(spec);
            let mut g1 = StackCircuits::zeros(spec);
            g1.phi.iter_mut().for_each(|x| *x = T::one()); // the engine must overwrite
            let l0 = StackReference::new()
                .loss_grad(spec, &c, &b, &mut g0)
                .map_err(|e| format!("{e}"))?;
            let l1 = make()
                .loss_grad(spec, &c, &b, &mut g1)
                .map_err(|e| format!("{e}"))?;
            let dl = (l0.to_f64() - l1.to_f64()).abs() / l0.to_f64().abs().max(1e-300);
            let (dp, ds) = (rel(&g1.phi, &g0.phi), rel(&g1.psi, &g0.psi));
            // (written so that a NaN fails)
            if !(dl <= tol && dp <= tol && ds <= tol) {
                return Err(format!(
                    "{spec:?} n={n} L={len}: loss rel diff {dl:.2e}, dPhi {dp:.2e}, dPsi {ds:.2e} > {tol:.0e}"
                ));
            }
        }
    }
    Ok(())
}

/// Forward passes (own depth, stacked twice, leave-one-out mask) against the scalar reference,
/// whose tokens must be finite (a NaN difference fails).
pub fn forward_matches<T: Scalar>(make: Make<T>, tol: f64) -> Result<(), String> {
    for (k, spec) in specs().iter().enumerate() {
        // Linear attention is cubic in the tokens, so a stack of 2T such layers overflows at the
        // circuits' scale 0.3; at 0.15 every token stays finite.
        let s = match spec.attention {
            AttentionKind::Softmax => 0.3,
            AttentionKind::Linear => 0.15,
        };
        let (c, b) = inputs::<T>(spec, 7, 11, s, 100 + k as u64);
        for pass in [
            Pass::of(spec),
            Pass {
                layers: 2 * spec.layers,
                exclude_self: false,
            },
            Pass {
                layers: spec.layers,
                exclude_self: true,
            },
        ] {
            let mut o0 = vec![T::zero(); b.z.len()];
            let mut o1 = vec![T::zero(); b.z.len()];
            StackReference::new()
                .forward(spec, &c, pass, &b, &mut o0)
                .map_err(|e| format!("{e}"))?;
            if o0.iter().any(|x| !x.is_finite()) {
                return Err(format!(
                    "{spec:?} {pass:?}: the reference's tokens are not finite (inputs too large)"
                ));
            }
            make()
                .forward(spec, &c, pass, &b, &mut o1)
                .map_err(|e| format!("{e}"))?;
            let d = rel(&o1, &o0);
            if !(d <= tol) {
                return Err(format!(
                    "{spec:?} {pass:?}: forward rel diff {d:.2e} > {tol:.0e}"
                ));
            }
        }
    }
    Ok(())
}

/// The same engine twice on the same inputs gives the same bits (no state leaks between calls).
pub fn repeatable<T: Scalar>(make: Make<T>) -> Result<(), String> {
    let spec = &specs()[2];
    let (c, b) = inputs::<T>(spec, 37, 17, 0.3, 5);
    let mut e = make();
    let mut g0 = StackCircuits::zeros(spec);
    let mut g1 = StackCircuits::zeros(spec);
    let l0 = e
        .loss_grad(spec, &c, &b, &mut g0)
        .map_err(|e| format!("{e}"))?;
    let l1 = e
        .loss_grad(spec, &c, &b, &mut g1)
        .map_err(|e| format!("{e}"))?;
    if l0.to_f64().to_bits() != l1.to_f64().to_bits() || g0 != g1 {
        return Err("two identical calls differ".into());
    }
    Ok(())
}

#[inline]
fn sq(x: f64) -> f64 {
    x * x
}
