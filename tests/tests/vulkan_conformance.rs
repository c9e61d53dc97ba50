//! The engine conformance suite on the Vulkan engine (lavapipe in CI), for both workgroup
//! variants (16: the CPU driver's, 64: a GPU's), f32 only: one-layer attention and multi-layer
//! transformer stacks (looped or not, softmax and linear, T = 1..3, stacked passes and the
//! leave-one-out mask) against the reference, the refusal of GPT-2 models.
mod vulkan_common;

use icl_core::Engine;
use vulkan_common::factory_wg;

icl_core::engine_conformance!(vulkan_wg16, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(16)))
});
icl_core::engine_conformance!(vulkan_wg64, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(64)))
});
