// GPT-2 in-context learners (Garg et al. 2022) over a batch, llm.c's train_gpt2.cu way: one entry
// point per operation, dispatched in sequence by the host (src/gpt2.rs) with a barrier between
// them, every activation of the batch kept in device buffers. The scalar reference is
// icl_core::families::gpt2::{ops, model}; every formula below is one of its ops, with the same
// order of floating-point operations (so results differ from it by contraction and by the
// device's exp/tanh/sqrt only).
//
// Template: build.rs fills in the workgroup size WG and compiles each variant to SPIR-V with naga.
//
// Rows: a chunk of B sequences of T = 2K tokens is N = B T rows, row r = b T + t; every
// activation is row-major [N, width]. C channels, H heads of hd = C / H columns.
//
//   encoder        h[r][o]    = (bi[o] + sum_i Wi[o][i] tok[r][i]) + wpe[t][o]       nn.Linear [C, d]
//   layernorm_fwd  mean, rstd = 1 / sqrt(var + 1e-5) (biased var over C), out = (x - mean) rstd w + b
//   matmul_fwd     out[r][o]  = b[o] + sum_i inp[r][i] W[i][o]          Conv1D [IC, OC]
//                             = b[o] + sum_i W[o][i] inp[r][i]          nn.Linear [OC, IC] (LINEAR)
//                  (+ res[r][o] after, with RESIDUAL: the block's two residual adds)
//   attention_fwd  s_tu = q_t . k_u scale (u <= t, scale = 1 / (sqrt(hd) tau)),
//                  p_tu = softmax_u(s_tu) (kept, [B, H, T, T]), out_t = sum_u p_tu v_u
//   gelu_fwd       out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   select_loss    pred[b][i] = out[b T + 2 i]; with TRAIN, dout[r] = 2 w (pred - y) at x rows
//                  (t = 2 i), 0 at y rows; w = 1 / (n K)
//
// Backward (the gradients of activations live in `dacts`, of parameters in `grad`):
//
//   matmul_bwd_dinp  dinp[r][i] = sum_o W[i][o] dout[r][o]   (nn.Linear: sum_o dout[r][o] W[o][i])
//   matmul_bwd_dw    dW[i][o] = sum_r inp[r][i] dout[r][o],  db[o] = sum_r dout[r][o]
//   layernorm_bwd_dinp  with norm = (x - mean) rstd, dnorm = w dout:
//                    dinp += rstd (dnorm - mean_j(dnorm_j) - norm mean_j(dnorm_j norm_j))
//   layernorm_bwd_dw dw = sum_r norm dout, db = sum_r dout
//   gelu_bwd         dinp = dout (0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 0.044715 x^2))
//   attention_bwd_ds ds_tu = p_tu (dp_tu - sum_u' p_tu' dp_tu'), dp_tu = v_u . dout_t
//   attention_bwd_dqkv  dq_t = sum_{u<=t} (ds_tu scale) k_u,  dk_u = sum_{t>=u} (ds_tu scale) q_t,
//                       dv_u = sum_{t>=u} p_tu dout_t
//   encoder_bwd      dwpe[t] = sum_b dh[b T + t] (0 for t >= T); read_in's dW, db by matmul_bwd_dw
//
// The residual adds' backward is the identity: the stream's gradient stays in one buffer, which
// layernorm_bwd_dinp accumulates into (ACCUM).
//
// Determinism: every output element has one owner invocation (a grid-stride loop over the
// elements, one invocation each), no atomics, and every sum runs over a fixed order: the
// reference's (rows in order for the parameter gradients, sequences in order for wpe; the
// reference's scatters into dq, dk, dv become gathers in the order it accumulates them). With
// ACCUM a parameter gradient continues from the value a previous chunk of sequences left, in
// the same order: the bits do not depend on chunking.

const WG: u32 = __WG__;

// mode bits
const LINEAR: u32 = 1u;   // nn.Linear weights [OC, IC] (else Conv1D [IC, OC])
const RESIDUAL: u32 = 2u; // matmul_fwd: out = res + (...)
const ACCUM: u32 = 4u;    // backward: add to the output (else overwrite)
const TRAIN: u32 = 8u;    // select_loss: also the loss gradient

// One operation's arguments; offsets are in words of the buffer named.
struct Op {
    rows: u32,   // N = B T rows (elementwise ops: the element count)
    t: u32,      // T tokens per sequence
    ic: u32,     // input width (attention: C; layernorm: C)
    oc: u32,     // output width
    heads: u32,  // H (select_loss: K pairs)
    mode: u32,
    inp: u32,
    w: u32,
    b: u32,
    out: u32,
    a0: u32,
    a1: u32,
    a2: u32,
    a3: u32,
    f0: f32,     // attention: scale; select_loss: w
    f1: f32,
}

@group(0) @binding(0) var<uniform> op: Op;
// The flat parameters (icl_core::families::gpt2::spec layout).
@group(0) @binding(1) var<storage, read> params: array<f32>;
// Their gradient, same layout.
@group(0) @binding(2) var<storage, read_write> grad: array<f32>;
// The tokens and targets of the chunk, then every forward activation.
@group(0) @binding(3) var<storage, read_write> acts: array<f32>;
// The predictions of the chunk, then every backward activation.
@group(0) @binding(4) var<storage, read_write> dacts: array<f32>;

fn stride(nwg: vec3<u32>) -> u32 {
    return nwg.x * WG;
}

fn has(bit: u32) -> bool {
    return (op.mode & bit) != 0u;
}

// ------------------------------------------------------------------------------------------
// Forward

// h = read_in(tok) + wpe: inp = tok [N, d] (acts), w = Wi [C, d], b = bi, a0 = wpe (params),
// out = h (acts); ic = d, oc = C.
@compute @workgroup_size(WG)
fn encoder(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let total = op.rows * op.oc;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let r = idx / op.oc;
        let o = idx % op.oc;
        let t = r % op.t;
        var acc = 0.0;
        for (var i = 0u; i < op.ic; i++) {
            acc = acc + params[op.w + o * op.ic + i] * acts[op.inp + r * op.ic + i];
        }
        let y = params[op.b + o] + acc;
        acts[op.out + idx] = y + params[op.a0 + t * op.oc + o];
    }
}

// out = inp W + b (Conv1D) or inp W^T + b (LINEAR), then + res (RESIDUAL): inp, res = a0, out in
// acts; w, b in params.
@compute @workgroup_size(WG)
fn matmul_fwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let total = op.rows * op.oc;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let r = idx / op.oc;
        let o = idx % op.oc;
        let x = op.inp + r * op.ic;
        var y = 0.0;
        if has(LINEAR) {
            var acc = 0.0;
            for (var i = 0u; i < op.ic; i++) {
                acc = acc + params[op.w + o * op.ic + i] * acts[x + i];
            }
            y = params[op.b + o] + acc;
        } else {
            y = params[op.b + o];
            for (var i = 0u; i < op.ic; i++) {
                y = y + acts[x + i] * params[op.w + i * op.oc + o];
            }
        }
        if has(RESIDUAL) {
            y = acts[op.a0 + idx] + y;
        }
        acts[op.out + idx] = y;
    }
}

// One row per invocation: inp, out, mean = a0, rstd = a1 in acts; w, b in params; ic = C.
@compute @workgroup_size(WG)
fn layernorm_fwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    let inv_c = 1.0 / f32(c);
    for (var r = gid.x; r < op.rows; r += stride(nwg)) {
        let x = op.inp + r * c;
        var m = 0.0;
        for (var i = 0u; i < c; i++) {
            m = m + acts[x + i];
        }
        m = m * inv_c;
        var v = 0.0;
        for (var i = 0u; i < c; i++) {
            let e = acts[x + i] - m;
            v = v + e * e;
        }
        v = v * inv_c;
        let s = 1.0 / sqrt(v + 1e-5);
        let y = op.out + r * c;
        for (var i = 0u; i < c; i++) {
            acts[y + i] = (acts[x + i] - m) * s * params[op.w + i] + params[op.b + i];
        }
        acts[op.a0 + r] = m;
        acts[op.a1 + r] = s;
    }
}

// One (sequence, head, query token) per invocation: inp = qkv [N, 3C], out = [N, C],
// a0 = att [B, H, T, T] (all in acts); ic = C, heads = H, f0 = scale.
@compute @workgroup_size(WG)
fn attention_fwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    let nt = op.t;
    let hd = c / op.heads;
    let total = op.rows * op.heads;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let tq = idx % nt;
        let h = (idx / nt) % op.heads;
        let b = idx / (nt * op.heads);
        let row0 = b * nt;
        let q = op.inp + (row0 + tq) * 3u * c + h * hd;
        let p = op.a0 + idx * nt;
        var mx = 0.0;
        for (var u = 0u; u <= tq; u++) {
            let k = op.inp + (row0 + u) * 3u * c + c + h * hd;
            var acc = 0.0;
            for (var i = 0u; i < hd; i++) {
                acc = acc + acts[q + i] * acts[k + i];
            }
            let s = acc * op.f0;
            acts[p + u] = s;
            if u == 0u || s > mx {
                mx = s;
            }
        }
        var tot = 0.0;
        for (var u = 0u; u <= tq; u++) {
            let e = exp(acts[p + u] - mx);
            acts[p + u] = e;
            tot = tot + e;
        }
        let inv = 1.0 / tot;
        for (var u = 0u; u <= tq; u++) {
            acts[p + u] = acts[p + u] * inv;
        }
        for (var u = tq + 1u; u < nt; u++) {
            acts[p + u] = 0.0;
        }
        let o = op.out + (row0 + tq) * c + h * hd;
        for (var i = 0u; i < hd; i++) {
            var acc = 0.0;
            for (var u = 0u; u <= tq; u++) {
                acc = acc + acts[p + u] * acts[op.inp + (row0 + u) * 3u * c + 2u * c + h * hd + i];
            }
            acts[o + i] = acc;
        }
    }
}

const GELU_S: f32 = 0.7978845608028654;
const GELU_A: f32 = 0.044715;

// tanh(u), exact in f32 beyond |u| = 10 (where it rounds to +-1) and safe from overflow.
fn tanh_c(u: f32) -> f32 {
    return tanh(clamp(u, -10.0, 10.0));
}

// Elementwise over rows values: inp, out in acts.
@compute @workgroup_size(WG)
fn gelu_fwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var idx = gid.x; idx < op.rows; idx += stride(nwg)) {
        let x = acts[op.inp + idx];
        let u = GELU_S * (x + GELU_A * x * x * x);
        acts[op.out + idx] = 0.5 * x * (1.0 + tanh_c(u));
    }
}

// One row per invocation: inp = read_out's output [N] and a0 = the targets [B, K] (acts); out =
// the predictions [B, K] and, with TRAIN, a1 = dout [N] (dacts); t = T, heads = K, f0 = w.
@compute @workgroup_size(WG)
fn select_loss(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var r = gid.x; r < op.rows; r += stride(nwg)) {
        let t = r % op.t;
        let b = r / op.t;
        var g = 0.0;
        if t % 2u == 0u {
            let i = b * op.heads + t / 2u;
            let pred = acts[op.inp + r];
            dacts[op.out + i] = pred;
            g = (op.f0 + op.f0) * (pred - acts[op.a0 + i]);
        }
        if has(TRAIN) {
            dacts[op.a1 + r] = g;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Backward

// dinp [N, IC] (out, dacts) from dout [N, OC] (inp, dacts) and W (w, params).
@compute @workgroup_size(WG)
fn matmul_bwd_dinp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let total = op.rows * op.ic;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let r = idx / op.ic;
        let i = idx % op.ic;
        let g = op.inp + r * op.oc;
        var acc = 0.0;
        if has(LINEAR) {
            for (var o = 0u; o < op.oc; o++) {
                acc = acc + dacts[g + o] * params[op.w + o * op.ic + i];
            }
        } else {
            for (var o = 0u; o < op.oc; o++) {
                acc = acc + params[op.w + i * op.oc + o] * dacts[g + o];
            }
        }
        dacts[op.out + idx] = acc;
    }
}

// dW (out) and db (b) in grad, over the rows in order: inp = the forward's input (acts),
// a0 = dout (dacts). IC OC weight entries then OC bias entries.
@compute @workgroup_size(WG)
fn matmul_bwd_dw(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let nw = op.ic * op.oc;
    let total = nw + op.oc;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        var dst = 0u;
        if idx < nw {
            dst = op.out + idx;
        } else {
            dst = op.b + idx - nw;
        }
        var acc = 0.0;
        if has(ACCUM) {
            acc = grad[dst];
        }
        if idx < nw {
            var i = 0u;
            var o = 0u;
            if has(LINEAR) {
                o = idx / op.ic;
                i = idx % op.ic;
                for (var r = 0u; r < op.rows; r++) {
                    acc = acc + dacts[op.a0 + r * op.oc + o] * acts[op.inp + r * op.ic + i];
                }
            } else {
                i = idx / op.oc;
                o = idx % op.oc;
                for (var r = 0u; r < op.rows; r++) {
                    acc = acc + acts[op.inp + r * op.ic + i] * dacts[op.a0 + r * op.oc + o];
                }
            }
        } else {
            let o = idx - nw;
            for (var r = 0u; r < op.rows; r++) {
                acc = acc + dacts[op.a0 + r * op.oc + o];
            }
        }
        grad[dst] = acc;
    }
}

// One row per invocation: inp = x, a0 = mean, a1 = rstd (acts); w (params); a2 = dout and
// out = dinp (dacts), added to with ACCUM; ic = C.
@compute @workgroup_size(WG)
fn layernorm_bwd_dinp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    let inv_c = 1.0 / f32(c);
    for (var r = gid.x; r < op.rows; r += stride(nwg)) {
        let x = op.inp + r * c;
        let g = op.a2 + r * c;
        let m = acts[op.a0 + r];
        let s = acts[op.a1 + r];
        var gm = 0.0;
        var gnm = 0.0;
        for (var i = 0u; i < c; i++) {
            let norm = (acts[x + i] - m) * s;
            let dnorm = params[op.w + i] * dacts[g + i];
            gm = gm + dnorm;
            gnm = gnm + dnorm * norm;
        }
        gm = gm * inv_c;
        gnm = gnm * inv_c;
        let dx = op.out + r * c;
        for (var i = 0u; i < c; i++) {
            let norm = (acts[x + i] - m) * s;
            let dnorm = params[op.w + i] * dacts[g + i];
            let v = s * (dnorm - gm - norm * gnm);
            if has(ACCUM) {
                dacts[dx + i] = dacts[dx + i] + v;
            } else {
                dacts[dx + i] = v;
            }
        }
    }
}

// dw (out) and db (b) in grad over the rows in order: inp = x, a0 = mean, a1 = rstd (acts),
// a2 = dout (dacts); ic = C. C weight entries then C bias entries.
@compute @workgroup_size(WG)
fn layernorm_bwd_dw(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    for (var idx = gid.x; idx < 2u * c; idx += stride(nwg)) {
        let i = idx % c;
        var dst = op.out + i;
        if idx >= c {
            dst = op.b + i;
        }
        var acc = 0.0;
        if has(ACCUM) {
            acc = grad[dst];
        }
        if idx < c {
            for (var r = 0u; r < op.rows; r++) {
                let norm = (acts[op.inp + r * c + i] - acts[op.a0 + r]) * acts[op.a1 + r];
                acc = acc + norm * dacts[op.a2 + r * c + i];
            }
        } else {
            for (var r = 0u; r < op.rows; r++) {
                acc = acc + dacts[op.a2 + r * c + i];
            }
        }
        grad[dst] = acc;
    }
}

// Elementwise over rows values: inp = x (acts), a0 = dout, out = dinp (dacts).
@compute @workgroup_size(WG)
fn gelu_bwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var idx = gid.x; idx < op.rows; idx += stride(nwg)) {
        let x = acts[op.inp + idx];
        let g = dacts[op.a0 + idx];
        let u = GELU_S * (x + GELU_A * x * x * x);
        let th = tanh_c(u);
        let du = GELU_S * (1.0 + 3.0 * GELU_A * x * x);
        dacts[op.out + idx] = g * (0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du);
    }
}

// One (sequence, head, query token) per invocation: inp = qkv, a0 = att (acts); a1 = dout
// [N, C] and out = ds [B, H, T, T] (dacts, the row's entries u <= t); ic = C, heads = H.
@compute @workgroup_size(WG)
fn attention_bwd_ds(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    let nt = op.t;
    let hd = c / op.heads;
    let total = op.rows * op.heads;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let tq = idx % nt;
        let h = (idx / nt) % op.heads;
        let b = idx / (nt * op.heads);
        let row0 = b * nt;
        let p = op.a0 + idx * nt;
        let ds = op.out + idx * nt;
        let g = op.a1 + (row0 + tq) * c + h * hd;
        var sum = 0.0;
        for (var u = 0u; u <= tq; u++) {
            let v = op.inp + (row0 + u) * 3u * c + 2u * c + h * hd;
            var acc = 0.0;
            for (var i = 0u; i < hd; i++) {
                acc = acc + acts[v + i] * dacts[g + i];
            }
            dacts[ds + u] = acc;
            sum = sum + acts[p + u] * acc;
        }
        for (var u = 0u; u <= tq; u++) {
            dacts[ds + u] = acts[p + u] * (dacts[ds + u] - sum);
        }
    }
}

// One entry of dqkv [N, 3C] (out, dacts) per invocation, gathering: inp = qkv, a0 = att (acts);
// a1 = dout [N, C], a2 = ds (dacts); ic = C, heads = H, f0 = scale.
@compute @workgroup_size(WG)
fn attention_bwd_dqkv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = op.ic;
    let nt = op.t;
    let hd = c / op.heads;
    let c3 = 3u * c;
    let total = op.rows * c3;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let r = idx / c3;
        let j = idx % c3;
        let part = j / c;
        let h = (j % c) / hd;
        let col = j % c;
        let t = r % nt;
        let b = r / nt;
        let row0 = b * nt;
        let att = (b * op.heads + h) * nt * nt;
        var acc = 0.0;
        if part == 0u {
            // dq_t = sum_{u <= t} (ds_tu scale) k_u
            for (var u = 0u; u <= t; u++) {
                let ds = dacts[op.a2 + att + t * nt + u] * op.f0;
                acc = acc + ds * acts[op.inp + (row0 + u) * c3 + c + col];
            }
        } else if part == 1u {
            // dk_u = sum_{t' >= u} (ds_t'u scale) q_t'  (u = t here)
            for (var tp = t; tp < nt; tp++) {
                let ds = dacts[op.a2 + att + tp * nt + t] * op.f0;
                acc = acc + ds * acts[op.inp + (row0 + tp) * c3 + col];
            }
        } else {
            // dv_u = sum_{t' >= u} p_t'u dout_t'
            for (var tp = t; tp < nt; tp++) {
                acc = acc + acts[op.a0 + att + tp * nt + t] * dacts[op.a1 + (row0 + tp) * c + col];
            }
        }
        dacts[op.out + idx] = acc;
    }
}

// dwpe [2P, C] (out, grad): row t < T sums dh [N, C] (a0, dacts) over the sequences in order;
// rows t >= T are 0 (left as they are with ACCUM); ic = 2P rows, oc = C, rows = N.
@compute @workgroup_size(WG)
fn encoder_bwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let total = op.ic * op.oc;
    let nb = op.rows / op.t;
    for (var idx = gid.x; idx < total; idx += stride(nwg)) {
        let t = idx / op.oc;
        let o = idx % op.oc;
        var acc = 0.0;
        if has(ACCUM) {
            acc = grad[op.out + idx];
        }
        if t < op.t {
            for (var b = 0u; b < nb; b++) {
                acc = acc + dacts[op.a0 + (b * op.t + t) * op.oc + o];
            }
        }
        grad[op.out + idx] = acc;
    }
}
