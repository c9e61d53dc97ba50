//! Evaluation of a run: Monte Carlo risk of the trained model and of the classical baselines at
//! test lengths L' (length generalisation, He et al. 2025 figure 3).
use crate::any::AnyModel;
use crate::dispatch;
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::summary::{AlignmentRow, EvalRow, EvalRows};
use icl_core::config::{Config, TaskKind};
use icl_core::estimator::Estimator;
use icl_core::eval::{mc_risk, RiskEstimate};
use icl_core::model::Net;
use icl_core::multilayer::eval as ml_eval;
use icl_core::multilayer::StackRunner;
use icl_core::task::Task;
use icl_core::theory::he2025::Setting;
use icl_core::{Model, Runner};

/// Longest test length (the memory of one chunk of 1024 sequences must stay bounded).
pub const MAX_EVAL_LEN: usize = 1 << 20;

/// What to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Test context lengths L'.
    pub lengths: Vec<usize>,
    /// Monte Carlo samples per length (>= 2).
    pub samples: usize,
    /// Seed of the evaluation streams.
    pub seed: u64,
    /// Engine for the model's predictions.
    pub engine: Option<String>,
    /// Options of transformer runs (the multilayer paper).
    pub multilayer: MlEvalOptions,
}

/// What `icl eval` can add for transformer runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MlEvalOptions {
    /// Test eigenvalue range (C.7's out-of-distribution tests).
    pub lambda_range: Option<(f64, f64)>,
    /// Apply the trained block k times (Fig. 4b).
    pub stack: Option<usize>,
    /// Report the readout after every layer (Fig. 4a).
    pub layers_out: bool,
    /// Sequences per length for Model Sim / Grad Diff (0: none).
    pub alignment: usize,
    /// A one-stage "TF Ref" run folder evaluated on the IV sequences (§6.3).
    pub reference: Option<std::path::PathBuf>,
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
                eta: None,
                eta_x: None,
            });
        }
    }
    Ok(EvalRows {
        rows,
        samples: o.samples,
        seed: o.seed,
        engine: engines.0,
        target: None,
        etas: Vec::new(),
        alignment: Vec::new(),
        lambda_range: None,
        stack: None,
    })
}

fn ml_options(o: &EvalOptions) -> ml_eval::Options {
    ml_eval::Options {
        lens: o.lengths.clone(),
        samples: o.samples,
        seed: o.seed,
        lambda: o.multilayer.lambda_range,
        stack: o.multilayer.stack.unwrap_or(1),
        layers_out: o.multilayer.layers_out,
        alignment: o.multilayer.alignment,
    }
}

fn ml_rows(rep: ml_eval::Report, o: &EvalOptions, engine: String) -> EvalRows {
    EvalRows {
        rows: rep
            .rows
            .into_iter()
            .map(|r| EvalRow {
                estimator: r.estimator,
                len: r.len,
                risk: r.risk,
                stderr: r.stderr,
                eta: r.eta,
                eta_x: r.eta_x,
            })
            .collect(),
        samples: o.samples,
        seed: o.seed,
        engine,
        target: Some("noise-free".into()),
        etas: rep.etas,
        alignment: rep
            .alignment
            .into_iter()
            .map(|a| AlignmentRow {
                len: a.len,
                samples: a.samples,
                model_sim: a.model_sim,
                grad_diff: a.grad_diff,
                pred_diff: a.pred_diff,
            })
            .collect(),
        lambda_range: o.multilayer.lambda_range,
        stack: o.multilayer.stack,
    }
}

fn ml_eval_typed<T: RunScalar>(
    cfg: &Config,
    m: &Model<T>,
    reference: Option<&AnyModel>,
    engines: &Engines,
    o: &EvalOptions,
) -> Result<ml_eval::Report> {
    let mut runner = StackRunner::new(T::stack_engine(&engines.0)?);
    let mo = ml_options(o);
    Ok(match cfg.task.kind {
        TaskKind::Iv => {
            let r = reference.map(|r| r.to::<T>());
            ml_eval::iv(
                cfg,
                m,
                r.as_ref().map(|model| ml_eval::Reference { model }),
                &mut runner,
                &mo,
            )?
        }
        TaskKind::Varying => ml_eval::regression(cfg, m, &mut runner, &mo)?,
        k => {
            return Err(icl_core::Error::Unsupported(format!(
                "transformer evaluation of task.kind = {k:?}"
            ))
            .into())
        }
    })
}

/// Risks of a transformer run (the multilayer paper's estimators), against the noise-free target.
pub fn eval_transformer(
    cfg: &Config,
    model: &AnyModel,
    reference: Option<&AnyModel>,
    o: &EvalOptions,
) -> Result<EvalRows> {
    check(o)?;
    let engines = Engines::named(o.engine.as_deref());
    crate::engines::check(&engines.0, model.dtype())?;
    if reference.is_some() && !matches!(model.spec().net, Net::Iv(_)) {
        return Err(RunError::Refused(
            "--ref applies to IV two-stage runs (model.arch = iv2stage)".into(),
        ));
    }
    let rep = dispatch!(model, m => ml_eval_typed(cfg, m, reference, &engines, o)?);
    Ok(ml_rows(rep, o, engines.0))
}

/// [`eval_model`] for the run in `dir`.
pub fn eval_run(dir: &RunDir, o: &EvalOptions) -> Result<EvalRows> {
    check(o)?;
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    if loaded.model.spec().net != Net::Attention {
        let reference = match &o.multilayer.reference {
            Some(p) => {
                let rd = RunDir::new(p);
                rd.check_run()?;
                Some(crate::checkpoint::load(&rd.model())?.model)
            }
            None => None,
        };
        return eval_transformer(&loaded.config, &loaded.model, reference.as_ref(), o);
    }
    let m = &o.multilayer;
    if m.lambda_range.is_some()
        || m.stack.is_some()
        || m.layers_out
        || m.alignment > 0
        || m.reference.is_some()
    {
        return Err(RunError::Refused(
            "--lambda-range, --stack, --layers-out, --alignment and --ref apply to transformer runs (model.arch = transformer or iv2stage)".into(),
        ));
    }
    eval_model(&loaded.config, &loaded.model, o)
}
