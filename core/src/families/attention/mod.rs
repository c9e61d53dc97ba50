//! One attention layer reading the query's outputs (He et al. 2025; Zhang et al. 2025; the
//! temperature paper): H heads with effective circuits `KQ_h` (E x E) and `OV_h` (n_out x E),
//! softmax, normalised activations or linear attention.
//!
//! * [`spec`]: the configuration section (shape, options, parameter layout);
//! * [`circuits`]: the effective circuits every parametrisation maps to;
//! * [`init`]: the initialisations (PyTorch default, small identity, Gaussian, Zhang et al.);
//! * [`act`]: one head's forward and backward (scores, normalisation, output);
//! * [`param`]: the six parametrisations, each a forward (parameters -> circuits) and backward
//!   (the chain rule) pair;
//! * [`kernels`]: the operations an engine implements for this family, behind a checking runner;
//! * [`reference`]: the scalar reference kernels;
//! * [`analysis`]: the learned circuits in the paper's terms (omega, mu, head kinds);
//! * [`eval`]: Monte Carlo risk at any test length, with attention temperatures;
//! * [`objective`], [`probe`]: what a training run computes and logs.
pub mod act;
pub mod analysis;
pub mod circuits;
pub mod eval;
pub mod init;
pub mod kernels;
pub mod objective;
pub mod param;
pub mod probe;
pub mod reference;
pub mod spec;

pub use circuits::Circuits;
pub use spec::AttentionSpec;
