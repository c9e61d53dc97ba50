//! # icl-gpu-vulkan
//!
//! A Vulkan compute engine for icl: [`VulkanFactory`] implements
//! [`icl_core::Engine<f32>`](icl_core::Engine) for one-layer attention ([`VulkanEngine`]: the
//! attention forward/backward over a batch) and multi-layer transformer stacks ([`VulkanStack`]:
//! forward and backward of every layer, looped or not, softmax or linear; the IV model runs on
//! it too) and GPT-2 in-context learners ([`VulkanGpt2`]: Garg et al.'s model, forward and
//! backward op by op, llm.c's way), in compute shaders.
//!
//! * Device: [`ash`] with the `loaded` feature (libvulkan is opened at run time, so the crate
//!   builds without Vulkan installed). Devices are ranked discrete, integrated, virtual, CPU
//!   (Mesa's lavapipe). Without a loader or a device, [`VulkanEngine::new`] returns
//!   [`VkError::Loader`] / [`VkError::NoDevice`], whose message names the fix
//!   ("no Vulkan device found: install mesa-vulkan-drivers (lavapipe) or a GPU driver").
//! * Shaders: `shaders/attention.wgsl`, compiled to SPIR-V by naga in `build.rs` (no system
//!   tool). Entry points `fwd_bwd` (loss + gradient factors per sequence), `predict` (any
//!   length L), `reduce_partials` and `reduce_final` (fixed-order sums: deterministic);
//!   `shaders/stack.wgsl` for the stacks (`forward`, `fwd_bwd` and the same two reductions);
//!   `shaders/sample.wgsl` for law-2 batches (`sample`); `shaders/gpt2.wgsl` for GPT-2, one
//!   entry point per operation (`encoder`, `layernorm_fwd`, `matmul_fwd`, `attention_fwd`, ...,
//!   their backwards), every sum in a fixed order.
//! * Precision: f32 compute; [`Options::f16_batch`] stores the batch tokens as IEEE half (via
//!   `half`), halving upload and token reads.
//! * Data: under data law 1 the CPU makes the batches ([`icl_core::Task::sample_into`]) and the
//!   engine uploads them (n (L+1) E floats: 252 KB per he2025 step); under law 2 the one-layer
//!   engine makes the batches of the Gaussian regression tasks on the device
//!   (`shaders/sample.wgsl`), bit for bit the CPU's, checked on the first batch
//!   ([`DeviceData`]). The stack engine keeps the CPU sampler (its tasks draw a Haar rotation
//!   per sequence).
//!
//! See README.md for the design and what to expect on a real GPU.
pub mod bench;
mod buffer;
mod context;
mod engine;
mod error;
mod gpt2;
mod kernels;
mod session;
mod stack;

pub use context::{DeviceInfo, DeviceKind, Options, Validation};
pub use engine::{DeviceData, VulkanEngine, VulkanFactory};
pub use error::{VkError, INSTALL_HINT};
pub use gpt2::VulkanGpt2;
pub use stack::VulkanStack;
