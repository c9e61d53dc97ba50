//! [`SimdEngine`]: the batch is cut into fixed chunks of [`CHUNK`] sequences (independent of the
//! thread count); rayon runs the chunks, each in groups of `W` sequences (one per SIMD lane), and
//! the chunks' partial gradients are added in chunk order. Results are therefore identical for
//! any number of threads.
//!
//! Each chunk's work (data generation, forward, backward) is one [`Kernel`] compiled at every
//! dispatch level and run at the engine's [`Level`] (the process's [`dispatch::level`] unless set).
use crate::data::{gather, generate, GenScratch};
use crate::dispatch::{self, Kernel, Level};
use crate::kernel::{Dim, Group, Shape};
use crate::lanes::{Lanes, SameLayout, SimdScalar};
use crate::par;
use core::marker::PhantomData;
use icl_core::engine::{AttentionKernels, Sampling};
use icl_core::families::attention::act::Act;
use icl_core::families::attention::{AttentionSpec, Circuits};
use icl_core::{Batch, Result, Task};

/// Sequences per chunk: the unit of parallel work and of the fixed reduction order.
pub const CHUNK: usize = 32;

/// Where a chunk's sequences come from.
#[derive(Clone, Copy)]
enum Source<'a, T> {
    Batch(&'a Batch<T>),
    Train {
        task: &'a Task,
        seed: u64,
        step: u64,
    },
}

/// The tokens, targets and mask of one group of a chunk (swapped into the chunk's [`Group`] to
/// be filled or computed on).
#[derive(Debug, Clone)]
struct Tokens<V> {
    z: Vec<V>,
    y: Vec<V>,
    mask: V,
}

/// One chunk's scratch and its partial results.
#[derive(Debug, Clone)]
struct Chunk<T: SimdScalar> {
    group: Group<T::V>,
    /// The tokens of each group of the chunk, filled first, then computed on.
    tokens: Vec<Tokens<T::V>>,
    gen: GenScratch<T>,
    gkq: Vec<T>,
    gov: Vec<T>,
    loss: T,
}

impl<T: SimdScalar> Chunk<T> {
    fn new(shape: Shape) -> Self {
        let (h, e, no) = (shape.heads, shape.e, shape.n_out);
        let group = Group::new(shape);
        let tokens = Tokens {
            z: group.z.clone(),
            y: group.y.clone(),
            mask: group.mask,
        };
        Chunk {
            tokens: vec![tokens; CHUNK.div_ceil(<T::V as Lanes>::W)],
            group,
            gen: GenScratch::default(),
            gkq: vec![T::zero(); h * e * e],
            gov: vec![T::zero(); h * no * e],
            loss: T::zero(),
        }
    }

    #[inline(always)]
    fn fill(&mut self, src: Source<'_, T>, b0: usize, n: usize, native: bool) {
        match src {
            Source::Batch(b) => gather(&mut self.group, b, b0),
            Source::Train { task, seed, step } => generate(
                &mut self.group,
                task,
                seed,
                step,
                b0,
                n,
                &mut self.gen,
                native,
            ),
        }
    }

    /// Swap the tokens of group `i` with the ones in `self.group`.
    #[inline(always)]
    fn swap(&mut self, i: usize) {
        let (g, t) = (&mut self.group, &mut self.tokens[i]);
        core::mem::swap(&mut g.z, &mut t.z);
        core::mem::swap(&mut g.y, &mut t.y);
        core::mem::swap(&mut g.mask, &mut t.mask);
    }

    /// Fill the tokens of every group of sequences `first .. min(first + CHUNK, n)`; returns the
    /// number of groups.
    #[inline(always)]
    fn fill_all(&mut self, src: Source<'_, T>, first: usize, n: usize, native: bool) -> usize {
        let w = <T::V as Lanes>::W;
        let end = (first + CHUNK).min(n);
        let mut i = 0;
        while first + i * w < end {
            self.swap(i);
            self.fill(src, first + i * w, end, native);
            self.swap(i);
            i += 1;
        }
        i
    }

    /// Loss and gradient partials of the `groups` filled groups (`inv` = 1 / (n n_out)), computed
    /// in lanes `C`, with a kernel per width E up to [`crate::kernel::MAX_FIXED_E`] or
    /// (`ANY_WIDTH`) one kernel for every width, E a run-time value: the same operations in the
    /// same order, so the same bits, where the per-width kernels are not worth their code
    /// ([`LossGrad::run_base`]).
    #[inline(always)]
    fn loss_grad<C: SameLayout<T::V> + Lanes<T = T>, const ANY_WIDTH: bool>(
        &mut self,
        act: &Act,
        circ: &Circuits<T>,
        groups: usize,
        inv: T,
    ) {
        let e = self.group.shape.e;
        if ANY_WIDTH {
            self.groups::<C, _>(crate::kernel::Dynamic(e), act, circ, groups, inv);
        } else {
            crate::with_dim!(e, dim => self.groups::<C, _>(dim, act, circ, groups, inv));
        }
        // lane-wise accumulators -> chunk partials (fixed lane order), zero again
        self.loss = self.group.drain_grad(&mut self.gkq, &mut self.gov) * inv;
    }

    /// Forward and backward of the groups in order, with the width E as a type.
    #[inline(always)]
    fn groups<C: SameLayout<T::V> + Lanes<T = T>, D: Dim>(
        &mut self,
        dim: D,
        act: &Act,
        circ: &Circuits<T>,
        groups: usize,
        inv: T,
    ) {
        for i in 0..groups {
            self.swap(i);
            self.group.forward::<C, D>(dim, act, circ);
            self.group.backward::<C, D>(dim, act, circ, inv);
            self.swap(i);
        }
    }

    /// The sum of the first output of the `groups` filled groups (a checksum, so that the
    /// benchmark's data-only pass is not optimised away).
    fn checksum(&self, groups: usize) -> T {
        let mut acc = T::zero();
        for t in &self.tokens[..groups] {
            acc += t.y[0].sum();
        }
        acc
    }

    #[inline(always)]
    fn predict<C: SameLayout<T::V> + Lanes<T = T>>(
        &mut self,
        act: &Act,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        first: usize,
        out: &mut [T],
    ) {
        let (w, no) = (<T::V as Lanes>::W, batch.n_out);
        let end = (first + CHUNK).min(batch.n);
        let mut b0 = first;
        while b0 < end {
            gather(&mut self.group, batch, b0);
            let dim = crate::kernel::Dynamic(self.group.shape.e);
            self.group.forward::<C, _>(dim, act, circ);
            for k in 0..w.min(end - b0) {
                for o in 0..no {
                    out[(b0 - first + k) * no + o] = self.group.yhat[o].lanes()[k];
                }
            }
            b0 += w;
        }
    }
}

/// Whether the forward and backward compute in [`SimdScalar::Wide`] at `level` (one 512-bit
/// register per lane group, at AVX-512). With [`crate::Pack`]'s element loops the compiler turns
/// some of the kernel's loops over keys into gathers and scatters at AVX-512; the register types
/// state each operation as one instruction. The same bits either way.
fn wide_lanes(level: Level) -> bool {
    cfg!(target_arch = "x86_64") && level == Level::Avx512
}

/// A kernel generic over the lanes it computes in ([`run_in_lanes`]).
trait LaneKernel<T: SimdScalar> {
    type Out;
    fn run<C: SameLayout<T::V> + Lanes<T = T>>(self) -> Self::Out;
    /// `run` at the baseline level ([`Kernel::run_base`]).
    #[inline(always)]
    fn run_base<C: SameLayout<T::V> + Lanes<T = T>>(self) -> Self::Out
    where
        Self: Sized,
    {
        self.run::<C>()
    }
}

/// `K` in lanes `C`, as a [`Kernel`].
struct InLanes<K, C>(K, PhantomData<C>);

impl<T: SimdScalar, K: LaneKernel<T>, C: SameLayout<T::V> + Lanes<T = T>> Kernel for InLanes<K, C> {
    type Out = K::Out;
    #[inline(always)]
    fn run(self) -> K::Out {
        self.0.run::<C>()
    }
    #[inline(always)]
    fn run_base(self) -> K::Out {
        self.0.run_base::<C>()
    }
}

/// Run `k` at `level` in the lanes [`wide_lanes`] picks, each lane type compiled only at the levels
/// that run it ([`SimdScalar::Wide`] at AVX-512, [`SimdScalar::V`] below): compiled at every level
/// in both, half of the one-layer kernels were never run.
#[inline(always)]
fn run_in_lanes<T: SimdScalar, K: LaneKernel<T>>(level: Level, k: K) -> K::Out {
    if wide_lanes(level) {
        dispatch::run_avx512(level, InLanes::<K, T::Wide>(k, PhantomData))
    } else {
        dispatch::run_below_avx512(level, InLanes::<K, T::V>(k, PhantomData))
    }
}

/// Whether the data generator converts 64-bit integers with the language's casts at `level`
/// (one instruction each with AVX-512DQ; emulated, and slower than the generator's own exact
/// conversions, below it). The same bits either way.
fn native_conversions(level: Level) -> bool {
    level == Level::Avx512
}

/// The SIMD + rayon engine. Holds per-chunk scratch, sized on first use and reused afterwards
/// (no heap allocation per step once the shape is fixed).
#[derive(Debug)]
pub struct SimdEngine<T: SimdScalar> {
    chunks: Vec<Chunk<T>>,
    level: Level,
}

impl<T: SimdScalar> Default for SimdEngine<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Fill a chunk's groups.
struct Fill<'a, 'b, T: SimdScalar> {
    ch: &'a mut Chunk<T>,
    src: Source<'b, T>,
    first: usize,
    n: usize,
    native: bool,
}

impl<T: SimdScalar> Kernel for Fill<'_, '_, T> {
    type Out = usize;
    #[inline(always)]
    fn run(self) -> usize {
        self.ch.fill_all(self.src, self.first, self.n, self.native)
    }
}

/// A chunk's loss and gradient partials from its filled groups.
struct LossGrad<'a, T: SimdScalar> {
    ch: &'a mut Chunk<T>,
    act: &'a Act,
    circ: &'a Circuits<T>,
    groups: usize,
    inv: T,
}

impl<T: SimdScalar> LaneKernel<T> for LossGrad<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<C: SameLayout<T::V> + Lanes<T = T>>(self) {
        self.ch
            .loss_grad::<C, false>(self.act, self.circ, self.groups, self.inv)
    }
    /// On x86-64 one kernel for every width at the baseline: it runs only on CPUs without AVX2
    /// and under `ICL_SIMD=sse2` (and, in [`SimdScalar::Wide`] lanes, never), so the 11 widths'
    /// kernels there were ~50 CPU-s of the release build for little speed. Elsewhere the
    /// baseline is the only level, and keeps them.
    #[inline(always)]
    fn run_base<C: SameLayout<T::V> + Lanes<T = T>>(self) {
        const ANY_WIDTH: bool = cfg!(target_arch = "x86_64");
        self.ch
            .loss_grad::<C, ANY_WIDTH>(self.act, self.circ, self.groups, self.inv)
    }
}

/// A chunk's predictions.
struct Predict<'a, T: SimdScalar> {
    ch: &'a mut Chunk<T>,
    act: &'a Act,
    circ: &'a Circuits<T>,
    batch: &'a Batch<T>,
    first: usize,
    out: &'a mut [T],
}

impl<T: SimdScalar> LaneKernel<T> for Predict<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<C: SameLayout<T::V> + Lanes<T = T>>(self) {
        self.ch
            .predict::<C>(self.act, self.circ, self.batch, self.first, self.out)
    }
}

impl<T: SimdScalar> SimdEngine<T> {
    /// A new engine at the process's [`dispatch::level`].
    pub fn new() -> Self {
        Self::with_level(dispatch::level())
    }

    /// A new engine at `level` (capped at what the CPU has).
    pub fn with_level(level: Level) -> Self {
        SimdEngine {
            chunks: Vec::new(),
            level: level.min(dispatch::detected()),
        }
    }

    /// The level the kernels run at.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Make room for `n` sequences of shape `shape`.
    fn fit(&mut self, shape: Shape, n: usize) -> usize {
        let nch = n.div_ceil(CHUNK);
        if self.chunks.first().is_some_and(|c| c.group.shape != shape) {
            self.chunks.clear();
        }
        while self.chunks.len() < nch {
            self.chunks.push(Chunk::new(shape));
        }
        nch
    }

    fn shape(spec: &AttentionSpec, len: usize) -> Shape {
        Shape {
            heads: spec.heads,
            e: spec.e(),
            n_out: spec.n_out,
            len,
            nk: spec.keys(len),
        }
    }

    /// Run `f` on chunks `0 .. nch` (in parallel when there is more than one), with the level.
    fn each(&mut self, nch: usize, f: impl Fn(Level, usize, &mut Chunk<T>) + Sync + Send) {
        let level = self.level;
        par::each_mut(&mut self.chunks[..nch], |c, ch| f(level, c, ch));
    }

    fn run_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        src: Source<'_, T>,
        n: usize,
        len: usize,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        let nch = self.fit(Self::shape(spec, len), n);
        let act = spec.act();
        let inv = T::one() / T::of((n * spec.n_out) as f64);
        self.each(nch, |level, c, ch| {
            let fill = Fill {
                ch: &mut *ch,
                src,
                first: c * CHUNK,
                n,
                native: native_conversions(level),
            };
            let groups = dispatch::run(level, fill);
            let k = LossGrad {
                ch,
                act: &act,
                circ,
                groups,
                inv,
            };
            run_in_lanes(level, k)
        });
        // fixed reduction order: chunk 0, 1, 2, ...
        grad.clear();
        let mut loss = T::zero();
        for ch in &self.chunks[..nch] {
            for (g, &p) in grad.kq.iter_mut().zip(&ch.gkq) {
                *g += p;
            }
            for (g, &p) in grad.ov.iter_mut().zip(&ch.gov) {
                *g += p;
            }
            loss += ch.loss;
        }
        Ok(loss)
    }

    /// Generate (and discard) the training batch of `step`, as `sampled_loss_grad` does; returns a
    /// checksum. Used by `icl bench` to split the time between data generation and compute.
    /// (Through [`SimdScalar::generate_only`]: compiled in this crate, once per precision.)
    #[inline]
    pub fn generate_only(
        &mut self,
        spec: &AttentionSpec,
        task: &Task,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
    ) -> T {
        T::generate_only(self, spec, task, seed, step, n, len)
    }

    pub(crate) fn generate_only_here(
        &mut self,
        spec: &AttentionSpec,
        task: &Task,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
    ) -> T {
        let nch = self.fit(Self::shape(spec, len), n);
        let src = Source::Train { task, seed, step };
        let sums = std::sync::Mutex::new(T::zero());
        self.each(nch, |level, c, ch| {
            // the training step's own fill kernel (no second copy of the generator to compile)
            let fill = Fill {
                ch: &mut *ch,
                src,
                first: c * CHUNK,
                n,
                native: native_conversions(level),
            };
            let groups = dispatch::run(level, fill);
            let s = ch.checksum(groups);
            if let Ok(mut m) = sums.lock() {
                *m += s;
            }
        });
        sums.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: SimdScalar> AttentionKernels<T> for SimdEngine<T> {
    fn name(&self) -> &'static str {
        "simd"
    }

    fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        self.run_loss_grad(spec, circ, Source::Batch(batch), batch.n, batch.len, grad)
    }

    #[inline(always)]
    fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        let nch = self.fit(Self::shape(spec, batch.len), batch.n);
        let act = spec.act();
        let level = self.level;
        let mut jobs: Vec<(&mut Chunk<T>, &mut [T])> = self.chunks[..nch]
            .iter_mut()
            .zip(out.chunks_mut(CHUNK * spec.n_out))
            .collect();
        par::each_mut(&mut jobs, |c, (ch, o)| {
            let k = Predict {
                ch,
                act: &act,
                circ,
                batch,
                first: c * CHUNK,
                out: o,
            };
            run_in_lanes(level, k)
        });
        Ok(())
    }

    /// Fused: every lane group generates its sequences from the (seed, Train, step, b) streams.
    fn sampled_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        task: &Task,
        s: Sampling,
        grad: &mut Circuits<T>,
    ) -> Option<Result<T>> {
        let src = Source::Train {
            task,
            seed: s.seed,
            step: s.step,
        };
        Some(self.run_loss_grad(spec, circ, src, s.n, s.len, grad))
    }
}
