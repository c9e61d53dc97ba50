//! One-layer attention: each head's omega, mu and kind (He et al. 2025 Fig. 2), the final risk,
//! `loss.svg` and `omega_mu.svg`.
use super::loss_plot;
use crate::engines::{Engines, RunScalar};
use crate::error::Result;
use crate::folder::RunDir;
use crate::plot::figures;
use crate::summary::{HeadSummary, Risk, Summary};
use icl_core::families::attention::analysis::analyze;
use icl_core::families::attention::eval::mc_risk;
use icl_core::train::Trainer;
use icl_core::{Runner, Scalar};

/// The run's attention outputs.
pub fn write<T: RunScalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    engine: Option<&str>,
    eval_samples: usize,
    summary: &mut Summary,
    curve: &[(f64, f64)],
) -> Result<()> {
    let cfg = &t.cfg;
    let rep = analyze(t.model.attention()?, &t.model.circuits()?);
    summary.heads = rep
        .heads
        .iter()
        .map(|h| HeadSummary {
            omega: h.omega,
            mu: h.mu,
            kind: h.kind.as_str().into(),
        })
        .collect();
    summary.sign_matching = Some(rep.sign_matching);
    summary.eta_eff = rep.eta_eff;
    if eval_samples >= 2 {
        let mut runner = Runner::new(T::engine(&Engines::named(engine).0)?);
        let r = mc_risk(
            &t.task,
            cfg.task.len,
            eval_samples,
            cfg.train.seed,
            Some((&t.model, &mut runner)),
            &[],
        )?[0];
        summary.risk = Some(Risk {
            len: cfg.task.len,
            risk: r.risk,
            stderr: r.stderr,
            samples: r.n,
        });
    }
    loss_plot(dir, curve)?;
    omega_mu_plot(t, dir)
}

/// `omega_mu.svg`: each head's omega and mu over training, from the `omega` and `mu` columns of
/// the log (one-layer attention runs).
fn omega_mu_plot<T: Scalar>(t: &Trainer<T>, dir: &RunDir) -> Result<()> {
    if t.log.len() < 2 {
        return Ok(());
    }
    let steps: Vec<f64> = t.log.iter().map(|r| r.step as f64).collect();
    let per_head = |group: &str| -> Vec<Vec<f64>> {
        let rows: Vec<Vec<f64>> = t.log.iter().map(|r| t.group(r, group)).collect();
        let heads = rows.first().map_or(0, |r| r.len());
        (0..heads)
            .map(|h| rows.iter().map(|r| r[h]).collect())
            .collect()
    };
    let (omega, mu) = (per_head("omega"), per_head("mu"));
    if omega.is_empty() || mu.is_empty() {
        return Ok(());
    }
    figures::omega_mu(&steps, &omega, &mu).write(&dir.file("omega_mu.svg"))
}
