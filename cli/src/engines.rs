//! Engine selection for `--engine`. Each engine crate registers itself here.
use crate::error::{CliError, CliResult};
use icl_core::{Engine, Scalar, ScalarEngine};

/// Engines built into this binary, fastest first.
pub const ENGINES: &[&str] = &["scalar"];

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
            "scalar" => Ok(ScalarEngine::<f32>::boxed()),
            _ => Err(unknown(name)),
        }
    }
}

impl EngineScalar for f64 {
    fn engine(name: &str) -> CliResult<Box<dyn Engine<f64>>> {
        match name {
            "scalar" => Ok(ScalarEngine::<f64>::boxed()),
            _ => Err(unknown(name)),
        }
    }
}
