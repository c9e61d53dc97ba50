//! Filling a group's lanes: from a caller's batch (gather), or by fused generation of the
//! training data of (seed, step) — isotropic tasks fully vectorised, other tasks through
//! [`Task::sample_sequence`] one lane at a time. Sequence b always comes from stream
//! (seed, Train, step, b), so the data equal the scalar reference's up to rounding.
use crate::gauss::{fill_normal4, fill_normal8, Xoshiro4};
use crate::kernel::Group;
use crate::lanes::{one, zero, Lanes, SimdScalar};
use icl_core::config::TaskKind;
use icl_core::rng::{self, Domain};
use icl_core::{Batch, Task};
use wide::{f32x8, f64x4};

/// Per-chunk scratch for data generation (sized on first use, reused after).
#[derive(Debug, Clone, Default)]
pub struct GenScratch<T> {
    pub(crate) normals4: Vec<f64x4>,
    pub(crate) normals8: Vec<f32x8>,
    normals: Vec<f64>,
    z: Vec<T>,
    y: Vec<T>,
}

/// Set the mask: lane k holds a sequence when `b0 + k < n`.
#[inline]
fn set_mask<V: Lanes>(g: &mut Group<V>, b0: usize, n: usize) {
    for (k, m) in g.mask.lanes_mut().iter_mut().enumerate() {
        *m = if b0 + k < n {
            one::<V::T>()
        } else {
            zero::<V::T>()
        };
    }
}

/// Copy sequences `b0 .. b0 + W` of `batch` into the lanes of `g` (zeros past the end).
pub fn gather<V: Lanes>(g: &mut Group<V>, batch: &Batch<V::T>, b0: usize) {
    set_mask(g, b0, batch.n);
    let no = batch.n_out;
    for k in 0..V::W {
        let b = b0 + k;
        if b < batch.n {
            for (v, &x) in g.z.iter_mut().zip(batch.seq(b)) {
                v.lanes_mut()[k] = x;
            }
            for (v, &x) in g.y.iter_mut().zip(&batch.y[b * no..(b + 1) * no]) {
                v.lanes_mut()[k] = x;
            }
        } else {
            g.z.iter_mut()
                .chain(g.y.iter_mut())
                .for_each(|v| v.lanes_mut()[k] = zero::<V::T>());
        }
    }
}

/// Generate the training sequences `b0 .. b0 + W` of (seed, step) into the lanes of `g`;
/// lanes at or past `n` are filled (from their own streams) but masked out.
pub fn generate<T: SimdScalar>(
    g: &mut Group<T::V>,
    task: &Task,
    seed: u64,
    step: u64,
    b0: usize,
    n: usize,
    s: &mut GenScratch<T>,
) {
    set_mask(g, b0, n);
    if task.kind == TaskKind::Isotropic {
        T::generate_isotropic(g, task, seed, step, b0, s);
        return;
    }
    let (len, e, no) = (g.shape.len, task.e(), task.n_out);
    s.z.resize((len + 1) * e, T::zero());
    s.y.resize(no, T::zero());
    for k in 0..<T::V as Lanes>::W {
        let mut r = rng::stream(seed, Domain::Train, step, (b0 + k) as u64);
        task.sample_sequence(&mut r, len, &mut s.normals, &mut s.z, &mut s.y);
        for (v, &x) in g.z.iter_mut().zip(&s.z) {
            v.lanes_mut()[k] = x;
        }
        for (v, &x) in g.y.iter_mut().zip(&s.y) {
            v.lanes_mut()[k] = x;
        }
    }
}

/// Four isotropic sequences (streams b0 .. b0 + 4) into lanes `4 q .. 4 q + 4`, in f64x4.
/// Same draws and arithmetic as `Task::sample_sequence`: normals = [beta (d) | x_0..x_L (d each) |
/// noise_0..noise_L (n_out each)], beta scaled by 1/sqrt(d), y = beta . x + sigma eps.
#[inline(always)]
pub(crate) fn generate_isotropic4<V: Lanes>(
    g: &mut Group<V>,
    task: &Task,
    seed: u64,
    step: u64,
    b0: usize,
    q: usize,
    normals: &mut Vec<f64x4>,
) {
    let (d, no, len) = (task.d, task.n_out, g.shape.len);
    let e = d + no;
    normals.resize(task.normals_per_sequence(len), f64x4::ZERO);
    let mut rng = Xoshiro4::train(seed, step, b0 as u64);
    fill_normal4(&mut rng, normals);
    let (beta, rest) = normals.split_at_mut(d);
    let (xs, noise) = rest.split_at((len + 1) * d);
    let sc = f64x4::splat(1.0 / (d as f64).sqrt());
    beta.iter_mut().for_each(|b| *b *= sc);
    let sigma = f64x4::splat(task.sigma);
    for l in 0..=len {
        let x = &xs[l * d..(l + 1) * d];
        let tok = &mut g.z[l * e..(l + 1) * e];
        let mut clean = f64x4::ZERO;
        for i in 0..d {
            tok[i].set4(q, x[i]);
            clean += beta[i] * x[i];
        }
        for o in 0..no {
            let eps = noise[l * no + o] * sigma;
            if l < len {
                tok[d + o].set4(q, clean + eps);
            } else {
                tok[d + o].set4(q, f64x4::ZERO);
                g.y[o].set4(q, if task.query_noise { clean + eps } else { clean });
            }
        }
    }
}

/// Eight isotropic sequences (streams b0 .. b0 + 8) into the lanes of an f32 group, all in
/// `f32x8`: the same draws as `Task::sample_sequence`, Box–Muller in f32 ([`fill_normal8`]),
/// beta scaled by 1/sqrt(d), y = beta . x + sigma eps summed in f32.
#[inline(always)]
pub(crate) fn generate_isotropic8(
    g: &mut Group<f32x8>,
    task: &Task,
    seed: u64,
    step: u64,
    b0: usize,
    normals: &mut Vec<f32x8>,
) {
    let (d, no, len) = (task.d, task.n_out, g.shape.len);
    let e = d + no;
    normals.resize(task.normals_per_sequence(len), f32x8::ZERO);
    let mut r0 = Xoshiro4::train(seed, step, b0 as u64);
    let mut r1 = Xoshiro4::train(seed, step, b0 as u64 + 4);
    fill_normal8(&mut r0, &mut r1, normals);
    let (beta, rest) = normals.split_at_mut(d);
    let (xs, noise) = rest.split_at((len + 1) * d);
    let sc = f32x8::splat((1.0 / (d as f64).sqrt()) as f32);
    beta.iter_mut().for_each(|b| *b *= sc);
    let sigma = f32x8::splat(task.sigma as f32);
    for l in 0..=len {
        let x = &xs[l * d..(l + 1) * d];
        let tok = &mut g.z[l * e..(l + 1) * e];
        let mut clean = f32x8::ZERO;
        for i in 0..d {
            tok[i] = x[i];
            clean += beta[i] * x[i];
        }
        for o in 0..no {
            let eps = noise[l * no + o] * sigma;
            if l < len {
                tok[d + o] = clean + eps;
            } else {
                tok[d + o] = f32x8::ZERO;
                g.y[o] = if task.query_noise { clean + eps } else { clean };
            }
        }
    }
}
