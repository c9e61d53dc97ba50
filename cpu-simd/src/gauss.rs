//! Four xoshiro256++ streams side by side in the lanes of a `u64x4`, and Box–Muller normals
//! from them in `f64x4`: lane k reproduces `icl_core::rng::stream(..)` + `fill_normal` of its own
//! sequence bit for bit up to the rounding of the vectorised `ln`/`sin_cos` (a few ulp in f64).
use icl_core::rng::stream_key;
use icl_core::rng::Domain;
use wide::{f32x8, f64x4, u64x4, CmpEq};

/// SplitMix64 step (what `SeedableRng::seed_from_u64` of rand_xoshiro uses to fill the state).
#[inline]
fn splitmix_next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Four independent xoshiro256++ generators, one per lane.
#[derive(Debug, Clone, Copy)]
pub struct Xoshiro4 {
    s: [u64x4; 4],
}

#[inline(always)]
fn rotl(x: u64x4, k: u32) -> u64x4 {
    (x << k) | (x >> (64 - k))
}

impl Xoshiro4 {
    /// Lane k seeded like `Xoshiro256PlusPlus::seed_from_u64(keys[k])`.
    pub fn from_keys(keys: [u64; 4]) -> Self {
        let mut st = [[0u64; 4]; 4];
        for (k, &key) in keys.iter().enumerate() {
            let mut x = key;
            for w in st.iter_mut() {
                w[k] = splitmix_next(&mut x);
            }
        }
        Xoshiro4 {
            s: st.map(u64x4::from),
        }
    }

    /// The training streams (seed, Train, step, first .. first + 4).
    pub fn train(seed: u64, step: u64, first: u64) -> Self {
        Self::from_keys(core::array::from_fn(|k| {
            stream_key(seed, Domain::Train, step, first + k as u64)
        }))
    }

    /// Next output of every lane: `rotl(s0 + s3, 23) + s0`, then the xoshiro256 state update.
    #[inline(always)]
    pub fn next_u64x4(&mut self) -> u64x4 {
        let [s0, s1, s2, s3] = self.s;
        let out = rotl(s0 + s3, 23) + s0;
        let t = s1 << 17u32;
        let s2 = s2 ^ s0;
        let s3 = s3 ^ s1;
        let s1 = s1 ^ s2;
        let s0 = s0 ^ s3;
        let s2 = s2 ^ t;
        let s3 = rotl(s3, 45);
        self.s = [s0, s1, s2, s3];
        out
    }
}

/// Exact conversion of integers below 2^54 to f64 (split at bit 52; both halves convert exactly
/// by the 2^52 exponent trick, and their sum is representable).
#[inline(always)]
fn u54_to_f64(v: u64x4) -> f64x4 {
    const MAGIC: u64 = 0x4330_0000_0000_0000; // bits of 2^52
    let two52 = f64x4::splat(4_503_599_627_370_496.0);
    let lo = v & u64x4::splat((1u64 << 52) - 1);
    let hi = v >> 52u32;
    let flo: f64x4 = bytemuck_cast(lo | u64x4::splat(MAGIC)) - two52;
    let fhi: f64x4 = bytemuck_cast(hi | u64x4::splat(MAGIC)) - two52;
    fhi.mul_add(two52, flo)
}

#[inline(always)]
fn bytemuck_cast(v: u64x4) -> f64x4 {
    let a = v.to_array();
    f64x4::from(a.map(f64::from_bits))
}

/// One Box–Muller pair per lane, as `icl_core::rng::box_muller`:
/// `u1 = ((x >> 11) + 1) 2^-53`, `u2 = (x' >> 11) 2^-53`, `r = sqrt(-2 ln u1)`, `th = 2 pi u2`,
/// returns `(r cos th, r sin th)`.
#[inline(always)]
pub fn box_muller4(rng: &mut Xoshiro4) -> (f64x4, f64x4) {
    let inv = f64x4::splat(1.0 / 9_007_199_254_740_992.0);
    let a = rng.next_u64x4();
    let b = rng.next_u64x4();
    let u1 = u54_to_f64((a >> 11u32) + u64x4::splat(1)) * inv;
    let u2 = u54_to_f64(b >> 11u32) * inv;
    let r = (f64x4::splat(-2.0) * u1.ln()).sqrt();
    let th = f64x4::splat(core::f64::consts::TAU) * u2;
    let (s, c) = th.sin_cos();
    (r * c, r * s)
}

/// Fill `out` with normals in the order of `icl_core::rng::fill_normal` (pairs; an odd tail
/// keeps the cosine half), four streams at once.
#[inline(always)]
pub fn fill_normal4(rng: &mut Xoshiro4, out: &mut [f64x4]) {
    let mut chunks = out.chunks_exact_mut(2);
    for pair in &mut chunks {
        let (c, s) = box_muller4(rng);
        pair[0] = c;
        pair[1] = s;
    }
    if let [last] = chunks.into_remainder() {
        *last = box_muller4(rng).0;
    }
}

/// Four f64 lanes and four more, rounded to one `f32x8`.
#[inline(always)]
fn to_f32x8(lo: f64x4, hi: f64x4) -> f32x8 {
    let (a, b) = (lo.to_array(), hi.to_array());
    f32x8::from([
        a[0] as f32,
        a[1] as f32,
        a[2] as f32,
        a[3] as f32,
        b[0] as f32,
        b[1] as f32,
        b[2] as f32,
        b[3] as f32,
    ])
}

/// The eight f32 lanes widened to two `f64x4`.
#[inline(always)]
fn to_f64x4_pair(v: f32x8) -> (f64x4, f64x4) {
    let a = v.to_array();
    (
        f64x4::from([a[0] as f64, a[1] as f64, a[2] as f64, a[3] as f64]),
        f64x4::from([a[4] as f64, a[5] as f64, a[6] as f64, a[7] as f64]),
    )
}

/// `x = 2 pi u2` split as `x = k pi/2 + t`, |t| <= pi/4, exactly in integers: with
/// `m = x' >> 11` (u2 = m 2^-53), `k = round(m / 2^51)` and `t = 2 pi (m - k 2^51) 2^-53`.
/// Returns t (computed in f64, rounded once to f32 later) and k as f64 (0..=4).
#[inline(always)]
fn reduce_quadrant(x: u64x4) -> (f64x4, f64x4) {
    let m = x >> 11u32;
    let k = (m + u64x4::splat(1 << 50)) >> 51u32;
    // m - k 2^51 + 2^51 lies in (2^50, 3 2^50]: converts exactly
    let biased = m + u64x4::splat(1 << 51) - (k << 51u32);
    let t = (u54_to_f64(biased) - f64x4::splat(2_251_799_813_685_248.0))
        * f64x4::splat(core::f64::consts::TAU / 9_007_199_254_740_992.0);
    (t, u54_to_f64(k))
}

/// Eight Box–Muller pairs (lanes 0-3 from `r0`, 4-7 from `r1`) in f32: the uniforms are exact
/// (f64), `ln` is wide's f32 `ln` (Cephes logf), the angle is reduced to |t| <= pi/4 exactly in
/// integers and sin/cos use the Cephes sinf/cosf polynomials, then the quadrant is applied.
/// Within a few f32 ulp of `icl_core::rng::box_muller` rounded to f32.
#[inline(always)]
pub fn box_muller8(r0: &mut Xoshiro4, r1: &mut Xoshiro4) -> (f32x8, f32x8) {
    let inv = f64x4::splat(1.0 / 9_007_199_254_740_992.0);
    let (a0, a1) = (r0.next_u64x4(), r1.next_u64x4());
    let (b0, b1) = (r0.next_u64x4(), r1.next_u64x4());
    // u1 = hi + lo with hi = f32(u1): ln u1 = ln hi + ln(1 + lo/hi) ~ ln hi + lo, which keeps the
    // relative accuracy of ln u1 for u1 near 1 (where rounding u1 itself to f32 would lose it)
    let u0 = u54_to_f64((a0 >> 11u32) + u64x4::splat(1)) * inv;
    let u1 = u54_to_f64((a1 >> 11u32) + u64x4::splat(1)) * inv;
    let hi = to_f32x8(u0, u1);
    let (h0, h1) = to_f64x4_pair(hi);
    let lo = to_f32x8(u0 - h0, u1 - h1);
    let r = (f32x8::splat(-2.0) * (hi.ln() + lo)).sqrt();
    let ((t0, k0), (t1, k1)) = (reduce_quadrant(b0), reduce_quadrant(b1));
    let (t, k) = (to_f32x8(t0, t1), to_f32x8(k0, k1));
    let z = t * t;
    let s = (z * t).mul_add(
        f32x8::splat(-1.951_529_6E-4)
            .mul_add(z, f32x8::splat(8.332_161E-3))
            .mul_add(z, f32x8::splat(-1.666_665_5E-1)),
        t,
    );
    let c = (z * z).mul_add(
        f32x8::splat(2.443_315_7E-5)
            .mul_add(z, f32x8::splat(-1.388_731_6E-3))
            .mul_add(z, f32x8::splat(4.166_664_6E-2)),
        f32x8::splat(-0.5).mul_add(z, f32x8::splat(1.0)),
    );
    // quadrant k: (cos, sin) of k pi/2 + t = (c, s), (-s, c), (-c, -s), (s, -c), (c, s)
    let (one, two, three) = (f32x8::splat(1.0), f32x8::splat(2.0), f32x8::splat(3.0));
    let odd = k.cmp_eq(one) | k.cmp_eq(three);
    let neg_cos = k.cmp_eq(one) | k.cmp_eq(two);
    let neg_sin = k.cmp_eq(two) | k.cmp_eq(three);
    let (cc, ss) = (odd.blend(s, c), odd.blend(c, s));
    let cc = neg_cos.blend(-cc, cc);
    let ss = neg_sin.blend(-ss, ss);
    (r * cc, r * ss)
}

/// Fill `out` with normals in the order of `icl_core::rng::fill_normal`, eight streams at once, in f32.
#[inline(always)]
pub fn fill_normal8(r0: &mut Xoshiro4, r1: &mut Xoshiro4, out: &mut [f32x8]) {
    let mut chunks = out.chunks_exact_mut(2);
    for pair in &mut chunks {
        let (c, s) = box_muller8(r0, r1);
        pair[0] = c;
        pair[1] = s;
    }
    if let [last] = chunks.into_remainder() {
        *last = box_muller8(r0, r1).0;
    }
}
