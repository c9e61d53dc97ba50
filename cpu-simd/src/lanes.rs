//! Lane types: one SIMD lane per sequence. `f32` runs in `wide::f32x8` (8 sequences per
//! vector), `f64` in `wide::f64x4` (4 sequences). Every kernel is written once against [`Lanes`].
use crate::data::GenScratch;
use crate::kernel::Group;
use core::ops::{Add, AddAssign, Div, Mul, Sub};
use icl_core::{Scalar, Task};
use wide::{f32x8, f64x4};

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
    /// All lanes equal to `x`.
    fn splat(x: Self::T) -> Self;
    /// All lanes zero.
    #[inline(always)]
    fn zero() -> Self {
        Self::splat(zero())
    }
    /// `self * m + a` (fused when the target has FMA).
    fn fma(self, m: Self, a: Self) -> Self;
    /// Lane-wise maximum.
    fn vmax(self, o: Self) -> Self;
    /// Lane-wise e^x.
    fn vexp(self) -> Self;
    /// Lane-wise square root.
    fn vsqrt(self) -> Self;
    /// Sum of the lanes in a fixed order.
    fn sum(self) -> Self::T;
    /// The lanes as a slice.
    fn lanes(&self) -> &[Self::T];
    /// The lanes as a mutable slice.
    fn lanes_mut(&mut self) -> &mut [Self::T];
    /// Write four f64 values (rounded to `T`) into lanes `4 q .. 4 q + 4`.
    fn set4(&mut self, q: usize, v: f64x4);

    /// Lane-wise tanh x = 1 - 2 / (e^{2x} + 1) (saturates to +-1 without overflow trouble).
    #[inline(always)]
    fn vtanh(self) -> Self {
        let one = Self::splat(one());
        let two = one + one;
        one - two / ((self * two).vexp() + one)
    }
}

/// The scalars the SIMD engine runs in, with their lane type.
pub trait SimdScalar: Scalar + crate::multilayer::MlScalar + Send + Sync {
    /// The vector type.
    type V: Lanes<T = Self>;

    /// Generate isotropic training sequences `b0 .. b0 + W` of (seed, step) into the lanes of `g`.
    fn generate_isotropic(
        g: &mut Group<Self::V>,
        task: &Task,
        seed: u64,
        step: u64,
        b0: usize,
        s: &mut GenScratch<Self>,
    );
}

impl SimdScalar for f32 {
    type V = f32x8;

    #[inline(always)]
    fn generate_isotropic(
        g: &mut Group<f32x8>,
        task: &Task,
        seed: u64,
        step: u64,
        b0: usize,
        s: &mut GenScratch<f32>,
    ) {
        crate::data::generate_isotropic8(g, task, seed, step, b0, &mut s.normals8);
    }
}

impl SimdScalar for f64 {
    type V = f64x4;

    #[inline(always)]
    fn generate_isotropic(
        g: &mut Group<f64x4>,
        task: &Task,
        seed: u64,
        step: u64,
        b0: usize,
        s: &mut GenScratch<f64>,
    ) {
        crate::data::generate_isotropic4(g, task, seed, step, b0, 0, &mut s.normals4);
    }
}

impl Lanes for f32x8 {
    type T = f32;
    const W: usize = 8;
    #[inline(always)]
    fn splat(x: f32) -> Self {
        f32x8::splat(x)
    }
    #[inline(always)]
    fn fma(self, m: Self, a: Self) -> Self {
        self.mul_add(m, a)
    }
    #[inline(always)]
    fn vmax(self, o: Self) -> Self {
        self.fast_max(o)
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn vsqrt(self) -> Self {
        self.sqrt()
    }
    #[inline(always)]
    fn sum(self) -> f32 {
        self.as_array_ref().iter().fold(0.0, |a, &b| a + b)
    }
    #[inline(always)]
    fn lanes(&self) -> &[f32] {
        self.as_array_ref()
    }
    #[inline(always)]
    fn lanes_mut(&mut self) -> &mut [f32] {
        self.as_array_mut()
    }
    #[inline(always)]
    fn set4(&mut self, q: usize, v: f64x4) {
        let a = v.to_array();
        let l = &mut self.as_array_mut()[4 * q..4 * q + 4];
        for k in 0..4 {
            l[k] = a[k] as f32;
        }
    }
}

impl Lanes for f64x4 {
    type T = f64;
    const W: usize = 4;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        f64x4::splat(x)
    }
    #[inline(always)]
    fn fma(self, m: Self, a: Self) -> Self {
        self.mul_add(m, a)
    }
    #[inline(always)]
    fn vmax(self, o: Self) -> Self {
        self.fast_max(o)
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn vsqrt(self) -> Self {
        self.sqrt()
    }
    #[inline(always)]
    fn sum(self) -> f64 {
        self.as_array_ref().iter().fold(0.0, |a, &b| a + b)
    }
    #[inline(always)]
    fn lanes(&self) -> &[f64] {
        self.as_array_ref()
    }
    #[inline(always)]
    fn lanes_mut(&mut self) -> &mut [f64] {
        self.as_array_mut()
    }
    #[inline(always)]
    fn set4(&mut self, _q: usize, v: f64x4) {
        *self = v;
    }
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
