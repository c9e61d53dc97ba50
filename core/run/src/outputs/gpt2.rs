//! GPT-2 runs (Garg et al. 2022): the risk at every prompt position of the model and the
//! classical estimators ([`crate::eval::eval_gpt2`]; the fitted ones, such as the two-layer
//! network trained per prompt and position, are left to `icl eval`: at L = 100 they would cost
//! hours), the risk at the training length L in the summary, and `loss.svg`.
use super::loss_plot;
use crate::engines::RunScalar;
use crate::error::Result;
use crate::eval::EvalOptions;
use crate::folder::RunDir;
use crate::summary::{Risk, Summary};
use icl_core::model::Model;
use icl_core::train::Trainer;

/// The run's GPT-2 outputs.
pub fn write<T: RunScalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    engine: Option<&str>,
    eval_samples: usize,
    summary: &mut Summary,
    curve: &[(f64, f64)],
) -> Result<()> {
    let cfg = &t.cfg;
    if eval_samples >= 2 {
        let model = crate::any::Either::<Model<f32>, Model<f64>>::from_model(&t.model);
        let eo = EvalOptions {
            lengths: vec![cfg.task.len],
            samples: eval_samples,
            seed: cfg.train.seed,
            engine: engine.map(str::to_string),
            multilayer: Default::default(),
            temper: Default::default(),
        };
        let direct: Vec<_> = crate::eval::gpt2_baselines(cfg)
            .into_iter()
            .filter(|e| !e.fitted())
            .collect();
        let rows = crate::eval::eval_gpt2_with(cfg, &model, &eo, &direct)?.rows;
        if let Some(r) = rows
            .iter()
            .find(|r| r.estimator == "model" && r.len == cfg.task.len)
        {
            summary.risk = Some(Risk {
                len: cfg.task.len,
                risk: r.risk,
                stderr: r.stderr,
                samples: eval_samples,
            });
        }
        summary.risks = rows;
    }
    loss_plot(dir, curve)
}
