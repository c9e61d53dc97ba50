//! The data samplers: every distribution a model trains or is evaluated on, and the batches they
//! write. Nothing here knows a model family; the families, the engines and the trainer read
//! batches from here.
//!
//! * [`batch`]: token-major batches of embedded sequences, filled sequence by sequence;
//! * [`task`]: the configured task ([`Task`]): He et al.'s isotropic, anisotropic and multi-task
//!   regression, Zhang et al.'s `eigs` task, and the multilayer paper's tasks below;
//! * [`covariance`]: KMS, Cholesky factors, Haar rotations;
//! * [`regression`]: regression with a covariance per sequence (multilayer paper §1);
//! * [`iv`]: in-context instrumental-variable regression (multilayer paper §6.1);
//! * [`functions`]: Garg et al.'s function classes (sparse linear, two-layer ReLU networks,
//!   decision trees);
//! * [`shift`]: test-time distribution shifts (temperature paper §1.3);
//! * [`fixed_set`]: a fixed training set with centring and whitening (Zhang et al. 2025 §2).
pub mod batch;
pub mod covariance;
pub mod fixed_set;
pub mod functions;
pub mod iv;
pub mod regression;
pub mod shift;
pub mod task;

pub use batch::Batch;
pub use task::Task;
