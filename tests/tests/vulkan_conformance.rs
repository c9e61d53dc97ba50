//! The engine conformance suite on the Vulkan engine (lavapipe in CI), for both workgroup
//! variants (16: the CPU driver's, 64: a GPU's), f32 only: one-layer attention against the
//! reference, the refusal of multi-layer transformers.
mod vulkan_common;

use icl_core::Engine;
use vulkan_common::factory_wg;

icl_core::engine_conformance!(vulkan_wg16, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(16)))
});
icl_core::engine_conformance!(vulkan_wg64, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(64)))
});
