//! What a transformer run logs: the learned pattern's inner products (eq. 5, Table 1).
use super::analysis::pattern;
use crate::model::{Model, ModelSpec, Net};
use crate::objective::{Column, Probe};
use crate::{Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The multilayer paper's inner products <u1, omega>, <u2, omega> (eq. 5, Table 1) of the looped
/// block, of every layer of a non-looped stack (`u1_omega_1`, ...), or of the IV model's stage 2.
pub struct Pattern {
    sets: usize,
}

impl Pattern {
    /// For models of `spec`.
    pub fn new(spec: &ModelSpec) -> Self {
        let sets = match &spec.net {
            Net::Stack(s) => s.sets(),
            Net::Iv(s) => s.st2.sets(),
            Net::Attention(_) | Net::Gpt2(_) => 0,
        };
        Pattern { sets }
    }
}

impl<T: Scalar> Probe<T> for Pattern {
    fn columns(&self) -> Vec<Column> {
        let suffix = |s: usize| {
            if self.sets == 1 {
                String::new()
            } else {
                format!("_{}", s + 1)
            }
        };
        (0..self.sets)
            .flat_map(|s| {
                [
                    Column {
                        group: "pattern",
                        name: format!("u1_omega{}", suffix(s)),
                    },
                    Column {
                        group: "pattern",
                        name: format!("u2_omega{}", suffix(s)),
                    },
                ]
            })
            .collect()
    }
    fn record(&mut self, model: &Model<T>, out: &mut Vec<f64>) -> Result<()> {
        let Some((sp, c)) = model.readout_stack() else {
            return Ok(());
        };
        for s in 0..sp.sets() {
            let p = pattern(&c, s, sp.e - sp.n_out);
            out.push(p.u1_omega);
            out.push(p.u2_omega);
        }
        Ok(())
    }
}
