// Training batches made on the device under data law 2 (`task.data_law = 2`), bit for bit the
// batches of the CPU sampler (`Task::sample_into` with `icl_core::rng::law2`): Philox4x32-10
// words from 32-bit integer operations, Box-Muller normals from f32 additions, subtractions and
// multiplications (build.rs marks every one NoContraction, so no driver fuses them into an FMA),
// and the sequence's composition (task vector scale, covariance factor, labels, noise) in f64 as
// the CPU does it, each f64 value rounded to f32 once, as the CPU stores it.
//
// One workgroup per sequence. The call's sequences are runs of run_n sequences each (one run, or
// a packed sweep's runs), run r with its own Philox key keys[r] = the halves of
// stream_base(seed_r, Train, step_r). Sequence g = seq0 + b of the call (b the workgroup) draws
// from stream g % run_n of run g / run_n: counter of block j = (j_lo, seq_lo, seq_hi, j_hi); each block is two slots (w0, w1), (w2, w3); normal m of the
// sequence is the cosine (m even) or sine (m odd) half of slot m / 2's Box-Muller pair. The
// sequence's normals are, in order: d task-vector coordinates, (L + 1) d covariates (query
// last), (L + 1) n_out noises (query last) (`core/src/data/task.rs`).

struct Params {
    // the attention module's 16 words (binding 0 is shared)
    _attention: array<vec4<u32>, 4>,
    _unused: vec2<u32>,
    seq0: vec2<u32>,
    n: u32,
    len: u32,
    d: u32,
    no: u32,
    // 1: the query target carries its noise
    query_noise: u32,
    // 1: x = F g with F lower triangular (row-major d x d f64, in `aux`)
    has_factor: u32,
    // the task vector's scale (1/sqrt(d) for he2025's tasks, 1 for Garg et al.'s)
    scale: f64,
    // the noise's standard deviation
    sigma: f64,
    // sequences per run
    run_n: u32,
    // the runs' Philox keys, two a vector: run r's is keys[r / 2].xy (r even) or .zw (odd)
    keys: array<vec4<u32>, 128>,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read_write> zbuf: array<f32>;
@group(0) @binding(3) var<storage, read_write> ybuf: array<f32>;
@group(0) @binding(7) var<storage, read> aux: array<f64>;

const M0: u32 = 0xD2511F53u;
const M1: u32 = 0xCD9E8D57u;
const W0: u32 = 0x9E3779B9u;
const W1: u32 = 0xBB67AE85u;

// The high 32 bits of the 64-bit product a b, from 16-bit halves.
fn mulhi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

// Philox4x32-10 of counter c under key k (law2::philox).
fn philox(c0: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = c0;
    var k = key;
    for (var r = 0u; r < 10u; r++) {
        if (r > 0u) {
            k = vec2<u32>(k.x + W0, k.y + W1);
        }
        let lo0 = M0 * c.x;
        let lo1 = M1 * c.z;
        let hi0 = mulhi(M0, c.x);
        let hi1 = mulhi(M1, c.z);
        c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

fn f(bits: u32) -> f32 {
    return bitcast<f32>(bits);
}

// ln x for x in [2^-24, 1] (law2::ln), mul and add only.
fn ln24(x: f32) -> f32 {
    let ix = bitcast<u32>(x) + (0x3f800000u - 0x3f3504f3u);
    let k = f32(i32(ix >> 23u) - 127);
    let m = bitcast<f32>((ix & 0x007fffffu) + 0x3f3504f3u);
    let fr = m - 1.0;
    let z = fr * fr;
    var p = f(0xbda3a119u);
    p = p * fr + f(0x3e007475u);
    p = p * fr + f(0xbe0485c2u);
    p = p * fr + f(0x3e119f18u);
    p = p * fr + f(0xbe2a7481u);
    p = p * fr + f(0x3e4ccf41u);
    p = p * fr + f(0xbe80004bu);
    p = p * fr + f(0x3eaaaaaau);
    // ln 2 in two parts (musl's logf)
    let tail = (fr * z) * p + k * f(0x3717f7d1u);
    return k * f(0x3f317180u) + ((tail - 0.5 * z) + fr);
}

// The correctly rounded square root of s >= 0: the device's estimate, moved by an ulp while the
// midpoint to the neighbour is on the other side of s (a midpoint has 25 significant bits, so its
// square is exact in f64, and it never equals an f32).
fn sqrt_rn(s: f32) -> f32 {
    if (s <= 0.0) {
        return 0.0;
    }
    var r = sqrt(s);
    let sd = f64(s);
    for (var i = 0u; i < 4u; i++) {
        let up = bitcast<f32>(bitcast<u32>(r) + 1u);
        let mid = (f64(r) + f64(up)) * 0.5lf;
        if (mid * mid < sd) {
            r = up;
        } else {
            break;
        }
    }
    for (var i = 0u; i < 4u; i++) {
        let dn = bitcast<f32>(bitcast<u32>(r) - 1u);
        let mid = (f64(r) + f64(dn)) * 0.5lf;
        if (mid * mid > sd) {
            r = dn;
        } else {
            break;
        }
    }
    return r;
}

// One standard normal pair from the slot (a, b) (law2::normal_pair).
fn normal_pair(a: u32, b: u32) -> vec2<f32> {
    // the radius: s = -2 ln u1, u1 = ((a >> 8) + 1) 2^-24 in (0, 1]
    let u1 = f32(i32((a >> 8u) + 1u)) * f(0x33800000u);
    var s = -2.0 * ln24(u1);
    if (!(s > 0.0)) {
        s = 0.0;
    }
    let r = sqrt_rn(s);
    // the angle 2 pi u2 = q pi / 2 + t, |t| <= pi / 4
    let k = b >> 8u;
    let q = (k + (1u << 21u)) >> 22u;
    let t = f32(i32(k) - i32(q << 22u)) * f(0x34c90fdbu);
    let z = t * t;
    let ps = (z * f(0xb94ca1f9u) + f(0x3c08839eu)) * z + f(0xbe2aaaa3u);
    let sn = (z * t) * ps + t;
    let pc = (z * f(0x37ccf5ceu) + f(0xbab6061au)) * z + f(0x3d2aaaa5u);
    let cs = (z * z) * pc + (1.0 - 0.5 * z);
    let sb = bitcast<u32>(sn);
    let cb = bitcast<u32>(cs);
    let odd = (q & 1u) != 0u;
    let cc = select(cb, sb, odd);
    let ss = select(sb, cb, odd);
    let neg_cos = ((q + 1u) << 30u) & 0x80000000u;
    let neg_sin = (q << 30u) & 0x80000000u;
    let c = bitcast<f32>(cc ^ neg_cos);
    let si = bitcast<f32>(ss ^ neg_sin);
    return vec2<f32>(r * c, r * si);
}

// Slot `slot` of the stream with sequence words `seq` under `key`: its Box-Muller pair.
fn pair_at(seq: vec2<u32>, key: vec2<u32>, slot: u32) -> vec2<f32> {
    let w = philox(vec4<u32>(slot >> 1u, seq.x, seq.y, 0u), key);
    if ((slot & 1u) == 0u) {
        return normal_pair(w.x, w.y);
    }
    return normal_pair(w.z, w.w);
}

// A cursor over a stream's normals: the pair of the last slot used, computed once.
struct Cursor {
    seq: vec2<u32>,
    key: vec2<u32>,
    slot: u32,
    pair: vec2<f32>,
}

fn normal(c: ptr<function, Cursor>, m: u32) -> f32 {
    let slot = m >> 1u;
    if (slot != (*c).slot) {
        (*c).slot = slot;
        (*c).pair = pair_at((*c).seq, (*c).key, slot);
    }
    return select((*c).pair.x, (*c).pair.y, (m & 1u) == 1u);
}

// The d task-vector normals of the workgroup's sequence.
var<workgroup> wbeta: array<f32, 64>;

@compute @workgroup_size(__WG__)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let b = wid.x;
    let d = P.d;
    let no = P.no;
    let e = d + no;
    let g = P.seq0.x + b;
    let r = g / P.run_n;
    let k4 = P.keys[r >> 1u];
    let key = select(k4.xy, k4.zw, (r & 1u) == 1u);
    var cur = Cursor(vec2<u32>(g % P.run_n, 0u), key, 0xffffffffu, vec2<f32>(0.0, 0.0));
    for (var i = lid.x; i < d; i += __WG__) {
        wbeta[i] = normal(&cur, i);
    }
    workgroupBarrier();
    let tokens = P.len + 1u;
    for (var l = lid.x; l < tokens; l += __WG__) {
        let base = (b * tokens + l) * e;
        // g: the covariate normals; x = F g (row i: sum over k <= i, in order) or g
        var g: array<f64, 64>;
        for (var i = 0u; i < d; i++) {
            g[i] = f64(normal(&cur, d + l * d + i));
        }
        var clean = 0.0lf;
        for (var i = 0u; i < d; i++) {
            var x = g[i];
            if (P.has_factor == 1u) {
                x = aux[i * d] * g[0];
                for (var k = 1u; k <= i; k++) {
                    x = x + aux[i * d + k] * g[k];
                }
            }
            zbuf[base + i] = f32(x);
            // beta_i x_i summed from i = 0 in order (Rust's f64 sum starts at -0, so its value
            // is the first term's)
            let t = (f64(wbeta[i]) * P.scale) * x;
            if (i == 0u) {
                clean = t;
            } else {
                clean = clean + t;
            }
        }
        for (var o = 0u; o < no; o++) {
            let eps = f64(normal(&cur, d + tokens * d + l * no + o)) * P.sigma;
            if (l < P.len) {
                zbuf[base + d + o] = f32(clean + eps);
            } else {
                zbuf[base + d + o] = 0.0;
                ybuf[b * no + o] = f32(select(clean, clean + eps, P.query_noise == 1u));
            }
        }
    }
}
