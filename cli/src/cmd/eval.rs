//! `icl eval DIR`: Monte Carlo risk of the trained model and the classical baselines at test
//! lengths L' (length generalisation, He et al. 2025 figure 3).
use super::common::outln;
use crate::error::CliResult;
use icl_run::eval::{
    eval_run, parse_lambda_range, parse_lengths, temper_from_text, write_risk_plot, EvalOptions,
    MlEvalOptions,
};
use icl_run::summary::pretty;
use icl_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder (from `icl train` or `icl import`).
    pub dir: PathBuf,
    /// Test context lengths L', comma-separated.
    #[arg(long, default_value = "10,20,40,100", allow_negative_numbers = true)]
    pub lengths: String,
    /// Monte Carlo samples per length (>= 2).
    #[arg(long, default_value_t = 20_000, allow_negative_numbers = true)]
    pub samples: usize,
    /// Seed of the evaluation streams.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub seed: u64,
    /// Engine for the model's predictions: simd (default, the fastest built in), scalar or
    /// vulkan.
    #[arg(long)]
    pub engine: Option<String>,
    /// Transformer runs: test eigenvalue range MIN,MAX (out of distribution, e.g. 1.1,1.5).
    #[arg(long, value_name = "MIN,MAX", allow_hyphen_values = true)]
    pub lambda_range: Option<String>,
    /// Transformer runs: apply the trained block k times (k T layers).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub stack: Option<usize>,
    /// Transformer runs: also report the readout after every layer (model_t1.., alg1_t1..).
    #[arg(long)]
    pub layers_out: bool,
    /// Transformer runs: sequences per length for Model Sim / Grad Diff (0: none).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub alignment: usize,
    /// IV two-stage runs: a one-stage run folder to evaluate as "tf_ref" on the same sequences.
    #[arg(long = "ref", value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// Attention temperatures, comma-separated: numbers > 0 and `opt` (chosen per length on
    /// held-out sequences of independent streams). Every attention logit is divided by tau.
    #[arg(long, value_name = "TAUS", allow_negative_numbers = true)]
    pub tau: Option<String>,
    /// Test-time shift KEY=VALUE (repeatable): x_cov, x_mean, w_cov, w_mean, noise (e.g.
    /// x_cov=3, x_mean=2e1 for 2 e_1, noise=1); `icl presets --keys` documents each.
    #[arg(long, value_name = "KEY=VALUE")]
    pub shift: Vec<String>,
    /// Held-out sequences per length for `--tau opt` (default 4096; only with opt among the
    /// temperatures).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub tau_holdout: Option<usize>,
    /// Also write the figure of the risks against L' (model and every baseline, error bars of
    /// one standard error) to FILE: PNG if it ends in .png, SVG otherwise.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print JSON: {"rows": [{"estimator", "L", "risk", "stderr", "tau", "shift"}], ...} ("tau"
    /// on model rows); transformer runs add "target": "noise-free", "etas", "alignment".
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    // a figure that cannot be written is refused before the Monte Carlo runs
    if let Some(p) = &a.plot {
        icl_run::folder::check_output(p)?;
    }
    let opts = EvalOptions {
        lengths: parse_lengths(&a.lengths)?,
        samples: a.samples,
        seed: a.seed,
        engine: a.engine.clone(),
        multilayer: MlEvalOptions {
            lambda_range: a
                .lambda_range
                .as_deref()
                .map(parse_lambda_range)
                .transpose()?,
            stack: a.stack,
            layers_out: a.layers_out,
            alignment: a.alignment,
            reference: a.reference.clone(),
        },
        temper: temper_from_text(a.tau.as_deref(), &a.shift, a.tau_holdout)?,
    };
    let dir = RunDir::new(&a.dir);
    // a run too wide for the SIMD kernels says so before its (slow) evaluation
    let cfg = icl_run::checkpoint::load_config(&dir.config()).ok();
    if let Some(note) =
        cfg.and_then(|c| icl_run::engines::simd_fallback_note(&c, a.engine.as_deref()))
    {
        eprintln!("icl: note: {note}");
    }
    let res = eval_run(&dir, &opts)?;
    if let Some(p) = &a.plot {
        write_risk_plot(&res, p)?;
    }
    if a.json {
        return outln(&pretty(&res));
    }
    let mut s = String::new();
    if let Some(t) = &res.target {
        s.push_str(&format!(
            "risks against the {t} target (raw MSE, not divided by d)\n"
        ));
    }
    if let Some(sh) = res.rows.first().and_then(|r| r.shift.as_ref()) {
        if !sh.is_empty() {
            let keys: Vec<String> = sh.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("test-time shift: {}\n", keys.join(", ")));
        }
    }
    s.push_str(&format!(
        "{:<14} {:>6} {:>10} {:>10}\n",
        "estimator", "L", "risk", "stderr"
    ));
    for r in &res.rows {
        let mut eta = r.eta.map(|e| format!("  (eta {e})")).unwrap_or_default();
        if let Some(t) = r.tau {
            let how = if r.tau_opt { " opt" } else { "" };
            eta.push_str(&format!("  (tau{how} {t:.4})"));
        }
        s.push_str(&format!(
            "{:<14} {:>6} {:>10.5} {:>10.5}{eta}\n",
            r.estimator, r.len, r.risk, r.stderr
        ));
    }
    for a in &res.alignment {
        s.push_str(&format!(
            "alignment L={}: model sim {:.4}, grad diff {:.4}, |yhat_TF - yhat_Alg| {:.4} ({} sequences)\n",
            a.len, a.model_sim, a.grad_diff, a.pred_diff, a.samples
        ));
    }
    super::common::out(&s)
}
