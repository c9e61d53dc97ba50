//! What a model family gives the one trainer ([`crate::train`]): an [`Objective`] (the loss and
//! its parameter gradient at step t) and [`Probe`]s (the logged columns). Each family writes its
//! own in its folder ([`crate::families`]); the trainer picks them per configuration.
use crate::model::Model;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Choices of the protocol that are not part of the run configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Sequences per in-context / in-weight test set of the `eigs` task (reference code: 5000).
    pub test_size: usize,
    /// Compute linear attention on a fixed set token by token instead of by its sufficient
    /// statistics (same loss up to rounding; for tests).
    pub tokens: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            test_size: 5000,
            tokens: false,
        }
    }
}

/// A training objective: the loss at step t and its gradient with respect to the flat parameters.
pub trait Objective<T: Scalar>: Send {
    /// The protocol in words, e.g. "fresh data every step".
    fn protocol(&self) -> &'static str;
    /// The engine that computes the loss ("moments" for sufficient statistics).
    fn engine(&self) -> &str;
    /// Whether the loss is the full-batch loss of the current parameters.
    fn full_batch(&self) -> bool;
    /// Loss at `params` on the data of step `step`; its gradient into `grad` (overwritten).
    fn loss_grad(&mut self, step: u64, params: &[T], grad: &mut [T]) -> Result<f64>;
    /// The loss at `params` without a gradient (`None` for online objectives).
    fn loss(&mut self, params: &[T]) -> Result<Option<f64>>;
}

/// A logged column: the probe group it belongs to (`omega`, `mu`, `values`, ...) and its name
/// (`omega_0`, `v1`, `icl_test`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub group: &'static str,
    pub name: String,
}

/// A group of logged columns, recorded from the current model.
pub trait Probe<T: Scalar>: Send {
    /// The columns this probe appends to every row.
    fn columns(&self) -> Vec<Column>;
    /// Append the values at `model` to `out` (one per column).
    fn record(&mut self, model: &Model<T>, out: &mut Vec<f64>) -> Result<()>;
    /// Called at each optimiser step `step` of the trainer, for probes that train alongside,
    /// once the trainer's own update is known to be finite and just before it is written. All or
    /// nothing: on an error the probe is left as it was (the trainer's step then fails as a whole).
    fn after_step(&mut self, _step: u64) -> Result<()> {
        Ok(())
    }
    /// The probe's own state, for resuming.
    fn state(&self) -> Vec<f64> {
        Vec::new()
    }
    /// Restore [`Probe::state`].
    fn restore(&mut self, state: &[f64]) -> Result<()> {
        if state.is_empty() {
            Ok(())
        } else {
            Err(Error::Shape(format!(
                "this probe keeps no state, got {} values",
                state.len()
            )))
        }
    }
}

/// The columns `names` of one group.
pub fn named(group: &'static str, names: impl Iterator<Item = String>) -> Vec<Column> {
    names.map(|name| Column { group, name }).collect()
}
