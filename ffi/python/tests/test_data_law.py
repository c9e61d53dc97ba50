"""Data law 2 from its written definition (`core/src/rng/law2.rs`, docs/reproducibility.md),
re-implemented here in numpy's float32 and Python integers, against `icl.sample`: the same bits.
This is what a compute shader or another language has to do to reproduce icl's law-2 data."""

import math

import numpy as np

import icl

M64 = (1 << 64) - 1
F = np.float32


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


TRAIN = 0x5452_4149_4E00_0001


def stream_base(seed, domain, step):
    return mix64(mix64(mix64(seed) ^ domain) ^ step)


def philox(ctr, key):
    c, (k0, k1) = list(ctr), key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k1, p0 & 0xFFFFFFFF]
    return c


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def from_bits(b):
    return np.array([b & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]


P = [F(v) for v in ["-7.989711e-2", "1.2544425e-1", "-1.294165e-1", "1.4220846e-1",
                    "-1.6646005e-1", "2.0000936e-1", "-2.5000224e-1", "3.333333e-1"]]


def normal_pair(a, b):
    u1 = F((a >> 8) + 1) * F(2.0**-24)
    ix = (f32_bits(u1) + 0x3F800000 - 0x3F3504F3) & 0xFFFFFFFF
    k = F((ix >> 23) - 127)
    m = from_bits((ix & 0x007FFFFF) + 0x3F3504F3)
    f = m - F(1)
    z = f * f
    p = P[0]
    for c in P[1:]:
        p = p * f + c
    tail = (f * z) * p + k * from_bits(0x3717F7D1)
    ln = k * from_bits(0x3F317180) + ((tail - F(0.5) * z) + f)
    s = F(-2) * ln
    r = np.sqrt(s if s > 0 else F(0))
    kk = b >> 8
    q = (kk + (1 << 21)) >> 22
    t = F(kk - (q << 22)) * F(math.tau / 16777216.0)
    z = t * t
    ps = (z * F("-1.9515296e-4") + F("8.332161e-3")) * z + F("-1.6666655e-1")
    sin = (z * t) * ps + t
    pc = (z * F("2.4433157e-5") + F("-1.3887316e-3")) * z + F("4.1666646e-2")
    cos = (z * z) * pc + (F(1) - F(0.5) * z)
    c, s_ = [(cos, sin), (-sin, cos), (-cos, -sin), (sin, -cos), (cos, sin)][q]
    return r * c, r * s_


def normals(seed, step, seq, n):
    base = stream_base(seed, TRAIN, step)
    key = (base & 0xFFFFFFFF, base >> 32)
    out, j = [], 0
    while len(out) < n:
        w = philox([j & 0xFFFFFFFF, seq & 0xFFFFFFFF, seq >> 32, j >> 32], key)
        for a, b in ((w[0], w[1]), (w[2], w[3])):
            out.extend(normal_pair(a, b))
        j += 1
    return np.array(out[:n], dtype=np.float32)


def test_philox_known_answer():
    assert philox([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0)) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_law2_sample_is_the_written_law_bit_for_bit():
    d, L = 5, 10
    cfg = icl.Config.preset("quick").set("task.data_law", 2)
    z, y = icl.sample(cfg, 3, L, seed=5, step=3)
    for b in range(3):
        g = normals(5, 3, b, d + (L + 1) * d + (L + 1))
        # the stream: beta (d), then the L + 1 x's, then the noises
        xs = g[d:d + (L + 1) * d].reshape(L + 1, d).astype(np.float64)
        np.testing.assert_array_equal(z[b, :, :d], xs)
    # law 1 (the default) is another stream
    z1, _ = icl.sample(icl.Config.preset("quick"), 3, L, seed=5, step=3)
    assert not np.array_equal(z1, z)
