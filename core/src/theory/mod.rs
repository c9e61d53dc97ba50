//! Closed forms and dynamical systems of the four papers (f64, `no_std`).
//!
//! * [`he2025`]: multi-head softmax attention (He et al., 2025): approximate loss, optimal step
//!   size, GD risks, Bayes risk, gradient-flow ODE.
//! * [`zhang2025`]: linear attention training dynamics (Zhang et al., 2025): population loss of the
//!   effective matrix, plateaus, scalar ODE, exact population gradient flow.
//! * [`temperature`]: softmax temperature under distribution shift (Lemma 4.1, Theorems 4.6-4.7).
//! * [`multilayer`]: the interpreted multi-layer algorithm, multi-step GD and IV estimators.
//! * [`ode`]: RK4 and adaptive RK45 integrators shared by all.
//!
//! Every formula is checked against Monte Carlo or finite differences in `core/tests/theory_*.rs`.
//!
//! Input checks are written `!(x > 0.0)` on purpose: the negated comparison also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::nonminimal_bool)]
pub mod he2025;
pub mod multilayer;
pub mod ode;
pub mod registry;
pub mod temperature;
pub mod zhang2025;
