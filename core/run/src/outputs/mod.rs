//! What a run of each model family writes beside the files every run has (`model.safetensors`,
//! `metrics.csv`, `summary.json`): its part of the summary, its CSVs and figures. The trainer
//! ([`crate::train`]) calls [`write`] once per finished run.
mod attention;
mod gpt2;
mod linear_attention;
mod stack;

use crate::engines::RunScalar;
use crate::error::Result;
use crate::folder::RunDir;
use crate::plot::figures;
use crate::summary::Summary;
use icl_core::config::TaskKind;
use icl_core::model::Net;
use icl_core::train::Trainer;

/// The family's outputs of the finished run `t` into `dir` and `summary`: its summary fields,
/// the final risk at the training length from `eval_samples` Monte Carlo samples (none below 2)
/// on `engine`, its CSVs and figures.
pub fn write<T: RunScalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    engine: Option<&str>,
    eval_samples: usize,
    summary: &mut Summary,
) -> Result<()> {
    let curve = t.curve();
    match &t.model.spec.net {
        Net::Stack(_) | Net::Iv(_) => stack::write(t, dir, engine, eval_samples, summary, &curve),
        Net::Attention(_) if t.cfg.task.kind == TaskKind::Eigs => {
            summary.linattn = Some(linear_attention::write(t, dir, &curve)?);
            Ok(())
        }
        Net::Attention(_) => attention::write(t, dir, engine, eval_samples, summary, &curve),
        Net::Gpt2(_) => gpt2::write(t, dir, engine, eval_samples, summary, &curve),
    }
}

/// `loss.svg`: the training loss curve (log step and loss axes).
fn loss_plot(dir: &RunDir, curve: &[(f64, f64)]) -> Result<()> {
    if curve.len() >= 2 {
        figures::loss(curve).write(&dir.file("loss.svg"))?;
    }
    Ok(())
}
