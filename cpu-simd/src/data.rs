//! Filling a group's lanes: from a caller's batch (gather), or by fused generation of the
//! training data of (seed, step) — isotropic tasks fully vectorised, other tasks through
//! [`Task::sample_sequence`] one lane at a time. Sequence b always comes from stream
//! (seed, Train, step, b), so the data equal the scalar reference's up to rounding.
use crate::kernel::Group;
use crate::lanes::{cast, cast_mut, one, zero, Lanes, SimdScalar};
use icl_core::config::TaskKind;
use icl_core::rng::{law2, stream_base, Domain, Law};
use icl_core::{Batch, Task};

/// Per-chunk scratch for data generation (sized on first use, reused after).
#[derive(Debug, Clone)]
pub struct GenScratch<T: SimdScalar> {
    /// beta, then the noise draws (isotropic tasks).
    beta: Vec<T::V>,
    noise: Vec<T::V>,
    normals: Vec<f64>,
    z: Vec<T>,
    y: Vec<T>,
}

impl<T: SimdScalar> Default for GenScratch<T> {
    fn default() -> Self {
        GenScratch {
            beta: Vec::new(),
            noise: Vec::new(),
            normals: Vec::new(),
            z: Vec::new(),
            y: Vec::new(),
        }
    }
}

/// Set the mask: lane k holds a sequence when `b0 + k < n`.
#[inline(always)]
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
#[inline(always)]
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
/// lanes at or past `n` are filled (from their own streams) but masked out. `native`: see
/// [`SimdScalar::box_muller`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn generate<T: SimdScalar>(
    g: &mut Group<T::V>,
    task: &Task,
    seed: u64,
    step: u64,
    b0: usize,
    n: usize,
    s: &mut GenScratch<T>,
    native: bool,
) {
    set_mask(g, b0, n);
    if task.kind == TaskKind::Isotropic && task.shift.is_none() {
        generate_isotropic::<T>(g, task, seed, step, b0, s, native);
        return;
    }
    let (len, e, no) = (g.shape.len, task.e(), task.n_out);
    s.z.resize((len + 1) * e, T::zero());
    s.y.resize(no, T::zero());
    for k in 0..<T::V as Lanes>::W {
        let mut r = task.stream(seed, Domain::Train, step, (b0 + k) as u64);
        task.sample_sequence(&mut r, len, &mut s.normals, &mut s.z, &mut s.y);
        for (v, &x) in g.z.iter_mut().zip(&s.z) {
            v.lanes_mut()[k] = x;
        }
        for (v, &x) in g.y.iter_mut().zip(&s.y) {
            v.lanes_mut()[k] = x;
        }
    }
}

/// Where the next normal of an isotropic sequence goes: the stream is
/// `[beta (d) | x_0 .. x_L (d each) | noise_0 .. noise_L (n_out each)]` (`Task::sample_sequence`).
struct Sink<'a, V> {
    d: usize,
    e: usize,
    /// Index of the next normal, and its place among the x's (token l, component i).
    idx: usize,
    l: usize,
    i: usize,
    n_x: usize,
    beta: &'a mut [V],
    z: &'a mut [V],
    noise: &'a mut [V],
}

impl<V: Copy> Sink<'_, V> {
    #[inline(always)]
    fn put(&mut self, v: V) {
        let idx = self.idx;
        self.idx += 1;
        if idx < self.d {
            self.beta[idx] = v;
        } else if idx < self.d + self.n_x {
            self.z[self.l * self.e + self.i] = v;
            self.i += 1;
            if self.i == self.d {
                self.i = 0;
                self.l += 1;
            }
        } else {
            self.noise[idx - self.d - self.n_x] = v;
        }
    }
}

/// `W` isotropic sequences (streams b0 .. b0 + W) into the lanes of `g`: the same draws and
/// arithmetic as `Task::sample_sequence`, the normals written straight into the tokens in
/// stream order, beta scaled by 1/sqrt(d), `y = beta . x + sigma eps` summed in `T`.
#[inline(always)]
pub(crate) fn generate_isotropic<T: SimdScalar>(
    g: &mut Group<T::V>,
    task: &Task,
    seed: u64,
    step: u64,
    b0: usize,
    s: &mut GenScratch<T>,
    native: bool,
) {
    let (d, no, len) = (task.d, task.n_out, g.shape.len);
    let e = d + no;
    let total = task.normals_per_sequence(len);
    s.beta.resize(d, T::V::zero());
    s.noise.resize((len + 1) * no, T::V::zero());
    let mut sink = Sink {
        d,
        e,
        idx: 0,
        l: 0,
        i: 0,
        n_x: (len + 1) * d,
        beta: &mut s.beta,
        z: &mut g.z,
        noise: &mut s.noise,
    };
    // two pairs side by side and the labels in 512-bit registers: AVX-512 only (at AVX2 two
    // pairs spill the 16 registers), and only where `WIDE_GEN` says they are faster
    let wide = native && T::WIDE_GEN;
    if task.law == Law::V2 {
        // a Philox block per two pairs, in stream order; the tail keeps what it needs
        let key = law2::key_of(stream_base(seed, Domain::Train, step));
        let blocks = total / 4;
        for j in (0..blocks - blocks % 2).step_by(2) {
            for v in T::law2_block2(key, b0 as u64, j as u64) {
                sink.put(v);
            }
        }
        if blocks % 2 == 1 {
            let ((c, sn), (c2, sn2)) = T::law2_block(key, b0 as u64, (blocks - 1) as u64);
            sink.put(c);
            sink.put(sn);
            sink.put(c2);
            sink.put(sn2);
        }
        if !total.is_multiple_of(4) {
            let ((c, sn), (c2, _)) = T::law2_block(key, b0 as u64, (total / 4) as u64);
            sink.put(c);
            if total % 4 > 1 {
                sink.put(sn);
            }
            if total % 4 > 2 {
                sink.put(c2);
            }
        }
    } else {
        // pairs in order; an odd tail keeps the cosine half (`icl_core::rng::fill_normal`)
        let mut rng = T::train_rng(seed, step, b0 as u64);
        let quads = if wide { total / 4 } else { 0 };
        for _ in 0..quads {
            let ((c, sn), (c2, sn2)) = T::box_muller2(&mut rng, native);
            sink.put(c);
            sink.put(sn);
            sink.put(c2);
            sink.put(sn2);
        }
        for _ in 0..(total - 4 * quads) / 2 {
            let (c, sn) = T::box_muller(&mut rng, native);
            sink.put(c);
            sink.put(sn);
        }
        if total % 2 == 1 {
            sink.put(T::box_muller(&mut rng, native).0);
        }
    }
    let labels = Labels {
        d,
        no,
        len,
        inv_sqrt_d: T::inv_sqrt(d),
        sigma: T::of(task.sigma),
        query_noise: task.query_noise,
    };
    if wide {
        // in registers (the compiler splits `Pack`'s loops here into odd pieces)
        labels.apply::<T::Wide>(
            cast_mut(&mut s.beta),
            cast_mut(&mut g.z),
            cast(&s.noise),
            cast_mut(&mut g.y),
        );
    } else {
        labels.apply::<T::V>(&mut s.beta, &mut g.z, &s.noise, &mut g.y);
    }
}

/// The labels of an isotropic group from its normals: beta scaled by 1/sqrt(d),
/// `y = beta . x + sigma eps` summed in order, the query's y into `y` (its token's slot zero).
struct Labels<T> {
    d: usize,
    no: usize,
    len: usize,
    inv_sqrt_d: T,
    sigma: T,
    query_noise: bool,
}

impl<T: icl_core::Scalar> Labels<T> {
    #[inline(always)]
    fn apply<V: Lanes<T = T>>(&self, beta: &mut [V], z: &mut [V], noise: &[V], y: &mut [V]) {
        let (d, no) = (self.d, self.no);
        let e = d + no;
        let sc = V::splat(self.inv_sqrt_d);
        beta.iter_mut().for_each(|b| *b = *b * sc);
        let sigma = V::splat(self.sigma);
        for l in 0..=self.len {
            let tok = &mut z[l * e..(l + 1) * e];
            let mut clean = V::zero();
            for (&b, &x) in beta.iter().zip(&tok[..d]) {
                clean = b.mul_add(x, clean);
            }
            for o in 0..no {
                let noisy = noise[l * no + o].mul_add(sigma, clean);
                if l < self.len {
                    tok[d + o] = noisy;
                } else {
                    tok[d + o] = V::zero();
                    y[o] = if self.query_noise { noisy } else { clean };
                }
            }
        }
    }
}
