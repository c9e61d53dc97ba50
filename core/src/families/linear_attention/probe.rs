//! What a Zhang et al. (2025) run logs: test losses (ICL / IWL, App. G), value weights v_h, the
//! effective matrix M in the paper's 1/N convention, key/eigenvector alignment, the drift of the
//! conserved quantities (eqs. 55, 83, 89), and the cubic-feature twin (eqs. 6-7), ATTN_M's twin
//! trained in lockstep on the same set.
use super::metrics::{alignment, conserved, effective_m, value_weights};
use super::mlp::{cubic_features, CubicMlp};
use super::objective::SetLoss;
use super::LinattnTheory;
use crate::config::Config;
use crate::data::{Batch, Task};
use crate::model::Model;
use crate::objective::{named, Column, Probe};
use crate::optim::Optimizer;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

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
        let n_align = alignment(&m64, &m64.circuits()?, &theory.spectrum, theory.inv_n).len();
        Ok(Linattn {
            tests,
            theory,
            heads: model.attention()?.heads,
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
        let circ = model.circuits()?;
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
            z: cubic_features(set, m64.attention()?.lin_norm)?,
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
