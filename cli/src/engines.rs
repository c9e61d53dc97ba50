//! Engine selection for `--engine`. Each engine crate registers itself here.
use crate::error::{CliError, CliResult};
use icl_core::{Engine, Scalar, ScalarEngine};

/// Engines built into this binary, fastest first.
pub const ENGINES: &[&str] = &["simd", "scalar", "vulkan"];

/// The default engine: the fastest one built in.
pub fn default_engine() -> &'static str {
    ENGINES[0]
}

/// Scalars the CLI can run engines in.
pub trait EngineScalar: Scalar + Send + Sync {
    /// Build the named engine for this scalar type.
    fn engine(name: &str) -> CliResult<Box<dyn Engine<Self>>>;
}

fn unknown(name: &str) -> CliError {
    CliError::input(format!(
        "unknown engine {name:?}; built-in engines: {}",
        ENGINES.join(", ")
    ))
}

impl EngineScalar for f32 {
    fn engine(name: &str) -> CliResult<Box<dyn Engine<f32>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f32>::boxed()),
            "scalar" => Ok(ScalarEngine::<f32>::boxed()),
            "vulkan" => vulkan_engine(),
            _ => Err(unknown(name)),
        }
    }
}

impl EngineScalar for f64 {
    fn engine(name: &str) -> CliResult<Box<dyn Engine<f64>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f64>::boxed()),
            "scalar" => Ok(ScalarEngine::<f64>::boxed()),
            "vulkan" => Err(CliError::input(
                "the vulkan engine computes in f32: use --set train.dtype=f32, or another engine for f64",
            )),
            _ => Err(unknown(name)),
        }
    }
}

/// The Vulkan engine (options from ICL_VULKAN_* environment variables); without a Vulkan device
/// a runtime error that names the fix (install mesa-vulkan-drivers or a GPU driver).
fn vulkan_engine() -> CliResult<Box<dyn Engine<f32>>> {
    match icl_vulkan::VulkanEngine::from_env() {
        Ok(e) => Ok(Box::new(e)),
        Err(e) => Err(CliError::runtime(e.to_string())),
    }
}
