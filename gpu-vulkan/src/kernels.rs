//! The compiled shaders (SPIR-V made by build.rs with naga) and their compute pipelines.
use crate::context::Context;
use crate::error::{call, VkError};
use ash::vk;
use std::ffi::CStr;

/// Largest head count the shader's workgroup arrays hold.
pub(crate) const MAX_H: usize = 256;

/// A shader variant: widest embedding it holds, workgroup size, and how batch tokens are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Variant {
    /// Holds E up to 64 (else 16).
    pub wide: bool,
    /// Invocations per workgroup: 64, or 16 (for CPU implementations).
    pub wg: u32,
    /// Tokens stored as f16 pairs in u32 words (else f32).
    pub f16: bool,
}

impl Variant {
    /// The smallest variant that holds width `e`, or `None` when e > 64 (`wg` is 16 or 64).
    pub fn for_width(e: usize, wg: u32, f16: bool) -> Option<Variant> {
        match e {
            0..=16 => Some(Variant {
                wide: false,
                wg,
                f16,
            }),
            17..=64 => Some(Variant {
                wide: true,
                wg,
                f16,
            }),
            _ => None,
        }
    }

    pub fn max_e(self) -> usize {
        if self.wide {
            64
        } else {
            16
        }
    }

    /// Workgroup memory the shader declares, in bytes: five E-vectors, the reduction result
    /// (E + 2), WG partials and 8 group sums of E + 2 values, and two values per head.
    pub fn shared_bytes(self) -> u32 {
        let e = self.max_e() as u32;
        4 * (5 * e + (1 + self.wg + self.wg / 8) * (e + 2) + 2 * MAX_H as u32)
    }

    fn spirv(self) -> &'static [u8] {
        macro_rules! spv {
            ($name:literal) => {
                include_bytes!(concat!(env!("OUT_DIR"), "/attention_", $name, ".spv"))
            };
        }
        match (self.wide, self.wg == 16, self.f16) {
            (false, true, false) => spv!("e16_wg16_f32"),
            (false, true, true) => spv!("e16_wg16_f16"),
            (false, false, false) => spv!("e16_wg64_f32"),
            (false, false, true) => spv!("e16_wg64_f16"),
            (true, true, false) => spv!("e64_wg16_f32"),
            (true, true, true) => spv!("e64_wg16_f16"),
            (true, false, false) => spv!("e64_wg64_f32"),
            (true, false, true) => spv!("e64_wg64_f16"),
        }
    }
}

/// Entry points of the attention module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    FwdBwd,
    Predict,
    ReducePartials,
    ReduceFinal,
}

impl Entry {
    const ALL: [Entry; 4] = [
        Entry::FwdBwd,
        Entry::Predict,
        Entry::ReducePartials,
        Entry::ReduceFinal,
    ];
    fn name(self) -> &'static CStr {
        match self {
            Entry::FwdBwd => c"fwd_bwd",
            Entry::Predict => c"predict",
            Entry::ReducePartials => c"reduce_partials",
            Entry::ReduceFinal => c"reduce_final",
        }
    }
}

/// A shader module and the compute pipelines of its entry points, in the order given (the
/// one-layer [`Kernels`] and the stack engine's have four, the sampler one).
#[derive(Debug)]
pub(crate) struct Module {
    module: vk::ShaderModule,
    pipelines: Vec<vk::Pipeline>,
}

impl Module {
    /// Load `spirv` (made and validated by naga at build time) and make a pipeline per entry.
    pub fn new(
        ctx: &Context,
        layout: vk::PipelineLayout,
        spirv: &[u8],
        entries: &[&CStr],
    ) -> Result<Module, VkError> {
        let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv))
            .map_err(|e| VkError::Unsupported(format!("embedded SPIR-V is malformed: {e}")))?;
        let d = &ctx.device;
        // SAFETY: valid SPIR-V produced and validated by naga at build time.
        let module = call("vkCreateShaderModule", unsafe {
            d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
        })?;
        let mut m = Module {
            module,
            pipelines: vec![vk::Pipeline::null(); entries.len()],
        };
        let infos: Vec<vk::ComputePipelineCreateInfo> = entries
            .iter()
            .map(|name| {
                vk::ComputePipelineCreateInfo::default()
                    .stage(
                        vk::PipelineShaderStageCreateInfo::default()
                            .stage(vk::ShaderStageFlags::COMPUTE)
                            .module(module)
                            .name(name),
                    )
                    .layout(layout)
            })
            .collect();
        // SAFETY: the infos reference live objects.
        match unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &infos, None) } {
            Ok(p) => m.pipelines.copy_from_slice(&p),
            Err((p, r)) => {
                for (dst, src) in m.pipelines.iter_mut().zip(p) {
                    *dst = src;
                }
                // SAFETY: nothing uses the partial pipelines.
                unsafe { m.destroy(d) };
                return Err(VkError::Call {
                    call: "vkCreateComputePipelines",
                    result: r,
                });
            }
        }
        Ok(m)
    }

    /// The pipeline of entry `i` (its index in the `entries` given to [`Module::new`]).
    pub fn pipeline(&self, i: usize) -> vk::Pipeline {
        self.pipelines[i]
    }

    /// # Safety
    /// The pipelines must be idle; the module is unusable afterwards (null handles, so a second
    /// call is a no-op).
    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        // SAFETY: caller guarantees the pipelines are idle; null handles are ignored by Vulkan.
        unsafe {
            for p in &mut self.pipelines {
                d.destroy_pipeline(*p, None);
                *p = vk::Pipeline::null();
            }
            d.destroy_shader_module(self.module, None);
        }
        self.module = vk::ShaderModule::null();
    }
}

/// One variant's shader module and its four pipelines.
#[derive(Debug)]
pub(crate) struct Kernels {
    pub variant: Variant,
    module: Module,
}

impl Kernels {
    pub fn new(
        ctx: &Context,
        layout: vk::PipelineLayout,
        variant: Variant,
    ) -> Result<Kernels, VkError> {
        if variant.shared_bytes() > ctx.info.max_shared_memory {
            return Err(VkError::Unsupported(format!(
                "the shader for E <= {} needs {} bytes of workgroup memory; the device has {}",
                variant.max_e(),
                variant.shared_bytes(),
                ctx.info.max_shared_memory
            )));
        }
        let module = Module::new(ctx, layout, variant.spirv(), &Entry::ALL.map(Entry::name))?;
        Ok(Kernels { variant, module })
    }

    pub fn pipeline(&self, e: Entry) -> vk::Pipeline {
        self.module.pipeline(e as usize)
    }

    /// # Safety
    /// As [`Module::destroy`].
    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        // SAFETY: forwarded to the caller.
        unsafe { self.module.destroy(d) }
    }
}

/// The law-2 sampler (`sample.wgsl`, entry `sample`) for workgroup size `wg` (16 or 64).
pub(crate) fn sampler(
    ctx: &Context,
    layout: vk::PipelineLayout,
    wg: u32,
) -> Result<Module, VkError> {
    let spirv: &[u8] = if wg == 16 {
        include_bytes!(concat!(env!("OUT_DIR"), "/sample_wg16.spv"))
    } else {
        include_bytes!(concat!(env!("OUT_DIR"), "/sample_wg64.spv"))
    };
    Module::new(ctx, layout, spirv, &[c"sample"])
}
