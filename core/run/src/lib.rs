//! # icl-core-run
//!
//! The library layer under every front end (the `icl` CLI, the C and C++ API, Python): everything
//! a front end needs besides parsing its arguments and printing, written once.
//!
//! * [`engines`]: the engine registry (`simd`, `scalar`, `vulkan`) and the default engine;
//! * [`any`]: dtype dispatch ([`AnyModel`], [`AnyTrainer`]) for models and trainers of either
//!   precision;
//! * [`folder`]: run folders (file names, atomic writes);
//! * [`options`]: the options of every entry point (train, eval, repro, sweep), declared once:
//!   the CLI's flags, the C API's keys and Python's keywords;
//! * [`checkpoint`]: safetensors checkpoints (deterministic bytes, strict reading), PyTorch
//!   import, KQ snapshots;
//! * [`torch`]: Garg et al.'s GPT-2 `TransformerModel` state_dicts (safetensors) to and from the
//!   `gpt2` family's flat buffer;
//! * [`train`]: a training run from a config to a complete run folder;
//! * [`tensorboard`]: the run's TensorBoard event files (a small writer and reader of the
//!   record format);
//! * [`summary`], [`analyze`], [`eval`]: the typed JSON contracts (`summary.json`,
//!   `icl analyze --json`, `icl eval --json`) and the computations behind them;
//! * [`plot`]: the figures (SVG);
//! * [`sweep`]: many runs of one base config (grids x seeds), local executor, Slurm arrays,
//!   collection into a tidy table;
//! * [`bench`]: training throughput of the engines;
//! * [`embedded`]: what the firmware example computes, on the host (`icl embedded`).
//!
//! The science lives in `icl-core`; this crate does I/O and orchestration.
// `!(x > 0.0)` is how this crate rejects NaN along with out-of-range values.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod analyze;
pub mod any;
pub mod bench;
pub mod checkpoint;
pub mod csv_text;
pub mod embedded;
pub mod engines;
pub mod error;
pub mod eta;
pub mod eval;
pub mod folder;
pub mod options;
pub mod outputs;
#[cfg(feature = "vulkan")]
pub mod pack;
pub mod plot;
pub mod predict;
pub mod repro;
pub mod summary;
pub mod sweep;
pub mod tensorboard;
pub mod theory;
pub mod torch;
pub mod train;

pub use any::{AnyModel, AnyTrainer};
pub use engines::{default_engine, Engines, RunScalar, ENGINES};
pub use error::{Result, RunError};
pub use folder::RunDir;
