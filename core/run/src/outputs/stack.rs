//! Transformers and the IV model: the learned pattern (eq. 5), the final risks of the model and
//! the baselines, `loss.svg` and `pattern.svg`.
use super::loss_plot;
use crate::engines::RunScalar;
use crate::error::Result;
use crate::eval::EvalOptions;
use crate::folder::RunDir;
use crate::plot::figures;
use crate::summary::{Risk, Summary};
use icl_core::model::Model;
use icl_core::train::Trainer;
use icl_core::Scalar;

/// The run's transformer outputs.
pub fn write<T: RunScalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    engine: Option<&str>,
    eval_samples: usize,
    summary: &mut Summary,
    curve: &[(f64, f64)],
) -> Result<()> {
    let cfg = &t.cfg;
    let model = crate::any::Either::<Model<f32>, Model<f64>>::from_model(&t.model);
    summary.transformer = crate::analyze::transformer_analysis(cfg, &model).map(|x| x.0);
    if eval_samples >= 2 {
        let eo = EvalOptions {
            lengths: vec![cfg.task.len],
            samples: eval_samples,
            seed: cfg.train.seed,
            engine: engine.map(str::to_string),
            multilayer: Default::default(),
            temper: Default::default(),
        };
        let rows = crate::eval::eval_transformer(cfg, &model, None, &eo)?.rows;
        if let Some(r) = rows.iter().find(|r| r.estimator == "model") {
            summary.risk = Some(Risk {
                len: cfg.task.len,
                risk: r.risk,
                stderr: r.stderr,
                samples: eval_samples,
            });
        }
        summary.risks = rows;
    }
    loss_plot(dir, curve)?;
    pattern_plot(t, dir)?;
    Ok(())
}

/// `pattern.svg`: ⟨u₁, ω⟩ and ⟨u₂, ω⟩ over training, from the `pattern` columns of the log
/// (`u1_omega`, `u2_omega`, or `u1_omega_1`, `u2_omega_1`, ... per layer; transformer runs).
fn pattern_plot<T: Scalar>(t: &Trainer<T>, dir: &RunDir) -> Result<()> {
    if t.log.len() < 2 {
        return Ok(());
    }
    let steps: Vec<f64> = t.log.iter().map(|r| r.step as f64).collect();
    let rows: Vec<Vec<f64>> = t.log.iter().map(|r| t.group(r, "pattern")).collect();
    let cols = rows.first().map_or(0, |r| r.len());
    if cols < 2 {
        return Ok(());
    }
    // columns come in (u1, u2) pairs per parameter set
    let col = |j: usize| -> Vec<f64> { rows.iter().map(|r| r[j]).collect() };
    let u1: Vec<Vec<f64>> = (0..cols / 2).map(|k| col(2 * k)).collect();
    let u2: Vec<Vec<f64>> = (0..cols / 2).map(|k| col(2 * k + 1)).collect();
    figures::pattern(&steps, &u1, &u2)
        .for_run(&super::run_name(dir))
        .write(&dir.file("pattern.svg"))
}
