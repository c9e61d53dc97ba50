//! One attention layer reading the query's outputs (He et al. 2025; Zhang et al. 2025; the
//! temperature paper): H heads with effective circuits `KQ_h` (E x E) and `OV_h` (n_out x E),
//! softmax, normalised activations or linear attention.
//!
//! * [`act`]: one head's forward and backward (scores, normalisation, output);
//! * [`param`]: the six parametrisations, each a forward (parameters -> circuits) and backward
//!   (the chain rule) pair;
//! * [`kernels`]: the operations an engine implements for this family, behind a checking runner;
//! * [`reference`]: the scalar reference kernels;
//! * [`analysis`]: the learned circuits in the paper's terms (omega, mu, head kinds);
//! * [`eval`]: Monte Carlo risk at any test length, with attention temperatures.
pub mod act;
pub mod analysis;
pub mod eval;
pub mod kernels;
pub mod param;
pub mod reference;
