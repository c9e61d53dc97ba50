//! # icl-gpu-vulkan
//!
//! A Vulkan compute engine for icl: [`VulkanFactory`] implements
//! [`icl_core::Engine<f32>`](icl_core::Engine) for one-layer attention ([`VulkanEngine`]: the
//! attention forward/backward over a batch) and multi-layer transformer stacks ([`VulkanStack`]:
//! forward and backward of every layer, looped or not, softmax or linear; the IV model runs on
//! it too), in compute shaders.
//!
//! * Device: [`ash`] with the `loaded` feature (libvulkan is opened at run time, so the crate
//!   builds without Vulkan installed). Devices are ranked discrete, integrated, virtual, CPU
//!   (Mesa's lavapipe). Without a loader or a device, [`VulkanEngine::new`] returns
//!   [`VkError::Loader`] / [`VkError::NoDevice`], whose message names the fix
//!   ("no Vulkan device found: install mesa-vulkan-drivers (lavapipe) or a GPU driver").
//! * Shaders: `shaders/attention.wgsl`, compiled to SPIR-V by naga in `build.rs` (no system
//!   tool). Entry points `fwd_bwd` (loss + gradient factors per sequence), `predict` (any
//!   length L), `reduce_partials` and `reduce_final` (fixed-order sums: deterministic);
//!   `shaders/stack.wgsl` for the stacks (`forward`, `fwd_bwd` and the same two reductions).
//! * Precision: f32 compute; [`Options::f16_batch`] stores the batch tokens as IEEE half (via
//!   `half`), halving upload and token reads.
//! * Data generation stays on the CPU ([`icl_core::Task::sample_into`]): the sampler draws f64
//!   Box–Muller normals from per-sequence xoshiro streams, which shaders could only match
//!   bit-for-bit with f64 arithmetic (optional and slow on most GPUs). Keeping it on the CPU
//!   makes every engine train on identical batches, so trajectories are comparable, and the
//!   upload is small (n (L+1) E floats: 252 KB per he2025 step).
//!
//! See README.md for the design and what to expect on a real GPU.
pub mod bench;
mod buffer;
mod context;
mod engine;
mod error;
mod kernels;
mod session;
mod stack;

pub use context::{DeviceInfo, DeviceKind, Options, Validation};
pub use engine::{DeviceData, VulkanEngine, VulkanFactory};
pub use error::{VkError, INSTALL_HINT};
pub use stack::VulkanStack;
