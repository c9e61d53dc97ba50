//! What a one-layer attention run logs: per-head omega and mu of the effective circuits (He et
//! al. 2025 §4, Fig. 2).
use super::analysis::analyze;
use super::AttentionSpec;
use crate::model::Model;
use crate::objective::{named, Column, Probe};
use crate::{Result, Scalar};
use alloc::format;
use alloc::vec::Vec;

/// Per-head omega and mu (first output) of the effective circuits.
pub struct Circuits {
    heads: usize,
}

impl Circuits {
    /// For models of `spec`.
    pub fn new(spec: &AttentionSpec) -> Self {
        Circuits { heads: spec.heads }
    }
}

impl<T: Scalar> Probe<T> for Circuits {
    fn columns(&self) -> Vec<Column> {
        let mut c = named("omega", (0..self.heads).map(|h| format!("omega_{h}")));
        c.extend(named("mu", (0..self.heads).map(|h| format!("mu_{h}"))));
        c
    }
    fn record(&mut self, model: &Model<T>, out: &mut Vec<f64>) -> Result<()> {
        let rep = analyze(model.attention()?, &model.circuits()?);
        out.extend(rep.heads.iter().map(|h| h.omega));
        out.extend(rep.heads.iter().map(|h| h.mu));
        Ok(())
    }
}
