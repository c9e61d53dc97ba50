// One-layer attention over a batch: forward, backward and the deterministic gradient reduction.
//
// Template: build.rs fills in the largest embedding width E = d + n_out a variant holds in
// workgroup memory and the token storage (f32, or f16 pairs packed in u32 words, read with
// unpack2x16float), and compiles each variant to SPIR-V with naga.
//
// Per sequence and head h, for the query column (He et al. 2025 eq. (2.2); spec §2.1-2.8; the
// scalar reference is icl_core::model::attention::head_forward/head_backward):
//
//   q   = KQ_h z_q                      s_l = z_l . q        (keys l = 0..nk-1)
//   w_l = f(s_l - m) / F, F = sum_j f(s_j - m)   (softmax family; m = max s for exp, else 0)
//   w_l = s_l / L_0                     (linear)
//   a_h = sum_l w_l z_l                 yhat_o = sum_h OV_h[o] . a_h
//
// Loss sum_b sum_o (yhat_bo - y_bo)^2 / (n n_out), so g_o = 2 r_o / (n n_out). Backward:
//
//   dOV_h[o][i] += g_o a_h[i]                          (rank one: stored as a_h and g)
//   c_h = OV_h^T g ;  u_l = z_l . c_h
//   ds_l = f'(s_l - m)/F (u_l - ubar), ubar = sum_l w_l u_l   (softmax; for exp f' = f)
//   ds_l = u_l / L_0                                          (linear)
//   dKQ_h[i][j] += b_h[i] z_q[j],  b_h = sum_l ds_l z_l       (rank one: stored as b_h and z_q)
//
// One workgroup runs one sequence; its WG invocations stride over the keys (adjacent invocations
// read adjacent tokens) and combine their partial sums in workgroup memory in a fixed order
// (groups of 8, then the group sums: three barriers a reduction). The forward pass is one
// sweep over the keys per head: each invocation keeps a running max m, F and A = sum f z scaled
// by e^-m ("online softmax"), and the reduction rescales the partial sums to the common max. `fwd_bwd` writes per-sequence vectors (b_h, a_h, g, loss, z_q);
// `reduce_partials` forms the outer products and sums them over fixed blocks of sequences, and
// `reduce_final` sums the blocks in order. No atomics: the result does not depend on scheduling.
//
// Packing: one dispatch may hold K runs of one model, each with its own circuits and batch of
// run_n sequences (a packed call; an ordinary call is K = 1, run_n = n). Sequence s of the pack
// belongs to run s / run_n and reads that run's circuits (K circuits back to back in `circ`);
// the blocks of `reduce_partials` never straddle runs (ceil(run_n / part_len) per run, each
// covering the sequences it covers when the run is alone) and `reduce_final` sums each run's
// blocks in order into its own g_len entries of `grad`. Each run's loss and gradient are then
// bit for bit what it gets alone.

const WG: u32 = __WG__;
// Reductions run over NG groups of 8 invocations.
const NG: u32 = WG / 8u;
const MAX_E: u32 = __MAX_E__;
const MAX_H: u32 = 256u;
const MAX_V: u32 = MAX_E + 2u;
const RED_LEN: u32 = WG * MAX_V;
const RED2_LEN: u32 = NG * MAX_V;

const KIND_LINEAR: u32 = 0u;
const KIND_EXP: u32 = 1u;
const KIND_AFFINE: u32 = 2u;
const KIND_SQUARE: u32 = 3u;
const KIND_TANH: u32 = 4u;

struct Params {
    n: u32,        // sequences in the whole batch (K runs of run_n)
    len: u32,      // context length L; the query is token L
    nk: u32,       // keys per sequence (L, or L + 1 when the query attends to itself)
    e: u32,        // embedding width E = d + n_out
    n_out: u32,
    heads: u32,
    kind: u32,     // KIND_*
    base: u32,     // batch index of this dispatch's first sequence
    part_len: u32, // sequences per partial sum
    n_parts: u32,  // partial sums (blocks) per run: ceil(run_n / part_len)
    g_len: u32,    // H E E + H n_out E + 1 (the loss last)
    so: u32,       // per-sequence stride of `seqout`
    c: f32,        // the constant C of the affine/square activations
    inv_lin: f32,  // 1 / L_0 (linear attention)
    inv_nno: f32,  // 1 / (run_n n_out)
    run_n: u32,    // sequences per run (n for an ordinary call)
}

@group(0) @binding(0) var<uniform> p: Params;
// Effective circuits: KQ [H, E, E] then OV [H, n_out, E], one such block per run (g_len - 1
// floats each).
@group(0) @binding(1) var<storage, read> circ: array<f32>;
// Tokens of this dispatch's sequences, token-major as icl_core::task::Batch.
@group(0) @binding(2) var<storage, read> zbuf: array<__ZTYPE__>;
// Targets of this dispatch's sequences (n_out each).
@group(0) @binding(3) var<storage, read> ybuf: array<f32>;
// fwd_bwd: per-sequence [b_h (H E) | a_h (H E) | g (n_out) | loss | z_q (E)]; predict: yhat.
@group(0) @binding(4) var<storage, read_write> seqout: array<f32>;
// Per-block sums of the gradient entries, [n_parts, g_len].
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;
// Circuit gradient [H E E + H n_out E] and the loss last.
@group(0) @binding(6) var<storage, read_write> grad: array<f32>;

var<workgroup> zq: array<f32, MAX_E>;
var<workgroup> qv: array<f32, MAX_E>;
var<workgroup> cv: array<f32, MAX_E>;
var<workgroup> yhat: array<f32, MAX_E>;
var<workgroup> gv: array<f32, MAX_E>;
var<workgroup> red: array<f32, RED_LEN>; // WG partial vectors of up to MAX_E + 2 values
var<workgroup> red2: array<f32, RED2_LEN>; // NG group sums
var<workgroup> vres: array<f32, MAX_V>;
var<workgroup> mh: array<f32, MAX_H>;
var<workgroup> fh: array<f32, MAX_H>;

// Offset in `circ` of the circuits of this workgroup's sequence (its run's block), set by the
// entry point before `forward`.
var<private> cb: u32;

// The circuit block of batch sequence `s`: that of run s / run_n.
fn circuit_base(s: u32) -> u32 {
    return (s / p.run_n) * (p.g_len - 1u);
}

fn load_z(i: u32) -> f32 {
    __LOAD_Z__
}

// f(x) of the normalised activations (icl_core::model::attention::act_f).
fn act_f(x: f32) -> f32 {
    switch p.kind {
        case 1u: { return exp(x); }
        case 2u: { return 1.0 + p.c * x; }
        case 3u: { let u = 1.0 + p.c * x; return u * u; }
        case 4u: { return 1.0 + tanh(x); }
        default: { return x; }
    }
}

// f'(x) (icl_core::model::attention::act_df).
fn act_df(x: f32) -> f32 {
    switch p.kind {
        case 1u: { return exp(x); }
        case 2u: { return p.c; }
        case 3u: { return 2.0 * p.c * (1.0 + p.c * x); }
        case 4u: { let t = tanh(x); return 1.0 - t * t; }
        default: { return 1.0; }
    }
}

// Sum over the workgroup of the v values each invocation left at red[tid v ..], into vres[0..v]:
// NG groups of 8 invocations, then the NG group sums, each in index order.
// With `online`, slot 0 holds each invocation's max m_t and slots 1.. sums scaled by e^-m_t;
// the sums are rescaled to the common max, which lands in vres[0].
fn reduce(tid: u32, v: u32, online: bool) {
    workgroupBarrier();
    for (var k = tid; k < NG * v; k += WG) {
        let g = k / v;
        let j = k % v;
        let b = 8u * g;
        var m = 0.0;
        if online {
            m = red[b * v];
            for (var r = 1u; r < 8u; r++) {
                m = max(m, red[(b + r) * v]);
            }
        }
        var acc = 0.0;
        if online && j == 0u {
            acc = m;
        } else {
            for (var r = 0u; r < 8u; r++) {
                var x = red[(b + r) * v + j];
                if online {
                    x = x * exp(red[(b + r) * v] - m);
                }
                acc = acc + x;
            }
        }
        red2[g * v + j] = acc;
    }
    workgroupBarrier();
    for (var j = tid; j < v; j += WG) {
        var m = 0.0;
        if online {
            m = red2[0];
            for (var g = 1u; g < NG; g++) {
                m = max(m, red2[g * v]);
            }
        }
        var acc = 0.0;
        if online && j == 0u {
            acc = m;
        } else {
            for (var g = 0u; g < NG; g++) {
                var x = red2[g * v + j];
                if online {
                    x = x * exp(red2[g * v] - m);
                }
                acc = acc + x;
            }
        }
        vres[j] = acc;
    }
    workgroupBarrier();
}

// s_l = z_l . qv for the token starting at `t`.
fn score(t: u32) -> f32 {
    var acc = 0.0;
    for (var i = 0u; i < p.e; i++) {
        acc = acc + load_z(t + i) * qv[i];
    }
    return acc;
}

// u_l = z_l . cv for the token starting at `t`.
fn dot_c(t: u32) -> f32 {
    var acc = 0.0;
    for (var i = 0u; i < p.e; i++) {
        acc = acc + load_z(t + i) * cv[i];
    }
    return acc;
}

// qv = KQ_h z_q, and (when `with_c`) cv = OV_h^T g.
fn head_vectors(h: u32, tid: u32, with_c: bool) {
    let e = p.e;
    workgroupBarrier();
    for (var i = tid; i < e; i += WG) {
        var acc = 0.0;
        let row = (h * e + i) * e;
        for (var j = 0u; j < e; j++) {
            acc = acc + circ[cb + row + j] * zq[j];
        }
        qv[i] = acc;
        if with_c {
            // forward: yhat_o += OV_h[o] . a  =>  da = OV_h^T g = c
            let ov = p.heads * e * e + h * p.n_out * e;
            var cacc = 0.0;
            for (var o = 0u; o < p.n_out; o++) {
                cacc = cacc + gv[o] * circ[cb + ov + o * e + i];
            }
            cv[i] = cacc;
        }
    }
    workgroupBarrier();
}

// Forward of all heads for the sequence whose tokens start at `zb`: fills zq, yhat, mh, fh and,
// when `train`, a_h into seqout row `row`.
fn forward(zb: u32, tid: u32, train: bool, row: u32) {
    let e = p.e;
    let nk = p.nk;
    for (var i = tid; i < e; i += WG) {
        zq[i] = load_z(zb + p.len * e + i);
    }
    for (var o = tid; o < p.n_out; o += WG) {
        yhat[o] = 0.0;
    }
    for (var h = 0u; h < p.heads; h++) {
        head_vectors(h, tid, false);
        // s_l = z_l . q ; f_l = f(s_l - m) (or s_l / L_0) ; F = sum f_l ; A = sum f_l z_l.
        // For exp, m = max_l s_l (same weights, no overflow), kept as a running max per
        // invocation: when s_l exceeds it, the partial F and A are rescaled by e^(m_old - m_new).
        let v = e + 2u;
        let me = tid * v;
        for (var i = 0u; i < v; i++) {
            red[me + i] = 0.0;
        }
        let online = p.kind == KIND_EXP;
        var m = -3.0e38;
        if !online {
            m = 0.0;
        }
        var fsum = 0.0;
        for (var l = tid; l < nk; l += WG) {
            let t = zb + l * e;
            let s = score(t);
            var f: f32;
            if p.kind == KIND_LINEAR {
                f = s * p.inv_lin;
            } else {
                if online && s > m {
                    let scale = exp(m - s);
                    fsum = fsum * scale;
                    for (var i = 0u; i < e; i++) {
                        red[me + 2u + i] = red[me + 2u + i] * scale;
                    }
                    m = s;
                }
                f = act_f(s - m);
            }
            fsum = fsum + f;
            for (var i = 0u; i < e; i++) {
                red[me + 2u + i] = red[me + 2u + i] + f * load_z(t + i);
            }
        }
        red[me] = m;
        red[me + 1u] = fsum;
        reduce(tid, v, online);
        let shift = vres[0];
        let big_f = vres[1];
        // a_h = A / F (softmax) or A (linear: the weights are already s_l / L_0)
        var inv = 1.0;
        if p.kind != KIND_LINEAR {
            inv = 1.0 / big_f;
        }
        if tid == 0u {
            mh[h] = shift;
            fh[h] = big_f;
        }
        if train {
            for (var i = tid; i < e; i += WG) {
                seqout[row + p.heads * e + h * e + i] = vres[2u + i] * inv;
            }
        }
        // yhat_o += OV_h[o] . a_h
        for (var o = tid; o < p.n_out; o += WG) {
            let ov = p.heads * e * e + (h * p.n_out + o) * e;
            var acc = 0.0;
            for (var i = 0u; i < e; i++) {
                acc = acc + circ[cb + ov + i] * (vres[2u + i] * inv);
            }
            yhat[o] = yhat[o] + acc;
        }
    }
    workgroupBarrier();
}

// Predictions: one workgroup per sequence; yhat of chunk sequence s to seqout[s n_out ..].
@compute @workgroup_size(WG)
fn predict(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let s = wg.x;
    let zb = s * (p.len + 1u) * p.e;
    cb = circuit_base(p.base + s);
    forward(zb, tid, false, 0u);
    for (var o = tid; o < p.n_out; o += WG) {
        seqout[s * p.n_out + o] = yhat[o];
    }
}

// Forward + backward of one sequence (chunk-local index wg.x, batch index base + wg.x).
@compute @workgroup_size(WG)
fn fwd_bwd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let s = wg.x;
    let e = p.e;
    let nk = p.nk;
    let he = p.heads * e;
    let zb = s * (p.len + 1u) * e;
    let row = (p.base + s) * p.so;
    cb = circuit_base(p.base + s);
    forward(zb, tid, true, row);

    // loss = sum_o r_o^2 / (run_n n_out)  =>  g_o = 2 r_o / (run_n n_out)
    for (var o = tid; o < p.n_out; o += WG) {
        let r = yhat[o] - ybuf[s * p.n_out + o];
        gv[o] = 2.0 * r * p.inv_nno;
        seqout[row + 2u * he + o] = gv[o];
    }
    if tid == 0u {
        var loss = 0.0;
        for (var o = 0u; o < p.n_out; o++) {
            let r = yhat[o] - ybuf[s * p.n_out + o];
            loss = loss + r * r * p.inv_nno;
        }
        seqout[row + 2u * he + p.n_out] = loss;
    }
    for (var i = tid; i < e; i += WG) {
        seqout[row + 2u * he + p.n_out + 1u + i] = zq[i];
    }

    for (var h = 0u; h < p.heads; h++) {
        head_vectors(h, tid, true);
        let shift = mh[h];
        let inv_f = 1.0 / fh[h];
        // forward: w = f(s)/F  =>  ubar = sum_l w_l u_l
        var ubar = 0.0;
        if p.kind != KIND_LINEAR {
            var part = 0.0;
            for (var l = tid; l < nk; l += WG) {
                let t = zb + l * e;
                part = part + act_f(score(t) - shift) * dot_c(t);
            }
            red[tid] = part;
            reduce(tid, 1u, false);
            ubar = vres[0] * inv_f;
        }
        // ds_l = f'(s_l - m)/F (u_l - ubar)  or  u_l / L_0 ;  b = sum_l ds_l z_l
        for (var i = 0u; i < e; i++) {
            red[tid * e + i] = 0.0;
        }
        for (var l = tid; l < nk; l += WG) {
            let t = zb + l * e;
            let u = dot_c(t);
            var ds: f32;
            if p.kind == KIND_LINEAR {
                ds = u * p.inv_lin;
            } else {
                ds = act_df(score(t) - shift) * inv_f * (u - ubar);
            }
            for (var i = 0u; i < e; i++) {
                red[tid * e + i] = red[tid * e + i] + ds * load_z(t + i);
            }
        }
        reduce(tid, e, false);
        for (var i = tid; i < e; i += WG) {
            seqout[row + h * e + i] = vres[i];
        }
    }
}

// Block sums of the outer products: partials[blk][k] = sum over the block's sequences of
// (block blk is part blk % n_parts of run blk / n_parts: at most part_len of that run's sequences)
//   k < H E E:          b_h[i] z_q[j]      (dKQ_h[i][j])
//   k < H E E + H n_o E: g_o a_h[i]        (dOV_h[o][i])
//   last:               loss
@compute @workgroup_size(WG)
fn reduce_partials(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let blk = wg.x;
    let e = p.e;
    let he = p.heads * e;
    let nkq = p.heads * e * e;
    let nov = p.heads * p.n_out * e;
    let run_first = (blk / p.n_parts) * p.run_n;
    let first = run_first + (blk % p.n_parts) * p.part_len;
    let last = min(run_first + p.run_n, first + p.part_len);
    for (var k = tid; k < p.g_len; k += WG) {
        var acc = 0.0;
        if k < nkq {
            let h = k / (e * e);
            let i = (k / e) % e;
            let j = k % e;
            for (var s = first; s < last; s++) {
                let r = s * p.so;
                acc = acc + seqout[r + h * e + i] * seqout[r + 2u * he + p.n_out + 1u + j];
            }
        } else if k < nkq + nov {
            let m = k - nkq;
            let h = m / (p.n_out * e);
            let o = (m / e) % p.n_out;
            let i = m % e;
            for (var s = first; s < last; s++) {
                let r = s * p.so;
                acc = acc + seqout[r + 2u * he + o] * seqout[r + he + h * e + i];
            }
        } else {
            for (var s = first; s < last; s++) {
                acc = acc + seqout[s * p.so + 2u * he + p.n_out];
            }
        }
        partials[blk * p.g_len + k] = acc;
    }
}

// grad[k] (entry k % g_len of run k / g_len) = sum over that run's blocks, in block order.
@compute @workgroup_size(WG)
fn reduce_final(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    let runs = p.n / p.run_n;
    if k < runs * p.g_len {
        let run = k / p.g_len;
        let j = k % p.g_len;
        var acc = 0.0;
        for (var b = 0u; b < p.n_parts; b++) {
            acc = acc + partials[(run * p.n_parts + b) * p.g_len + j];
        }
        grad[k] = acc;
    }
}
