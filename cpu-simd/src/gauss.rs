//! Four xoshiro256++ streams side by side in the lanes of a `u64x4`, and Box–Muller normals
//! from them in `f64x4`: lane k reproduces `icl_core::rng::stream(..)` + `fill_normal` of its own
//! sequence bit for bit up to the rounding of the vectorised `ln`/`sin_cos` (a few ulp in f64).
use icl_core::rng::stream_key;
use icl_core::rng::Domain;
use wide::{f64x4, u64x4};

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
    pub fn next(&mut self) -> u64x4 {
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
    let a = rng.next();
    let b = rng.next();
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
