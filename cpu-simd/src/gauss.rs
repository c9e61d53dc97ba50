//! `N` xoshiro256++ streams side by side, one per lane, and Box–Muller normals from them: lane k
//! reproduces `icl_core::rng::stream(..)` + `fill_normal` of its own sequence, the integers bit
//! for bit and the normals up to the rounding of the crate's own `ln`, `sin`, `cos` (a few ulp).
//!
//! Everything is a loop over the lanes of a fixed-size array, always inlined, so it vectorises at
//! the level of the calling entry point ([`crate::dispatch`]) and gives the same bits at every
//! level: fused multiply-adds only where written (`mul_add`, rounded once at every level), one
//! polynomial per function, exact integer range reductions.
use icl_core::rng::{law2, mix64, stream_base, Domain};

/// SplitMix64 step (what `SeedableRng::seed_from_u64` of rand_xoshiro uses to fill the state).
#[inline(always)]
fn splitmix_next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `N` independent xoshiro256++ generators, one per lane.
#[derive(Debug, Clone, Copy)]
pub struct Xoshiro<const N: usize> {
    s: [[u64; N]; 4],
}

impl<const N: usize> Xoshiro<N> {
    /// Lane k seeded like `Xoshiro256PlusPlus::seed_from_u64(keys[k])`.
    pub fn from_keys(keys: [u64; N]) -> Self {
        Self::from_keys_inlined(keys)
    }

    #[inline(always)]
    fn from_keys_inlined(keys: [u64; N]) -> Self {
        let mut s = [[0u64; N]; 4];
        for (k, &key) in keys.iter().enumerate() {
            let mut x = key;
            for w in s.iter_mut() {
                w[k] = splitmix_next(&mut x);
            }
        }
        Xoshiro { s }
    }

    /// The training streams (seed, Train, step, first .. first + N).
    /// The part of the keys the lanes share is computed once. Out of line (see
    /// [`Xoshiro::train_inlined`]).
    #[inline(never)]
    pub fn train(seed: u64, step: u64, first: u64) -> Self {
        Self::train_inlined(seed, step, first)
    }

    /// [`Xoshiro::train`] inlined into the caller, so that the keys are computed in vectors at
    /// the calling entry point's level (f32: 1 us a he2025 step; the f64 generator's loop ran
    /// at half speed with it inlined, so f64 calls [`Xoshiro::train`]).
    #[inline(always)]
    pub fn train_inlined(seed: u64, step: u64, first: u64) -> Self {
        let base = stream_base(seed, Domain::Train, step);
        let mut keys = [0u64; N];
        for (k, key) in keys.iter_mut().enumerate() {
            *key = mix64(base ^ (first + k as u64));
        }
        Self::from_keys_inlined(keys)
    }

    /// Next output of every lane: `rotl(s0 + s3, 23) + s0`, then the xoshiro256 state update.
    #[inline(always)]
    pub fn next_u64s(&mut self) -> [u64; N] {
        let mut out = [0u64; N];
        let [s0, s1, s2, s3] = &mut self.s;
        for k in 0..N {
            let (a, b, c, d) = (s0[k], s1[k], s2[k], s3[k]);
            out[k] = a.wrapping_add(d).rotate_left(23).wrapping_add(a);
            let t = b << 17;
            let c = c ^ a;
            let d = d ^ b;
            let b = b ^ c;
            let a = a ^ d;
            s0[k] = a;
            s1[k] = b;
            s2[k] = c ^ t;
            s3[k] = d.rotate_left(45);
        }
        out
    }
}

/// Bits of 2^52: `f64::from_bits(MAGIC | m) - 2^52 = m` exactly for m < 2^52.
const MAGIC: u64 = 0x4330_0000_0000_0000;
const TWO52: f64 = 4_503_599_627_370_496.0;
/// 2^-53.
const INV53: f64 = 1.0 / 9_007_199_254_740_992.0;
/// 2^-53 in f32 (exact), and 2 pi 2^-53 rounded to f32.
const INV53_F32: f32 = INV53 as f32;
const TAU_INV53_F32: f32 = (core::f64::consts::TAU * INV53) as f32;

/// Exact conversion of an integer `m <= 2^53` to f64 with integer and f64 add/sub only (the
/// 64-bit integer conversion instructions need AVX-512DQ): split at bit 52.
#[inline(always)]
fn u53_to_f64(m: u64) -> f64 {
    let lo = f64::from_bits(MAGIC | (m & ((1 << 52) - 1))) - TWO52;
    let hi = f64::from_bits(MAGIC | (m >> 52)) - TWO52;
    hi * TWO52 + lo
}

/// `u1 = ((x >> 11) + 1) 2^-53` in (0, 1], exactly as `icl_core::rng::uniform_open0`.
/// `NATIVE`: convert with the language's cast (one instruction with AVX-512DQ, slow without);
/// the conversion is exact either way, so both give the same bits.
#[inline(always)]
fn uniform_open0<const NATIVE: bool>(x: u64) -> f64 {
    let m = (x >> 11) + 1;
    if NATIVE {
        m as f64 * INV53
    } else {
        u53_to_f64(m) * INV53
    }
}

/// The angle `2 pi u2` (u2 = m 2^-53, m = x >> 11) as `k pi/2 + t`, |t| <= pi/4, exactly in
/// integers: `k = round(m / 2^51)` in 0..=4 and `t = 2 pi (m - k 2^51) 2^-53`, rounded once.
/// `NATIVE` as for [`uniform_open0`] (same bits).
#[inline(always)]
fn quadrant<const NATIVE: bool>(x: u64) -> (f64, u64) {
    let m = x >> 11;
    let k = (m + (1 << 50)) >> 51;
    let r = if NATIVE {
        // m - k 2^51 lies in [-2^50, 2^50): converts exactly
        (m as i64 - (k << 51) as i64) as f64
    } else {
        // m - k 2^51 + 2^51 lies in [2^50, 3 2^50): converts exactly
        let biased = m + (1 << 51) - (k << 51);
        (f64::from_bits(MAGIC | biased) - TWO52) - 2_251_799_813_685_248.0
    };
    (r * (core::f64::consts::TAU * INV53), k)
}

/// Natural logarithm for positive normal f64 (fdlibm's `log`: x = 2^k (1 + f),
/// sqrt(2)/2 <= 1 + f < sqrt(2), s = f / (2 + f), ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))),
/// the exponent taken from the bits without integer-to-float conversion instructions.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const LG: [f64; 7] = [
        6.666_666_666_666_735e-1,
        3.999_999_999_940_942e-1,
        2.857_142_874_366_239e-1,
        2.222_219_843_214_978_4e-1,
        1.818_357_216_161_805e-1,
        1.531_383_769_920_937_3e-1,
        1.479_819_860_511_658_6e-1,
    ];
    let ix = x
        .to_bits()
        .wrapping_add(0x3ff0_0000_0000_0000 - 0x3fe6_a09e_667f_3bcd);
    let k = (f64::from_bits(MAGIC | (ix >> 52)) - TWO52) - 1023.0;
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + 0x3fe6_a09e_667f_3bcd);
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * w.mul_add(w.mul_add(LG[5], LG[3]), LG[1]);
    let t2 = z * w.mul_add(w.mul_add(w.mul_add(LG[6], LG[4]), LG[2]), LG[0]);
    let r = t2 + t1;
    s * (hfsq + r) + k * LN2_LO - hfsq + f + k * LN2_HI
}

/// Natural logarithm for positive normal f32 without a division: x = 2^k (1 + f),
/// sqrt(2)/2 <= 1 + f < sqrt(2), ln(1 + f) = f - f^2/2 + f^3 P(f) with P of degree 7 (a Chebyshev
/// fit on that interval, truncation < 6.1e-8 relative), k ln 2 in two parts as in musl's `logf`.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    // musl's constants and the polynomial of data law 2's `ln` (evaluated here with fused
    // multiply-adds)
    use law2::{LN2_HI, LN2_LO, LN_P as P};
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    // ix >> 23 < 2^9: the exponent, converted exactly
    let k = ((ix >> 23) as i32 - 127) as f32;
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let z = f * f;
    let mut p = P[0];
    for &c in &P[1..] {
        p = p.mul_add(f, c);
    }
    let tail = (f * z).mul_add(p, k * LN2_LO);
    k.mul_add(LN2_HI, (tail - 0.5 * z) + f)
}

/// (sin t, cos t) for |t| <= pi/4 in f64 (fdlibm's kernel polynomials).
#[inline(always)]
fn sin_cos_f64(t: f64) -> (f64, f64) {
    const S: [f64; 6] = [
        -1.666_666_666_666_663_2e-1,
        8.333_333_333_322_49e-3,
        -1.984_126_982_985_795e-4,
        2.755_731_370_707_006_8e-6,
        -2.505_076_025_340_686_3e-8,
        1.589_690_995_211_55e-10,
    ];
    const C: [f64; 6] = [
        4.166_666_666_666_66e-2,
        -1.388_888_888_887_411e-3,
        2.480_158_728_947_673e-5,
        -2.755_731_435_139_066_3e-7,
        2.087_572_321_298_175e-9,
        -1.135_964_755_778_819_5e-11,
    ];
    let z = t * t;
    let rs = z.mul_add(
        z.mul_add(z.mul_add(z.mul_add(S[5], S[4]), S[3]), S[2]),
        S[1],
    );
    let sin = (z * t).mul_add(z.mul_add(rs, S[0]), t);
    let rc = z * z.mul_add(
        z.mul_add(
            z.mul_add(z.mul_add(z.mul_add(C[5], C[4]), C[3]), C[2]),
            C[1],
        ),
        C[0],
    );
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let cos = w + (((1.0 - w) - hz) + z * rc);
    (sin, cos)
}

/// (sin t, cos t) for |t| <= pi/4 in f32 (Cephes sinf/cosf polynomials).
#[inline(always)]
fn sin_cos_f32(t: f32) -> (f32, f32) {
    let z = t * t;
    let ps = z.mul_add(z.mul_add(-1.951_529_6e-4, 8.332_161e-3), -1.666_665_5e-1);
    let sin = (z * t).mul_add(ps, t);
    let pc = z.mul_add(z.mul_add(2.443_315_7e-5, -1.388_731_6e-3), 4.166_664_6e-2);
    let cos = (z * z).mul_add(pc, (-0.5f32).mul_add(z, 1.0));
    (sin, cos)
}

/// (cos, sin) of `k pi/2 + t` from (sin t, cos t), k in 0..=4, as bit operations: quadrant
/// k gives (c, s), (-s, c), (-c, -s), (s, -c), (c, s).
/// The swap is a select on the low bit of k (a mask and two blends at AVX-512), the signs are
/// bit 1 of k + 1 (cosine) and of k (sine) moved to the sign bit.
macro_rules! quadrant_fix {
    ($s:expr, $c:expr, $k:expr, $bits:ty, $sign:expr) => {{
        let k = $k as $bits;
        let odd = k & 1 != 0;
        let (sb, cb) = ($s.to_bits(), $c.to_bits());
        let cc = if odd { sb } else { cb };
        let ss = if odd { cb } else { sb };
        const UP: u32 = <$bits>::BITS - 2;
        let neg_cos = ((k + 1) << UP) & $sign;
        let neg_sin = (k << UP) & $sign;
        (cc ^ neg_cos, ss ^ neg_sin)
    }};
}

/// One Box–Muller pair per lane in f64, as `icl_core::rng::box_muller`: `u1` from the first
/// draw, the angle `2 pi u2` from the second, returns `(r cos th, r sin th)`, r = sqrt(-2 ln u1).
#[inline(always)]
pub fn box_muller_f64<const N: usize>(rng: &mut Xoshiro<N>) -> ([f64; N], [f64; N]) {
    box_muller_f64_as::<N, false>(rng)
}

/// [`box_muller_f64`] with the integer conversions by the language's casts (for AVX-512DQ; same
/// bits).
#[inline(always)]
pub fn box_muller_f64_native<const N: usize>(rng: &mut Xoshiro<N>) -> ([f64; N], [f64; N]) {
    box_muller_f64_as::<N, true>(rng)
}

#[inline(always)]
fn box_muller_f64_as<const N: usize, const NATIVE: bool>(
    rng: &mut Xoshiro<N>,
) -> ([f64; N], [f64; N]) {
    let a = rng.next_u64s();
    let b = rng.next_u64s();
    let mut c = [0.0; N];
    let mut s = [0.0; N];
    for k in 0..N {
        let r = (-2.0 * ln_f64(uniform_open0::<NATIVE>(a[k]))).sqrt();
        let (t, q) = quadrant::<NATIVE>(b[k]);
        let (st, ct) = sin_cos_f64(t);
        let (cb, sb) = quadrant_fix!(st, ct, q, u64, 1u64 << 63);
        c[k] = r * f64::from_bits(cb);
        s[k] = r * f64::from_bits(sb);
    }
    (c, s)
}

/// The high and low 32-bit halves of every lane's draw. `avx512` (only where the CPU has
/// AVX-512F): for 16 lanes, one two-register permute per half.
#[inline(always)]
fn halves<const N: usize>(x: &[u64; N], avx512: bool) -> ([u32; N], [u32; N]) {
    #[cfg(target_arch = "x86_64")]
    if avx512 && N == 16 {
        let (mut hi, mut lo) = ([0u32; N], [0u32; N]);
        // SAFETY: the caller passes `avx512` only when the CPU has AVX-512F; `x`, `hi` and `lo`
        // hold 16 lanes (64 bytes per 32-bit array, 128 per 64-bit one).
        unsafe { halves16(x.as_ptr(), hi.as_mut_ptr(), lo.as_mut_ptr()) };
        return (hi, lo);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = avx512;
    let (mut hi, mut lo) = ([0u32; N], [0u32; N]);
    for k in 0..N {
        (hi[k], lo[k]) = ((x[k] >> 32) as u32, x[k] as u32);
    }
    (hi, lo)
}

/// [`halves`] of 16 lanes with AVX-512F: the 32 words of the two registers, odd ones (high
/// halves, little-endian) to `hi`, even ones to `lo`.
///
/// # Safety
/// The CPU has AVX-512F; `x` points to 16 `u64`, `hi` and `lo` to 16 `u32` each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn halves16(x: *const u64, hi: *mut u32, lo: *mut u32) {
    use core::arch::x86_64::*;
    let a = _mm512_loadu_si512(x as *const __m512i);
    let b = _mm512_loadu_si512(x.add(8) as *const __m512i);
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    _mm512_storeu_si512(hi as *mut __m512i, _mm512_permutex2var_epi32(a, odd, b));
    _mm512_storeu_si512(lo as *mut __m512i, _mm512_permutex2var_epi32(a, even, b));
}

/// `round(h / 2^30)` (half up), the quadrant of the angle whose draw has high half `h`:
/// `((h >> 29) + 1) >> 1`, written so that nothing carries past 32 bits.
#[inline(always)]
fn quarter_turns(h: u32) -> u32 {
    ((h >> 1) + (1 << 28)) >> 29
}

/// One Box–Muller pair per lane in f32, in 32-bit lanes from the draws on (16 per 512-bit
/// register, where the 64-bit stages would run at half that):
/// - the draws are split into their 32-bit halves, `x = h 2^32 + l`;
/// - `u1 = m 2^-53` with `m = (x >> 11) + 1 = A 2^30 + R`, `A = h >> 9` (23 bits, exact in f32),
///   `R = ((h & 511) << 21 | l >> 11) + 1 < 2^30 + 2^23` (rounded once); `hi + lo = A 2^30 + R`
///   exactly by Fast2Sum (`A 2^30` has the larger exponent), and `ln u1 = ln hi + lo` (`hi` and
///   `lo` scaled by 2^-53), which keeps the relative accuracy of `ln u1` for `u1` near 1;
/// - the angle `2 pi u2` as `k pi/2 + t`: `k = round(m / 2^51)` from the top bits of `h`,
///   `t = 2 pi (r 2^21 + (l >> 11)) 2^-53` with `r = h - k 2^30` exact in i32, formed with one
///   fused multiply-add and one multiplication.
///
/// Within a few f32 ulp of `icl_core::rng::box_muller` rounded to f32, and the same bits at every
/// level (exact integer steps, correctly rounded f32 operations and fused multiply-adds).
///
/// `avx512`: split the draws with two AVX-512F permutes per draw instead of the shifts and
/// narrowing moves the compiler writes for the portable loop (the same bits); only true where
/// the CPU has AVX-512F.
#[inline(always)]
pub fn box_muller_f32<const N: usize>(rng: &mut Xoshiro<N>, avx512: bool) -> ([f32; N], [f32; N]) {
    let a = rng.next_u64s();
    let b = rng.next_u64s();
    let ((ah, al), (bh, bl)) = (halves(&a, avx512), halves(&b, avx512));
    let mut c = [0.0; N];
    let mut s = [0.0; N];
    for k in 0..N {
        (c[k], s[k]) = box_muller_lane_f32(ah[k], al[k], bh[k], bl[k]);
    }
    (c, s)
}

/// Two [`box_muller_f32`] pairs in a row (the same draws and bits), computed side by side.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn box_muller2_f32<const N: usize>(
    rng: &mut Xoshiro<N>,
    avx512: bool,
) -> (([f32; N], [f32; N]), ([f32; N], [f32; N])) {
    let a = rng.next_u64s();
    let b = rng.next_u64s();
    let a2 = rng.next_u64s();
    let b2 = rng.next_u64s();
    let ((ah, al), (bh, bl)) = (halves(&a, avx512), halves(&b, avx512));
    let ((ah2, al2), (bh2, bl2)) = (halves(&a2, avx512), halves(&b2, avx512));
    let (mut c, mut s, mut c2, mut s2) = ([0.0; N], [0.0; N], [0.0; N], [0.0; N]);
    for k in 0..N {
        (c[k], s[k]) = box_muller_lane_f32(ah[k], al[k], bh[k], bl[k]);
        (c2[k], s2[k]) = box_muller_lane_f32(ah2[k], al2[k], bh2[k], bl2[k]);
    }
    ((c, s), (c2, s2))
}

/// One lane of [`box_muller_f32`] from the halves of its two draws.
#[inline(always)]
fn box_muller_lane_f32(ah: u32, al: u32, bh: u32, bl: u32) -> (f32, f32) {
    // u1 = (hi + lo) 2^-53
    let big = (ah >> 9) as i32 as f32 * 1_073_741_824.0;
    let rest = ((((ah & 511) << 21) | (al >> 11)) + 1) as i32 as f32;
    let sum = big + rest;
    let lo = (big - sum) + rest;
    let r = (-2.0 * (ln_f32(sum * INV53_F32) + lo * INV53_F32)).sqrt();
    // 2 pi u2 = q pi/2 + t
    let q = quarter_turns(bh);
    let rh = bh.wrapping_sub(q << 30) as i32 as f32;
    let rl = (bl >> 11) as i32 as f32;
    let t = rh.mul_add(2_097_152.0, rl) * TAU_INV53_F32;
    let (st, ct) = sin_cos_f32(t);
    let (cb, sb) = quadrant_fix!(st, ct, q, u32, 1u32 << 31);
    (r * f32::from_bits(cb), r * f32::from_bits(sb))
}

/// Fill `out` with normals in the order of `icl_core::rng::fill_normal` (pairs; an odd tail
/// keeps the cosine half), `N` streams at once, in f64.
pub fn fill_normal_f64<const N: usize>(rng: &mut Xoshiro<N>, out: &mut [[f64; N]]) {
    let mut chunks = out.chunks_exact_mut(2);
    for pair in &mut chunks {
        (pair[0], pair[1]) = box_muller_f64(rng);
    }
    if let [last] = chunks.into_remainder() {
        *last = box_muller_f64(rng).0;
    }
}

/// As [`fill_normal_f64`], in f32 ([`box_muller_f32`]).
pub fn fill_normal_f32<const N: usize>(rng: &mut Xoshiro<N>, out: &mut [[f32; N]]) {
    let mut chunks = out.chunks_exact_mut(2);
    for pair in &mut chunks {
        (pair[0], pair[1]) = box_muller_f32(rng, false);
    }
    if let [last] = chunks.into_remainder() {
        *last = box_muller_f32(rng, false).0;
    }
}

/// Data law 2: blocks `j, j + 1, ..` of the streams `first .. first + N` of the key `key`
/// (`icl_core::rng::law2`), side by side in `M` lanes (a multiple of `N`): lane m holds block
/// `j + m / N` of stream `first + m % N`. Returns the normal pairs of its two slots, lane by lane,
/// in the 32-bit operations of the reference, so the same bits at every level. Two blocks at a
/// time give the processor two independent Philox chains (its rounds are a chain of 32-bit
/// multiplications). `avx512` (only where the CPU has AVX-512F): the Philox rounds in 512-bit
/// registers (`philox_avx512`) and the normals 16 lanes (one register) at a time, 14 % less
/// time a he2025 batch than the compiler's code for 32 lanes (at AVX2, 16 at a time was 7 %
/// slower than 32).
#[inline(always)]
#[allow(clippy::type_complexity, clippy::needless_range_loop)] // lane m of every counter word
pub fn law2_blocks<const N: usize, const M: usize>(
    key: [u32; 2],
    first: u64,
    j: u64,
    avx512: bool,
) -> (([f32; M], [f32; M]), ([f32; M], [f32; M])) {
    let mut c = [[0u32; M]; 4];
    for m in 0..M {
        let (s, b) = (first + (m % N) as u64, j + (m / N) as u64);
        c[0][m] = b as u32;
        c[1][m] = s as u32;
        c[2][m] = (s >> 32) as u32;
        c[3][m] = (b >> 32) as u32;
    }
    let w = philox_lanes::<M>(c, key, avx512);
    if !avx512 || !M.is_multiple_of(16) {
        return (
            law2::normal_pairs_with(&w[0], &w[1], f32::sqrt),
            law2::normal_pairs_with(&w[2], &w[3], f32::sqrt),
        );
    }
    let (mut c0, mut s0, mut c1, mut s1) = ([0.0; M], [0.0; M], [0.0; M], [0.0; M]);
    for g in (0..M).step_by(16) {
        let part = |x: &[u32; M]| -> [u32; 16] { core::array::from_fn(|k| x[g + k]) };
        let (c, s) = law2::normal_pairs_with(&part(&w[0]), &part(&w[1]), f32::sqrt);
        c0[g..g + 16].copy_from_slice(&c);
        s0[g..g + 16].copy_from_slice(&s);
        let (c, s) = law2::normal_pairs_with(&part(&w[2]), &part(&w[3]), f32::sqrt);
        c1[g..g + 16].copy_from_slice(&c);
        s1[g..g + 16].copy_from_slice(&s);
    }
    ((c0, s0), (c1, s1))
}

/// [`law2::philox`] of `M` counters: with `avx512` and `M` a multiple of 16 in 512-bit registers
/// ([`philox_avx512`]), else the reference's loops (vectorised by the compiler).
#[inline(always)]
fn philox_lanes<const M: usize>(c: [[u32; M]; 4], key: [u32; 2], avx512: bool) -> [[u32; M]; 4] {
    #[cfg(target_arch = "x86_64")]
    if avx512 && M.is_multiple_of(16) {
        let mut w = c;
        // SAFETY: the caller passes `avx512` only when the CPU has AVX-512F; every pointer is
        // to a whole group of 16 lanes of one of the four `[u32; M]` rows
        unsafe {
            let p = w.each_mut().map(|r| r.as_mut_ptr());
            for g in (0..M).step_by(32) {
                if g + 32 <= M {
                    philox_avx512::<2>(p.map(|r| r.add(g)), key);
                } else {
                    philox_avx512::<1>(p.map(|r| r.add(g)), key);
                }
            }
        }
        return w;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = avx512;
    law2::philox::<M>(c, key)
}

/// Philox4x32-10 in place on `16 G` lanes: `rows[w]` points to counter word w of the lanes
/// (`16 G` u32 each), overwritten by output word w. The low halves of the products by
/// `vpmulld`, the high ones from the even and odd lanes' 64-bit products (`vpmuludq`); the same
/// bits as [`law2::philox`] (tested).
///
/// # Safety
/// The CPU has AVX-512F; each of the four pointers is valid for `16 G` reads and writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn philox_avx512<const G: usize>(rows: [*mut u32; 4], key: [u32; 2]) {
    use core::arch::x86_64::*;
    const M0: u32 = 0xD251_1F53;
    const M1: u32 = 0xCD9E_8D57;
    let (m0, m1) = (_mm512_set1_epi32(M0 as i32), _mm512_set1_epi32(M1 as i32));
    // (high, low) 32-bit halves of x * m, lane by lane
    let mulhilo = |x: __m512i, m: __m512i| {
        let even = _mm512_mul_epu32(x, m);
        let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(x), m);
        let hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64::<32>(even), odd);
        (hi, _mm512_mullo_epi32(x, m))
    };
    let mut c = [[_mm512_setzero_si512(); 4]; G];
    for (g, cg) in c.iter_mut().enumerate() {
        for (w, v) in cg.iter_mut().enumerate() {
            *v = _mm512_loadu_si512(rows[w].add(16 * g) as *const __m512i);
        }
    }
    let (mut k0, mut k1) = (key[0], key[1]);
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(0x9E37_79B9);
            k1 = k1.wrapping_add(0xBB67_AE85);
        }
        let (vk0, vk1) = (_mm512_set1_epi32(k0 as i32), _mm512_set1_epi32(k1 as i32));
        for cg in c.iter_mut() {
            let (hi0, lo0) = mulhilo(cg[0], m0);
            let (hi1, lo1) = mulhilo(cg[2], m1);
            // n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1 (0x96: a three-way xor)
            let n0 = _mm512_ternarylogic_epi32::<0x96>(hi1, cg[1], vk0);
            let n2 = _mm512_ternarylogic_epi32::<0x96>(hi0, cg[3], vk1);
            *cg = [n0, lo1, n2, lo0];
        }
    }
    for (g, cg) in c.iter().enumerate() {
        for (w, v) in cg.iter().enumerate() {
            _mm512_storeu_si512(rows[w].add(16 * g) as *mut __m512i, *v);
        }
    }
}

/// [`law2_blocks`] of blocks `j` and `j + 1` in `M = 2N` lanes, split into the eight `N`-lane
/// arrays in stream order: block j's (cos, sin, cos, sin), then block j + 1's.
#[inline(always)]
pub fn law2_block2<const N: usize, const M: usize>(
    key: [u32; 2],
    first: u64,
    j: u64,
    avx512: bool,
) -> [[f32; N]; 8] {
    let ((c, s), (c2, s2)) = law2_blocks::<N, M>(key, first, j, avx512);
    let half = |x: &[f32; M], h: usize| -> [f32; N] { core::array::from_fn(|k| x[h * N + k]) };
    [
        half(&c, 0),
        half(&s, 0),
        half(&c2, 0),
        half(&s2, 0),
        half(&c, 1),
        half(&s, 1),
        half(&c2, 1),
        half(&s2, 1),
    ]
}

/// [`law2_blocks`] of one block (`M = N`).
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn law2_block<const N: usize>(
    key: [u32; 2],
    first: u64,
    j: u64,
    avx512: bool,
) -> (([f32; N], [f32; N]), ([f32; N], [f32; N])) {
    law2_blocks::<N, N>(key, first, j, avx512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_matches_libm() {
        let (mut w64, mut w32) = (0.0f64, 0.0f64);
        for i in 1..200_000u64 {
            let x = i as f64 / 200_000.0;
            let x = x * x * x;
            let e = (ln_f64(x) - x.ln()).abs() / x.ln().abs().max(1e-300);
            w64 = w64.max(e);
            let xf = x as f32;
            let want = (xf as f64).ln();
            let ef = (ln_f32(xf) as f64 - want).abs() / want.abs().max(1e-30);
            if want != 0.0 {
                w32 = w32.max(ef);
            }
        }
        assert!(w64 < 4e-16, "f64 ln relative error {w64:e}");
        assert!(w32 < 3e-7, "f32 ln relative error {w32:e}");
        assert_eq!(ln_f64(1.0), 0.0);
        assert_eq!(ln_f32(1.0), 0.0);
    }

    #[test]
    fn native_conversions_give_the_same_bits() {
        // edges of m = (x >> 11) + 1 (1, 2^53, powers of two), then xoshiro draws
        let mut xs: Vec<u64> = [
            0u64,
            1,
            2,
            3,
            1 << 24,
            (1 << 24) + 1,
            (1 << 25) + 1,
            (1 << 25) + 2,
        ]
        .iter()
        .flat_map(|&m: &u64| [m.saturating_sub(1), m, m + 1, (1 << 53) - 1 - m])
        .map(|m| m << 11)
        .collect();
        xs.extend([u64::MAX, u64::MAX - 2047, 1 << 63, (1 << 62) + (1 << 61)]);
        let mut r = Xoshiro::<1>::from_keys([5]);
        xs.extend((0..200_000).map(|_| r.next_u64s()[0]));
        for &x in &xs {
            assert_eq!(
                uniform_open0::<false>(x).to_bits(),
                uniform_open0::<true>(x).to_bits()
            );
            let (t0, k0) = quadrant::<false>(x);
            let (t1, k1) = quadrant::<true>(x);
            assert_eq!((t0.to_bits(), k0), (t1.to_bits(), k1), "{x:#x}");
        }
        let (mut a, mut b) = (Xoshiro::<8>::train(3, 9, 0), Xoshiro::<8>::train(3, 9, 0));
        for _ in 0..1000 {
            let (p, q) = (box_muller_f64(&mut a), box_muller_f64_native(&mut b));
            assert_eq!(p.0.map(f64::to_bits), q.0.map(f64::to_bits));
            assert_eq!(p.1.map(f64::to_bits), q.1.map(f64::to_bits));
        }
    }

    #[test]
    fn avx512_halves_give_the_same_bits() {
        #[cfg(target_arch = "x86_64")]
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512F here: only the portable split runs");
            return;
        }
        let mut r = Xoshiro::<16>::train(7, 3, 0);
        for _ in 0..1000 {
            let x = r.next_u64s();
            let (hi, lo) = halves(&x, true);
            for k in 0..16 {
                assert_eq!((hi[k], lo[k]), ((x[k] >> 32) as u32, x[k] as u32));
            }
        }
        let (mut a, mut b) = (Xoshiro::<16>::train(3, 9, 0), Xoshiro::<16>::train(3, 9, 0));
        for _ in 0..1000 {
            let (p, q) = (box_muller_f32(&mut a, false), box_muller_f32(&mut b, true));
            assert_eq!(p.0.map(f32::to_bits), q.0.map(f32::to_bits));
            assert_eq!(p.1.map(f32::to_bits), q.1.map(f32::to_bits));
        }
    }

    #[test]
    fn quarter_turns_round_half_up() {
        let mut hs: Vec<u32> = (0..=8u32)
            .map(|j| j.wrapping_mul(1 << 29))
            .flat_map(|e| [e.wrapping_sub(2), e.wrapping_sub(1), e, e.wrapping_add(1)])
            .collect();
        let mut r = Xoshiro::<1>::from_keys([11]);
        hs.extend((0..100_000).map(|_| (r.next_u64s()[0] >> 32) as u32));
        for h in hs {
            let want = ((h as f64) / 1_073_741_824.0 + 0.5).floor() as u32;
            assert_eq!(quarter_turns(h), want, "{h:#x}");
            assert_eq!(quarter_turns(h), ((h >> 29) + 1) >> 1, "{h:#x}");
        }
    }

    #[test]
    fn sin_cos_match_libm() {
        for i in 0..=10_000 {
            let t = -core::f64::consts::FRAC_PI_4 + core::f64::consts::FRAC_PI_2 * i as f64 / 1e4;
            let (s, c) = sin_cos_f64(t);
            assert!(
                (s - t.sin()).abs() < 2e-16 && (c - t.cos()).abs() < 2e-16,
                "{t}"
            );
            let (s, c) = sin_cos_f32(t as f32);
            let tf = t as f32 as f64;
            assert!((s as f64 - tf.sin()).abs() < 2e-7 && (c as f64 - tf.cos()).abs() < 2e-7);
        }
    }
}
