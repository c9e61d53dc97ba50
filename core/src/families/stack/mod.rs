//! Multi-layer (looped) attention-only transformers ("Interpreting Multi-Layer Transformers for
//! In-Context Linear Regression with Varying Covariance", §3.2 eqs. (1)–(3), (20)); the IV model
//! of §6.2 is two of them ([`crate::families::iv`]).
//!
//! A sequence is the (d+1) x (L+1) embedding of eq. (1), stored token-major like every icl batch
//! ([`crate::data::Batch`]): token l is `z_l = [x_l; y_l]`, the query `[x_q; 0]` is token L. Each
//! layer is `Z <- Z + sum_h Psi_h Z smax(msk(Z^T Phi_h Z))` with the paper's mask: the query is
//! never a key, every column (the context tokens included) attends to the L context tokens,
//! itself included. Linear attention (eq. 20) replaces the softmax by `1/L` (the actual L).
//!
//! * [`layer`]: one layer's forward and backward over one sequence, in the effective circuits
//!   `Phi_h = scale K_h^T Q_h` and `Psi_h = O_h V_h` (every scale folded in);
//! * [`layers`]: T layers, looped (one parameter set) or not (one per layer), and the
//!   parameter <-> circuit chain rule;
//! * [`kernels`]: the operations an engine implements for stacks, behind a checking runner, and
//!   their scalar reference; [`crate::conformance`] is the one test suite every engine runs;
//! * [`analysis`]: the learned pattern (eq. 5), Claim 1's population operator;
//! * [`eval`]: model and estimator risks (Algorithm 1, GD, ridge/OLS, 2SLS) on evaluation streams.
pub mod analysis;
pub mod eval;
pub mod init;
pub mod kernels;
pub mod layer;
pub mod layers;
pub mod objective;
pub mod probe;

pub use kernels::{StackKernels, StackReference, StackRunner};
pub use layers::{StackCircuits, StackSpec};
