//! GPT-2 runs (Garg et al. 2022): the risk at every prompt position of the model and the
//! classical estimators ([`crate::eval::eval_gpt2`]; the fitted ones, such as the two-layer
//! network trained per prompt and position, are left to `icl eval`: at L = 100 they would cost
//! hours), the risk at the training length L in the summary, and `loss.svg` (under a
//! curriculum with a second panel, the loss over E y² at each step's dimension).
use super::{loss_plot, run_name};
use crate::engines::RunScalar;
use crate::error::Result;
use crate::eval::EvalOptions;
use crate::folder::RunDir;
use crate::plot::figures;
use crate::summary::{Risk, Summary};
use icl_core::config::Config;
use icl_core::families::gpt2::objective::Curriculum;
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
    match loss_per_d(cfg, curve) {
        Some(per_d) if curve.len() >= 2 => figures::loss_curriculum(curve, &per_d)
            .for_run(&run_name(dir))
            .write(&dir.file("loss.svg")),
        _ => loss_plot(dir, curve),
    }
}

/// Under a curriculum, each point of the loss curve over E y² at its step's dimension
/// ([`crate::eval::row_stage`]: Garg et al.'s squared error / d); `None` without one. A point at
/// step s (steps done) is the mean loss of the steps since the previous row, divided at the
/// dimension of its last step: exact where `train.log_every` divides `task.curriculum_every`
/// (every preset's), as no row then spans two stages.
fn loss_per_d(cfg: &Config, curve: &[(f64, f64)]) -> Option<Vec<(f64, f64)>> {
    let c = Curriculum::of(&cfg.task)?;
    Some(
        curve
            .iter()
            .map(|&(s, loss)| (s, loss / crate::eval::row_stage(cfg, &c, s as u64).2))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::loss_per_d;

    #[test]
    fn the_loss_is_divided_by_the_dimension_of_its_stage() {
        let mut cfg = icl_core::presets::preset("garg-linear-tiny").unwrap();
        // Garg et al.'s curriculum, written out: d = min(5 + floor(t / 2000), 20) at step t
        let d_at = |t: u64| (5 + t / 2000).min(20) as f64;
        let curve: Vec<(f64, f64)> = [1u64, 1000, 2000, 2001, 4000, 30_000, 50_000]
            .iter()
            .map(|&s| (s as f64, 3.0 * s as f64))
            .collect();
        let per_d = loss_per_d(&cfg, &curve).unwrap();
        for (&(s, loss), &(s2, v)) in curve.iter().zip(&per_d) {
            assert_eq!(s, s2);
            assert_eq!(v, loss / d_at(s as u64 - 1), "step {s}");
        }
        assert_eq!(per_d[2].1, 3.0 * 2000.0 / 5.0);
        assert_eq!(per_d[3].1, 3.0 * 2001.0 / 6.0);
        assert_eq!(per_d[6].1, 3.0 * 50_000.0 / 20.0);
        cfg.set("task.curriculum", "false").unwrap();
        assert!(loss_per_d(&cfg, &curve).is_none());
    }
}
