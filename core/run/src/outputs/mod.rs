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
/// on `engine` (one-layer runs of a pack: on the pack's device), its CSVs and figures.
pub fn write<T: RunScalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    engine: Option<&str>,
    pack: Option<&crate::engines::Pack>,
    eval_samples: usize,
    summary: &mut Summary,
) -> Result<()> {
    // every row, the early ones too: the figures' log step axes get points in their first decades
    let curve: Vec<(f64, f64)> = t.rows().iter().map(|r| (r.step as f64, r.loss)).collect();
    match &t.model.spec.net {
        Net::Stack(_) | Net::Iv(_) => stack::write(t, dir, engine, eval_samples, summary, &curve),
        Net::Attention(_) if t.cfg.task.kind == TaskKind::Eigs => {
            // the plateau detection reads the regular rows (equal windows)
            summary.linattn = Some(linear_attention::write(t, dir, &t.curve())?);
            Ok(())
        }
        Net::Attention(_) => attention::write(t, dir, engine, pack, eval_samples, summary, &curve),
        Net::Gpt2(_) => gpt2::write(t, dir, engine, eval_samples, summary, &curve),
    }
}

/// Draw a finished run's figures again (`icl plot DIR`) with this icl's code, from the trainer's
/// state that its `model.safetensors` keeps (the log, its early rows, the snapshots) and its
/// config: the same files [`write`] wrote when the run finished (`loss.svg` and the family's
/// figures; a linear-attention run's CSVs too), byte for byte where the drawing code has not
/// changed since. Nothing is evaluated, and `summary.json`, the model and `metrics.csv` are not
/// touched. Returns the run's figure files (`*.svg`) afterwards, by name. A folder that is not a
/// run, and a model without a trainer's state (an imported one, or one saved by a trainer handle
/// of the C API, which keeps no log), are refused with nothing written.
pub fn redraw(dir: &RunDir) -> Result<Vec<String>> {
    use crate::any::AnyTrainer;
    use crate::dispatch;
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    let Some(state) = loaded.state else {
        return Err(crate::error::RunError::Refused(format!(
            "{} holds no training log (an imported model, or a run saved without the trainer's \
             state): there is nothing to draw",
            dir.model().display()
        )));
    };
    let engines = crate::engines::Engines::named(None);
    let tr = AnyTrainer::resume(&loaded.config, &engines, state, &Default::default())?;
    let mut scratch = Summary::default();
    dispatch!(&tr, t => write(t, dir, None, None, 0, &mut scratch))?;
    let mut figures: Vec<String> = std::fs::read_dir(&dir.dir)
        .map_err(|e| crate::error::RunError::Os(dir.dir.clone(), e))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    figures.sort();
    Ok(figures)
}

/// The run's name for its figures' titles: the folder's name (without the staging folder's
/// `.` and `.partial` while the trainer writes it).
pub(super) fn run_name(dir: &RunDir) -> String {
    let name = dir
        .dir
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    match name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".partial"))
    {
        Some(n) => n.to_string(),
        None => name,
    }
}

/// `loss.svg`: the training loss curve (log step and loss axes), titled with the run's name.
pub(super) fn loss_plot(dir: &RunDir, curve: &[(f64, f64)]) -> Result<()> {
    if curve.len() >= 2 {
        figures::loss(curve)
            .for_run(&run_name(dir))
            .write(&dir.file("loss.svg"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_staging_folder_is_named_as_its_run() {
        use super::{run_name, RunDir};
        assert_eq!(run_name(&RunDir::new("/x/.he2025.partial")), "he2025");
        assert_eq!(run_name(&RunDir::new("/x/run1")), "run1");
    }
}
