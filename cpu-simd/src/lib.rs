//! # icl-cpu-simd
//!
//! The fast CPU engine of icl: batched forward and analytic backward of one-layer attention on
//! the effective circuits (every parametrisation, softmax, normalised activations and linear
//! attention), one sequence per SIMD lane (16 per `f32` vector, 8 per `f64` vector), rayon over
//! fixed chunks of the batch, and the training data generated inside the engine (one
//! xoshiro256++ stream per lane, vectorised Box–Muller). The kernels are compiled for SSE2, AVX2
//! and AVX-512 and picked at run time ([`dispatch`]); at AVX-512 the forward/backward computes
//! in 512-bit register types ([`wide`]: the same operations, so the same bits).
//!
//! Deterministic: the chunking and the reduction order do not depend on the thread count, so
//! 1, 2 or 16 threads give bit-identical results, and neither do they depend on the dispatch
//! level (fused multiply-adds only where written, rounded once at every level; the crate's own
//! `exp`/`ln`/`sin`/`cos`). Equal to
//! [`icl_core::AttentionReference`] up to floating-point rounding (summation order, the polynomials).
//!
//! GPT-2 models ([`gpt2`], [`Gpt2Simd`]) run differently: chunks of [`GPT2_CHUNK`] prompts, every
//! weight one matrix product over a chunk's rows (the `matrixmultiply` crate), vector row
//! operations between them. Same bits at any thread count and at every forced level on one
//! machine; the products' micro-kernel is the CPU's choice, so other machines may round
//! differently (see [`gpt2`]).
pub mod data;
pub mod dispatch;
pub mod engine;
pub mod gauss;
pub mod gpt2;
pub mod kernel;
pub mod lane;
pub mod lanes;
pub mod multilayer;
mod par;
pub mod wide;

pub use dispatch::Level;
pub use engine::{SimdEngine, CHUNK};
pub use gpt2::{Gpt2Simd, GPT2_CHUNK};
pub use lanes::{Lanes, Pack, SimdScalar};
pub use multilayer::{MlScalar, MlSimd, ML_CHUNK};

/// The SIMD engine: one-layer attention ([`SimdEngine`]), transformer stacks ([`MlSimd`]) and
/// GPT-2 models ([`Gpt2Simd`]), at the best vector level of this CPU (or `ICL_SIMD`), or at a
/// forced `level`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Simd {
    pub level: Option<Level>,
}

impl Simd {
    /// At a forced vector level (levels above the CPU's run at the CPU's best).
    pub fn with_level(level: Level) -> Self {
        Simd { level: Some(level) }
    }
}

// The engine hands out trait objects made by `SimdScalar`'s per-precision functions: those are
// ordinary functions of this crate, so the kernels behind the objects (every width, level and
// family) are compiled once, here, and not again in every crate and test binary that asks for an
// engine (that was most of a build).
impl<T: SimdScalar> icl_core::Engine<T> for Simd {
    fn name(&self) -> &str {
        "simd"
    }
    fn attention(&self) -> icl_core::Result<Box<dyn icl_core::AttentionKernels<T>>> {
        Ok(T::attention_kernels(self.level))
    }
    fn stack(&self) -> icl_core::Result<Box<dyn icl_core::engine::StackKernels<T>>> {
        Ok(T::stack_kernels(self.level))
    }
    fn gpt2(&self) -> icl_core::Result<Box<dyn icl_core::engine::Gpt2Kernels<T>>> {
        Ok(T::gpt2_kernels(self.level))
    }
}
