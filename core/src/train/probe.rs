//! Probes: what a training run logs besides the loss, one group of columns each.
//!
//! * [`Circuits`]: per-head omega and mu of the effective circuits (He et al. 2025 §4, Fig. 2);
//! * [`Linattn`]: the Zhang et al. (2025) quantities: test losses (ICL / IWL, App. G), value
//!   weights v_h, the effective matrix M in the paper's 1/N convention, key/eigenvector alignment,
//!   and the drift of the conserved quantities (eqs. 55, 83, 89);
//! * [`CubicTwin`]: the two-layer network on the cubic feature (eqs. 6-7), ATTN_M's twin, trained
//!   in lockstep on the same set.
use super::objective::SetLoss;
use super::Column;
use crate::config::Config;
use crate::data::{Batch, Task};
use crate::families::attention::analysis::analyze;
use crate::families::linear_attention::metrics::{
    alignment, conserved, effective_m, value_weights,
};
use crate::families::linear_attention::mlp::{cubic_features, CubicMlp};
use crate::families::linear_attention::LinattnTheory;
use crate::model::{Model, ModelSpec};
use crate::optim::Optimizer;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

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

fn named(group: &'static str, names: impl Iterator<Item = String>) -> Vec<Column> {
    names.map(|name| Column { group, name }).collect()
}

/// Per-head omega and mu (first output) of the effective circuits.
pub struct Circuits {
    heads: usize,
}

impl Circuits {
    /// For models of `spec`.
    pub fn new(spec: &ModelSpec) -> Self {
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
        let rep = analyze(&model.spec, &model.circuits());
        out.extend(rep.heads.iter().map(|h| h.omega));
        out.extend(rep.heads.iter().map(|h| h.mu));
        Ok(())
    }
}

/// The Zhang et al. (2025) quantities of a model on the `eigs` task.
pub struct Linattn<T: Scalar> {
    tests: Vec<(String, SetLoss<T>)>,
    theory: LinattnTheory,
    heads: usize,
    d: usize,
    /// Number of alignment values (depends on the parametrisation, see [`alignment`]).
    n_align: usize,
    /// The conserved quantities at the start of the run.
    cons0: Vec<f64>,
}

impl<T: Scalar> Linattn<T> {
    /// For a run of `cfg` starting at `model`, with its test sets.
    pub fn new(
        cfg: &Config,
        task: &Task,
        model: &Model<T>,
        tests: Vec<(String, SetLoss<T>)>,
    ) -> Result<Self> {
        let theory = LinattnTheory::of(cfg, task);
        let m64 = model.cast::<f64>();
        let n_align = alignment(&m64, &m64.circuits(), &theory.spectrum, theory.inv_n).len();
        Ok(Linattn {
            tests,
            theory,
            heads: model.spec.heads,
            d: model.spec.d,
            n_align,
            cons0: conserved(&m64),
        })
    }
}

impl<T: Scalar> Probe<T> for Linattn<T> {
    fn columns(&self) -> Vec<Column> {
        let (h, d) = (self.heads, self.d);
        let mut c = named("test", self.tests.iter().map(|(n, _)| n.clone()));
        c.extend(named("values", (0..h).map(|i| format!("v{i}"))));
        c.extend(named("m", (0..d * d).map(|i| format!("m{i}"))));
        c.extend(named("align", (0..self.n_align).map(|i| format!("a{i}"))));
        c.push(Column {
            group: "drift",
            name: "conservation_drift".into(),
        });
        c
    }
    fn record(&mut self, model: &Model<T>, out: &mut Vec<f64>) -> Result<()> {
        let circ = model.circuits();
        for (_, t) in self.tests.iter_mut() {
            out.push(t.eval(&circ, None)?);
        }
        let m64 = model.cast::<f64>();
        let c64 = circ.to_f64();
        let th = &self.theory;
        out.extend(value_weights(&c64, self.d));
        out.extend(effective_m(&c64, self.d, th.m_factor));
        out.extend(alignment(&m64, &c64, &th.spectrum, th.inv_n));
        let drift = conserved(&m64)
            .iter()
            .zip(&self.cons0)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        out.push(drift);
        Ok(())
    }
    fn state(&self) -> Vec<f64> {
        self.cons0.clone()
    }
    fn restore(&mut self, state: &[f64]) -> Result<()> {
        if state.len() != self.cons0.len() {
            return Err(Error::Shape(format!(
                "conserved quantities: {} values saved, {} expected",
                state.len(),
                self.cons0.len()
            )));
        }
        self.cons0 = state.to_vec();
        Ok(())
    }
}

/// The cubic-feature twin of a reduced ATTN_M, trained in lockstep with the same optimiser
/// settings on the same set; logs its loss at its current parameters.
pub struct CubicTwin {
    mlp: CubicMlp,
    z: Vec<f64>,
    y: Vec<f64>,
    opt: Optimizer<f64>,
    train: crate::config::TrainConfig,
    grad: Vec<f64>,
}

impl CubicTwin {
    /// The twin of `model` (`merged_reduced`) on `set`.
    pub fn new<T: Scalar>(cfg: &Config, model: &Model<T>, set: &Batch<f64>) -> Result<Self> {
        let m64 = model.cast::<f64>();
        let mlp = CubicMlp::twin_of(&m64)?;
        let n = mlp.params.len();
        Ok(CubicTwin {
            z: cubic_features(set, m64.spec.lin_norm)?,
            y: set.y.clone(),
            opt: Optimizer::new(&cfg.train, n),
            train: cfg.train.clone(),
            grad: vec![0.0; n],
            mlp,
        })
    }
}

impl<T: Scalar> Probe<T> for CubicTwin {
    fn columns(&self) -> Vec<Column> {
        vec![Column {
            group: "cubic_mlp",
            name: "cubic_mlp".into(),
        }]
    }
    fn record(&mut self, _model: &Model<T>, out: &mut Vec<f64>) -> Result<()> {
        out.push(self.mlp.loss_grad(&self.z, &self.y, &mut self.grad));
        Ok(())
    }
    fn after_step(&mut self, _step: u64) -> Result<()> {
        self.mlp.loss_grad(&self.z, &self.y, &mut self.grad);
        self.opt.step(&mut self.mlp.params, &self.grad)
    }
    fn state(&self) -> Vec<f64> {
        let mut s = self.mlp.params.clone();
        s.extend(self.opt.to_flat());
        s
    }
    fn restore(&mut self, state: &[f64]) -> Result<()> {
        let n = self.mlp.params.len();
        if state.len() < n {
            return Err(Error::Shape(format!(
                "cubic twin state: {} values, at least {n} expected",
                state.len()
            )));
        }
        crate::scalar::check_finite("cubic twin parameters", &state[..n])?;
        self.opt = Optimizer::from_flat(&self.train, n, &state[n..])?;
        self.mlp.params.copy_from_slice(&state[..n]);
        Ok(())
    }
}

/// The multilayer paper's inner products <u1, omega>, <u2, omega> (eq. 5, Table 1) of the looped
/// block, of every layer of a non-looped stack (`u1_omega_1`, ...), or of the IV model's stage 2.
pub struct Pattern {
    sets: usize,
}

impl Pattern {
    /// For models of `spec`.
    pub fn new(spec: &ModelSpec) -> Self {
        let sets = match &spec.net {
            crate::model::Net::Stack(s) => s.sets(),
            crate::model::Net::Iv(s) => s.st2.sets(),
            crate::model::Net::Attention => 0,
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
        let Some((sp, c)) = crate::families::stack::analysis::readout_circuits(model) else {
            return Ok(());
        };
        for s in 0..sp.sets() {
            let p = crate::families::stack::analysis::pattern(&c, s, sp.e - sp.n_out);
            out.push(p.u1_omega);
            out.push(p.u2_omega);
        }
        Ok(())
    }
}
