//! [`VulkanStack`]: the multi-layer transformer stacks (`StackKernels<f32>`) on a Vulkan compute
//! queue, in `shaders/stack.wgsl` (its header has the formulas).
//!
//! Per call: the circuits (Phi then Psi, `[sets, H, D, D]` each) and the batch are written to
//! device memory; `fwd_bwd` (or `forward`) runs one workgroup per sequence, keeping every layer's
//! tokens and the heads' p, a, m in the sequence's slot of a workspace buffer and writing the
//! sequence's gradient row; `reduce_partials` sums the rows over fixed blocks of 64 sequences and
//! `reduce_final` sums the blocks in order. Batches whose workspace exceeds one storage-buffer
//! binding run in chunks of sequences, one submission each; a block continues across chunks in
//! the same order, so the bits do not depend on chunking. Data generation stays on the CPU (the
//! trait's default `fill_rows`).
use crate::context::{DeviceInfo, Options};
use crate::error::VkError;
use crate::session::{DeviceArrays, ModuleSession};
use ash::vk;
use icl_core::config::AttentionKind;
use icl_core::families::stack::layers::{Pass, StackCircuits, StackSpec};
use icl_core::families::stack::StackKernels;
use icl_core::Batch;
use std::ffi::CStr;

/// Sequences per partial gradient sum in `reduce_partials`.
const PART_LEN: usize = 64;
/// Bytes of the uniform block (`Params` in the shader).
const PARAMS_BYTES: u64 = 80;

/// The storage buffers, in binding order (binding = index + 1; binding 0 is the uniform block).
const CIRC: usize = 0;
const Z: usize = 1;
const Y: usize = 2;
const WS: usize = 3;
const OUT: usize = 4;
const PARTS: usize = 5;
const GRAD: usize = 6;
const N_ARRAYS: usize = 7;

/// Entry points of the stack module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Forward,
    FwdBwd,
    ReducePartials,
    ReduceFinal,
}

impl Entry {
    const ALL: [Entry; 4] = [
        Entry::Forward,
        Entry::FwdBwd,
        Entry::ReducePartials,
        Entry::ReduceFinal,
    ];
    fn name(self) -> &'static CStr {
        match self {
            Entry::Forward => c"forward",
            Entry::FwdBwd => c"fwd_bwd",
            Entry::ReducePartials => c"reduce_partials",
            Entry::ReduceFinal => c"reduce_final",
        }
    }
}

fn spirv(wg: u32) -> &'static [u8] {
    if wg == 16 {
        include_bytes!(concat!(env!("OUT_DIR"), "/stack_wg16.spv"))
    } else {
        include_bytes!(concat!(env!("OUT_DIR"), "/stack_wg64.spv"))
    }
}

/// Sizes of one call, checked against the device's limits.
#[derive(Debug, Clone, Copy)]
struct Plan {
    n: usize,
    len: usize,
    e: usize,
    no: usize,
    heads: usize,
    /// Layers of the pass.
    layers: usize,
    sets: usize,
    looped: bool,
    softmax: bool,
    exclude_self: bool,
    train: bool,
    /// Workspace words per sequence.
    ws: usize,
    /// Circuit gradient entries (dPhi, dPsi) plus the loss.
    g_len: usize,
    n_parts: usize,
    /// Most sequences per submission.
    chunk: usize,
}

impl Plan {
    #[allow(clippy::too_many_arguments)]
    fn new(
        spec: &StackSpec,
        pass: Pass,
        train: bool,
        n: usize,
        len: usize,
        info: &DeviceInfo,
        wg: u32,
        chunk_bytes: u64,
    ) -> Result<Plan, VkError> {
        let (e, heads, layers, sets) = (spec.e, spec.heads, pass.layers, spec.sets());
        if n == 0 || len == 0 || layers == 0 {
            // (the runner refuses these first, as shape errors)
            return Err(VkError::Unsupported(format!(
                "a pass needs sequences, keys and layers (n = {n}, L = {len}, T = {layers})"
            )));
        }
        // Sizes in u128, so that no product overflows before it is compared with the limits.
        let w = |x: usize| x as u128;
        let (nd, nl) = (w(len + 1) * w(e), w(len + 1) * w(len));
        let ws = (w(layers) + 1) * nd
            + w(layers) * w(heads) * (2 * nd + nl)
            + if train { 4 * nd + nl } else { 0 };
        let g = 2 * w(sets) * w(heads) * w(e) * w(e) + 1;
        let out = if train { g } else { nd };
        let limit = info.max_storage_buffer_range.min(u32::MAX as u64) as u128;
        let token_limit = limit.min(chunk_bytes as u128);
        let too_big = |what: &str, bytes: u128, lim: u128| {
            VkError::Unsupported(format!(
                "{what} takes {bytes} bytes, above the limit of {lim} bytes of one storage buffer \
                 (T = {layers} layers, H = {heads} heads, D = {e}, L = {len})"
            ))
        };
        for (what, words, lim) in [
            (
                "one sequence's workspace (every layer's tokens and p, a, m)",
                ws,
                limit,
            ),
            ("one sequence's tokens", nd, token_limit),
            ("one sequence's gradient row", out, limit),
            ("the circuits", g, limit),
        ] {
            if 4 * words > lim {
                return Err(too_big(what, 4 * words, lim));
            }
        }
        let n_parts = n.div_ceil(PART_LEN);
        if 4 * w(n_parts) * g > limit {
            return Err(too_big(
                &format!("the partial gradient sums of a batch of {n} sequences"),
                4 * w(n_parts) * g,
                limit,
            ));
        }
        if n > u32::MAX as usize
            || g.div_ceil(w(wg as usize)) > w(info.max_workgroup_count_x as usize)
        {
            return Err(VkError::Unsupported(format!(
                "a batch of {n} sequences with {g} gradient entries exceeds the device's workgroup count limit of {}",
                info.max_workgroup_count_x
            )));
        }
        let by_bytes = (limit / (4 * ws))
            .min(limit / (4 * out))
            .min(token_limit / (4 * nd));
        let chunk = (by_bytes.min(w(info.max_workgroup_count_x as usize)) as usize)
            .min(n)
            .max(1);
        Ok(Plan {
            n,
            len,
            e,
            no: spec.n_out,
            heads,
            layers,
            sets,
            looped: spec.looped,
            softmax: spec.attention == AttentionKind::Softmax,
            exclude_self: pass.exclude_self,
            train,
            ws: ws as usize,
            g_len: g as usize,
            n_parts,
            chunk,
        })
    }

    /// Values of one sequence's tokens, N D.
    fn nd(&self) -> usize {
        (self.len + 1) * self.e
    }

    /// Words of one sequence's row of `seqout`.
    fn out_len(&self) -> usize {
        if self.train {
            self.g_len
        } else {
            self.nd()
        }
    }

    /// (first sequence, count) of each submission.
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.n)
            .step_by(self.chunk)
            .map(move |s| (s, self.chunk.min(self.n - s)))
    }

    /// Bytes each storage buffer needs (binding order).
    fn needs(&self) -> [u64; N_ARRAYS] {
        let f = |words: usize| words as u64 * 4;
        let mut need = [0; N_ARRAYS];
        need[CIRC] = f(self.g_len - 1);
        need[Z] = f(self.chunk * self.nd());
        need[Y] = f(self.chunk * self.no);
        need[WS] = f(self.chunk * self.ws);
        need[OUT] = f(self.chunk * self.out_len());
        need[PARTS] = f(self.n_parts * self.g_len);
        need[GRAD] = f(self.g_len);
        need
    }

    /// The uniform block (`Params` in the shader) of the submission of sequences base..base+count.
    fn params(&self, base: usize, count: usize) -> [u32; 20] {
        let u = |x: usize| x as u32;
        let b = |x: bool| x as u32;
        [
            u(self.n),
            u(self.len),
            u(self.e),
            u(self.no),
            u(self.heads),
            u(self.layers),
            u(self.sets),
            b(self.looped),
            b(self.softmax),
            b(self.exclude_self),
            u(base),
            u(count),
            u(PART_LEN),
            u(self.n_parts),
            u(self.g_len),
            u(self.ws),
            (1.0 / (self.n * self.no) as f32).to_bits(),
            0,
            0,
            0,
        ]
    }
}

/// Multi-layer transformer stacks on the Vulkan engine (f32).
pub struct VulkanStack {
    dev: ModuleSession<N_ARRAYS>,
    chunk_bytes: u64,
    host: Vec<f32>,
}

impl std::fmt::Debug for VulkanStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanStack")
            .field("device", &self.dev.s.ctx.info)
            .field("workgroup_size", &self.dev.wg)
            .finish()
    }
}

impl VulkanStack {
    /// Open the best device the options allow. f16 token storage is refused: the stack's
    /// kernels read f32 tokens.
    pub fn new(opts: &Options) -> Result<VulkanStack, VkError> {
        if opts.f16_batch {
            return Err(VkError::Unsupported(
                "f16 token storage (ICL_VULKAN_F16) is implemented for one-layer attention only; \
                 multi-layer transformers read f32 tokens"
                    .into(),
            ));
        }
        Ok(VulkanStack {
            dev: ModuleSession::new(
                opts,
                spirv,
                &Entry::ALL.map(Entry::name),
                DeviceArrays::new(
                    PARAMS_BYTES,
                    vk::BufferUsageFlags::UNIFORM_BUFFER,
                    vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
                ),
            )?,
            chunk_bytes: opts.max_chunk_bytes,
            host: Vec::new(),
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

    fn dispatch(&self, e: Entry, groups: u32) {
        self.dev.dispatch(e as usize, groups);
    }

    /// Plan the call, make the buffers and write the circuits (Phi then Psi) to the host side.
    fn prepare(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<f32>,
        pass: Pass,
        train: bool,
        batch: &Batch<f32>,
    ) -> Result<Plan, VkError> {
        let plan = Plan::new(
            spec,
            pass,
            train,
            batch.n,
            batch.len,
            &self.dev.s.ctx.info,
            self.dev.wg,
            self.chunk_bytes,
        )?;
        self.dev.bufs.fit(&self.dev.s, plan.needs(), None)?;
        let mut host = std::mem::take(&mut self.host);
        host.clear();
        host.extend_from_slice(&c.phi);
        host.extend_from_slice(&c.psi);
        self.dev.bufs.get_mut()?.arrays[CIRC].host().write(&host);
        self.host = host;
        Ok(plan)
    }

    /// Write chunk `ci` (sequences start..start+count: tokens, targets when training, the
    /// uniform block, the circuits with the first chunk) and open its command buffer, up to the
    /// barrier before compute.
    fn upload_chunk(
        &mut self,
        plan: &Plan,
        batch: &Batch<f32>,
        ci: usize,
        start: usize,
        count: usize,
    ) -> Result<(), VkError> {
        let nd = plan.nd();
        let b = self.dev.bufs.get_mut()?;
        b.arrays[Z]
            .host()
            .write(&batch.z[start * nd..(start + count) * nd]);
        if plan.train {
            b.arrays[Y]
                .host()
                .write(&batch.y[start * plan.no..(start + count) * plan.no]);
        }
        b.uniform.write(&plan.params(start, count));
        self.dev.s.begin()?;
        let b = self.dev.bufs.get()?;
        let d = &self.dev.s.ctx.device;
        if ci == 0 {
            b.arrays[CIRC].record_upload(d, self.dev.s.cmd, (plan.g_len as u64 - 1) * 4);
        }
        b.arrays[Z].record_upload(d, self.dev.s.cmd, (count * nd) as u64 * 4);
        if plan.train {
            b.arrays[Y].record_upload(d, self.dev.s.cmd, (count * plan.no) as u64 * 4);
        }
        self.dev.s.barrier_to_compute();
        Ok(())
    }

    fn run_loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<f32>,
        batch: &Batch<f32>,
        g: &mut StackCircuits<f32>,
    ) -> Result<f32, VkError> {
        let plan = self.prepare(spec, c, Pass::of(spec), true, batch)?;
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            self.upload_chunk(&plan, batch, ci, start, count)?;
            self.dispatch(Entry::FwdBwd, count as u32);
            self.dev.s.barrier_compute();
            let blocks = (start + count - 1) / PART_LEN - start / PART_LEN + 1;
            self.dispatch(Entry::ReducePartials, blocks as u32);
            if ci + 1 == chunks.len() {
                self.dev.s.barrier_compute();
                self.dispatch(
                    Entry::ReduceFinal,
                    (plan.g_len as u32).div_ceil(self.dev.wg),
                );
                self.dev.s.barrier_to_host();
                let b = self.dev.bufs.get()?;
                b.arrays[GRAD].record_download(
                    &self.dev.s.ctx.device,
                    self.dev.s.cmd,
                    plan.g_len as u64 * 4,
                );
                self.dev.s.barrier_copy_to_host();
            }
            self.dev.s.submit_wait()?;
        }
        let mut out = vec![0.0f32; plan.g_len];
        self.dev.bufs.get_mut()?.arrays[GRAD].host().read(&mut out);
        let half = (plan.g_len - 1) / 2;
        g.phi.copy_from_slice(&out[..half]);
        g.psi.copy_from_slice(&out[half..2 * half]);
        Ok(out[plan.g_len - 1])
    }

    fn run_forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<f32>,
        pass: Pass,
        batch: &Batch<f32>,
        out: &mut [f32],
    ) -> Result<(), VkError> {
        let plan = self.prepare(spec, c, pass, false, batch)?;
        let nd = plan.nd();
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            self.upload_chunk(&plan, batch, ci, start, count)?;
            self.dispatch(Entry::Forward, count as u32);
            self.dev
                .finish_download(OUT, &mut out[start * nd..(start + count) * nd])?;
        }
        Ok(())
    }
}

impl StackKernels<f32> for VulkanStack {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<f32>,
        batch: &Batch<f32>,
        g: &mut StackCircuits<f32>,
    ) -> icl_core::Result<f32> {
        Ok(self.run_loss_grad(spec, c, batch, g)?)
    }

    fn forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<f32>,
        pass: Pass,
        batch: &Batch<f32>,
        out: &mut [f32],
    ) -> icl_core::Result<()> {
        Ok(self.run_forward(spec, c, pass, batch, out)?)
    }
    // Data generation stays on the CPU: the trait's default fill_rows samples sequence by
    // sequence from the (seed, domain, step, b) streams, so every engine sees the same batches.
}
