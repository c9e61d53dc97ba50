// Multi-layer attention-only transformers over a batch: forward and backward of every layer, and
// the deterministic gradient reduction (the scalar reference is
// icl_core::families::stack::{layer, layers}; the SIMD engine's is icl_cpu_simd::multilayer).
//
// Template: build.rs fills in the workgroup size WG and compiles each variant to SPIR-V with naga.
//
// A sequence is N = L+1 tokens of width D, token-major (z[j D + r] is row r of column j); the first
// L tokens are the keys, token L is the query. Layer t uses parameter set s(t) (0 when looped,
// t mod T otherwise) with per-head effective circuits Phi_h, Psi_h (D x D, row-major).
//
// Forward of one layer, per head h and column j (multilayer paper eqs. (2), (3), (20)):
//
//   p_j   = Phi_h z_j                                           (N x D, kept)
//   s_ij  = z_i . p_j                                           (keys i < L)
//   a_ij  = softmax_i(s_ij)   or   s_ij / K_j  (linear; K_j keys of column j)     (N x L, kept)
//   m_j   = sum_i a_ij z_i                                      (N x D, kept)
//   zo_j  = z_j + sum_h Psi_h m_j
//
// With exclude_self, column j < L does not attend to itself (a_jj = 0, K_j = L - 1).
// Loss (training pass only): sum_b sum_o (yhat_bo - y_bo)^2 / (n n_out), yhat the last n_out
// rows of the query column of the last layer; so dzo_query,o = 2 r_o / (n n_out).
//
// Backward of one layer, per head h, walking the forward in reverse (dzo: gradient of zo):
//
//   zo_j = z_j + ...          =>  dz_j  = dzo_j                    (residual)
//   zo_j += Psi m_j           =>  dPsi += sum_j dzo_j m_j^T ;  dm_j = Psi^T dzo_j
//   m_j = sum_i a_ij z_i      =>  da_ij = dm_j . z_i ;         dz_i += sum_j a_ij dm_j
//   a_ij = softmax_i(s_ij)    =>  ds_ij = a_ij (da_ij - sum_i' a_i'j da_i'j)
//   a_ij = s_ij / K_j         =>  ds_ij = da_ij / K_j (0 where masked)
//   s_ij = z_i . p_j          =>  dp_j = sum_i ds_ij z_i ;     dz_i += sum_j ds_ij p_j
//   p_j = Phi z_j             =>  dPhi += sum_j dp_j z_j^T ;   dz_j += Phi^T dp_j
//
// One workgroup runs one sequence. Each step is written so that every output has one owner:
// column steps (p, a, m, zo; dm, ds, dp) give invocation j the columns j, j + WG, ...; the
// circuit gradients give each invocation entries (r, k) of dPhi_h, dPsi_h, each a sum over the
// columns in order; the input gradient gives each invocation entries (i, k) of dz, gathering
// over the columns in order (instead of the reference's scatter). No atomics, and every sum
// runs in a fixed order, so the result is bitwise reproducible. Between steps that read what
// others wrote, storageBarrier(). Every layer's tokens and the heads' p, a, m live in the
// sequence's slot of the workspace buffer `ws` (the backward needs them); the sequence's
// gradient goes to its row of `seqgrad`. `reduce_partials` sums the rows over fixed blocks of
// PART_LEN sequences, continuing a block across submissions in the same order, and
// `reduce_final` sums the blocks in order: the bits do not depend on chunking either.

const WG: u32 = __WG__;

struct Params {
    n: u32,        // sequences in the whole batch
    len: u32,      // context length L; the query is token L
    e: u32,        // token width D
    n_out: u32,
    heads: u32,
    layers: u32,   // layers of this pass
    sets: u32,     // parameter sets (1 when looped)
    looped: u32,
    softmax: u32,  // 1: softmax, 0: linear attention
    excl: u32,     // 1: context columns do not attend to themselves
    base: u32,     // batch index of this dispatch's first sequence
    count: u32,    // sequences in this dispatch
    part_len: u32, // sequences per partial sum
    n_parts: u32,
    g_len: u32,    // 2 sets H D D + 1: dPhi, dPsi, the loss last
    ws: u32,       // workspace words per sequence
    inv_nno: f32,  // 1 / (n n_out)
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// Effective circuits: Phi [sets, H, D, D] then Psi [sets, H, D, D].
@group(0) @binding(1) var<storage, read> circ: array<f32>;
// Tokens of this dispatch's sequences, token-major as icl_core::Batch.
@group(0) @binding(2) var<storage, read> zbuf: array<f32>;
// Targets of this dispatch's sequences (n_out each).
@group(0) @binding(3) var<storage, read> ybuf: array<f32>;
// Per-sequence workspace (layout in `Slot`).
@group(0) @binding(4) var<storage, read_write> ws: array<f32>;
// fwd_bwd: per-sequence gradient rows [count, g_len]; forward: the final tokens [count, N D].
@group(0) @binding(5) var<storage, read_write> seqout: array<f32>;
// Per-block sums of the gradient rows, [n_parts, g_len].
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;
// Circuit gradient (dPhi, dPsi) and the loss last.
@group(0) @binding(7) var<storage, read_write> grad: array<f32>;

// Offsets (in words of `ws`) of one sequence's workspace, for a pass of p.layers layers:
//   z_t (t = 0..T)                  N D each: layer t's input, z_T the output
//   p, a, m of layer t and head h   N D, N L, N D
//   dm, ds, dp, dz, dz'             N D, N L, N D, N D, N D (training only)
struct Slot {
    base: u32,
    nd: u32,
    nl: u32,
    caches: u32,
    back: u32,
}

fn slot(s: u32) -> Slot {
    let n = p.len + 1u;
    let nd = n * p.e;
    let nl = n * p.len;
    let base = s * p.ws;
    let caches = base + (p.layers + 1u) * nd;
    let back = caches + p.layers * p.heads * (2u * nd + nl);
    return Slot(base, nd, nl, caches, back);
}

// z_t
fn z_at(sl: Slot, t: u32) -> u32 {
    return sl.base + t * sl.nd;
}

// p of layer t, head h (a follows at + N D, m at + N D + N L)
fn cache_at(sl: Slot, t: u32, h: u32) -> u32 {
    return sl.caches + (t * p.heads + h) * (2u * sl.nd + sl.nl);
}

// The parameter set of layer t (non-looped sets repeat cyclically in longer passes).
fn set_of(t: u32) -> u32 {
    if p.looped == 1u {
        return 0u;
    }
    return t % p.sets;
}

fn masked(i: u32, j: u32) -> bool {
    return p.excl == 1u && i == j;
}

// K_j, the keys of column j (linear attention's normaliser).
fn keys(j: u32) -> u32 {
    if p.excl == 1u && j < p.len {
        return p.len - 1u;
    }
    return p.len;
}

// ws[x..x+D] . ws[y..y+D]
fn dot_ws(x: u32, y: u32) -> f32 {
    var acc = 0.0;
    for (var k = 0u; k < p.e; k++) {
        acc = acc + ws[x + k] * ws[y + k];
    }
    return acc;
}

// sum_i w_i z_i[r] over the l keys, in order: the weights at ws[w..], the tokens at ws[z..]
// (m_j's row r in the forward, dp_j's in the backward).
fn mix_ws(w: u32, z: u32, l: u32, r: u32) -> f32 {
    var acc = 0.0;
    for (var i = 0u; i < l; i++) {
        acc = acc + ws[w + i] * ws[z + i * p.e + r];
    }
    return acc;
}

// Forward of layer t over column j (the column steps of the header), all heads.
fn layer_forward_column(sl: Slot, t: u32, j: u32) {
    let e = p.e;
    let l = p.len;
    let zin = z_at(sl, t);
    let zout = z_at(sl, t + 1u);
    let dd = e * e;
    let st = set_of(t);
    // zo_j = z_j + ...
    for (var r = 0u; r < e; r++) {
        ws[zout + j * e + r] = ws[zin + j * e + r];
    }
    for (var h = 0u; h < p.heads; h++) {
        let phi = (st * p.heads + h) * dd;
        let psi = p.sets * p.heads * dd + phi;
        let c = cache_at(sl, t, h);
        let pj = c + j * e;
        let aj = c + sl.nd + j * l;
        let mj = c + sl.nd + sl.nl + j * e;
        // p_j = Phi z_j
        for (var r = 0u; r < e; r++) {
            var acc = 0.0;
            for (var k = 0u; k < e; k++) {
                acc = acc + circ[phi + r * e + k] * ws[zin + j * e + k];
            }
            ws[pj + r] = acc;
        }
        // s_ij = z_i . p_j ;  a_ij = softmax_i(s_ij)  or  s_ij / K_j
        if p.softmax == 1u {
            var mx = -3.0e38;
            for (var i = 0u; i < l; i++) {
                let s = dot_ws(zin + i * e, pj);
                ws[aj + i] = s;
                if !masked(i, j) && s > mx {
                    mx = s;
                }
            }
            var tot = 0.0;
            for (var i = 0u; i < l; i++) {
                var a = 0.0;
                if !masked(i, j) {
                    a = exp(ws[aj + i] - mx);
                }
                ws[aj + i] = a;
                tot = tot + a;
            }
            let inv = 1.0 / tot;
            for (var i = 0u; i < l; i++) {
                ws[aj + i] = ws[aj + i] * inv;
            }
        } else {
            let inv = 1.0 / f32(keys(j));
            for (var i = 0u; i < l; i++) {
                var a = 0.0;
                if !masked(i, j) {
                    a = dot_ws(zin + i * e, pj) * inv;
                }
                ws[aj + i] = a;
            }
        }
        // m_j = sum_i a_ij z_i
        for (var r = 0u; r < e; r++) {
            ws[mj + r] = mix_ws(aj, zin, l, r);
        }
        // zo_j += Psi m_j
        for (var r = 0u; r < e; r++) {
            var acc = 0.0;
            for (var k = 0u; k < e; k++) {
                acc = acc + circ[psi + r * e + k] * ws[mj + k];
            }
            ws[zout + j * e + r] = ws[zout + j * e + r] + acc;
        }
    }
}

// Forward of the whole pass for chunk sequence s: z_0 = the tokens, then p.layers layers.
fn stack_forward(sl: Slot, s: u32, tid: u32) {
    let n = p.len + 1u;
    let zb = s * sl.nd;
    for (var k = tid; k < sl.nd; k += WG) {
        ws[sl.base + k] = zbuf[zb + k];
    }
    storageBarrier();
    for (var t = 0u; t < p.layers; t++) {
        for (var j = tid; j < n; j += WG) {
            layer_forward_column(sl, t, j);
        }
        storageBarrier();
    }
}

// Backward of layer t, head h, column j: dm_j, ds_.j, dp_j from dzo (the column steps).
fn head_backward_column(sl: Slot, t: u32, h: u32, j: u32, dzo: u32) {
    let e = p.e;
    let l = p.len;
    let zin = z_at(sl, t);
    let st = set_of(t);
    let dd = e * e;
    let psi = p.sets * p.heads * dd + (st * p.heads + h) * dd;
    let c = cache_at(sl, t, h);
    let aj = c + sl.nd + j * l;
    let dm = sl.back + j * e;
    let ds = sl.back + sl.nd + j * l;
    let dp = sl.back + sl.nd + sl.nl + j * e;
    // zo_j += Psi m_j  =>  dm_j = Psi^T dzo_j
    for (var k = 0u; k < e; k++) {
        var acc = 0.0;
        for (var r = 0u; r < e; r++) {
            acc = acc + circ[psi + r * e + k] * ws[dzo + j * e + r];
        }
        ws[dm + k] = acc;
    }
    // m_j = sum_i a_ij z_i  =>  da_ij = dm_j . z_i
    for (var i = 0u; i < l; i++) {
        ws[ds + i] = dot_ws(dm, zin + i * e);
    }
    // a_ij = softmax_i(s_ij)  =>  ds_ij = a_ij (da_ij - sum_i' a_i'j da_i'j);  linear: da_ij / K_j
    if p.softmax == 1u {
        var sum = 0.0;
        for (var i = 0u; i < l; i++) {
            sum = sum + ws[aj + i] * ws[ds + i];
        }
        for (var i = 0u; i < l; i++) {
            ws[ds + i] = ws[aj + i] * (ws[ds + i] - sum);
        }
    } else {
        let inv = 1.0 / f32(keys(j));
        for (var i = 0u; i < l; i++) {
            var g = 0.0;
            if !masked(i, j) {
                g = ws[ds + i] * inv;
            }
            ws[ds + i] = g;
        }
    }
    // s_ij = z_i . p_j  =>  dp_j = sum_i ds_ij z_i
    for (var k = 0u; k < e; k++) {
        ws[dp + k] = mix_ws(ds, zin, l, k);
    }
}

// Backward of layer t, head h, entry x = (r, k) of the circuit gradients (added to the
// sequence's gradient row `g`): dPsi[r][k] += sum_j dzo_j[r] m_j[k], dPhi[r][k] += sum_j dp_j[r] z_j[k].
fn head_backward_circuits(sl: Slot, t: u32, h: u32, x: u32, dzo: u32, g: u32) {
    let e = p.e;
    let n = p.len + 1u;
    let r = x / e;
    let k = x % e;
    let zin = z_at(sl, t);
    let dd = e * e;
    let phi = (set_of(t) * p.heads + h) * dd;
    let psi = p.sets * p.heads * dd + phi;
    let c = cache_at(sl, t, h);
    let m = c + sl.nd + sl.nl;
    let dp = sl.back + sl.nd + sl.nl;
    var dpsi = 0.0;
    var dphi = 0.0;
    for (var j = 0u; j < n; j++) {
        dpsi = dpsi + ws[dzo + j * e + r] * ws[m + j * e + k];
        dphi = dphi + ws[dp + j * e + r] * ws[zin + j * e + k];
    }
    seqout[g + psi + x] = seqout[g + psi + x] + dpsi;
    seqout[g + phi + x] = seqout[g + phi + x] + dphi;
}

// Backward of layer t, head h, entry x = (i, k) of the input gradient dz (added to dz[x]),
// gathering over the columns j: dz_i += sum_j a_ij dm_j + ds_ij p_j (i a key), dz_i += Phi^T dp_i.
fn head_backward_input(sl: Slot, t: u32, h: u32, x: u32, dz: u32) {
    let e = p.e;
    let l = p.len;
    let n = l + 1u;
    let i = x / e;
    let k = x % e;
    let phi = (set_of(t) * p.heads + h) * e * e;
    let c = cache_at(sl, t, h);
    let a = c + sl.nd;
    let dm = sl.back;
    let ds = sl.back + sl.nd;
    let dp = sl.back + sl.nd + sl.nl;
    var acc = ws[dz + x];
    if i < l {
        for (var j = 0u; j < n; j++) {
            acc = acc + ws[a + j * l + i] * ws[dm + j * e + k] + ws[ds + j * l + i] * ws[c + j * e + k];
        }
    }
    for (var r = 0u; r < e; r++) {
        acc = acc + circ[phi + r * e + k] * ws[dp + i * e + r];
    }
    ws[dz + x] = acc;
}

// Forward of chunk sequence wg.x through p.layers layers; its final tokens to seqout[wg.x N D ..].
@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let s = wg.x;
    let sl = slot(s);
    stack_forward(sl, s, tid);
    let out = z_at(sl, p.layers);
    for (var k = tid; k < sl.nd; k += WG) {
        seqout[s * sl.nd + k] = ws[out + k];
    }
}

// Forward + backward of chunk sequence wg.x (batch index base + wg.x): its loss and circuit
// gradient to its row of seqout.
@compute @workgroup_size(WG)
fn fwd_bwd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let s = wg.x;
    let sl = slot(s);
    let e = p.e;
    let no = p.n_out;
    let g = s * p.g_len;
    for (var k = tid; k < p.g_len; k += WG) {
        seqout[g + k] = 0.0;
    }
    stack_forward(sl, s, tid);
    // loss = w sum_o r_o^2 (w = 1 / (n n_out)), r = yhat - y  =>  dzo_query,o = 2 w r_o
    let out = z_at(sl, p.layers);
    let q = (sl.nd - e) + e - no;
    var dzo = sl.back + 2u * sl.nd + sl.nl;
    var dzn = dzo + sl.nd;
    for (var k = tid; k < sl.nd; k += WG) {
        var d = 0.0;
        if k >= q {
            let r = ws[out + k] - ybuf[s * no + k - q];
            d = (p.inv_nno + p.inv_nno) * r;
        }
        ws[dzo + k] = d;
    }
    if tid == 0u {
        var loss = 0.0;
        for (var o = 0u; o < no; o++) {
            let r = ws[out + q + o] - ybuf[s * no + o];
            loss = loss + r * r;
        }
        seqout[g + p.g_len - 1u] = loss * p.inv_nno;
    }
    storageBarrier();
    let n = p.len + 1u;
    for (var tt = 0u; tt < p.layers; tt++) {
        let t = p.layers - 1u - tt;
        // zo = z + ...  =>  dz = dzo
        for (var x = tid; x < sl.nd; x += WG) {
            ws[dzn + x] = ws[dzo + x];
        }
        for (var h = 0u; h < p.heads; h++) {
            for (var j = tid; j < n; j += WG) {
                head_backward_column(sl, t, h, j, dzo);
            }
            storageBarrier();
            for (var x = tid; x < e * e; x += WG) {
                head_backward_circuits(sl, t, h, x, dzo, g);
            }
            for (var x = tid; x < sl.nd; x += WG) {
                head_backward_input(sl, t, h, x, dzn);
            }
            storageBarrier();
        }
        let tmp = dzo;
        dzo = dzn;
        dzn = tmp;
    }
}

// Block sums of the gradient rows of this dispatch's sequences base .. base + count: workgroup
// wg.x adds to block base / part_len + wg.x, in sequence order, starting from zero when the
// block starts in this dispatch and from the earlier dispatch's sum otherwise.
@compute @workgroup_size(WG)
fn reduce_partials(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let blk = p.base / p.part_len + wg.x;
    let start = blk * p.part_len;
    let first = max(start, p.base);
    let last = min(start + p.part_len, p.base + p.count);
    for (var k = tid; k < p.g_len; k += WG) {
        var acc = 0.0;
        if start < p.base {
            acc = partials[blk * p.g_len + k];
        }
        for (var s = first; s < last; s++) {
            acc = acc + seqout[(s - p.base) * p.g_len + k];
        }
        partials[blk * p.g_len + k] = acc;
    }
}

// grad[k] = sum over blocks, in block order.
@compute @workgroup_size(WG)
fn reduce_final(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k < p.g_len {
        var acc = 0.0;
        for (var b = 0u; b < p.n_parts; b++) {
            acc = acc + partials[b * p.g_len + k];
        }
        grad[k] = acc;
    }
}
