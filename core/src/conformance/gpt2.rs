//! The conformance suite of GPT-2 engines (Garg et al. 2022's in-context learner), written once:
//! loss and gradient on random batches against [`Gpt2Reference`] (several shapes: one to three
//! layers, one to four heads, K below and at the position table, batches smaller and larger than
//! an engine's chunk, a curriculum-like prompt whose covariates are zero past the first 5 and
//! shorter than the table), predictions at every position (K = 1 and K = P), repeatable bits
//! across calls of other shapes, and bad input refused through [`Gpt2Runner`]. Engines run it
//! through [`crate::engine_conformance!`].
//!
//! Tolerances are norm-wise relative differences ||a - b|| / ||b||.
use super::attention::{rel, Outcome};
use crate::data::Batch;
use crate::engine::{Gpt2Kernels, Gpt2Reference, Gpt2Runner};
use crate::families::gpt2::Gpt2Spec;
use crate::rng::{self, Domain};
use crate::{Error, Scalar};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// How a suite makes fresh kernels.
pub type Make<'a, T> = &'a dyn Fn() -> Box<dyn Gpt2Kernels<T>>;

/// A batch shape: `n` prompts of K = len + 1 pairs, covariates past the first `active` zero (a
/// curriculum's smaller d; `usize::MAX` for none).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub n: usize,
    pub len: usize,
    pub active: usize,
}

const ALL: usize = usize::MAX;

/// The specs the suite covers, each with its batch shapes.
pub fn cases() -> Vec<(Gpt2Spec, Vec<Shape>)> {
    let s = |n, len| Shape {
        n,
        len,
        active: ALL,
    };
    vec![
        (
            Gpt2Spec {
                d: 3,
                embd: 8,
                layers: 2,
                heads: 2,
                positions: 6,
                tau: 0.8,
            },
            // K = 2 and 4 below P = 6, K = P; 9 prompts: one more than a chunk of 8
            vec![s(1, 1), s(5, 3), s(9, 5)],
        ),
        (
            Gpt2Spec {
                d: 5,
                embd: 12,
                layers: 1,
                heads: 3,
                positions: 4,
                tau: 1.3,
            },
            vec![s(3, 3), s(17, 1)],
        ),
        (
            // Garg et al.'s d = 20 at a smaller width
            Gpt2Spec {
                d: 20,
                embd: 32,
                layers: 3,
                heads: 4,
                positions: 11,
                tau: 1.0,
            },
            vec![
                s(10, 10),
                // the curriculum's start: d = 5 of 20 active, L = 4 of 10
                Shape {
                    n: 12,
                    len: 4,
                    active: 5,
                },
            ],
        ),
    ]
}

/// Random parameters from `seed`: N(0, s^2) everywhere, LayerNorm weights 1 + N(0, s^2) (every
/// operation in its interesting range, unlike GPT-2's init of std 0.02).
pub fn params<T: Scalar>(spec: &Gpt2Spec, s: f64, seed: u64) -> Vec<T> {
    let mut r = rng::stream(seed, Domain::Eval, 3, 0);
    let mut p = vec![0.0; spec.n_params()];
    rng::fill_normal(&mut r, &mut p);
    p.iter_mut().for_each(|v| *v *= s);
    for t in spec.tensors() {
        if t.name.starts_with("ln_") && t.name.ends_with(".weight") {
            p[t.offset..t.offset + t.len()]
                .iter_mut()
                .for_each(|v| *v += 1.0);
        }
    }
    p.into_iter().map(T::of).collect()
}

/// A random batch of `shape` at covariate dimension `d` from `seed` (standard normal tokens and
/// targets; the query's label slot zero, as in every batch).
pub fn batch<T: Scalar>(d: usize, shape: Shape, seed: u64) -> Batch<T> {
    let Shape { n, len, active } = shape;
    let e = d + 1;
    let mut r = rng::stream(seed, Domain::Eval, 4, 0);
    let mut z = vec![0.0; n * (len + 1) * e];
    let mut y = vec![0.0; n];
    rng::fill_normal(&mut r, &mut z);
    rng::fill_normal(&mut r, &mut y);
    for (i, tok) in z.chunks_exact_mut(e).enumerate() {
        tok[active.min(d)..d].iter_mut().for_each(|v| *v = 0.0);
        if i % (len + 1) == len {
            tok[d] = 0.0;
        }
    }
    let cast = |v: Vec<f64>| v.into_iter().map(T::of).collect();
    // n, len, d >= 1 by construction
    Batch::from_parts(n, len, d, 1, cast(z), cast(y)).unwrap_or_else(|_| Batch::zeros(1, 1, d, 1))
}

fn wide<T: Scalar>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn err(e: Error) -> alloc::string::String {
    format!("{e}")
}

/// Loss and gradient against the scalar reference for every case; the engine must overwrite the
/// gradient buffer (it starts as NaN).
pub fn loss_grad_matches<T: Scalar>(make: Make<T>, tol: f64) -> Outcome {
    for (c, (spec, shapes)) in cases().iter().enumerate() {
        let p = params::<T>(spec, 0.3, 10 + c as u64);
        for (s, &shape) in shapes.iter().enumerate() {
            let b = batch::<T>(spec.d, shape, 100 * c as u64 + s as u64);
            let mut g0 = vec![T::zero(); p.len()];
            let mut g1 = vec![T::of(f64::NAN); p.len()];
            let l0 = Gpt2Runner::new(Box::new(Gpt2Reference::new()))
                .loss_grad(spec, &p, &b, &mut g0)
                .map_err(err)?;
            let l1 = Gpt2Runner::new(make())
                .loss_grad(spec, &p, &b, &mut g1)
                .map_err(err)?;
            let dl = (l1.to_f64() - l0.to_f64()).abs() / l0.to_f64().abs().max(1e-300);
            let dg = rel(&wide(&g1), &wide(&g0));
            if !(dl <= tol && dg <= tol) {
                return Err(format!(
                    "{spec:?} {shape:?}: loss {:e} vs {:e} (rel diff {dl:.2e}), gradient rel diff {dg:.2e} > {tol:.0e}",
                    l1.to_f64(),
                    l0.to_f64()
                ));
            }
        }
    }
    Ok(())
}

/// Predictions at every position of prompts of K = 1, 3 and K = P pairs against the reference.
pub fn predict_matches<T: Scalar>(make: Make<T>, tol: f64) -> Outcome {
    for (c, (spec, _)) in cases().iter().enumerate() {
        let p = params::<T>(spec, 0.3, 20 + c as u64);
        for (n, k) in [(3, 1), (11, 3.min(spec.positions)), (9, spec.positions)] {
            let mut r = rng::stream(30 + c as u64, Domain::Eval, 5, k as u64);
            let mut xs = vec![0.0; n * k * spec.d];
            let mut ys = vec![0.0; n * k];
            rng::fill_normal(&mut r, &mut xs);
            rng::fill_normal(&mut r, &mut ys);
            let (xs, ys): (Vec<T>, Vec<T>) = (
                xs.into_iter().map(T::of).collect(),
                ys.into_iter().map(T::of).collect(),
            );
            let mut o0 = vec![T::zero(); n * k];
            let mut o1 = vec![T::of(f64::NAN); n * k];
            Gpt2Runner::new(Box::new(Gpt2Reference::new()))
                .predict(spec, &p, &xs, &ys, n, k, &mut o0)
                .map_err(err)?;
            Gpt2Runner::new(make())
                .predict(spec, &p, &xs, &ys, n, k, &mut o1)
                .map_err(err)?;
            let d = rel(&wide(&o1), &wide(&o0));
            if !(d <= tol) {
                return Err(format!(
                    "{spec:?} n={n} K={k}: predictions rel diff {d:.2e} > {tol:.0e}"
                ));
            }
        }
    }
    Ok(())
}

/// The same kernels called again on the same inputs, after calls at other shapes, give the same
/// bits (no state leaks between calls).
pub fn repeatable<T: Scalar>(make: Make<T>) -> Outcome {
    let all = cases();
    let (spec, shapes) = &all[0];
    let (other, oshapes) = &all[2];
    let p = params::<T>(spec, 0.3, 40);
    let po = params::<T>(other, 0.3, 41);
    let b = batch::<T>(spec.d, shapes[2], 42);
    let bo = batch::<T>(other.d, oshapes[0], 43);
    let mut e = Gpt2Runner::new(make());
    let mut g0 = vec![T::zero(); p.len()];
    let mut g1 = vec![T::of(f64::NAN); p.len()];
    let mut go = vec![T::zero(); po.len()];
    let l0 = e.loss_grad(spec, &p, &b, &mut g0).map_err(err)?;
    e.loss_grad(other, &po, &bo, &mut go).map_err(err)?;
    let short = batch::<T>(spec.d, shapes[0], 44);
    e.loss_grad(spec, &p, &short, &mut g1).map_err(err)?;
    let l1 = e.loss_grad(spec, &p, &b, &mut g1).map_err(err)?;
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    if l0.to_f64().to_bits() != l1.to_f64().to_bits() || bits(&g0) != bits(&g1) {
        return Err("two identical calls differ".into());
    }
    Ok(())
}

/// Bad input is refused through [`Gpt2Runner`] with the error the runner names, before the
/// engine runs.
pub fn refuses_bad_input<T: Scalar>(make: Make<T>) -> Outcome {
    let spec = &cases()[0].0;
    let p = params::<T>(spec, 0.3, 50);
    let b = batch::<T>(
        spec.d,
        Shape {
            n: 2,
            len: 2,
            active: ALL,
        },
        51,
    );
    let mut run = Gpt2Runner::new(make());
    let mut g = vec![T::zero(); p.len()];
    let shape = |r: crate::Result<T>| matches!(r, Err(Error::Shape(_)));
    let mut bad: Vec<(&str, bool)> = Vec::new();
    bad.push((
        "short parameters",
        shape(run.loss_grad(spec, &p[1..], &b, &mut g[1..])),
    ));
    bad.push((
        "short gradient",
        shape(run.loss_grad(spec, &p, &b, &mut g[1..])),
    ));
    let mut nan = p.clone();
    nan[3] = T::of(f64::NAN);
    bad.push((
        "NaN parameter",
        matches!(
            run.loss_grad(spec, &nan, &b, &mut g),
            Err(Error::NonFinite(_))
        ),
    ));
    let mut bn = b.clone();
    bn.z[1] = T::of(f64::INFINITY);
    bad.push((
        "infinite token",
        matches!(
            run.loss_grad(spec, &p, &bn, &mut g),
            Err(Error::NonFinite(_))
        ),
    ));
    let long = batch::<T>(
        spec.d,
        Shape {
            n: 1,
            len: spec.positions,
            active: ALL,
        },
        52,
    );
    bad.push((
        "K > positions",
        shape(run.loss_grad(spec, &p, &long, &mut g)),
    ));
    let wrong_d = batch::<T>(
        spec.d + 1,
        Shape {
            n: 1,
            len: 2,
            active: ALL,
        },
        53,
    );
    bad.push(("batch d", shape(run.loss_grad(spec, &p, &wrong_d, &mut g))));
    let odd = Gpt2Spec {
        heads: 3,
        ..spec.clone()
    };
    bad.push((
        "embd not a multiple of heads",
        matches!(
            run.loss_grad(&odd, &p, &b, &mut g),
            Err(Error::InvalidConfig(_))
        ),
    ));
    let k = spec.positions + 1;
    let (xs, ys) = (vec![T::zero(); k * spec.d], vec![T::zero(); k]);
    let mut out = vec![T::zero(); k];
    bad.push((
        "predict K > positions",
        run.predict(spec, &p, &xs, &ys, 1, k, &mut out).is_err(),
    ));
    bad.push((
        "predict short output",
        run.predict(spec, &p, &xs[..3 * spec.d], &ys[..3], 1, 3, &mut out[..2])
            .is_err(),
    ));
    bad.push((
        "predict no prompts",
        run.predict(spec, &p, &[], &[], 0, 3, &mut []).is_err(),
    ));
    if let Some((what, _)) = bad.iter().find(|(_, refused)| !refused) {
        return Err(format!("{what}: not refused as it should be"));
    }
    // and the kernels still run after the refusals
    run.loss_grad(spec, &p, &b, &mut g).map_err(err)?;
    Ok(())
}
