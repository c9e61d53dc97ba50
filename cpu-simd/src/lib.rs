//! # icl-simd
//!
//! The fast CPU engine of icl: batched forward and analytic backward of one-layer attention on
//! the effective circuits (every parametrisation, softmax, normalised activations and linear
//! attention), one sequence per SIMD lane (`wide::f32x8` / `wide::f64x4`), rayon over fixed
//! chunks of the batch, and the training data generated inside the engine (four xoshiro256++
//! streams per `u64x4`, vectorised Box–Muller).
//!
//! Deterministic: the chunking and the reduction order do not depend on the thread count, so
//! 1, 2 or 16 threads give bit-identical results. Equal to [`icl_core::ScalarEngine`] up to
//! floating-point rounding (summation order, fused multiply-add, vectorised `exp`/`ln`/`sin_cos`).
pub mod data;
pub mod dispatch;
pub mod engine;
pub mod gauss;
pub mod kernel;
pub mod lane;
pub mod lanes;
pub mod multilayer;

pub use engine::{SimdEngine, CHUNK};
pub use lanes::{Lanes, SimdScalar};
pub use multilayer::{MlScalar, MlSimd, ML_CHUNK};
