//! The engine registry: the names every front end accepts for `--engine` / `engine=`, the default,
//! and engine factories for the one trainer.
use crate::error::{Result, RunError};
use icl_core::multilayer::{StackEngine, StackScalar};
use icl_core::{Engine, EngineFactory, Scalar, ScalarEngine};

/// Make the calling thread worker 0 of rayon's global pool (the pool's other threads are spawned
/// as usual; `RAYON_NUM_THREADS` still sets the total). For a process's main thread, called before
/// anything uses rayon: the engines' parallel loops then run on this thread and the pool's other
/// workers instead of handing every step to the pool and sleeping until it is done (a wake-up
/// per step, tens of microseconds on a busy or virtual machine). Returns false, changing nothing,
/// when the global pool already exists. Only for a thread that does not block while other
/// threads use the global pool (a one-thread pool would wait for it): the CLI's main thread.
pub fn adopt_current_thread() -> bool {
    rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global()
        .is_ok()
}

/// Engines built in, fastest first.
pub const ENGINES: &[&str] = &["simd", "scalar", "vulkan"];

/// The default engine: the fastest one built in.
pub fn default_engine() -> &'static str {
    ENGINES[0]
}

fn unknown(name: &str) -> RunError {
    RunError::UnknownName(format!(
        "unknown engine {name:?}; built-in engines: {}",
        ENGINES.join(", ")
    ))
}

/// Scalars the run layer computes in (f32, f64), each with its engines.
pub trait RunScalar: Scalar + icl_simd::SimdScalar + Send + Sync {
    /// The named engine for this scalar type.
    fn engine(name: &str) -> Result<Box<dyn Engine<Self>>>;
    /// The named engine for multi-layer transformers.
    fn stack_engine(name: &str) -> Result<Box<dyn StackEngine<Self>>> {
        match name {
            "simd" => Ok(Box::new(icl_simd::MlSimd::<Self>::new())),
            "scalar" => Ok(Box::new(StackScalar::<Self>::new())),
            "vulkan" => Err(RunError::Refused(
                "the vulkan engine runs one-layer attention; use --engine simd or scalar for multi-layer transformers".into(),
            )),
            _ => Err(unknown(name)),
        }
    }
}

impl RunScalar for f32 {
    fn engine(name: &str) -> Result<Box<dyn Engine<f32>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f32>::boxed()),
            "scalar" => Ok(ScalarEngine::<f32>::boxed()),
            "vulkan" => icl_vulkan::VulkanEngine::from_env()
                .map(|e| Box::new(e) as Box<dyn Engine<f32>>)
                .map_err(|e| RunError::Engine(e.to_string())),
            _ => Err(unknown(name)),
        }
    }
}

impl RunScalar for f64 {
    fn engine(name: &str) -> Result<Box<dyn Engine<f64>>> {
        match name {
            "simd" => Ok(icl_simd::SimdEngine::<f64>::boxed()),
            "scalar" => Ok(ScalarEngine::<f64>::boxed()),
            "vulkan" => Err(RunError::Refused(
                "the vulkan engine computes in f32: set train.dtype = f32, or use another engine for f64".into(),
            )),
            _ => Err(unknown(name)),
        }
    }
}

/// The vector instruction level (`sse2`, `avx2`, `avx512`) the `simd` engine runs at in `T`, for
/// one-layer attention or multi-layer transformers; `None` for the other engines.
pub fn simd_level<T: RunScalar>(engine: &str, multilayer: bool) -> Option<String> {
    (engine == "simd").then(|| {
        let level = if multilayer {
            icl_simd::MlSimd::<T>::new().level()
        } else {
            icl_simd::SimdEngine::<T>::new().level()
        };
        level.as_str().to_string()
    })
}

/// Check that an engine name exists and can run in `dtype` (without starting it).
pub fn check(name: &str, dtype: icl_core::config::Dtype) -> Result<()> {
    if !ENGINES.contains(&name) {
        return Err(unknown(name));
    }
    if name == "vulkan" && dtype == icl_core::config::Dtype::F64 {
        return f64::engine(name).map(|_| ());
    }
    Ok(())
}

/// The engines of one name, as the trainer's factory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engines(pub String);

impl Engines {
    /// The named engines, or the default.
    pub fn named(name: Option<&str>) -> Self {
        Engines(name.unwrap_or(default_engine()).to_string())
    }
}

impl<T: RunScalar> EngineFactory<T> for Engines {
    fn name(&self) -> &str {
        &self.0
    }
    fn attention(&self) -> icl_core::Result<Box<dyn Engine<T>>> {
        T::engine(&self.0).map_err(|e| match e {
            RunError::Core(c) => c,
            other => icl_core::Error::Unsupported(other.to_string()),
        })
    }
    fn stack(&self) -> icl_core::Result<Box<dyn StackEngine<T>>> {
        T::stack_engine(&self.0).map_err(|e| match e {
            RunError::Core(c) => c,
            other => icl_core::Error::Unsupported(other.to_string()),
        })
    }
}
