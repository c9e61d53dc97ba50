//! The conformance suite of stack engines, written once: losses, circuit gradients and forward
//! passes (stacked, leave-one-out mask) against the scalar reference, for softmax and linear
//! attention, looped and not, T = 1..3, odd batch sizes and lengths. Engines run it through
//! [`crate::engine_conformance!`].
//!
//! Tolerances are norm-wise relative differences ||a - b|| / ||b|| from the truth: the reference
//! in f64 on the same (rounded) inputs. An engine passes within `tol` of it, or within
//! [`SLACK`] times the scalar reference's own distance from it in `T` where a case is
//! ill-conditioned in f32 (d = 20, two looped layers, one sequence of two tokens: the f32
//! reference's gradient is 5.8e-5 from the truth, and an H200 summing in another order differed
//! from the f32 reference by 7.6e-5 while lavapipe, summing as the reference does, agreed).
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

/// How many times the f32 reference's own error an engine may be off the truth.
pub const SLACK: f64 = 4.0;

/// The inputs in f64, exactly.
fn widen<T: Scalar>(c: &StackCircuits<T>, b: &Batch<T>) -> (StackCircuits<f64>, Batch<f64>) {
    let up = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let c64 = StackCircuits {
        sets: c.sets,
        heads: c.heads,
        e: c.e,
        phi: up(&c.phi),
        psi: up(&c.psi),
    };
    let b64 = Batch {
        n: b.n,
        len: b.len,
        d: b.d,
        n_out: b.n_out,
        z: up(&b.z),
        y: up(&b.y),
    };
    (c64, b64)
}

/// The bound for an engine's distance from the truth, given the reference's.
fn bound(tol: f64, reference: f64) -> f64 {
    tol.max(SLACK * reference)
}

fn rel<T: Scalar, U: Scalar>(a: &[T], b: &[U]) -> f64 {
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
            let (c64, b64) = widen(&c, &b);
            let mut g = StackCircuits::zeros(spec);
            let mut g0 = StackCircuits::zeros(spec);
            let mut g1 = StackCircuits::zeros(spec);
            g1.phi.iter_mut().for_each(|x| *x = T::one()); // the engine must overwrite
            let l = StackReference::new()
                .loss_grad(spec, &c64, &b64, &mut g)
                .map_err(|e| format!("{e}"))?;
            let l0 = StackReference::new()
                .loss_grad(spec, &c, &b, &mut g0)
                .map_err(|e| format!("{e}"))?;
            let l1 = make()
                .loss_grad(spec, &c, &b, &mut g1)
                .map_err(|e| format!("{e}"))?;
            let off = |x: T| (x.to_f64() - l).abs() / l.abs().max(1e-300);
            let (dl, dp, ds) = (off(l1), rel(&g1.phi, &g.phi), rel(&g1.psi, &g.psi));
            let (bl, bp, bs) = (
                bound(tol, off(l0)),
                bound(tol, rel(&g0.phi, &g.phi)),
                bound(tol, rel(&g0.psi, &g.psi)),
            );
            // (written so that a NaN fails)
            if !(dl <= bl && dp <= bp && ds <= bs) {
                return Err(format!(
                    "{spec:?} n={n} L={len}: from the f64 truth, loss {dl:.2e} (bound {bl:.1e}), \
                     dPhi {dp:.2e} (bound {bp:.1e}), dPsi {ds:.2e} (bound {bs:.1e})"
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
            let (c64, b64) = widen(&c, &b);
            let mut o = vec![0.0f64; b.z.len()];
            let mut o0 = vec![T::zero(); b.z.len()];
            let mut o1 = vec![T::zero(); b.z.len()];
            StackReference::new()
                .forward(spec, &c64, pass, &b64, &mut o)
                .map_err(|e| format!("{e}"))?;
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
            let (d, bd) = (rel(&o1, &o), bound(tol, rel(&o0, &o)));
            if !(d <= bd) {
                return Err(format!(
                    "{spec:?} {pass:?}: forward {d:.2e} from the f64 truth > {bd:.1e}"
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
