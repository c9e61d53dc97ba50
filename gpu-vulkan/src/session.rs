//! [`Session`]: what each family's engine needs around its shaders, made once per engine: the
//! device ([`Context`]), one descriptor set (a uniform block at binding 0, storage buffers at
//! 1..), its pipeline layout, one command buffer and one fence; recording helpers (barriers,
//! dispatches) and a blocking submit; [`DeviceArrays`], the buffers bound to that set; and
//! [`ModuleSession`], the three together with one shader module, as the stack and GPT-2 engines
//! use them.
use crate::buffer::{Buffer, GpuArray, HostMap};
use crate::context::{Context, DeviceKind, Options};
use crate::error::{call, VkError};
use crate::kernels::Module;
use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

/// How long to wait for one submission before reporting a hung device.
const FENCE_TIMEOUT_NS: u64 = 600_000_000_000;

/// The device `opts` selects, the shaders' workgroup size (`opts.workgroup_size`: 16 or 64,
/// refused otherwise, before any device is opened; else 16 on a CPU implementation and 64 on a
/// GPU) and which of its memory the host maps directly (`opts.map_device_memory`).
pub(crate) fn open(opts: &Options) -> Result<(Arc<Context>, u32, HostMap), VkError> {
    let wg = match opts.workgroup_size {
        Some(w @ (16 | 64)) => Some(w),
        Some(w) => {
            return Err(VkError::Unsupported(format!(
                "workgroup size {w}: the shaders are built for 16 and 64"
            )))
        }
        None => None,
    };
    let ctx = Context::shared(opts)?;
    let wg = wg.unwrap_or(if ctx.info.kind == DeviceKind::Cpu {
        16
    } else {
        64
    });
    let map = HostMap::of(opts.map_device_memory, ctx.info.kind);
    Ok((ctx, wg, map))
}

pub(crate) struct Session {
    pub ctx: Arc<Context>,
    /// Which device memory the host maps directly (the rest is staged).
    pub map: HostMap,
    dsl: vk::DescriptorSetLayout,
    pub layout: vk::PipelineLayout,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    cmd_pool: vk::CommandPool,
    pub cmd: vk::CommandBuffer,
    fence: vk::Fence,
}

impl Session {
    /// A session on `ctx` whose descriptor set holds a uniform block and `storage` storage
    /// buffers, whose arrays the host maps as `map` allows.
    pub fn new(ctx: Arc<Context>, storage: u32, map: HostMap) -> Result<Session, VkError> {
        let mut s = Session {
            ctx,
            map,
            dsl: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            cmd_pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
        };
        // On error `s` drops and destroys whatever was created.
        s.init(storage)?;
        Ok(s)
    }

    fn init(&mut self, storage: u32) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let mut bindings = vec![vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        bindings.extend((1..=storage).map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        }));
        // SAFETY (whole block): create infos reference live locals; handles are stored in self and
        // destroyed in Drop.
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
                    descriptor_count: storage,
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
        }
        Ok(())
    }

    /// Point the descriptor set at `uniform` (binding 0) and `storage` (bindings 1..).
    pub fn bind(&self, uniform: &Buffer, storage: &[&Buffer]) {
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = std::iter::once(uniform)
            .chain(storage.iter().copied())
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
        unsafe { self.ctx.device.update_descriptor_sets(&writes, &[]) };
    }

    /// Reset and begin the command buffer.
    pub fn begin(&self) -> Result<(), VkError> {
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

    /// Record a memory barrier from `src` (`src_access`) to `dst` (`dst_access`).
    pub fn barrier(
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
    pub fn barrier_to_compute(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(
            S::TRANSFER | S::HOST | S::COMPUTE_SHADER,
            A::TRANSFER_WRITE | A::HOST_WRITE | A::SHADER_WRITE,
            S::COMPUTE_SHADER,
            A::SHADER_READ | A::SHADER_WRITE | A::UNIFORM_READ,
        );
    }

    /// Make one dispatch's writes visible to the next.
    pub fn barrier_compute(&self) {
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
    pub fn barrier_to_host(&self) {
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
    pub fn barrier_copy_to_host(&self) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        self.barrier(S::TRANSFER, A::TRANSFER_WRITE, S::HOST, A::HOST_READ);
    }

    /// Record `groups` workgroups of `pipeline` over the session's descriptor set.
    pub fn dispatch(&self, pipeline: vk::Pipeline, groups: u32) {
        let d = &self.ctx.device;
        // SAFETY: recording; the set matches the pipeline layout.
        unsafe {
            d.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
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

    /// End the command buffer, submit it and wait for it.
    pub fn submit_wait(&self) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let cmds = [self.cmd];
        // SAFETY: the command buffer was recorded by `begin` .. here; the fence is unsignalled.
        unsafe {
            call("vkEndCommandBuffer", d.end_command_buffer(self.cmd))?;
            self.ctx.submit(&cmds, self.fence)?;
            let waited = d.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS);
            if waited.is_err() {
                // Do not reuse resources the device may still touch.
                self.ctx.wait_idle();
            }
            self.ctx.note(call("vkWaitForFences", waited))?;
            call("vkResetFences", d.reset_fences(&[self.fence]))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: the engine owning the session destroyed its buffers and pipelines first; once
        // the queue is idle nothing of ours is in flight; destroying null handles is a no-op.
        self.ctx.wait_idle();
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.cmd_pool, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.dsl, None);
        }
        // `ctx` drops next: the process's shared context stays open.
    }
}

/// The made buffers of a [`DeviceArrays`]: the uniform block (binding 0) and the storage arrays
/// (bindings 1..=N, in order).
pub(crate) struct Buffers<const N: usize> {
    pub uniform: Buffer,
    pub arrays: [GpuArray; N],
}

/// An engine's device buffers bound to its [`Session`]'s descriptor set: a uniform block and `N`
/// storage arrays, made by the first [`DeviceArrays::fit`] and grown on demand by later ones.
/// The engine destroys them ([`DeviceArrays::destroy`]) before its session drops.
pub(crate) struct DeviceArrays<const N: usize> {
    uniform_bytes: u64,
    uniform_usage: vk::BufferUsageFlags,
    uniform_memory: vk::MemoryPropertyFlags,
    made: Option<Buffers<N>>,
}

impl<const N: usize> DeviceArrays<N> {
    /// No buffers yet; the uniform block will be `bytes` long, with `usage` in `memory`.
    pub fn new(
        bytes: u64,
        usage: vk::BufferUsageFlags,
        memory: vk::MemoryPropertyFlags,
    ) -> DeviceArrays<N> {
        DeviceArrays {
            uniform_bytes: bytes,
            uniform_usage: usage,
            uniform_memory: memory,
            made: None,
        }
    }

    /// The buffers (made by the first [`DeviceArrays::fit`]).
    pub fn get(&self) -> Result<&Buffers<N>, VkError> {
        self.made.as_ref().ok_or_else(|| {
            VkError::Unsupported("internal: buffers used before they were made".into())
        })
    }

    /// The buffers, mutably.
    pub fn get_mut(&mut self) -> Result<&mut Buffers<N>, VkError> {
        self.made.as_mut().ok_or_else(|| {
            VkError::Unsupported("internal: buffers used before they were made".into())
        })
    }

    /// Make every storage array at least `need` bytes (binding order); rebind `s`'s descriptor
    /// set if any was made or grew. A grown array takes at least half again its old size, so
    /// slowly growing batches do not reallocate every call, but never more than `cap` bytes
    /// (nor less than its need).
    pub fn fit(&mut self, s: &Session, need: [u64; N], cap: Option<u64>) -> Result<(), VkError> {
        let ctx = &s.ctx;
        let d = &ctx.device;
        let mut changed = false;
        if self.made.is_none() {
            let mut uniform = Buffer::new(
                ctx,
                self.uniform_bytes,
                self.uniform_usage,
                self.uniform_memory,
            )?;
            let mut made: Vec<GpuArray> = Vec::new();
            for &bytes in &need {
                match GpuArray::new(ctx, bytes, s.map) {
                    Ok(a) => made.push(a),
                    Err(e) => {
                        // SAFETY: nothing uses these yet.
                        unsafe {
                            made.iter_mut().for_each(|a| a.destroy(d));
                            uniform.destroy(d);
                        }
                        return Err(e);
                    }
                }
            }
            let Ok(arrays) = <[GpuArray; N]>::try_from(made) else {
                return Err(VkError::Unsupported(format!(
                    "internal: {N} buffers expected"
                )));
            };
            self.made = Some(Buffers { uniform, arrays });
            changed = true;
        } else if let Some(b) = self.made.as_mut() {
            for (a, &bytes) in b.arrays.iter_mut().zip(&need) {
                if a.size() < bytes {
                    let grown = bytes.max(a.size() + a.size() / 2);
                    let fresh =
                        GpuArray::new(ctx, cap.map_or(grown, |c| grown.min(c.max(bytes))), s.map)?;
                    // SAFETY: the last submission finished (we wait on its fence before returning).
                    unsafe { a.destroy(d) };
                    *a = fresh;
                    changed = true;
                }
            }
        }
        if changed {
            let b = self.get()?;
            let arrays: Vec<&Buffer> = b.arrays.iter().map(|a| &a.dev).collect();
            s.bind(&b.uniform, &arrays);
        }
        Ok(())
    }

    /// Free the buffers, if made (the device must be idle with respect to them).
    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        if let Some(mut b) = self.made.take() {
            // SAFETY: caller guarantees no pending use.
            unsafe {
                b.uniform.destroy(d);
                for a in &mut b.arrays {
                    a.destroy(d);
                }
            }
        }
    }
}

/// The device side of an engine with one shader module (the stack's and GPT-2's): its
/// [`Session`], the [`Module`] (a pipeline per entry point), its [`DeviceArrays`] and the
/// shaders' workgroup size. Dropping it waits for the device, destroys the buffers and the
/// module, then drops the session.
pub(crate) struct ModuleSession<const N: usize> {
    pub s: Session,
    module: Option<Module>,
    pub bufs: DeviceArrays<N>,
    /// Invocations per workgroup of the shaders in use.
    pub wg: u32,
}

impl<const N: usize> ModuleSession<N> {
    /// Open the device `opts` selects ([`open`]) with a session of `N` storage buffers, and load
    /// `spirv(wg)` with a pipeline per name in `entries`; `bufs` are made by their first fit.
    pub fn new(
        opts: &Options,
        spirv: fn(u32) -> &'static [u8],
        entries: &[&CStr],
        bufs: DeviceArrays<N>,
    ) -> Result<ModuleSession<N>, VkError> {
        let (ctx, wg, map) = open(opts)?;
        let mut m = ModuleSession {
            s: Session::new(ctx, N as u32, map)?,
            module: None,
            bufs,
            wg,
        };
        // On error `m` drops and destroys whatever was created.
        m.module = Some(Module::new(&m.s.ctx, m.s.layout, spirv(wg), entries)?);
        Ok(m)
    }

    /// Record `groups` workgroups of entry `i`'s pipeline (its index in `entries`).
    pub fn dispatch(&self, i: usize, groups: u32) {
        if let Some(m) = &self.module {
            self.s.dispatch(m.pipeline(i), groups);
        }
    }

    /// End the recorded dispatches with the download of storage array `i`'s first `out.len()`
    /// words, submit, wait, and read them into `out`.
    pub fn finish_download(&mut self, i: usize, out: &mut [f32]) -> Result<(), VkError> {
        self.s.barrier_to_host();
        let b = self.bufs.get()?;
        b.arrays[i].record_download(&self.s.ctx.device, self.s.cmd, out.len() as u64 * 4);
        self.s.barrier_copy_to_host();
        self.s.submit_wait()?;
        self.bufs.get_mut()?.arrays[i].host().read(out);
        Ok(())
    }
}

impl<const N: usize> Drop for ModuleSession<N> {
    fn drop(&mut self) {
        let d = &self.s.ctx.device;
        // SAFETY: once the queue is idle nothing of ours is in flight; destroying null handles is
        // a no-op.
        self.s.ctx.wait_idle();
        unsafe {
            self.bufs.destroy(d);
            if let Some(m) = &mut self.module {
                m.destroy(d);
            }
        }
        // `s` drops next: descriptor set, command buffer, fence (the device stays, shared).
    }
}
