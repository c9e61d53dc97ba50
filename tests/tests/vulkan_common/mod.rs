//! Shared helpers of the Vulkan tests: the engine under validation, and relative errors.
//!
//! The tests run for real on Mesa's lavapipe (CI installs it with .ci/vulkan-setup.sh); without a
//! Vulkan device they fail with the fix in the message rather than being skipped.
#![allow(dead_code)]
use icl_gpu_vulkan::{Options, Validation, VulkanEngine, VulkanFactory};

/// An engine with the Khronos validation layer on (required in CI, where the setup script
/// installs it; on when installed elsewhere).
pub fn engine_with(f16: bool, max_chunk_bytes: Option<u64>) -> VulkanEngine {
    engine_wg(f16, max_chunk_bytes, None)
}

/// The engine's options under validation, with the workgroup size forced (16: the CPU
/// variant, 64: the GPU one).
pub fn options(f16: bool, max_chunk_bytes: Option<u64>, workgroup_size: Option<u32>) -> Options {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let validation = if ci {
        Validation::Required
    } else {
        Validation::IfAvailable
    };
    let mut opts = Options {
        validation,
        f16_batch: f16,
        workgroup_size,
        // (ICL_VULKAN_STAGING=1 runs every Vulkan test with host access staged)
        ..Options::from_env()
    };
    if let Some(b) = max_chunk_bytes {
        opts.max_chunk_bytes = b;
    }
    opts
}

/// Like [`engine_with`], with the workgroup size forced (16: the CPU variant, 64: the GPU one).
pub fn engine_wg(
    f16: bool,
    max_chunk_bytes: Option<u64>,
    workgroup_size: Option<u32>,
) -> VulkanEngine {
    match VulkanEngine::new(&options(f16, max_chunk_bytes, workgroup_size)) {
        Ok(e) => e,
        Err(e) => {
            panic!("{e}\n(the Vulkan tests need a device: run `bash .ci/vulkan-setup.sh` as root)")
        }
    }
}

/// The Vulkan engine (every family it runs) with the workgroup size forced; a missing device
/// fails here, with the fix.
pub fn factory_wg(workgroup_size: Option<u32>) -> VulkanFactory {
    drop(engine_wg(false, None, workgroup_size));
    VulkanFactory(options(false, None, workgroup_size))
}

/// The Vulkan engine (every family) with every host access staged through copies (what discrete
/// GPUs do; lavapipe would map its memory directly).
pub fn factory_staged() -> VulkanFactory {
    let opts = Options {
        map_device_memory: Some(false),
        ..options(false, None, None)
    };
    drop(VulkanEngine::new(&opts).unwrap_or_else(|e| panic!("{e}")));
    VulkanFactory(opts)
}

pub fn engine() -> VulkanEngine {
    engine_with(false, None)
}

/// Fail on any validation-layer error the engine collected.
pub fn assert_no_validation_errors(eng: &VulkanEngine) {
    let errs = eng.validation_errors();
    assert!(
        errs.is_empty(),
        "{} Vulkan validation errors:\n{}",
        errs.len(),
        errs.join("\n")
    );
}

/// ||a - b|| / ||b|| (b the reference), with a floor on ||b||.
pub fn rel(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    num.sqrt() / den.sqrt().max(floor)
}

pub fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}
