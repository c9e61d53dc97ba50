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
    pack: Option<&crate::engines::Pack>,
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
        // a run of a pack evaluates on the pack's device (not a device of its own per run)
        let kernels = match pack {
            Some(p) => T::pack_predictor(p)?,
            None => T::engine(&Engines::named(engine).0)?,
        };
        let mut runner = Runner::new(kernels);
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
    // every row, the early ones too (points in the first decades of the log step axis)
    let all = t.rows();
    if all.len() < 2 {
        return Ok(());
    }
    let steps: Vec<f64> = all.iter().map(|r| r.step as f64).collect();
    let per_head = |group: &str| -> Vec<Vec<f64>> {
        let rows: Vec<Vec<f64>> = all.iter().map(|r| t.group(r, group)).collect();
        let heads = rows.first().map_or(0, |r| r.len());
        (0..heads)
            .map(|h| rows.iter().map(|r| r[h]).collect())
            .collect()
    };
    let (omega, mu) = (per_head("omega"), per_head("mu"));
    if omega.is_empty() || mu.is_empty() {
        return Ok(());
    }
    let (om_refs, mu_refs) = theory_levels(&t.cfg, &omega, &mu);
    figures::omega_mu(&steps, &omega, &mu, &om_refs, &mu_refs)
        .for_run(&super::run_name(dir))
        .write(&dir.file("omega_mu.svg"))
}

/// Reference levels of a figure: (legend, value).
type Levels = Vec<(String, f64)>;

/// The theory's (omega, mu) for `omega_mu.svg` where He et al. (2025) has them (softmax
/// attention on the isotropic task, one output): for one head the kernel regressor's optimum
/// omega* = 1/sqrt(d), mu* (Chen et al. 2024a); for several, ±mu_gamma (eq. 4.5) at the learned
/// scale gamma, the mean final |omega| of the heads that are not dummy (|omega| above a quarter of
/// the largest). Empty lists elsewhere.
fn theory_levels(
    cfg: &icl_core::config::Config,
    omega: &[Vec<f64>],
    _mu: &[Vec<f64>],
) -> (Levels, Levels) {
    use icl_core::config::{Activation, AttentionKind, TaskKind};
    let none = (Vec::new(), Vec::new());
    let m = &cfg.model;
    if cfg.task.kind != TaskKind::Isotropic
        || m.attention != AttentionKind::Softmax
        || m.activation != Activation::Exp
        || cfg.n_out() != 1
    {
        return none;
    }
    let Ok(s) = icl_core::theory::he2025::Setting::new(cfg.task.d, cfg.task.len, cfg.task.sigma2)
    else {
        return none;
    };
    if omega.len() == 1 {
        let (w, u) = s.nw_optimum();
        return (
            vec![("ω* = 1/√d (Chen et al.)".into(), w)],
            vec![(format!("μ* = {u:.3}"), u)],
        );
    }
    let last: Vec<f64> = omega
        .iter()
        .filter_map(|c| c.last().copied())
        .filter(|v| v.is_finite())
        .map(f64::abs)
        .collect();
    let big = last.iter().fold(0.0f64, |a, &v| a.max(v));
    let active: Vec<f64> = last.into_iter().filter(|&v| v > 0.25 * big).collect();
    if active.is_empty() || !(big > 0.0) {
        return none;
    }
    let gamma = active.iter().sum::<f64>() / active.len() as f64;
    match s.mu_gamma(gamma) {
        Ok(u) if u.is_finite() => (
            Vec::new(),
            vec![
                (format!("+μ_γ = {u:.3} (eq. 4.5, γ = {gamma:.3})"), u),
                ("−μ_γ".to_string(), -u),
            ],
        ),
        _ => none,
    }
}
