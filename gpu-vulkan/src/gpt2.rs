//! [`VulkanGpt2`]: GPT-2 in-context learners (`Gpt2Kernels<f32>`, Garg et al. 2022) on a Vulkan
//! compute queue, in `shaders/gpt2.wgsl` (its header has every operation's formula).
//!
//! The design is llm.c's CUDA trainer (`train_gpt2.cu`): one compute entry point per operation,
//! recorded in sequence into one command buffer with a barrier between them, every activation of
//! the batch kept in device buffers (B sequences of T = 2K tokens, N = B T rows of C channels).
//! Per call: the flat parameters and the chunk's tokens and targets are written to device
//! memory, then
//! ```text
//! encoder                        h_0 = read_in(tok) + wpe
//! per layer l:  layernorm_fwd    ln1 = ln_1(h_l)
//!               matmul_fwd       qkv = c_attn(ln1)                      Conv1D [C, 3C]
//!               attention_fwd    atty, att = causal softmax(q k / (sqrt(hd) tau)) v
//!               matmul_fwd       a = h_l + attn.c_proj(atty)            (residual fused)
//!               layernorm_fwd    ln2 = ln_2(a)
//!               matmul_fwd       fch = c_fc(ln2)                        Conv1D [C, 4C]
//!               gelu_fwd         fch_gelu = gelu_new(fch)
//!               matmul_fwd       h_{l+1} = a + mlp.c_proj(fch_gelu)     (residual fused)
//! layernorm_fwd, matmul_fwd      out = read_out(ln_f(h_NL))             nn.Linear [1, C]
//! select_loss                    pred_bi = out[b T + 2i]; dout = 2 w (pred - y) at x rows
//! ```
//! and, for the gradient, every operation's backward in reverse (`matmul_bwd_dinp` and
//! `matmul_bwd_dw` per matrix, `layernorm_bwd_dinp`/`_dw`, `gelu_bwd`, `attention_bwd_ds` then
//! `attention_bwd_dqkv`, `encoder_bwd` for wpe), the parameter gradients written straight into
//! a gradient buffer in the reference's flat layout. The predictions (and the gradient) are read
//! back; the loss is summed on the host from the predictions, sequence by sequence as the
//! reference sums it.
//!
//! Per-operation arguments (sizes, offsets into the buffers) go into one uniform block, updated
//! in the command buffer (`vkCmdUpdateBuffer`) before each dispatch. No atomics: every output
//! element has one owner invocation and every sum (the weight and bias gradients over the N
//! rows, the LayerNorm sums, wpe's over the sequences) runs in a fixed order, the reference's,
//! so the same inputs give the same bits on every call. Batches whose activations exceed one
//! storage-buffer binding (or whose tokens exceed [`Options::max_chunk_bytes`]) run in chunks of
//! sequences, one submission each; the parameter gradients of later chunks continue the sums of
//! earlier ones in the same order, so the bits do not depend on chunking. A model or a single
//! sequence beyond the device's limits is refused with [`VkError::Unsupported`].
use crate::context::{DeviceInfo, Options};
use crate::error::VkError;
use crate::session::{DeviceArrays, ModuleSession};
use ash::vk;
use icl_core::families::gpt2::kernels::prompt_of_batch;
use icl_core::families::gpt2::model::write_tokens;
use icl_core::families::gpt2::{Gpt2Kernels, Gpt2Spec};
use icl_core::Batch;
use std::ffi::CStr;

/// Words of the uniform block (`Op` in the shader).
const OP_WORDS: usize = 16;

/// The storage buffers, in binding order (binding = index + 1; binding 0 is the uniform block).
const PARAMS: usize = 0;
const GRAD: usize = 1;
const ACTS: usize = 2;
const DACTS: usize = 3;
const N_ARRAYS: usize = 4;

// `Op.mode` bits (as in the shader).
const LINEAR: u32 = 1;
const RESIDUAL: u32 = 2;
const ACCUM: u32 = 4;
const TRAIN: u32 = 8;

/// Entry points of the GPT-2 module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Encoder,
    MatmulFwd,
    LayernormFwd,
    AttentionFwd,
    GeluFwd,
    SelectLoss,
    MatmulBwdDinp,
    MatmulBwdDw,
    LayernormBwdDinp,
    LayernormBwdDw,
    GeluBwd,
    AttentionBwdDs,
    AttentionBwdDqkv,
    EncoderBwd,
}

impl Entry {
    const ALL: [Entry; 14] = [
        Entry::Encoder,
        Entry::MatmulFwd,
        Entry::LayernormFwd,
        Entry::AttentionFwd,
        Entry::GeluFwd,
        Entry::SelectLoss,
        Entry::MatmulBwdDinp,
        Entry::MatmulBwdDw,
        Entry::LayernormBwdDinp,
        Entry::LayernormBwdDw,
        Entry::GeluBwd,
        Entry::AttentionBwdDs,
        Entry::AttentionBwdDqkv,
        Entry::EncoderBwd,
    ];
    fn name(self) -> &'static CStr {
        match self {
            Entry::Encoder => c"encoder",
            Entry::MatmulFwd => c"matmul_fwd",
            Entry::LayernormFwd => c"layernorm_fwd",
            Entry::AttentionFwd => c"attention_fwd",
            Entry::GeluFwd => c"gelu_fwd",
            Entry::SelectLoss => c"select_loss",
            Entry::MatmulBwdDinp => c"matmul_bwd_dinp",
            Entry::MatmulBwdDw => c"matmul_bwd_dw",
            Entry::LayernormBwdDinp => c"layernorm_bwd_dinp",
            Entry::LayernormBwdDw => c"layernorm_bwd_dw",
            Entry::GeluBwd => c"gelu_bwd",
            Entry::AttentionBwdDs => c"attention_bwd_ds",
            Entry::AttentionBwdDqkv => c"attention_bwd_dqkv",
            Entry::EncoderBwd => c"encoder_bwd",
        }
    }
}

fn spirv(wg: u32) -> &'static [u8] {
    if wg == 16 {
        include_bytes!(concat!(env!("OUT_DIR"), "/gpt2_wg16.spv"))
    } else {
        include_bytes!(concat!(env!("OUT_DIR"), "/gpt2_wg64.spv"))
    }
}

/// One operation's arguments (`Op` in the shader): offsets are in words of the buffers the
/// entry point reads them from.
#[derive(Debug, Clone, Copy, Default)]
struct Op {
    rows: usize,
    t: usize,
    ic: usize,
    oc: usize,
    heads: usize,
    mode: u32,
    inp: usize,
    w: usize,
    b: usize,
    out: usize,
    a0: usize,
    a1: usize,
    a2: usize,
    f0: f32,
}

impl Op {
    fn words(&self) -> [u32; OP_WORDS] {
        let u = |x: usize| x as u32;
        [
            u(self.rows),
            u(self.t),
            u(self.ic),
            u(self.oc),
            u(self.heads),
            self.mode,
            u(self.inp),
            u(self.w),
            u(self.b),
            u(self.out),
            u(self.a0),
            u(self.a1),
            u(self.a2),
            0,
            self.f0.to_bits(),
            0,
        ]
    }
}

/// Offsets (words) of one block's activations in `acts`.
#[derive(Debug, Clone, Copy)]
struct BlockActs {
    ln1: usize,
    ln1_mean: usize,
    ln1_rstd: usize,
    qkv: usize,
    att: usize,
    atty: usize,
    a: usize,
    ln2: usize,
    ln2_mean: usize,
    ln2_rstd: usize,
    fch: usize,
    fch_gelu: usize,
}

/// Where a chunk of `count` sequences of K pairs keeps everything, in words.
///
/// `acts`: tokens `[N, d]`, targets `[B, K]`, the streams h_0..h_NL `[N, C]` each, per block
/// ln1 `[N, C]`, its mean and rstd `[N]`, qkv `[N, 3C]`, att `[B, H, T, T]`, atty and a `[N, C]`,
/// ln2 `[N, C]` with mean and rstd, fch and fch_gelu `[N, 4C]`; then ln_f `[N, C]` with mean and
/// rstd, read_out's output `[N]`.
///
/// `dacts`: the predictions `[B, K]`; when training, dout `[N]`, the stream's gradient dres, dln,
/// datty `[N, C]`, dqkv `[N, 3C]`, dfch_gelu and dfch `[N, 4C]`, ds `[B, H, T, T]`.
#[derive(Debug, Clone)]
struct Layout {
    tok: usize,
    ys: usize,
    hs: Vec<usize>,
    blocks: Vec<BlockActs>,
    lnf: usize,
    lnf_mean: usize,
    lnf_rstd: usize,
    out: usize,
    acts_len: usize,
    preds: usize,
    dout: usize,
    dres: usize,
    dln: usize,
    datty: usize,
    dqkv: usize,
    dfch_gelu: usize,
    dfch: usize,
    ds: usize,
    dacts_len: usize,
}

impl Layout {
    fn new(spec: &Gpt2Spec, count: usize, k: usize, train: bool) -> Layout {
        let (d, c, h) = (spec.d, spec.embd, spec.heads);
        let t = 2 * k;
        let n = count * t;
        let (nc, att) = (n * c, count * h * t * t);
        let mut at = 0;
        let mut take = |len: usize| {
            let o = at;
            at += len;
            o
        };
        let tok = take(n * d);
        let ys = take(count * k);
        let hs: Vec<usize> = (0..=spec.layers).map(|_| take(nc)).collect();
        let blocks = (0..spec.layers)
            .map(|_| BlockActs {
                ln1: take(nc),
                ln1_mean: take(n),
                ln1_rstd: take(n),
                qkv: take(3 * nc),
                att: take(att),
                atty: take(nc),
                a: take(nc),
                ln2: take(nc),
                ln2_mean: take(n),
                ln2_rstd: take(n),
                fch: take(4 * nc),
                fch_gelu: take(4 * nc),
            })
            .collect();
        let lnf = take(nc);
        let lnf_mean = take(n);
        let lnf_rstd = take(n);
        let out = take(n);
        let acts_len = at;
        let mut at = 0;
        let mut take = |len: usize| {
            let o = at;
            at += len;
            o
        };
        let preds = take(count * k);
        let tr = |len: usize| if train { len } else { 0 };
        let dout = take(tr(n));
        let dres = take(tr(nc));
        let dln = take(tr(nc));
        let datty = take(tr(nc));
        let dqkv = take(tr(3 * nc));
        let dfch_gelu = take(tr(4 * nc));
        let dfch = take(tr(4 * nc));
        let ds = take(tr(att));
        Layout {
            tok,
            ys,
            hs,
            blocks,
            lnf,
            lnf_mean,
            lnf_rstd,
            out,
            acts_len,
            preds,
            dout,
            dres,
            dln,
            datty,
            dqkv,
            dfch_gelu,
            dfch,
            ds,
            dacts_len: at,
        }
    }
}

/// Sizes of one call, checked against the device's limits.
#[derive(Debug, Clone, Copy)]
struct Plan {
    n: usize,
    /// Most sequences per submission.
    chunk: usize,
}

impl Plan {
    fn new(
        spec: &Gpt2Spec,
        n: usize,
        k: usize,
        train: bool,
        info: &DeviceInfo,
        chunk_bytes: u64,
    ) -> Result<Plan, VkError> {
        if n == 0 || k == 0 {
            // (the runner refuses these first, as shape errors)
            return Err(VkError::Unsupported(format!(
                "a pass needs prompts and pairs (n = {n}, K = {k})"
            )));
        }
        // Words per sequence, in u128 so that no product overflows before the comparison.
        let w = |x: usize| x as u128;
        let (d, c, h, nl) = (w(spec.d), w(spec.embd), w(spec.heads), w(spec.layers));
        let (kk, t) = (w(k), 2 * w(k));
        let (tc, att) = (t * c, h * t * t);
        let acts = t * d + kk + (nl + 1) * tc + nl * (15 * tc + 4 * t + att) + tc + 3 * t;
        let dacts = kk + if train { t + 14 * tc + att } else { 0 };
        let tokens = t * d + kk;
        let n_params = w(spec.n_params());
        let limit = info.max_storage_buffer_range.min(u32::MAX as u64) as u128;
        let shape = format!(
            "(embd = {}, layers = {}, heads = {}, d = {}, K = {k} pairs)",
            spec.embd, spec.layers, spec.heads, spec.d
        );
        for (what, words) in [
            ("the parameters", n_params),
            ("one sequence's activations", acts),
            ("one sequence's backward activations", dacts),
        ] {
            if 4 * words > limit {
                return Err(VkError::Unsupported(format!(
                    "{what} take {} bytes, above the limit of {limit} bytes of one storage buffer {shape}",
                    4 * words
                )));
            }
        }
        // A dispatch's element count (at most a buffer's words) and a chunk's sequence count
        // must fit the shader's u32 indices; the limit above keeps both under 2^30.
        let token_limit = (chunk_bytes as u128 / (4 * tokens)).max(1);
        let chunk = (limit / (4 * acts))
            .min(limit / (4 * dacts))
            .min(token_limit)
            .min(w(n)) as usize;
        Ok(Plan {
            n,
            chunk: chunk.max(1),
        })
    }

    /// (first sequence, count) of each submission.
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.n)
            .step_by(self.chunk)
            .map(move |s| (s, self.chunk.min(self.n - s)))
    }
}

/// GPT-2 in-context learners on the Vulkan engine (f32).
pub struct VulkanGpt2 {
    dev: ModuleSession<N_ARRAYS>,
    chunk_bytes: u64,
    /// Host staging of one chunk's tokens then targets.
    host: Vec<f32>,
    xs: Vec<f32>,
    ys: Vec<f32>,
}

impl std::fmt::Debug for VulkanGpt2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanGpt2")
            .field("device", &self.dev.s.ctx.info)
            .field("workgroup_size", &self.dev.wg)
            .finish()
    }
}

impl VulkanGpt2 {
    /// Open the best device the options allow. f16 token storage is refused: GPT-2's kernels
    /// read f32 tokens.
    pub fn new(opts: &Options) -> Result<VulkanGpt2, VkError> {
        if opts.f16_batch {
            return Err(VkError::Unsupported(
                "f16 token storage (ICL_VULKAN_F16) is implemented for one-layer attention only; \
                 GPT-2 models read f32 tokens"
                    .into(),
            ));
        }
        Ok(VulkanGpt2 {
            dev: ModuleSession::new(
                opts,
                spirv,
                &Entry::ALL.map(Entry::name),
                // The uniform block, written by `vkCmdUpdateBuffer` before each dispatch.
                DeviceArrays::new(
                    (OP_WORDS * 4) as u64,
                    vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST,
                    vk::MemoryPropertyFlags::empty(),
                ),
            )?,
            chunk_bytes: opts.max_chunk_bytes,
            host: Vec::new(),
            xs: Vec::new(),
            ys: Vec::new(),
        })
    }

    /// The device in use.
    pub fn device(&self) -> &DeviceInfo {
        &self.dev.s.ctx.info
    }

    /// Invocations per workgroup of the shaders in use.
    pub fn workgroup_size(&self) -> u32 {
        self.dev.wg
    }

    /// Errors the validation layer reported so far (empty when validation is off).
    pub fn validation_errors(&self) -> Vec<String> {
        self.dev.s.ctx.validation_errors()
    }

    /// Record one operation: wait for the previous dispatch (its writes, and its reads of the
    /// uniform block), write `op` into the uniform block, and dispatch enough workgroups for
    /// `total` elements (at most the device's count; the shaders loop over the rest).
    fn record(&self, e: Entry, op: &Op, total: usize) -> Result<(), VkError> {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        let b = self.dev.bufs.get()?;
        self.dev.s.barrier(
            S::COMPUTE_SHADER,
            A::SHADER_WRITE,
            S::COMPUTE_SHADER | S::TRANSFER,
            A::SHADER_READ | A::SHADER_WRITE,
        );
        let words = op.words();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        // SAFETY: recording; the uniform buffer was made with TRANSFER_DST and holds OP_WORDS
        // words; no dispatch reading it is pending past the barrier above.
        unsafe {
            self.dev
                .s
                .ctx
                .device
                .cmd_update_buffer(self.dev.s.cmd, b.uniform.buf, 0, &bytes)
        };
        self.dev.s.barrier(
            S::TRANSFER,
            A::TRANSFER_WRITE,
            S::COMPUTE_SHADER,
            A::UNIFORM_READ,
        );
        let groups = total
            .div_ceil(self.dev.wg as usize)
            .clamp(1, self.dev.s.ctx.info.max_workgroup_count_x.max(1) as usize);
        self.dev.dispatch(e as usize, groups as u32);
        Ok(())
    }

    /// Record the forward pass of a chunk of `count` sequences of K pairs, through the
    /// predictions (and, when `train`, the loss gradient dout at every row).
    fn record_forward(
        &self,
        spec: &Gpt2Spec,
        lay: &Layout,
        count: usize,
        k: usize,
        train: bool,
        w: f32,
    ) -> Result<(), VkError> {
        let (d, c, nh) = (spec.d, spec.embd, spec.heads);
        let t = 2 * k;
        let n = count * t;
        let ts = spec.tensors();
        let off = |i: usize| ts[i].offset;
        let scale = 1.0f32 / ((spec.head_dim() as f32).sqrt() * spec.tau as f32);
        let base = Op {
            rows: n,
            t,
            ic: c,
            oc: c,
            heads: nh,
            ..Op::default()
        };
        // h_0 = read_in(tok) + wpe
        self.record(
            Entry::Encoder,
            &Op {
                ic: d,
                inp: lay.tok,
                w: off(0),
                b: off(1),
                a0: off(2),
                out: lay.hs[0],
                ..base
            },
            n * c,
        )?;
        for (l, bl) in lay.blocks.iter().enumerate() {
            let ln = |inp, w, b, out, mean, rstd| Op {
                inp,
                w,
                b,
                out,
                a0: mean,
                a1: rstd,
                ..base
            };
            // a = h + attn.c_proj(attn(c_attn(ln_1(h))))
            self.record(
                Entry::LayernormFwd,
                &ln(
                    lay.hs[l],
                    off(3) + l * c,
                    off(4) + l * c,
                    bl.ln1,
                    bl.ln1_mean,
                    bl.ln1_rstd,
                ),
                n,
            )?;
            self.record(
                Entry::MatmulFwd,
                &Op {
                    oc: 3 * c,
                    inp: bl.ln1,
                    w: off(5) + l * 3 * c * c,
                    b: off(6) + l * 3 * c,
                    out: bl.qkv,
                    ..base
                },
                n * 3 * c,
            )?;
            self.record(
                Entry::AttentionFwd,
                &Op {
                    inp: bl.qkv,
                    out: bl.atty,
                    a0: bl.att,
                    f0: scale,
                    ..base
                },
                n * nh,
            )?;
            self.record(
                Entry::MatmulFwd,
                &Op {
                    mode: RESIDUAL,
                    inp: bl.atty,
                    w: off(7) + l * c * c,
                    b: off(8) + l * c,
                    a0: lay.hs[l],
                    out: bl.a,
                    ..base
                },
                n * c,
            )?;
            // h' = a + mlp.c_proj(gelu_new(c_fc(ln_2(a))))
            self.record(
                Entry::LayernormFwd,
                &ln(
                    bl.a,
                    off(9) + l * c,
                    off(10) + l * c,
                    bl.ln2,
                    bl.ln2_mean,
                    bl.ln2_rstd,
                ),
                n,
            )?;
            self.record(
                Entry::MatmulFwd,
                &Op {
                    oc: 4 * c,
                    inp: bl.ln2,
                    w: off(11) + l * 4 * c * c,
                    b: off(12) + l * 4 * c,
                    out: bl.fch,
                    ..base
                },
                n * 4 * c,
            )?;
            self.record(
                Entry::GeluFwd,
                &Op {
                    rows: n * 4 * c,
                    inp: bl.fch,
                    out: bl.fch_gelu,
                    ..base
                },
                n * 4 * c,
            )?;
            self.record(
                Entry::MatmulFwd,
                &Op {
                    ic: 4 * c,
                    mode: RESIDUAL,
                    inp: bl.fch_gelu,
                    w: off(13) + l * 4 * c * c,
                    b: off(14) + l * c,
                    a0: bl.a,
                    out: lay.hs[l + 1],
                    ..base
                },
                n * c,
            )?;
        }
        // out = read_out(ln_f(h)); pred_i = out[2 i]; dout = 2 w (pred - y) at the x rows
        let hf = lay.hs[spec.layers];
        self.record(
            Entry::LayernormFwd,
            &Op {
                inp: hf,
                w: off(15),
                b: off(16),
                out: lay.lnf,
                a0: lay.lnf_mean,
                a1: lay.lnf_rstd,
                ..base
            },
            n,
        )?;
        self.record(
            Entry::MatmulFwd,
            &Op {
                oc: 1,
                mode: LINEAR,
                inp: lay.lnf,
                w: off(17),
                b: off(18),
                out: lay.out,
                ..base
            },
            n,
        )?;
        self.record(
            Entry::SelectLoss,
            &Op {
                heads: k,
                mode: if train { TRAIN } else { 0 },
                inp: lay.out,
                a0: lay.ys,
                out: lay.preds,
                a1: lay.dout,
                f0: w,
                ..base
            },
            n,
        )
    }

    /// Record the backward pass of a chunk from dout, writing (or, with `accum`, continuing)
    /// every parameter gradient.
    fn record_backward(
        &self,
        spec: &Gpt2Spec,
        lay: &Layout,
        count: usize,
        k: usize,
        accum: bool,
    ) -> Result<(), VkError> {
        let (d, c, nh) = (spec.d, spec.embd, spec.heads);
        let t = 2 * k;
        let n = count * t;
        let ts = spec.tensors();
        let off = |i: usize| ts[i].offset;
        let scale = 1.0f32 / ((spec.head_dim() as f32).sqrt() * spec.tau as f32);
        let acc = if accum { ACCUM } else { 0 };
        let base = Op {
            rows: n,
            t,
            ic: c,
            oc: c,
            heads: nh,
            ..Op::default()
        };
        // A matrix's backward: dinp (when `dinp` is given) and its weight and bias gradients.
        let matmul = |inp: usize,
                      dout: usize,
                      dinp: Option<usize>,
                      w: usize,
                      b: usize,
                      ic: usize,
                      oc: usize,
                      linear: bool|
         -> Result<(), VkError> {
            let lin = if linear { LINEAR } else { 0 };
            if let Some(dinp) = dinp {
                self.record(
                    Entry::MatmulBwdDinp,
                    &Op {
                        ic,
                        oc,
                        mode: lin,
                        inp: dout,
                        w,
                        out: dinp,
                        ..base
                    },
                    n * ic,
                )?;
            }
            self.record(
                Entry::MatmulBwdDw,
                &Op {
                    ic,
                    oc,
                    mode: lin | acc,
                    inp,
                    a0: dout,
                    out: w,
                    b,
                    ..base
                },
                ic * oc + oc,
            )
        };
        // A LayerNorm's backward: its weight and bias gradients, then dinp (= or +=).
        let layernorm = |inp: usize,
                         mean: usize,
                         rstd: usize,
                         dout: usize,
                         w: usize,
                         b: usize,
                         dinp: usize,
                         add: bool|
         -> Result<(), VkError> {
            self.record(
                Entry::LayernormBwdDw,
                &Op {
                    mode: acc,
                    inp,
                    a0: mean,
                    a1: rstd,
                    a2: dout,
                    out: w,
                    b,
                    ..base
                },
                2 * c,
            )?;
            self.record(
                Entry::LayernormBwdDinp,
                &Op {
                    mode: if add { ACCUM } else { 0 },
                    inp,
                    w,
                    a0: mean,
                    a1: rstd,
                    a2: dout,
                    out: dinp,
                    ..base
                },
                n,
            )
        };
        // out = read_out(ln_f(h)): dln, then dres = the last stream's gradient
        matmul(
            lay.lnf,
            lay.dout,
            Some(lay.dln),
            off(17),
            off(18),
            c,
            1,
            true,
        )?;
        let hf = lay.hs[spec.layers];
        layernorm(
            hf,
            lay.lnf_mean,
            lay.lnf_rstd,
            lay.dln,
            off(15),
            off(16),
            lay.dres,
            false,
        )?;
        for (l, bl) in lay.blocks.iter().enumerate().rev() {
            // h' = a + mlp.c_proj(fch_gelu): dproj = dres (the residual passes it on)
            matmul(
                bl.fch_gelu,
                lay.dres,
                Some(lay.dfch_gelu),
                off(13) + l * 4 * c * c,
                off(14) + l * c,
                4 * c,
                c,
                false,
            )?;
            self.record(
                Entry::GeluBwd,
                &Op {
                    rows: n * 4 * c,
                    inp: bl.fch,
                    a0: lay.dfch_gelu,
                    out: lay.dfch,
                    ..base
                },
                n * 4 * c,
            )?;
            matmul(
                bl.ln2,
                lay.dfch,
                Some(lay.dln),
                off(11) + l * 4 * c * c,
                off(12) + l * 4 * c,
                c,
                4 * c,
                false,
            )?;
            // ln2 = ln_2(a): dres becomes da
            layernorm(
                bl.a,
                bl.ln2_mean,
                bl.ln2_rstd,
                lay.dln,
                off(9) + l * c,
                off(10) + l * c,
                lay.dres,
                true,
            )?;
            // a = h + attn.c_proj(atty): dproj = da
            matmul(
                bl.atty,
                lay.dres,
                Some(lay.datty),
                off(7) + l * c * c,
                off(8) + l * c,
                c,
                c,
                false,
            )?;
            self.record(
                Entry::AttentionBwdDs,
                &Op {
                    inp: bl.qkv,
                    a0: bl.att,
                    a1: lay.datty,
                    out: lay.ds,
                    ..base
                },
                n * nh,
            )?;
            self.record(
                Entry::AttentionBwdDqkv,
                &Op {
                    inp: bl.qkv,
                    a0: bl.att,
                    a1: lay.datty,
                    a2: lay.ds,
                    out: lay.dqkv,
                    f0: scale,
                    ..base
                },
                n * 3 * c,
            )?;
            matmul(
                bl.ln1,
                lay.dqkv,
                Some(lay.dln),
                off(5) + l * 3 * c * c,
                off(6) + l * 3 * c,
                c,
                3 * c,
                false,
            )?;
            // ln1 = ln_1(h): dres becomes dh
            layernorm(
                lay.hs[l],
                bl.ln1_mean,
                bl.ln1_rstd,
                lay.dln,
                off(3) + l * c,
                off(4) + l * c,
                lay.dres,
                true,
            )?;
        }
        // h = read_in(tok) + wpe (the tokens are data: no gradient)
        self.record(
            Entry::EncoderBwd,
            &Op {
                ic: 2 * spec.positions,
                mode: acc,
                a0: lay.dres,
                out: off(2),
                ..base
            },
            2 * spec.positions * c,
        )?;
        matmul(lay.tok, lay.dres, None, off(0), off(1), d, c, true)
    }

    /// Plan a call, make the buffers, write the parameters to the host side.
    fn prepare(
        &mut self,
        spec: &Gpt2Spec,
        params: &[f32],
        n: usize,
        k: usize,
        train: bool,
    ) -> Result<Plan, VkError> {
        let plan = Plan::new(spec, n, k, train, &self.dev.s.ctx.info, self.chunk_bytes)?;
        let lay = Layout::new(spec, plan.chunk, k, train);
        let f = |words: usize| words.max(1) as u64 * 4;
        // A grown buffer never exceeds one binding's range (the plan keeps every need within it).
        let cap = Some(self.dev.s.ctx.info.max_storage_buffer_range);
        let need = [
            f(params.len()),
            f(params.len()),
            f(lay.acts_len),
            f(lay.dacts_len),
        ];
        self.dev.bufs.fit(&self.dev.s, need, cap)?;
        self.dev.bufs.get_mut()?.arrays[PARAMS].host().write(params);
        Ok(plan)
    }

    /// Write chunk `ci`'s tokens and targets (`self.host`), open its command buffer and record
    /// the uploads (the parameters with the first chunk), up to the barrier before compute.
    fn upload_chunk(&mut self, ci: usize, n_params: usize) -> Result<(), VkError> {
        let host = std::mem::take(&mut self.host);
        self.dev.bufs.get_mut()?.arrays[ACTS].host().write(&host);
        self.dev.s.begin()?;
        let b = self.dev.bufs.get()?;
        let d = &self.dev.s.ctx.device;
        if ci == 0 {
            b.arrays[PARAMS].record_upload(d, self.dev.s.cmd, n_params as u64 * 4);
        }
        b.arrays[ACTS].record_upload(d, self.dev.s.cmd, host.len() as u64 * 4);
        self.dev.s.barrier_to_compute();
        self.host = host;
        Ok(())
    }

    /// The tokens (`write_tokens`) then the targets of prompts `xs: [count, K, d]`,
    /// `ys: [count, K]` into `self.host`.
    fn stage_prompts(&mut self, d: usize, k: usize, xs: &[f32], ys: &[f32]) {
        let count = ys.len() / k;
        let t = 2 * k;
        self.host.clear();
        self.host.resize(count * t * d, 0.0);
        for b in 0..count {
            write_tokens(
                &mut self.host[b * t * d..][..t * d],
                &xs[b * k * d..][..k * d],
                &ys[b * k..][..k],
                k,
                d,
            );
        }
        self.host.extend_from_slice(ys);
    }

    fn run_loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[f32],
        batch: &Batch<f32>,
        grad: &mut [f32],
    ) -> Result<f32, VkError> {
        let (n, k, d) = (batch.n, batch.len + 1, spec.d);
        let plan = self.prepare(spec, params, n, k, true)?;
        // The loss weight w = 1 / (n K), as the reference computes it.
        let w = 1.0f32 / (n * k) as f32;
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        let mut loss = 0.0f32;
        let mut preds = vec![0.0f32; plan.chunk * k];
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            let lay = Layout::new(spec, count, k, true);
            let mut xs = std::mem::take(&mut self.xs);
            let mut ys = std::mem::take(&mut self.ys);
            xs.resize(count * k * d, 0.0);
            ys.resize(count * k, 0.0);
            for b in 0..count {
                prompt_of_batch(
                    batch,
                    start + b,
                    &mut xs[b * k * d..][..k * d],
                    &mut ys[b * k..][..k],
                );
            }
            self.stage_prompts(d, k, &xs, &ys);
            self.upload_chunk(ci, params.len())?;
            self.record_forward(spec, &lay, count, k, true, w)?;
            self.record_backward(spec, &lay, count, k, ci > 0)?;
            self.dev.s.barrier_to_host();
            let b = self.dev.bufs.get()?;
            let dev = &self.dev.s.ctx.device;
            b.arrays[DACTS].record_download(dev, self.dev.s.cmd, (count * k) as u64 * 4);
            let last = ci + 1 == chunks.len();
            if last {
                b.arrays[GRAD].record_download(dev, self.dev.s.cmd, params.len() as u64 * 4);
            }
            self.dev.s.barrier_copy_to_host();
            self.dev.s.submit_wait()?;
            let b = self.dev.bufs.get_mut()?;
            b.arrays[DACTS].host().read(&mut preds[..count * k]);
            if last {
                b.arrays[GRAD].host().read(grad);
            }
            // loss = sum_b w sum_i (pred_bi - y_bi)^2, sequence by sequence (mse_forward)
            for b in 0..count {
                let mut l = 0.0f32;
                for (p, y) in preds[b * k..][..k].iter().zip(&ys[b * k..][..k]) {
                    l += (p - y) * (p - y);
                }
                loss += w * l;
            }
            self.xs = xs;
            self.ys = ys;
        }
        Ok(loss)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[f32],
        xs: &[f32],
        ys: &[f32],
        n: usize,
        k: usize,
        out: &mut [f32],
    ) -> Result<(), VkError> {
        let d = spec.d;
        let plan = self.prepare(spec, params, n, k, false)?;
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            let lay = Layout::new(spec, count, k, false);
            self.stage_prompts(
                d,
                k,
                &xs[start * k * d..(start + count) * k * d],
                &ys[start * k..(start + count) * k],
            );
            self.upload_chunk(ci, params.len())?;
            self.record_forward(spec, &lay, count, k, false, 0.0)?;
            self.dev
                .finish_download(DACTS, &mut out[start * k..(start + count) * k])?;
        }
        Ok(())
    }
}

impl Gpt2Kernels<f32> for VulkanGpt2 {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    /// On the host's threads, as the SIMD engine's (the fits are CPU work): the values in index
    /// order and the first error by index, whatever the thread count.
    fn map_prompts(
        &self,
        n: usize,
        f: &(dyn Fn(usize) -> icl_core::Result<f64> + Sync),
    ) -> icl_core::Result<Vec<f64>> {
        use rayon::prelude::*;
        let each: Vec<icl_core::Result<f64>> = (0..n).into_par_iter().map(f).collect();
        each.into_iter().collect()
    }

    fn loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[f32],
        batch: &Batch<f32>,
        grad: &mut [f32],
    ) -> icl_core::Result<f32> {
        Ok(self.run_loss_grad(spec, params, batch, grad)?)
    }

    fn predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[f32],
        xs: &[f32],
        ys: &[f32],
        n: usize,
        k: usize,
        out: &mut [f32],
    ) -> icl_core::Result<()> {
        Ok(self.run_predict(spec, params, xs, ys, n, k, out)?)
    }
}
