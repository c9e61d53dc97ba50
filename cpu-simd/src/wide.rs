//! 512-bit lane types for the AVX-512 level: [`Z16`] (16 `f32`) and [`Z8`] (8 `f64`), one
//! register each, with the same operations as [`Pack`] in the same order (so the same bits).
//!
//! [`Pack`]'s element loops are left to the compiler's vectoriser, which at AVX-512 turns some
//! of the kernel's loops over keys into gathers and scatters; these types state every operation
//! as one instruction instead. Measured on AMD EPYC (Zen 4), one thread, he2025 d = 5, L = 40,
//! batch 256: the f64 forward/backward takes 59 us a step at H = 2 instead of 105 (the AVX2
//! code the engine ran at AVX-512 before), f32 the same as before.
//!
//! They may only be used inside the AVX-512 entry point of [`crate::dispatch`]: their methods
//! are inlined there, and the intrinsics need AVX-512F.
#![cfg(target_arch = "x86_64")]
use crate::lane::LaneScalar;
use crate::lanes::{Lanes, Pack, SameLayout};
use core::arch::x86_64::*;
use core::ops::{Add, AddAssign, Div, Mul, Sub};

/// 16 `f32` lanes in one `__m512`.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub struct Z16(pub __m512);

/// 8 `f64` lanes in one `__m512d`.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub struct Z8(pub __m512d);

// SAFETY: 64 bytes, align 64 (`__m512` and `Pack`'s `align(64)`), any bits valid for both.
unsafe impl SameLayout<Pack<f32, 16>> for Z16 {}
// SAFETY: as above.
unsafe impl SameLayout<Pack<f64, 8>> for Z8 {}

macro_rules! wide {
    ($ty:ident, $t:ty, $n:literal, $reg:ty, $add:ident, $sub:ident, $mul:ident, $div:ident,
     $set1:ident, $fmadd:ident, $max:ident, $sqrt:ident) => {
        impl Add for $ty {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                // SAFETY: used only where AVX-512F is enabled (module doc).
                $ty(unsafe { $add(self.0, o.0) })
            }
        }
        impl Sub for $ty {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $sub(self.0, o.0) })
            }
        }
        impl Mul for $ty {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $mul(self.0, o.0) })
            }
        }
        impl Div for $ty {
            type Output = Self;
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $div(self.0, o.0) })
            }
        }
        impl AddAssign for $ty {
            #[inline(always)]
            fn add_assign(&mut self, o: Self) {
                *self = *self + o;
            }
        }
        impl Lanes for $ty {
            type T = $t;
            const W: usize = $n;
            const PAIRS: bool = true;
            #[inline(always)]
            fn splat(x: $t) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $set1(x) })
            }
            #[inline(always)]
            fn mul_add_unfused(self, m: Self, a: Self) -> Self {
                self * m + a
            }
            #[inline(always)]
            fn mul_add(self, m: Self, a: Self) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $fmadd(self.0, m.0, a.0) })
            }
            #[inline(always)]
            fn vmax(self, o: Self) -> Self {
                // Pack: `if o > r { o } else { r }`; vmaxps(a, b) = a > b ? a : b
                // SAFETY: as above.
                $ty(unsafe { $max(o.0, self.0) })
            }
            #[inline(always)]
            fn vexp(self) -> Self {
                let mut a: [$t; $n] = *self.lanes_arr();
                <$t as LaneScalar>::exp_lanes(&mut a);
                // SAFETY: same size, any bits valid.
                $ty(unsafe { core::mem::transmute::<[$t; $n], $reg>(a) })
            }
            #[inline(always)]
            fn vsqrt(self) -> Self {
                // SAFETY: as above.
                $ty(unsafe { $sqrt(self.0) })
            }
            #[inline(always)]
            fn sum(self) -> $t {
                let mut s = 0.0;
                for &x in self.lanes_arr() {
                    s += x;
                }
                s
            }
            #[inline(always)]
            fn lanes(&self) -> &[$t] {
                self.lanes_arr()
            }
            #[inline(always)]
            fn lanes_mut(&mut self) -> &mut [$t] {
                // SAFETY: a register's bytes as its lanes.
                unsafe { &mut *(self as *mut Self as *mut [$t; $n]) }
            }
        }
        impl $ty {
            #[inline(always)]
            fn lanes_arr(&self) -> &[$t; $n] {
                // SAFETY: a register's bytes as its lanes.
                unsafe { &*(self as *const Self as *const [$t; $n]) }
            }
        }
    };
}

wide!(
    Z16,
    f32,
    16,
    __m512,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_mul_ps,
    _mm512_div_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_max_ps,
    _mm512_sqrt_ps
);
wide!(
    Z8,
    f64,
    8,
    __m512d,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd,
    _mm512_div_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_max_pd,
    _mm512_sqrt_pd
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cast;

    /// Every operation of `C` against `Pack`'s on the same lanes (NaN, infinities, signed zeros
    /// and ties for the maximum included), compared bit for bit (NaN as NaN).
    #[inline(always)]
    fn check<T, const N: usize, C>(vals: &[T])
    where
        T: icl_core::Scalar + LaneScalar + Div<Output = T>,
        C: SameLayout<Pack<T, N>> + Lanes<T = T>,
    {
        // NaN's sign and payload are unspecified in Rust (the compiler may swap the operands of
        // an addition, and x86 returns the first NaN operand): any NaN compares equal to any NaN
        let key = |x: T| {
            let x = x.to_f64();
            if x.is_nan() {
                u64::MAX
            } else {
                x.to_bits()
            }
        };
        let bits = |p: &[T]| p.iter().map(|&x| key(x)).collect::<Vec<_>>();
        for (i, j) in [(0, 1), (1, 0), (2, 3), (3, 2), (0, 0)] {
            let pick = |k: usize| {
                Pack::<T, N>(core::array::from_fn(|l| vals[(k * 7 + l * 3) % vals.len()]))
            };
            let (a, b, c) = (pick(i), pick(j), pick(i + j + 1));
            let ps = [
                a + b,
                a - b,
                a * b,
                a / b,
                a.mul_add_unfused(b, c),
                a.mul_add(b, c),
                a.vmax(b),
                a.vexp(),
                a.vsqrt(),
                a.vtanh(),
                Pack::splat(vals[i]),
            ];
            let (x, y, z) = (
                cast::<_, C>(&[a])[0],
                cast::<_, C>(&[b])[0],
                cast::<_, C>(&[c])[0],
            );
            let cs = [
                x + y,
                x - y,
                x * y,
                x / y,
                x.mul_add_unfused(y, z),
                x.mul_add(y, z),
                x.vmax(y),
                x.vexp(),
                x.vsqrt(),
                x.vtanh(),
                C::splat(vals[i]),
            ];
            for (k, (p, c)) in ps.iter().zip(&cs).enumerate() {
                assert_eq!(
                    bits(p.lanes()),
                    bits(c.lanes()),
                    "operation {k}, pair ({i}, {j})"
                );
            }
            assert_eq!(key(a.sum()), key(x.sum()));
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
    fn check_all() {
        let v = [
            0.5, -1.25, 3.0, -0.0, 0.0, 1e-3, -7.5, 2.0, 88.5, -100.0, 1e30, -1e-30, 0.1, 0.3,
            -2.5, 4.0,
        ];
        let mut v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let mut v64: Vec<f64> = v.to_vec();
        v32.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0]);
        v64.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0]);
        check::<f32, 16, Z16>(&v32);
        check::<f64, 8, Z8>(&v64);
    }

    /// Runs at AVX-512 only (the register types are used there alone); a CPU without it skips
    /// the check and says so.
    #[test]
    fn registers_compute_as_packs() {
        use crate::dispatch::{Level, LevelsRun};
        let mut report = LevelsRun::of("wide::registers_compute_as_packs", &[Level::Avx512]);
        for level in report.levels() {
            // SAFETY: the CPU has the features (`levels` holds AVX-512 only where it does).
            unsafe { check_all() }
            report.ran(level);
        }
        report.finish();
    }
}
