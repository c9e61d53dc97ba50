//! Data law 2 (`task.data_law = 2`): Philox4x32-10 words and Box–Muller normals computed in f32
//! from 32-bit integer operations and f32 additions, subtractions and multiplications alone (no
//! fused multiply-add or division) and the correctly rounded square root of IEEE 754, so that
//! every CPU level and thread count gives the same bits, and a compute shader can (with a
//! correctly rounded `sqrt`, which Vulkan does not promise: a shader corrects its estimate by one
//! ulp from the exact integer square of the candidate).
//!
//! **The stream.** Stream (seed, domain, step, seq) is the Philox4x32-10 output of key
//! `(lo, hi)` of `stream_base(seed, domain, step)` at counters `(j_lo, seq_lo, seq_hi, j_hi)`,
//! j = 0, 1, ... (Salmon et al. 2011; the sequence index in the counter, so that the key schedule
//! is shared by a batch). Each block's four words are two 64-bit **slots** `(w0, w1)` and
//! `(w2, w3)`, taken in order. Every draw takes one slot: a Box–Muller pair both words, a uniform
//! the first word (`(w >> 8) 2^-24`, 24 bits), a 64-bit integer `w0 | w1 << 32`.
//!
//! **The normal pair** of a slot `(a, b)` ([`normal_pair`]):
//! - `u1 = ((a >> 8) + 1) 2^-24` in (0, 1], exact in f32;
//! - `ln u1 = k ln 2 + ln(1 + f)`, `u1 = 2^k (1 + f)`, `sqrt(1/2) <= 1 + f < sqrt(2)` from the
//!   bits, `ln(1 + f) = f - f^2/2 + f^3 P(f)` (P of degree 7, a Chebyshev fit, truncation
//!   < 6.1e-8 relative), `k ln 2` in two parts;
//! - `r = sqrt(s)`, `s = -2 ln u1` (the correctly rounded square root: one instruction at every
//!   level; three Newton steps from a bit estimate measured 35 % slower a pair);
//! - the angle `2 pi u2`, `u2 = (b >> 8) 2^-24`, as `q pi/2 + t` exactly in integers
//!   (`q = round(4 u2)`), `(sin t, cos t)` by Cephes' `sinf`/`cosf` polynomials (|t| <= pi/4),
//!   and the quadrant by bit operations;
//! - the pair `(r cos, r sin)`.
//!
//! A sequence of `n` normals is `ceil(n / 2)` pairs, an odd tail keeping the cosine half, as under
//! law 1. The largest |z| is `sqrt(48 ln 2) = 5.77` (P(|Z| > 5.77) = 8e-9).

/// Philox4x32 multipliers and key increments (Random123).
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32-10 of `N` counters under one key: lane k's counter is `(c[0][k], .., c[3][k])`.
#[inline(always)]
pub fn philox<const N: usize>(mut c: [[u32; N]; 4], key: [u32; 2]) -> [[u32; N]; 4] {
    let (mut k0, mut k1) = (key[0], key[1]);
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        for i in 0..N {
            // the low halves as 32-bit products, the high ones from 64-bit products (one
            // instruction each at every level, where one 64-bit product split in two is not)
            let (lo0, lo1) = (M0.wrapping_mul(c[0][i]), M1.wrapping_mul(c[2][i]));
            let hi0 = ((M0 as u64 * c[0][i] as u64) >> 32) as u32;
            let hi1 = ((M1 as u64 * c[2][i] as u64) >> 32) as u32;
            let n0 = hi1 ^ c[1][i] ^ k0;
            let n2 = hi0 ^ c[3][i] ^ k1;
            c[0][i] = n0;
            c[1][i] = lo1;
            c[2][i] = n2;
            c[3][i] = lo0;
        }
    }
    c
}

/// The Philox key of the streams of (seed, domain, step): the halves of their shared base.
#[inline(always)]
pub fn key_of(base: u64) -> [u32; 2] {
    [base as u32, (base >> 32) as u32]
}

/// 2^-24.
const INV24: f32 = 1.0 / 16_777_216.0;
/// 2 pi 2^-24, rounded to f32.
const TAU_INV24: f32 = (core::f64::consts::TAU / 16_777_216.0) as f32;

/// The uniform of a slot's first word: `(a >> 8) 2^-24` in [0, 1).
#[inline(always)]
pub fn uniform_of(a: u32) -> f32 {
    (a >> 8) as i32 as f32 * INV24
}

/// musl's split of ln 2 (`logf`), by its bits.
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7180);
pub const LN2_LO: f32 = f32::from_bits(0x3717_f7d1);
/// `ln(1 + f) = f - f^2/2 + f^3 P(f)` on sqrt(1/2) <= 1 + f < sqrt(2): P of degree 7, highest
/// coefficient first (a Chebyshev fit, truncation < 6.1e-8 relative).
pub const LN_P: [f32; 8] = [
    -7.989_711e-2,
    1.254_442_5e-1,
    -1.294_165e-1,
    1.422_084_6e-1,
    -1.664_600_5e-1,
    2.000_093_6e-1,
    -2.500_022_4e-1,
    3.333_333e-1,
];

/// `ln x` for x in [2^-24, 1] (see the module's text), mul and add only.
#[inline(always)]
fn ln(x: f32) -> f32 {
    const P: [f32; 8] = LN_P;
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    // ix >> 23 < 2^9: the exponent, converted exactly
    let k = ((ix >> 23) as i32 - 127) as f32;
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let z = f * f;
    let mut p = P[0];
    for &c in &P[1..] {
        p = p * f + c;
    }
    let tail = (f * z) * p + k * LN2_LO;
    k * LN2_HI + ((tail - 0.5 * z) + f)
}

/// `s = -2 ln u1`, the square of the radius, from the slot's first word (>= 0).
#[inline(always)]
fn radius_sq(a: u32) -> f32 {
    let u1 = ((a >> 8) + 1) as i32 as f32 * INV24;
    let s = -2.0 * ln(u1);
    // u1 = 1 gives ln = 0 and s = -0: take +0 (and nothing below it)
    if s > 0.0 {
        s
    } else {
        0.0
    }
}

/// `(cos, sin)` of the angle `2 pi u2` of the slot's second word.
#[inline(always)]
fn angle(b: u32) -> (f32, f32) {
    let k = b >> 8;
    let q = (k + (1 << 21)) >> 22;
    let t = (k as i32 - (q << 22) as i32) as f32 * TAU_INV24;
    let z = t * t;
    let ps = (z * -1.951_529_6e-4 + 8.332_161e-3) * z + -1.666_665_5e-1;
    let sin = (z * t) * ps + t;
    let pc = (z * 2.443_315_7e-5 + -1.388_731_6e-3) * z + 4.166_664_6e-2;
    let cos = (z * z) * pc + (1.0 - 0.5 * z);
    // quadrant q: (c, s), (-s, c), (-c, -s), (s, -c), (c, s)
    let (sb, cb) = (sin.to_bits(), cos.to_bits());
    let odd = q & 1 != 0;
    let cc = if odd { sb } else { cb };
    let ss = if odd { cb } else { sb };
    let neg_cos = ((q + 1) << 30) & (1 << 31);
    let neg_sin = (q << 30) & (1 << 31);
    (f32::from_bits(cc ^ neg_cos), f32::from_bits(ss ^ neg_sin))
}

/// One standard normal pair from the slot `(a, b)` (see the module's text).
#[inline(always)]
pub fn normal_pair(a: u32, b: u32) -> (f32, f32) {
    let r = libm::sqrtf(radius_sq(a));
    let (c, s) = angle(b);
    (r * c, r * s)
}

/// [`normal_pair`] of `N` slots at once, the square roots taken by `sqrt` (a correctly rounded
/// one: `libm::sqrtf` here, which is one scalar instruction; the SIMD engine passes `f32::sqrt`,
/// which vectorises, for the same bits).
#[inline(always)]
pub fn normal_pairs_with<const N: usize>(
    a: &[u32; N],
    b: &[u32; N],
    sqrt: impl Fn(f32) -> f32,
) -> ([f32; N], [f32; N]) {
    let mut r = [0.0f32; N];
    for k in 0..N {
        r[k] = radius_sq(a[k]);
    }
    for x in r.iter_mut() {
        *x = sqrt(*x);
    }
    let (mut c, mut s) = ([0.0; N], [0.0; N]);
    for k in 0..N {
        let (co, si) = angle(b[k]);
        c[k] = r[k] * co;
        s[k] = r[k] * si;
    }
    (c, s)
}

/// [`normal_pair`] of `N` slots at once.
#[inline(always)]
pub fn normal_pairs<const N: usize>(a: &[u32; N], b: &[u32; N]) -> ([f32; N], [f32; N]) {
    normal_pairs_with(a, b, libm::sqrtf)
}

/// Blocks computed side by side by [`Philox2::fill_normal`].
const BULK: usize = 8;

/// A law-2 stream: the key, the sequence's counter words, the next block, and the second slot
/// of the last block when it is still unused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Philox2 {
    key: [u32; 2],
    seq: [u32; 2],
    block: u64,
    spare: Option<[u32; 2]>,
}

impl Philox2 {
    /// Stream `seq` of the streams with the shared base `base` (`stream_base(seed, domain, step)`).
    pub fn new(base: u64, seq: u64) -> Self {
        Philox2 {
            key: key_of(base),
            seq: [seq as u32, (seq >> 32) as u32],
            block: 0,
            spare: None,
        }
    }

    /// Block `j` of this stream.
    #[inline(always)]
    fn block_words(&self, j: u64) -> [u32; 4] {
        let c = [[j as u32], [self.seq[0]], [self.seq[1]], [(j >> 32) as u32]];
        let o = philox::<1>(c, self.key);
        [o[0][0], o[1][0], o[2][0], o[3][0]]
    }

    /// The next slot.
    #[inline]
    pub fn next_slot(&mut self) -> [u32; 2] {
        if let Some(s) = self.spare.take() {
            return s;
        }
        let w = self.block_words(self.block);
        self.block += 1;
        self.spare = Some([w[2], w[3]]);
        [w[0], w[1]]
    }

    /// The next uniform in [0, 1) (24 bits).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        uniform_of(self.next_slot()[0]) as f64
    }

    /// The next 64-bit integer.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let [a, b] = self.next_slot();
        a as u64 | (b as u64) << 32
    }

    /// Fill `out` with normals, a pair per slot (an odd tail keeps the cosine half), [`BULK`]
    /// blocks at a time where whole blocks are needed.
    pub fn fill_normal(&mut self, out: &mut [f64]) {
        let mut rest = &mut out[..];
        if self.spare.is_some() && !rest.is_empty() {
            let [a, b] = self.next_slot();
            rest = put_pair(rest, normal_pair(a, b));
        }
        while rest.len() >= 4 * BULK {
            let mut c = [[0u32; BULK]; 4];
            for i in 0..BULK {
                let j = self.block + i as u64;
                c[0][i] = j as u32;
                c[3][i] = (j >> 32) as u32;
            }
            c[1] = [self.seq[0]; BULK];
            c[2] = [self.seq[1]; BULK];
            let w = philox::<BULK>(c, self.key);
            self.block += BULK as u64;
            let (c0, s0) = normal_pairs(&w[0], &w[1]);
            let (c1, s1) = normal_pairs(&w[2], &w[3]);
            let (head, tail) = rest.split_at_mut(4 * BULK);
            for (i, q) in head.chunks_exact_mut(4).enumerate() {
                q[0] = c0[i] as f64;
                q[1] = s0[i] as f64;
                q[2] = c1[i] as f64;
                q[3] = s1[i] as f64;
            }
            rest = tail;
        }
        while !rest.is_empty() {
            let [a, b] = self.next_slot();
            rest = put_pair(rest, normal_pair(a, b));
        }
    }
}

/// Write a pair to the front of `out` (the cosine half alone when one value is left); the rest.
#[inline(always)]
fn put_pair(out: &mut [f64], (c, s): (f32, f32)) -> &mut [f64] {
    match out {
        [] => out,
        [x] => {
            *x = c as f64;
            &mut out[1..]
        }
        [x, y, ..] => {
            *x = c as f64;
            *y = s as f64;
            &mut out[2..]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known answers for Philox4x32-10 (`kat_vectors`: counter, key, output).
    #[test]
    fn philox_matches_random123_known_answers() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0; 4],
                [0; 2],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            let o = philox::<1>([[ctr[0]], [ctr[1]], [ctr[2]], [ctr[3]]], key);
            assert_eq!([o[0][0], o[1][0], o[2][0], o[3][0]], want);
        }
    }

    /// Known answers of the law from an independent implementation of its written definition
    /// (numpy float32 and Python integers, `ffi/python/tests/test_data_law.py`): the first six
    /// normals of training streams (seed 5, step 3) 0 and 2^32 + 7, as f32 bits.
    #[test]
    fn the_law_matches_an_independent_implementation() {
        let base = crate::rng::stream_base(5, crate::rng::Domain::Train, 3);
        for (seq, want) in [
            (
                0u64,
                [
                    0x3ef48e01u32,
                    0xbdb9f549,
                    0x3f009c8f,
                    0x3f8f05c1,
                    0xbfb8f6a8,
                    0xbed36365,
                ],
            ),
            (
                (1 << 32) + 7,
                [
                    0xbf4ff852, 0xbf74545a, 0xbfa25605, 0x3e9a609d, 0xbe48ac3c, 0x3fd66143,
                ],
            ),
        ] {
            let mut v = [0.0f64; 6];
            Philox2::new(base, seq).fill_normal(&mut v);
            assert_eq!(v.map(|x| (x as f32).to_bits()), want, "stream {seq}");
        }
    }

    /// Every u1 of the 2^24 and a grid of angles against f64 libm: r within 4e-7 relative (and
    /// exactly 0 at u1 = 1), cos and sin within 2e-7 absolute of the unit circle's.
    #[test]
    fn the_transform_is_accurate_against_libm() {
        let mut worst_r = 0.0f64;
        for k in (0..1u32 << 24).step_by(7).chain([0, (1 << 24) - 1]) {
            let a = k << 8;
            let (c, s) = normal_pair(a, 0);
            let r = libm::hypot(c as f64, s as f64);
            let u1 = (k + 1) as f64 / 16_777_216.0;
            let want = libm::sqrt(-2.0 * libm::log(u1));
            if k == (1 << 24) - 1 {
                assert_eq!((c, s), (0.0, 0.0));
            } else {
                worst_r = worst_r.max((r - want).abs() / want);
            }
        }
        assert!(worst_r < 4e-7, "radius error {worst_r:e}");
        let mut worst_t = 0.0f64;
        for k in (0..1u32 << 24)
            .step_by(101)
            .chain([(1 << 24) - 1, 1 << 21, 3 << 21])
        {
            // u1 = 2^-24 e^{-1/2}-ish is not on the grid; take u1 with r near 1 and divide it out
            let a = 10_180_000u32 << 8; // u1 = 0.6068.. = e^{-1/2} to 1e-6
            let (c, s) = normal_pair(a, k << 8);
            let u1 = (10_180_000u32 + 1) as f64 / 16_777_216.0;
            let r = libm::sqrt(-2.0 * libm::log(u1));
            let th = core::f64::consts::TAU * k as f64 / 16_777_216.0;
            worst_t = worst_t
                .max((c as f64 / r - libm::cos(th)).abs())
                .max((s as f64 / r - libm::sin(th)).abs());
        }
        assert!(worst_t < 2e-7, "angle error {worst_t:e}");
    }

    /// Bulk and slot-by-slot filling give the same values, whatever was drawn before.
    #[test]
    fn bulk_filling_is_slot_by_slot_filling() {
        for pre in 0..3 {
            for n in [0, 1, 2, 3, 31, 32, 33, 64, 65, 100] {
                let mut a = Philox2::new(0xdead_beef_0123_4567, 5);
                let mut b = a.clone();
                for _ in 0..pre {
                    assert_eq!(a.uniform(), b.uniform());
                }
                let mut x = alloc::vec![0.0; n];
                a.fill_normal(&mut x);
                let mut y = alloc::vec::Vec::new();
                while y.len() < n {
                    let [p, q] = b.next_slot();
                    let (c, s) = normal_pair(p, q);
                    y.push(c as f64);
                    if y.len() < n {
                        y.push(s as f64);
                    }
                }
                assert_eq!(x, y, "pre {pre} n {n}");
                assert_eq!(a.next_u64(), b.next_u64(), "the next slot, pre {pre} n {n}");
            }
        }
    }
}
