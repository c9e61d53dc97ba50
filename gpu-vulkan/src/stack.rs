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
use crate::buffer::{Buffer, GpuArray};
use crate::context::{Context, DeviceInfo, DeviceKind, Options};
use crate::error::{call, VkError};
use ash::vk;
use icl_core::config::AttentionKind;
use icl_core::families::stack::layers::{Pass, StackCircuits, StackSpec};
use icl_core::families::stack::StackKernels;
use icl_core::Batch;
use std::ffi::CStr;

/// Sequences per partial gradient sum in `reduce_partials`.
const PART_LEN: usize = 64;
/// How long to wait for one submission before reporting a hung device.
const FENCE_TIMEOUT_NS: u64 = 600_000_000_000;
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

/// Device buffers, grown on demand.
struct Buffers {
    params: Buffer,
    arrays: [GpuArray; N_ARRAYS],
}

/// Multi-layer transformer stacks on the Vulkan engine (f32).
pub struct VulkanStack {
    ctx: Context,
    dsl: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    cmd_pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    module: vk::ShaderModule,
    pipelines: [vk::Pipeline; 4],
    bufs: Option<Buffers>,
    wg: u32,
    chunk_bytes: u64,
    host: Vec<f32>,
}

impl std::fmt::Debug for VulkanStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanStack")
            .field("device", &self.ctx.info)
            .field("workgroup_size", &self.wg)
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
        let wg = match opts.workgroup_size {
            Some(w @ (16 | 64)) => Some(w),
            Some(w) => {
                return Err(VkError::Unsupported(format!(
                    "workgroup size {w}: the shaders are built for 16 and 64"
                )))
            }
            None => None,
        };
        let ctx = Context::new(opts)?;
        let wg = wg.unwrap_or(if ctx.info.kind == DeviceKind::Cpu {
            16
        } else {
            64
        });
        let mut eng = VulkanStack {
            ctx,
            dsl: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            cmd_pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            module: vk::ShaderModule::null(),
            pipelines: [vk::Pipeline::null(); 4],
            bufs: None,
            wg,
            chunk_bytes: opts.max_chunk_bytes,
            host: Vec::new(),
        };
        // On error `eng` drops and destroys whatever was created.
        eng.init()?;
        Ok(eng)
    }

    /// The device in use.
    pub fn device(&self) -> &DeviceInfo {
        &self.ctx.info
    }

    /// Invocations per workgroup of the shaders in use.
    pub fn workgroup_size(&self) -> u32 {
        self.wg
    }

    /// Errors the validation layer reported so far (empty when validation is off).
    pub fn validation_errors(&self) -> Vec<String> {
        self.ctx.validation_errors()
    }

    fn init(&mut self) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let mut bindings = vec![vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        bindings.extend((1..=N_ARRAYS as u32).map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        }));
        let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv(self.wg)))
            .map_err(|e| VkError::Unsupported(format!("embedded SPIR-V is malformed: {e}")))?;
        // SAFETY (whole block): create infos reference live locals; handles are stored in self and
        // destroyed in Drop; the SPIR-V was produced and validated by naga at build time.
        unsafe {
            self.dsl = call(
                "vkCreateDescriptorSetLayout",
                d.create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                    None,
                ),
            )?;
            let dsls = [self.dsl];
            self.layout = call(
                "vkCreatePipelineLayout",
                d.create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().set_layouts(&dsls),
                    None,
                ),
            )?;
            let sizes = [
                vk::DescriptorPoolSize {
                    ty: vk::DescriptorType::UNIFORM_BUFFER,
                    descriptor_count: 1,
                },
                vk::DescriptorPoolSize {
                    ty: vk::DescriptorType::STORAGE_BUFFER,
                    descriptor_count: N_ARRAYS as u32,
                },
            ];
            self.pool = call(
                "vkCreateDescriptorPool",
                d.create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                ),
            )?;
            self.set = call(
                "vkAllocateDescriptorSets",
                d.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(self.pool)
                        .set_layouts(&dsls),
                ),
            )?[0];
            self.cmd_pool = call(
                "vkCreateCommandPool",
                d.create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(self.ctx.family)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                ),
            )?;
            self.cmd = call(
                "vkAllocateCommandBuffers",
                d.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(self.cmd_pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                ),
            )?[0];
            self.fence = call(
                "vkCreateFence",
                d.create_fence(&vk::FenceCreateInfo::default(), None),
            )?;
            self.module = call(
                "vkCreateShaderModule",
                d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None),
            )?;
            let infos: Vec<vk::ComputePipelineCreateInfo> = Entry::ALL
                .iter()
                .map(|e| {
                    vk::ComputePipelineCreateInfo::default()
                        .stage(
                            vk::PipelineShaderStageCreateInfo::default()
                                .stage(vk::ShaderStageFlags::COMPUTE)
                                .module(self.module)
                                .name(e.name()),
                        )
                        .layout(self.layout)
                })
                .collect();
            match d.create_compute_pipelines(vk::PipelineCache::null(), &infos, None) {
                Ok(p) => self.pipelines.copy_from_slice(&p),
                Err((p, r)) => {
                    for (dst, src) in self.pipelines.iter_mut().zip(p) {
                        *dst = src;
                    }
                    return Err(VkError::Call {
                        call: "vkCreateComputePipelines",
                        result: r,
                    });
                }
            }
        }
        Ok(())
    }

    fn bufs(&self) -> Result<&Buffers, VkError> {
        self.bufs.as_ref().ok_or_else(|| {
            VkError::Unsupported("internal: buffers used before they were made".into())
        })
    }

    fn bufs_mut(&mut self) -> Result<&mut Buffers, VkError> {
        self.bufs.as_mut().ok_or_else(|| {
            VkError::Unsupported("internal: buffers used before they were made".into())
        })
    }

    /// Make every buffer at least as large as `plan` needs; rebind the descriptor set if any grew.
    fn fit_buffers(&mut self, plan: &Plan) -> Result<(), VkError> {
        let need = plan.needs();
        let ctx = &self.ctx;
        let d = &ctx.device;
        let mut changed = false;
        if self.bufs.is_none() {
            use vk::BufferUsageFlags as U;
            use vk::MemoryPropertyFlags as M;
            let mut params = Buffer::new(
                ctx,
                PARAMS_BYTES,
                U::UNIFORM_BUFFER,
                M::HOST_VISIBLE | M::HOST_COHERENT,
            )?;
            let mut made: Vec<GpuArray> = Vec::new();
            for &bytes in &need {
                match GpuArray::new(ctx, bytes) {
                    Ok(a) => made.push(a),
                    Err(e) => {
                        // SAFETY: nothing uses these yet.
                        unsafe {
                            made.iter_mut().for_each(|a| a.destroy(d));
                            params.destroy(d);
                        }
                        return Err(e);
                    }
                }
            }
            let Ok(arrays) = <[GpuArray; N_ARRAYS]>::try_from(made) else {
                return Err(VkError::Unsupported(
                    "internal: seven buffers expected".into(),
                ));
            };
            self.bufs = Some(Buffers { params, arrays });
            changed = true;
        } else if let Some(b) = self.bufs.as_mut() {
            for (a, &bytes) in b.arrays.iter_mut().zip(&need) {
                if a.size() < bytes {
                    // Grow by at least half again so slowly growing batches do not reallocate every call.
                    let fresh = GpuArray::new(ctx, bytes.max(a.size() + a.size() / 2))?;
                    // SAFETY: the last submission finished (we wait on its fence before returning).
                    unsafe { a.destroy(d) };
                    *a = fresh;
                    changed = true;
                }
            }
        }
        if changed {
            let b = self.bufs()?;
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = std::iter::once(&b.params)
                .chain(b.arrays.iter().map(|a| &a.dev))
                .map(|x| {
                    [vk::DescriptorBufferInfo {
                        buffer: x.buf,
                        offset: 0,
                        range: vk::WHOLE_SIZE,
                    }]
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(self.set)
                        .dst_binding(i as u32)
                        .descriptor_type(if i == 0 {
                            vk::DescriptorType::UNIFORM_BUFFER
                        } else {
                            vk::DescriptorType::STORAGE_BUFFER
                        })
                        .buffer_info(info)
                })
                .collect();
            // SAFETY: the set is not in use (no submission pending).
            unsafe { d.update_descriptor_sets(&writes, &[]) };
        }
        Ok(())
    }

    fn begin(&self) -> Result<(), VkError> {
        let d = &self.ctx.device;
        // SAFETY: the command buffer is not pending (we wait on every submission).
        unsafe {
            call(
                "vkResetCommandBuffer",
                d.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty()),
            )?;
            call(
                "vkBeginCommandBuffer",
                d.begin_command_buffer(
                    self.cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                ),
            )
        }
    }

    fn barrier(
        &self,
        src: vk::PipelineStageFlags,
        src_access: vk::AccessFlags,
        dst: vk::PipelineStageFlags,
        dst_access: vk::AccessFlags,
    ) {
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(src_access)
            .dst_access_mask(dst_access)];
        // SAFETY: recording.
        unsafe {
            self.ctx.device.cmd_pipeline_barrier(
                self.cmd,
                src,
                dst,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        }
    }

    /// Make uploads (and earlier submissions' shader writes) visible to the shaders.
    fn barrier_to_compute(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(
            S::TRANSFER | S::HOST | S::COMPUTE_SHADER,
            A::TRANSFER_WRITE | A::HOST_WRITE | A::SHADER_WRITE,
            S::COMPUTE_SHADER,
            A::SHADER_READ | A::SHADER_WRITE | A::UNIFORM_READ,
        );
    }

    fn barrier_compute(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(
            S::COMPUTE_SHADER,
            A::SHADER_WRITE,
            S::COMPUTE_SHADER,
            A::SHADER_READ | A::SHADER_WRITE,
        );
    }

    /// Make shader results readable by copies and by the host.
    fn barrier_to_host(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(
            S::COMPUTE_SHADER,
            A::SHADER_WRITE,
            S::TRANSFER | S::HOST,
            A::TRANSFER_READ | A::HOST_READ,
        );
    }

    /// Make a download copy readable by the host.
    fn barrier_copy_to_host(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(S::TRANSFER, A::TRANSFER_WRITE, S::HOST, A::HOST_READ);
    }

    fn dispatch(&self, e: Entry, groups: u32) {
        let d = &self.ctx.device;
        // SAFETY: recording; the set matches the pipeline layout.
        unsafe {
            d.cmd_bind_pipeline(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.pipelines[e as usize],
            );
            d.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                0,
                &[self.set],
                &[],
            );
            d.cmd_dispatch(self.cmd, groups, 1, 1);
        }
    }

    fn submit_wait(&self) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let cmds = [self.cmd];
        // SAFETY: the command buffer was recorded by `begin` .. here; the fence is unsignalled.
        unsafe {
            call("vkEndCommandBuffer", d.end_command_buffer(self.cmd))?;
            call(
                "vkQueueSubmit",
                d.queue_submit(
                    self.ctx.queue,
                    &[vk::SubmitInfo::default().command_buffers(&cmds)],
                    self.fence,
                ),
            )?;
            let waited = d.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS);
            if waited.is_err() {
                // Do not reuse resources the device may still touch.
                let _ = d.device_wait_idle();
            }
            call("vkWaitForFences", waited)?;
            call("vkResetFences", d.reset_fences(&[self.fence]))
        }
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
            &self.ctx.info,
            self.wg,
            self.chunk_bytes,
        )?;
        self.fit_buffers(&plan)?;
        let mut host = std::mem::take(&mut self.host);
        host.clear();
        host.extend_from_slice(&c.phi);
        host.extend_from_slice(&c.psi);
        self.bufs_mut()?.arrays[CIRC].host().write(&host);
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
        let b = self.bufs_mut()?;
        b.arrays[Z]
            .host()
            .write(&batch.z[start * nd..(start + count) * nd]);
        if plan.train {
            b.arrays[Y]
                .host()
                .write(&batch.y[start * plan.no..(start + count) * plan.no]);
        }
        b.params.write(&plan.params(start, count));
        self.begin()?;
        let b = self.bufs()?;
        let d = &self.ctx.device;
        if ci == 0 {
            b.arrays[CIRC].record_upload(d, self.cmd, (plan.g_len as u64 - 1) * 4);
        }
        b.arrays[Z].record_upload(d, self.cmd, (count * nd) as u64 * 4);
        if plan.train {
            b.arrays[Y].record_upload(d, self.cmd, (count * plan.no) as u64 * 4);
        }
        self.barrier_to_compute();
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
            self.barrier_compute();
            let blocks = (start + count - 1) / PART_LEN - start / PART_LEN + 1;
            self.dispatch(Entry::ReducePartials, blocks as u32);
            if ci + 1 == chunks.len() {
                self.barrier_compute();
                self.dispatch(Entry::ReduceFinal, (plan.g_len as u32).div_ceil(self.wg));
                self.barrier_to_host();
                let b = self.bufs()?;
                b.arrays[GRAD].record_download(&self.ctx.device, self.cmd, plan.g_len as u64 * 4);
                self.barrier_copy_to_host();
            }
            self.submit_wait()?;
        }
        let mut out = vec![0.0f32; plan.g_len];
        self.bufs_mut()?.arrays[GRAD].host().read(&mut out);
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
            self.barrier_to_host();
            let b = self.bufs()?;
            b.arrays[OUT].record_download(&self.ctx.device, self.cmd, (count * nd) as u64 * 4);
            self.barrier_copy_to_host();
            self.submit_wait()?;
            self.bufs_mut()?.arrays[OUT]
                .host()
                .read(&mut out[start * nd..(start + count) * nd]);
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

impl Drop for VulkanStack {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: after device_wait_idle nothing is in flight; destroying null handles is a no-op.
        unsafe {
            let _ = d.device_wait_idle();
            if let Some(mut b) = self.bufs.take() {
                b.params.destroy(d);
                for a in &mut b.arrays {
                    a.destroy(d);
                }
            }
            for p in &self.pipelines {
                d.destroy_pipeline(*p, None);
            }
            d.destroy_shader_module(self.module, None);
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.cmd_pool, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.dsl, None);
        }
        // `ctx` drops next: device, messenger, instance.
    }
}
