//! Lane types of the one-layer engine: one sequence per lane, 16 sequences per `f32` vector and 8
//! per `f64` vector (one 512-bit register either way; two 256-bit or four 128-bit ones at the
//! lower levels). Every kernel is written once against [`Lanes`].
//!
//! The operations are loops over a fixed-size array, always inlined, so the compiler turns each
//! into vector instructions of whatever width the calling function is compiled for: the plain
//! build's SSE2, or AVX2 / AVX-512 inside the `#[target_feature]` entry points of
//! [`crate::dispatch`]. The lane count does not depend on the level, only explicit `mul_add`s are
//! fused (rounded once at every level) and `exp`, `ln`, `sin`/`cos` are the crate's own
//! polynomials, so every level gives the same bits.
use crate::dispatch::Level;
use crate::gauss::{self, Xoshiro};
use crate::lane::LaneScalar;
use core::ops::{Add, AddAssign, Div, Mul, Sub};
use icl_core::Scalar;

/// `N` values of `T`, one per sequence, aligned to a 512-bit register.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, align(64))]
pub struct Pack<T, const N: usize>(pub [T; N]);

/// A vector of `W` values of scalar `T`, one per sequence.
pub trait Lanes:
    Copy
    + Send
    + Sync
    + core::fmt::Debug
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + AddAssign
{
    /// The scalar of each lane.
    type T: Scalar;
    /// Number of lanes (sequences per vector).
    const W: usize;
    /// Whether the one-layer kernel takes heads two at a time through each pass over the keys
    /// (for the 512-bit register types, with 32 registers; the same operations per head).
    const PAIRS: bool = false;
    /// All lanes equal to `x`.
    fn splat(x: Self::T) -> Self;
    /// All lanes zero.
    #[inline(always)]
    fn zero() -> Self {
        Self::splat(zero())
    }
    /// `self * m + a`, rounded twice (the product, then the sum).
    fn mul_add_unfused(self, m: Self, a: Self) -> Self;
    /// `self * m + a`, rounded once ([`LaneScalar::lane_mul_add`]).
    fn mul_add(self, m: Self, a: Self) -> Self;
    /// Lane-wise maximum.
    fn vmax(self, o: Self) -> Self;
    /// Lane-wise e^x.
    fn vexp(self) -> Self;
    /// Lane-wise square root.
    fn vsqrt(self) -> Self;
    /// Sum of the lanes in lane order.
    fn sum(self) -> Self::T;
    /// The lanes as a slice.
    fn lanes(&self) -> &[Self::T];
    /// The lanes as a mutable slice.
    fn lanes_mut(&mut self) -> &mut [Self::T];

    /// Lane-wise tanh x = 1 - 2 / (e^{2x} + 1) (saturates to +-1 without overflow trouble).
    #[inline(always)]
    fn vtanh(self) -> Self {
        let one = Self::splat(one());
        let two = one + one;
        one - two / ((self * two).vexp() + one)
    }
}

/// The scalars the SIMD engine runs in, with their lane type and its data generator.
pub trait SimdScalar:
    Scalar + LaneScalar + crate::multilayer::MlScalar + crate::gpt2::gemm::GemmScalar + Send + Sync
{
    /// The vector type.
    type V: Lanes<T = Self> + SameLayout<Self::V>;
    /// The same lanes in one 512-bit register (AVX-512 only; `V` elsewhere).
    type Wide: SameLayout<Self::V> + Lanes<T = Self>;
    /// One xoshiro256++ stream per lane.
    type Rng: Copy;
    /// Whether the isotropic generator computes two Box–Muller pairs side by side and the labels
    /// in 512-bit registers at AVX-512 (the same bits either way). f32: 2-4 us a he2025 step
    /// faster there (at AVX2 two pairs spill its 16 registers: 83 -> 102 us, so not there);
    /// f64: its generator loop measured twice as slow with them (92 -> 181 us a step, one
    /// thread), so it keeps the plain loop.
    const WIDE_GEN: bool;

    /// The training streams (seed, Train, step, first ..) of the lanes.
    fn train_rng(seed: u64, step: u64, first: u64) -> Self::Rng;
    /// One Box–Muller pair per lane (see [`crate::gauss`]); `native`: convert 64-bit integers
    /// with the language's casts where that is faster (one instruction each with AVX-512DQ; the
    /// same bits).
    fn box_muller(rng: &mut Self::Rng, native: bool) -> (Self::V, Self::V);
    /// Two [`SimdScalar::box_muller`] pairs in a row (the same draws and bits).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn box_muller2(rng: &mut Self::Rng, native: bool) -> ((Self::V, Self::V), (Self::V, Self::V)) {
        (Self::box_muller(rng, native), Self::box_muller(rng, native))
    }
    /// `1 / sqrt(d)` as the data generator rounds it.
    fn inv_sqrt(d: usize) -> Self;
    /// Data law 2: the two normal pairs of block `j` of the lanes' streams `first ..` under the
    /// Philox key `key` ([`gauss::law2_block`]).
    #[allow(clippy::type_complexity)]
    fn law2_block(
        key: [u32; 2],
        first: u64,
        j: u64,
        native: bool,
    ) -> ((Self::V, Self::V), (Self::V, Self::V));
    /// Blocks `j` and `j + 1` of [`SimdScalar::law2_block`], computed side by side: the four
    /// normals of block j, then those of block j + 1.
    fn law2_block2(key: [u32; 2], first: u64, j: u64, native: bool) -> [Self::V; 8];
    /// [`crate::SimdEngine::generate_only`], an ordinary function of this crate per precision (a
    /// caller generic in the scalar links to it instead of compiling the generators again).
    #[allow(clippy::too_many_arguments)]
    fn generate_only(
        engine: &mut crate::SimdEngine<Self>,
        spec: &icl_core::families::attention::AttentionSpec,
        task: &icl_core::Task,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
    ) -> Self;
    /// The one-layer kernels at `level` (`None`: the process's level), made in this crate.
    fn attention_kernels(level: Option<Level>) -> Box<dyn icl_core::AttentionKernels<Self>>;
    /// The transformer-stack kernels at `level`, made in this crate.
    fn stack_kernels(level: Option<Level>) -> Box<dyn icl_core::engine::StackKernels<Self>>;
    /// The GPT-2 kernels at `level`, made in this crate.
    fn gpt2_kernels(level: Option<Level>) -> Box<dyn icl_core::engine::Gpt2Kernels<Self>>;
}

// The per-precision functions that make the engines' trait objects: `#[inline(never)]` and not
// generic, so the kernels behind them are compiled in this crate only.
macro_rules! engine_fns {
    () => {
        #[inline(never)]
        fn attention_kernels(level: Option<Level>) -> Box<dyn icl_core::AttentionKernels<Self>> {
            Box::new(match level {
                None => crate::SimdEngine::<Self>::new(),
                Some(l) => crate::SimdEngine::<Self>::with_level(l),
            })
        }
        #[inline(never)]
        fn stack_kernels(level: Option<Level>) -> Box<dyn icl_core::engine::StackKernels<Self>> {
            Box::new(match level {
                None => crate::MlSimd::<Self>::new(),
                Some(l) => crate::MlSimd::<Self>::with_level(l),
            })
        }
        #[inline(never)]
        fn gpt2_kernels(level: Option<Level>) -> Box<dyn icl_core::engine::Gpt2Kernels<Self>> {
            Box::new(match level {
                None => crate::Gpt2Simd::<Self>::new(),
                Some(l) => crate::Gpt2Simd::<Self>::with_level(l),
            })
        }
        #[inline(never)]
        fn generate_only(
            engine: &mut crate::SimdEngine<Self>,
            spec: &icl_core::families::attention::AttentionSpec,
            task: &icl_core::Task,
            seed: u64,
            step: u64,
            n: usize,
            len: usize,
        ) -> Self {
            engine.generate_only_here(spec, task, seed, step, n, len)
        }
    };
}

/// Lanes per `f32` vector.
pub const W32: usize = 16;
/// Lanes per `f64` vector.
pub const W64: usize = 8;

impl SimdScalar for f32 {
    type V = Pack<f32, W32>;
    #[cfg(target_arch = "x86_64")]
    type Wide = crate::wide::Z16;
    #[cfg(not(target_arch = "x86_64"))]
    type Wide = Self::V;
    type Rng = Xoshiro<W32>;
    const WIDE_GEN: bool = true;
    engine_fns!();
    #[inline(always)]
    fn train_rng(seed: u64, step: u64, first: u64) -> Self::Rng {
        Xoshiro::train_inlined(seed, step, first)
    }
    #[inline(always)]
    fn box_muller(rng: &mut Self::Rng, native: bool) -> (Self::V, Self::V) {
        // `native` is AVX-512 (with F): split the draws by permutes
        let (c, s) = gauss::box_muller_f32(rng, native);
        (Pack(c), Pack(s))
    }
    #[inline(always)]
    fn box_muller2(rng: &mut Self::Rng, native: bool) -> ((Self::V, Self::V), (Self::V, Self::V)) {
        let ((c, s), (c2, s2)) = gauss::box_muller2_f32(rng, native);
        ((Pack(c), Pack(s)), (Pack(c2), Pack(s2)))
    }
    fn inv_sqrt(d: usize) -> f32 {
        (1.0 / (d as f64).sqrt()) as f32
    }
    #[inline(always)]
    fn law2_block(
        key: [u32; 2],
        first: u64,
        j: u64,
        native: bool,
    ) -> ((Self::V, Self::V), (Self::V, Self::V)) {
        let ((c, s), (c2, s2)) = gauss::law2_block::<W32>(key, first, j, native);
        ((Pack(c), Pack(s)), (Pack(c2), Pack(s2)))
    }
    #[inline(always)]
    fn law2_block2(key: [u32; 2], first: u64, j: u64, native: bool) -> [Self::V; 8] {
        gauss::law2_block2::<W32, { 2 * W32 }>(key, first, j, native).map(Pack)
    }
}

impl SimdScalar for f64 {
    type V = Pack<f64, W64>;
    #[cfg(target_arch = "x86_64")]
    type Wide = crate::wide::Z8;
    #[cfg(not(target_arch = "x86_64"))]
    type Wide = Self::V;
    type Rng = Xoshiro<W64>;
    const WIDE_GEN: bool = false;
    engine_fns!();
    #[inline(always)]
    fn train_rng(seed: u64, step: u64, first: u64) -> Self::Rng {
        Xoshiro::train(seed, step, first)
    }
    #[inline(always)]
    fn box_muller(rng: &mut Self::Rng, native: bool) -> (Self::V, Self::V) {
        let (c, s) = if native {
            gauss::box_muller_f64_native(rng)
        } else {
            gauss::box_muller_f64(rng)
        };
        (Pack(c), Pack(s))
    }
    fn inv_sqrt(d: usize) -> f64 {
        1.0 / (d as f64).sqrt()
    }
    #[inline(always)]
    fn law2_block(
        key: [u32; 2],
        first: u64,
        j: u64,
        native: bool,
    ) -> ((Self::V, Self::V), (Self::V, Self::V)) {
        let ((c, s), (c2, s2)) = gauss::law2_block::<W64>(key, first, j, native);
        let wide = |x: [f32; W64]| Pack(x.map(|v| v as f64));
        ((wide(c), wide(s)), (wide(c2), wide(s2)))
    }
    #[inline(always)]
    fn law2_block2(key: [u32; 2], first: u64, j: u64, native: bool) -> [Self::V; 8] {
        gauss::law2_block2::<W64, { 2 * W64 }>(key, first, j, native)
            .map(|x| Pack(x.map(|v| v as f64)))
    }
}

macro_rules! binop {
    ($tr:ident, $f:ident, $op:tt) => {
        impl<T: LaneScalar + Div<Output = T>, const N: usize> $tr for Pack<T, N> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                let mut r = self;
                for k in 0..N {
                    r.0[k] = self.0[k] $op o.0[k];
                }
                r
            }
        }
    };
}
binop!(Add, add, +);
binop!(Sub, sub, -);
binop!(Mul, mul, *);
binop!(Div, div, /);

impl<T: LaneScalar, const N: usize> AddAssign for Pack<T, N> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        for k in 0..N {
            self.0[k] = self.0[k] + o.0[k];
        }
    }
}

impl<T: Scalar + LaneScalar + Div<Output = T>, const N: usize> Lanes for Pack<T, N> {
    type T = T;
    const W: usize = N;
    #[inline(always)]
    fn splat(x: T) -> Self {
        Pack([x; N])
    }
    #[inline(always)]
    fn mul_add_unfused(self, m: Self, a: Self) -> Self {
        let mut r = self;
        for k in 0..N {
            r.0[k] = self.0[k] * m.0[k] + a.0[k];
        }
        r
    }
    #[inline(always)]
    fn mul_add(self, m: Self, a: Self) -> Self {
        let mut r = self;
        for k in 0..N {
            r.0[k] = self.0[k].lane_mul_add(m.0[k], a.0[k]);
        }
        r
    }
    #[inline(always)]
    fn vmax(self, o: Self) -> Self {
        let mut r = self;
        for k in 0..N {
            if o.0[k] > r.0[k] {
                r.0[k] = o.0[k];
            }
        }
        r
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        let mut r = self;
        T::exp_lanes(&mut r.0);
        r
    }
    #[inline(always)]
    fn vsqrt(self) -> Self {
        let mut r = self;
        for k in 0..N {
            r.0[k] = self.0[k].lane_sqrt();
        }
        r
    }
    #[inline(always)]
    fn sum(self) -> T {
        let mut s = <T as LaneScalar>::ZERO;
        for k in 0..N {
            s += self.0[k];
        }
        s
    }
    #[inline(always)]
    fn lanes(&self) -> &[T] {
        &self.0
    }
    #[inline(always)]
    fn lanes_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// A lane type with the layout of `P` (same size, alignment at most `P`'s, every bit pattern
/// valid in both), so that slices of `P` can be computed on as slices of `Self`.
///
/// # Safety
/// Implementors must have exactly that layout.
pub unsafe trait SameLayout<P>: Lanes {}

// SAFETY: the same type.
unsafe impl<T: icl_core::Scalar + LaneScalar + Div<Output = T>, const N: usize>
    SameLayout<Pack<T, N>> for Pack<T, N>
{
}

/// `s` as a slice of `C`.
#[inline(always)]
pub fn cast<P, C: SameLayout<P>>(s: &[P]) -> &[C] {
    const {
        assert!(size_of::<P>() == size_of::<C>() && align_of::<C>() <= align_of::<P>());
    }
    // SAFETY: `SameLayout` (checked sizes and alignments above).
    unsafe { core::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
}

/// `s` as a mutable slice of `C`.
#[inline(always)]
pub fn cast_mut<P, C: SameLayout<P>>(s: &mut [P]) -> &mut [C] {
    const {
        assert!(size_of::<P>() == size_of::<C>() && align_of::<C>() <= align_of::<P>());
    }
    // SAFETY: as in `cast`.
    unsafe { core::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len()) }
}

/// 1 in any scalar.
#[inline(always)]
pub fn one<T: Scalar>() -> T {
    T::of(1.0)
}

/// 0 in any scalar.
#[inline(always)]
pub fn zero<T: Scalar>() -> T {
    T::of(0.0)
}
