//! # icl-core
//!
//! The `no_std` (+ `alloc`) numerical core of icl: data samplers for in-context linear regression,
//! one-layer attention models with hand-derived gradients, optimisers, classical estimators,
//! analysis of learned circuits, Monte Carlo evaluation and closed-form theory.
//!
//! Nothing here does I/O or panics on bad input: every fallible function returns [`Error`].
//! Everything is generic over the [`Scalar`] type (`f32`, `f64`); `half` types are storage formats
//! (see [`scalar::to_f16_storage`]).
#![no_std]
#![forbid(unsafe_code)]
// `!(x > 0.0)` is how this crate rejects NaN along with out-of-range values; index loops are
// the clearest way to write the small dense linear algebra of the models.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

extern crate alloc;

pub mod budget;
pub mod checkpoint;
pub mod config;
pub mod conformance;
pub mod data;
pub mod embedded;
pub mod engine;
pub mod error;
pub mod estimator;
pub mod families;
pub mod fd;
pub mod list;
pub mod model;
pub mod objective;
pub mod optim;
pub mod presets;
pub mod rng;
pub mod scalar;
pub mod tempered;
pub mod tensor;
pub mod theory;
pub mod train;

pub use config::Config;
pub use data::{Batch, Task};
pub use engine::{AttentionKernels, AttentionReference, Engine, Runner, Sampling, ScalarEngine};
pub use error::{Error, Result};
pub use model::{Circuits, Model, ModelSpec};
pub use scalar::Scalar;
