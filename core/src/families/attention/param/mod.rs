//! The parametrisations of one-layer attention: each maps its flat parameters to the per-head
//! effective circuits (forward) and circuit gradients back to parameter gradients (backward), the
//! two side by side in one file per parametrisation. [`crate::model::Model`] dispatches on
//! [`crate::config::Param`].
//!
//! Shapes: E = d + n_out, H heads, R the key/query rank. The circuits are `kq` [H, E, E] (score
//! scale included) and `ov` [H, n_out, E].
pub mod full;
pub mod lowrank;
pub mod merged;
pub mod merged_reduced;
pub mod reduced;
pub mod separate;
pub mod separate_reduced;
