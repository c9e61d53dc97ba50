//! Filling a group's lanes: from a caller's batch (gather), or by fused generation of the
//! training data of (seed, step) — the Gaussian regression tasks (isotropic, anisotropic,
//! multi-task, linear, `eigs` with a random task vector; no shift) fully vectorised, other
//! tasks through [`Task::sample_sequence`] one lane at a time. Sequence b always comes from stream
//! (seed, Train, step, b), so the data equal the scalar reference's up to rounding.
use crate::kernel::Group;
use crate::lanes::{cast, cast_mut, one, zero, Lanes, SimdScalar};
use icl_core::config::{MultiTaskVariant, TaskKind};
use icl_core::rng::{law2, stream_base, Domain, Law};
use icl_core::{Batch, Task};

/// Per-chunk scratch for data generation (sized on first use, reused after).
#[derive(Debug, Clone)]
pub struct GenScratch<T: SimdScalar> {
    /// beta, then the noise draws (Gaussian tasks).
    beta: Vec<T::V>,
    noise: Vec<T::V>,
    /// The covariance factor in `T`, and one token's x = F g.
    factor: Vec<T>,
    x: Vec<T::V>,
    normals: Vec<f64>,
    z: Vec<T>,
    y: Vec<T>,
}

impl<T: SimdScalar> Default for GenScratch<T> {
    fn default() -> Self {
        GenScratch {
            beta: Vec::new(),
            noise: Vec::new(),
            factor: Vec::new(),
            x: Vec::new(),
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
    if task.is_gaussian() {
        generate_gaussian::<T>(g, task, seed, step, b0, s, native);
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

/// Where the next normal of a Gaussian sequence goes: the stream is
/// `[beta (nb) | x_0 .. x_L (d each) | noise_0 .. noise_L (n_out each)]` (`Task::sample_sequence`).
struct Sink<'a, V> {
    d: usize,
    /// The task vector's length (d, or the multi-task `code` generator's sum of support sizes).
    nb: usize,
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
        if idx < self.nb {
            self.beta[idx] = v;
        } else if idx < self.nb + self.n_x {
            self.z[self.l * self.e + self.i] = v;
            self.i += 1;
            if self.i == self.d {
                self.i = 0;
                self.l += 1;
            }
        } else {
            self.noise[idx - self.nb - self.n_x] = v;
        }
    }
}

/// `W` sequences of a Gaussian task ([`Task::is_gaussian`]; streams b0 .. b0 + W) into the lanes of `g`:
/// the same draws as `Task::sample_sequence`, the normals written straight into the tokens in
/// stream order, then composed in `T` ([`Labels`]).
#[inline(always)]
pub(crate) fn generate_gaussian<T: SimdScalar>(
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
    let nb = total - (len + 1) * e;
    s.beta.resize(nb, T::V::zero());
    s.noise.resize((len + 1) * no, T::V::zero());
    let mut sink = Sink {
        d,
        nb,
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
            for v in T::law2_block2(key, b0 as u64, j as u64, native) {
                sink.put(v);
            }
        }
        if blocks % 2 == 1 {
            let ((c, sn), (c2, sn2)) = T::law2_block(key, b0 as u64, (blocks - 1) as u64, native);
            sink.put(c);
            sink.put(sn);
            sink.put(c2);
            sink.put(sn2);
        }
        if !total.is_multiple_of(4) {
            let ((c, sn), (c2, _)) = T::law2_block(key, b0 as u64, (total / 4) as u64, native);
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
    let code = task.kind == TaskKind::MultiTask && task.variant == MultiTaskVariant::Code;
    s.factor.clear();
    s.factor.extend(task.factor().iter().map(|&f| T::of(f)));
    let labels = Labels {
        d,
        no,
        len,
        scale: task.beta_scale().map(|_| T::inv_sqrt(d)),
        sigma: T::of(task.sigma),
        sigma64: task.sigma,
        query_noise: task.query_noise,
        factor: &s.factor,
        outputs: match (task.kind, code) {
            (TaskKind::MultiTask, false) => Outputs::Supports(&task.supports),
            (TaskKind::MultiTask, true) => Outputs::Code(&task.supports),
            _ => Outputs::All,
        },
    };
    if wide {
        // in registers (the compiler splits `Pack`'s loops here into odd pieces)
        let mut x = core::mem::take(&mut s.x);
        x.resize(d, T::V::zero());
        labels.apply::<T::Wide>(
            cast_mut(&mut s.beta),
            cast_mut(&mut g.z),
            cast(&s.noise),
            cast_mut(&mut g.y),
            cast_mut(&mut x),
        );
        s.x = x;
    } else {
        s.x.resize(d, T::V::zero());
        labels.apply::<T::V>(&mut s.beta, &mut g.z, &s.noise, &mut g.y, &mut s.x);
    }
}

/// Which task vector coordinates each output's label sums (`Task::sample_sequence_as`).
enum Outputs<'a> {
    /// Every output: `beta . x`.
    All,
    /// The multi-task paper generator: output o sums `beta_i x_i` over its support S_o.
    Supports(&'a [Vec<usize>]),
    /// The multi-task `code` generator: output o has its own |S_o| coordinates of beta (in
    /// order of the outputs) against x on S_o, and noise sqrt(|S_o|) sigma.
    Code(&'a [Vec<usize>]),
}

/// The tokens and labels of a Gaussian group from its normals: x = F g per token (F lower
/// triangular, when the task has one), beta scaled (1/sqrt(d) for He et al.'s tasks), each
/// output's `y = beta . x + std eps` summed in order, the query's y into `y` (its token's slot
/// zero). In `T`, with the lanes' multiply-add: the same bits at every vector level.
struct Labels<'a, T> {
    d: usize,
    no: usize,
    len: usize,
    scale: Option<T>,
    sigma: T,
    sigma64: f64,
    query_noise: bool,
    factor: &'a [T],
    outputs: Outputs<'a>,
}

impl<T: icl_core::Scalar> Labels<'_, T> {
    #[inline(always)]
    fn apply<V: Lanes<T = T>>(
        &self,
        beta: &mut [V],
        z: &mut [V],
        noise: &[V],
        y: &mut [V],
        xs: &mut [V],
    ) {
        let (d, no) = (self.d, self.no);
        let e = d + no;
        if let Some(s) = self.scale {
            let sc = V::splat(s);
            beta.iter_mut().for_each(|b| *b = *b * sc);
        }
        let sigma = V::splat(self.sigma);
        for l in 0..=self.len {
            let tok = &mut z[l * e..(l + 1) * e];
            if !self.factor.is_empty() {
                // x_i = sum_{k <= i} F_ik g_k, from the token's normals g
                for (i, x) in xs.iter_mut().enumerate() {
                    let f = &self.factor[i * d..i * d + i + 1];
                    let mut acc = tok[0] * V::splat(f[0]);
                    for k in 1..=i {
                        acc = tok[k].mul_add(V::splat(f[k]), acc);
                    }
                    *x = acc;
                }
                tok[..d].copy_from_slice(xs);
            }
            match self.outputs {
                Outputs::All => {
                    let mut clean = V::zero();
                    for (&b, &x) in beta.iter().zip(&tok[..d]) {
                        clean = b.mul_add(x, clean);
                    }
                    for o in 0..no {
                        let noisy = noise[l * no + o].mul_add(sigma, clean);
                        self.put(tok, y, l, o, clean, noisy);
                    }
                }
                Outputs::Supports(sup) => {
                    for (o, s) in sup.iter().enumerate().take(no) {
                        let mut clean = V::zero();
                        for &i in s {
                            clean = beta[i].mul_add(tok[i], clean);
                        }
                        let noisy = noise[l * no + o].mul_add(sigma, clean);
                        self.put(tok, y, l, o, clean, noisy);
                    }
                }
                Outputs::Code(sup) => {
                    let mut off = 0;
                    for (o, s) in sup.iter().enumerate().take(no) {
                        let mut clean = V::zero();
                        for (j, &i) in s.iter().enumerate() {
                            clean = beta[off + j].mul_add(tok[i], clean);
                        }
                        off += s.len();
                        let std = V::splat(T::of((s.len() as f64).sqrt() * self.sigma64));
                        let noisy = noise[l * no + o].mul_add(std, clean);
                        self.put(tok, y, l, o, clean, noisy);
                    }
                }
            }
        }
    }

    /// Output o of token l: its label (context), or zero and the target (query).
    #[inline(always)]
    fn put<V: Lanes<T = T>>(
        &self,
        tok: &mut [V],
        y: &mut [V],
        l: usize,
        o: usize,
        clean: V,
        noisy: V,
    ) {
        let d = self.d;
        if l < self.len {
            tok[d + o] = noisy;
        } else {
            tok[d + o] = V::zero();
            y[o] = if self.query_noise { noisy } else { clean };
        }
    }
}
