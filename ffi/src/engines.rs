//! Engine selection by name, the same names and the same default as `icl train --engine`
//! (`cli/src/engines.rs`), so a trainer made through the C or C++ API follows the CLI's trajectory.
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core::{Engine, Scalar, ScalarEngine};

/// Engines built into this library, fastest first (the CLI's list).
pub const ENGINES: &[&str] = &["simd", "scalar", "vulkan"];

/// The default engine: the fastest one built in, as in the CLI.
pub fn default_engine() -> &'static str {
    ENGINES[0]
}

/// Scalars the API runs engines in.
pub trait FfiScalar: Scalar + Send + Sync {
    /// Build the named engine for this scalar type.
    fn engine(name: &str) -> FfiResult<Box<dyn Engine<Self>>>;
}

fn unknown(name: &str) -> FfiError {
    FfiError::new(
        icl_status::ICL_ERR_UNKNOWN_NAME,
        format!(
            "unknown engine {name:?}; built-in engines: {}",
            ENGINES.join(", ")
        ),
    )
}

/// The Vulkan engine (options from the ICL_VULKAN_* environment variables, as in the CLI);
/// without a Vulkan device, `ICL_ERR_UNSUPPORTED` with the reason.
fn vulkan_engine() -> FfiResult<Box<dyn Engine<f32>>> {
    match icl_vulkan::VulkanEngine::from_env() {
        Ok(e) => Ok(Box::new(e)),
        Err(e) => Err(FfiError::new(
            icl_status::ICL_ERR_UNSUPPORTED,
            format!("vulkan engine unavailable: {e}"),
        )),
    }
}

impl FfiScalar for f32 {
    fn engine(name: &str) -> FfiResult<Box<dyn Engine<f32>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f32>::boxed()),
            "scalar" => Ok(ScalarEngine::<f32>::boxed()),
            "vulkan" => vulkan_engine(),
            _ => Err(unknown(name)),
        }
    }
}

impl FfiScalar for f64 {
    fn engine(name: &str) -> FfiResult<Box<dyn Engine<f64>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f64>::boxed()),
            "scalar" => Ok(ScalarEngine::<f64>::boxed()),
            "vulkan" => Err(FfiError::new(
                icl_status::ICL_ERR_UNSUPPORTED,
                "the vulkan engine computes in f32: set train.dtype = f32, or use another engine for f64",
            )),
            _ => Err(unknown(name)),
        }
    }
}
