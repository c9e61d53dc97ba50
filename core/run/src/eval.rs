//! Evaluation of a run: Monte Carlo risk of the trained model and of the classical baselines at
//! test lengths L' (length generalisation, He et al. 2025 figure 3).
use crate::any::AnyModel;
use crate::dispatch;
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::summary::{EvalRow, EvalRows};
use icl_core::config::{Config, TaskKind};
use icl_core::estimator::Estimator;
use icl_core::eval::{mc_risk, RiskEstimate};
use icl_core::task::Task;
use icl_core::theory::he2025::Setting;
use icl_core::{Model, Runner};

/// Longest test length (the memory of one chunk of 1024 sequences must stay bounded).
pub const MAX_EVAL_LEN: usize = 1 << 20;

/// What to evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalOptions {
    /// Test context lengths L'.
    pub lengths: Vec<usize>,
    /// Monte Carlo samples per length (>= 2).
    pub samples: usize,
    /// Seed of the evaluation streams.
    pub seed: u64,
    /// Engine for the model's predictions.
    pub engine: Option<String>,
}

/// The baselines: vanilla and debiased GD at eta* (of the training length), Bayes ridge
/// (lambda = d sigma^2), OLS where L' > d + 1, single-head NW at the L~ optimum (not for the
/// multi-task task).
pub fn baselines(cfg: &Config, len: usize) -> Result<Vec<(String, Estimator)>> {
    let (d, s2) = (cfg.task.d as f64, cfg.task.sigma2);
    let theory = Setting::new(cfg.task.d, cfg.task.len, s2)?;
    let eta = theory.eta_star();
    let (nw_omega, nw_mu) = theory.nw_optimum();
    let mut v = vec![
        ("vanilla_gd".to_string(), Estimator::VanillaGd { eta }),
        ("debiased_gd".to_string(), Estimator::DebiasedGd { eta }),
        ("ridge".to_string(), Estimator::Ridge { lambda: d * s2 }),
        (
            "nw".to_string(),
            Estimator::Nw {
                omega: nw_omega,
                mu: nw_mu,
            },
        ),
    ];
    if len > cfg.task.d + 1 {
        v.push(("ols".to_string(), Estimator::Ols));
    }
    if cfg.task.kind == TaskKind::MultiTask {
        v.retain(|(n, _)| n != "nw");
    }
    Ok(v)
}

fn check(o: &EvalOptions) -> Result<()> {
    if o.samples < 2 {
        return Err(RunError::Refused(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    if o.lengths.is_empty() {
        return Err(RunError::Refused("no test lengths given".into()));
    }
    if let Some(l) = o.lengths.iter().find(|&&l| l == 0 || l > MAX_EVAL_LEN) {
        return Err(RunError::Refused(format!(
            "test length {l} is outside 1..={MAX_EVAL_LEN}"
        )));
    }
    Ok(())
}

fn risks<T: RunScalar>(
    m: &Model<T>,
    engines: &Engines,
    task: &Task,
    len: usize,
    o: &EvalOptions,
    ests: &[Estimator],
) -> Result<Vec<RiskEstimate>> {
    let mut runner = Runner::new(T::engine(&engines.0)?);
    Ok(mc_risk(
        task,
        len,
        o.samples,
        o.seed,
        Some((m, &mut runner)),
        ests,
    )?)
}

/// Risks of `model` (config `cfg`) and the baselines at every length.
pub fn eval_model(cfg: &Config, model: &AnyModel, o: &EvalOptions) -> Result<EvalRows> {
    check(o)?;
    let engines = Engines::named(o.engine.as_deref());
    crate::engines::check(&engines.0, model.dtype())?;
    let task = Task::new(cfg)?;
    let mut rows = Vec::new();
    for &len in &o.lengths {
        let base = baselines(cfg, len)?;
        let ests: Vec<Estimator> = base.iter().map(|(_, e)| e.clone()).collect();
        let res = dispatch!(model, m => risks(m, &engines, &task, len, o, &ests)?);
        let names = std::iter::once("model".to_string()).chain(base.into_iter().map(|(n, _)| n));
        for (estimator, r) in names.zip(res) {
            rows.push(EvalRow {
                estimator,
                len,
                risk: r.risk,
                stderr: r.stderr,
            });
        }
    }
    Ok(EvalRows {
        rows,
        samples: o.samples,
        seed: o.seed,
        engine: engines.0,
    })
}

/// [`eval_model`] for the run in `dir`.
pub fn eval_run(dir: &RunDir, o: &EvalOptions) -> Result<EvalRows> {
    check(o)?;
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    eval_model(&loaded.config, &loaded.model, o)
}
