//! `Lv<T>`: eight values of `T`, one per sequence, with plain element-wise operations.
//!
//! The operations are loops over a fixed-size array, always inlined, so the compiler turns each
//! into vector instructions of whatever width the calling function is compiled for: the plain
//! build's SSE2, or AVX2 / AVX-512 inside the `#[target_feature]` entry points of
//! [`crate::dispatch`]. Only explicit `mul_add`s are fused (rounded once at every level), so
//! every dispatch level gives the same bits.
use core::ops::{Add, AddAssign, Mul, Sub};

/// Lanes per vector.
pub const W: usize = 8;

/// Eight lanes of `T`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, align(32))]
pub struct Lv<T>(pub [T; W]);

/// The scalar operations the lanes need, with a vectorisable `e^x`.
pub trait LaneScalar:
    Copy
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + PartialOrd
    + Default
{
    const ZERO: Self;
    const ONE: Self;
    /// e^x for x <= 0 (softmax weights), by range reduction and a polynomial; see [`Self::exp_lanes`].
    /// One implementation for every lane count and dispatch level (same bits everywhere).
    fn exp_lanes<const N: usize>(x: &mut [Self; N]);
    /// Square root (correctly rounded, so the same bits at every level).
    fn lane_sqrt(self) -> Self;
    /// `x` rounded to the lane type.
    fn lane_of(x: f64) -> Self;
    /// 1 / x.
    fn lane_recip(self) -> Self;
    /// `self * m + a` rounded once (the hardware's fused multiply-add at the AVX2 and AVX-512
    /// levels and on aarch64, the C library's exact `fma` below them: the same bits).
    fn lane_mul_add(self, m: Self, a: Self) -> Self;
}

impl<T: LaneScalar> Default for Lv<T> {
    fn default() -> Self {
        Lv::zero()
    }
}

impl<T: LaneScalar> Lv<T> {
    #[inline(always)]
    pub fn splat(x: T) -> Self {
        Lv([x; W])
    }
    #[inline(always)]
    pub fn zero() -> Self {
        Lv([T::ZERO; W])
    }
    /// Lane-wise maximum.
    #[inline(always)]
    pub fn max(self, o: Self) -> Self {
        let mut r = self;
        for k in 0..W {
            if o.0[k] > r.0[k] {
                r.0[k] = o.0[k];
            }
        }
        r
    }
    /// Lane-wise e^x (x <= 0 or moderate).
    #[inline(always)]
    pub fn exp(self) -> Self {
        let mut r = self;
        T::exp_lanes(&mut r.0);
        r
    }
    /// Lane-wise 1 / x.
    #[inline(always)]
    pub fn recip(self) -> Self {
        let mut r = self;
        for k in 0..W {
            r.0[k] = self.0[k].lane_recip();
        }
        r
    }
    /// Sum of the lanes, in lane order.
    #[inline(always)]
    pub fn sum(self) -> T {
        let mut s = T::ZERO;
        for k in 0..W {
            s = s + self.0[k];
        }
        s
    }
}

impl<T: LaneScalar> Add for Lv<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        let mut r = self;
        for k in 0..W {
            r.0[k] = self.0[k] + o.0[k];
        }
        r
    }
}

impl<T: LaneScalar> Sub for Lv<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        let mut r = self;
        for k in 0..W {
            r.0[k] = self.0[k] - o.0[k];
        }
        r
    }
}

impl<T: LaneScalar> Mul for Lv<T> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        let mut r = self;
        for k in 0..W {
            r.0[k] = self.0[k] * o.0[k];
        }
        r
    }
}

impl<T: LaneScalar> AddAssign for Lv<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        for k in 0..W {
            self.0[k] = self.0[k] + o.0[k];
        }
    }
}

/// The Taylor coefficients of e^r from degree 12 down to 0, 1/12! .. 1/2, 1, 1 (f64 uses all,
/// f32 the last eight).
const EXP_TAYLOR: [f64; 13] = [
    1.0 / 479_001_600.0,
    1.0 / 39_916_800.0,
    1.0 / 3_628_800.0,
    1.0 / 362_880.0,
    1.0 / 40_320.0,
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];

impl LaneScalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    /// Cody–Waite reduction `x = n ln2 + r`, |r| <= ln2/2, degree-7 Taylor polynomial of e^r in
    /// fused Horner steps (truncation < 5e-9 relative, below f32 rounding), times 2^n built in the
    /// exponent bits.
    #[inline(always)]
    fn exp_lanes<const N: usize>(x: &mut [f32; N]) {
        const LOG2E: f32 = core::f32::consts::LOG2_E;
        const LN2_HI: f32 = 0.693_145_75;
        const LN2_LO: f32 = 1.428_606_8e-6;
        for xk in x.iter_mut() {
            let v = xk.clamp(-87.0, 88.0);
            // round to nearest by the 1.5 2^23 trick (no floor call, vectorises on SSE2)
            let n = v.mul_add(LOG2E, 12_582_912.0) - 12_582_912.0;
            let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, v));
            // the degree-7 tail of the Taylor coefficients
            let mut p = EXP_TAYLOR[5] as f32;
            for &c in &EXP_TAYLOR[6..] {
                p = p.mul_add(r, c as f32);
            }
            // 2^n: n + 127 + 2^23 has n + 127 in its mantissa bits; shift them to the exponent
            let s = f32::from_bits((n + 8_388_735.0).to_bits() << 23);
            *xk = p * s;
        }
    }
    #[inline(always)]
    fn lane_of(x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn lane_mul_add(self, m: f32, a: f32) -> f32 {
        self.mul_add(m, a)
    }
    #[inline(always)]
    fn lane_recip(self) -> f32 {
        1.0 / self
    }
    #[inline(always)]
    fn lane_sqrt(self) -> f32 {
        self.sqrt()
    }
}

impl LaneScalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    /// As for f32 with a degree-12 polynomial (truncation < 2e-16 relative).
    #[inline(always)]
    fn exp_lanes<const N: usize>(x: &mut [f64; N]) {
        const LOG2E: f64 = core::f64::consts::LOG2_E;
        const LN2_HI: f64 = 6.931_471_803_691_238e-1;
        const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
        for xk in x.iter_mut() {
            let v = xk.clamp(-708.0, 709.0);
            let n = v.mul_add(LOG2E, 6_755_399_441_055_744.0) - 6_755_399_441_055_744.0;
            let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, v));
            let mut p = EXP_TAYLOR[0];
            for &c in &EXP_TAYLOR[1..] {
                p = p.mul_add(r, c);
            }
            let s = f64::from_bits((n + 4_503_599_627_371_519.0).to_bits() << 52);
            *xk = p * s;
        }
    }
    #[inline(always)]
    fn lane_of(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn lane_mul_add(self, m: f64, a: f64) -> f64 {
        self.mul_add(m, a)
    }
    #[inline(always)]
    fn lane_recip(self) -> f64 {
        1.0 / self
    }
    #[inline(always)]
    fn lane_sqrt(self) -> f64 {
        self.sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_libm() {
        let mut worst = (0.0f64, 0.0f64);
        for i in 0..20_000 {
            let x = -80.0 + 85.0 * i as f64 / 20_000.0;
            let mut a = [x; W];
            f64::exp_lanes(&mut a);
            let e = (a[0] - x.exp()).abs() / x.exp();
            let mut b = [x as f32; W];
            f32::exp_lanes(&mut b);
            let ef = (b[0] as f64 - (x as f32 as f64).exp()).abs() / (x as f32 as f64).exp();
            worst = (worst.0.max(e), worst.1.max(ef));
        }
        assert!(worst.0 < 4e-16, "f64 exp relative error {:e}", worst.0);
        assert!(worst.1 < 3e-7, "f32 exp relative error {:e}", worst.1);
    }
}
