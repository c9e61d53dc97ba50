//! Evaluation of a run: Monte Carlo risk of the trained model and of the classical baselines at
//! test lengths L' (length generalisation, He et al. 2025 figure 3).
use crate::any::AnyModel;
use crate::dispatch;
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::summary::{shift_json, AlignmentRow, EvalRow, EvalRows};
use icl_core::config::{Config, TaskKind};
use icl_core::data::Task;
use icl_core::estimator::Estimator;
use icl_core::families::attention::eval::{mc_risk_tempered, select_temperature, RiskEstimate};
use icl_core::families::stack::eval as ml_eval;
pub use icl_core::families::stack::eval::{Temper, DEFAULT_HOLDOUT};
use icl_core::families::stack::StackRunner;
use icl_core::model::Net;
pub use icl_core::tempered::Tau;
use icl_core::theory::he2025::Setting;
use icl_core::{Model, Runner};

/// Monte Carlo samples of a risk when none are asked for (`icl eval --samples`, the final risk in
/// `summary.json`): the one default of every front end (declared here, below the trainer, so the
/// options' schemas and the trainer both read it without a cycle).
pub const MC_SAMPLES: usize = 20_000;

/// Longest test length (the memory of one chunk of 1024 sequences must stay bounded).
pub const MAX_EVAL_LEN: usize = 1 << 20;

/// Most layers a transformer evaluation runs: the trained depth T times `--stack` k (16 times the
/// deepest model icl trains, [`icl_core::config::MAX_LAYERS`]).
pub const MAX_STACK_DEPTH: usize = 1024;

/// Working memory of a transformer evaluation, in bytes (`None`: the sizes overflow), an upper
/// bound of what was measured (`/usr/bin/time`): the sampled sequences (f64), their copy in the
/// model's precision and the final tokens (`samples x (L' + 1) x D` each); per evaluated depth a
/// prediction, an error and Algorithm 1's prediction per sequence; and the engine's per-layer
/// buffers, which grow with the depth k T: the SIMD engine keeps every layer's tokens and each
/// head's two mixes of a group of 8 sequences per thread (`8 (1 + 2H) (L' + 1) D` values a layer),
/// the scalar reference (also for tokens wider than the SIMD kernels) one sequence's, with each
/// head's attention weights (`(L' + 1) L'` a layer).
fn transformer_memory(net: &Net, d: usize, o: &EvalOptions, scalar: bool) -> Option<u64> {
    use icl_core::budget::product;
    let (e, heads, layers) = match net {
        Net::Stack(s) => (s.e, s.heads, s.layers),
        Net::Iv(iv) => (
            iv.st1.e.max(iv.st2.e),
            iv.st1.heads.max(iv.st2.heads),
            iv.st1.layers + iv.st2.layers,
        ),
        Net::Attention(_) | Net::Gpt2(_) => return Some(0),
    };
    let (e, h, n) = (
        e as u64,
        heads as u64,
        o.samples.max(o.multilayer.alignment) as u64,
    );
    let depth = (layers as u64).checked_mul(o.multilayer.stack.unwrap_or(1) as u64)?;
    let depths = if o.multilayer.layers_out { depth } else { 1 };
    let threads = rayon::current_num_threads() as u64;
    let len = *o.lengths.iter().max()? as u64;
    let toks = len.checked_add(1)?;
    let batch = product(&[3 * 8, n, toks, (d as u64).max(e) + 1])?;
    let preds = product(&[3 * 8, n, depths + 1])?;
    let engine = if scalar || !icl_cpu_simd::multilayer::vectorised(e as usize) {
        product(&[8, depth + 1, toks, e * (1 + 2 * h) + h * len])
    } else {
        product(&[8 * 8, threads, depth + 1, toks, e * (1 + 2 * h)])
    }?;
    batch.checked_add(preds)?.checked_add(engine)
}

/// What to evaluate: [`crate::options::EvalArgs`] checked.
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
    /// Attention temperatures and the test-time shift (temperature paper), for every softmax
    /// (and linear) attention run: one-layer and transformer.
    pub temper: Temper,
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

/// [`Temper`] from text, as every front end takes it: temperatures `0.5,1,2,opt` (`None`: 1),
/// shifts `KEY=VALUE` (`x_cov=3`, `x_mean=2e1`, `shift.noise=1`; see [`icl_core::data::shift`]) and the
/// held-out size of `opt` (`None`: [`DEFAULT_HOLDOUT`]).
pub fn temper_from_text<S: AsRef<str>>(
    tau: Option<&str>,
    shifts: &[S],
    holdout: Option<usize>,
) -> Result<Temper> {
    let mut t = Temper::default();
    if let Some(text) = tau {
        t.taus = icl_core::tempered::parse_taus(text)?;
    }
    let mut seen = std::collections::BTreeSet::new();
    for kv in shifts {
        let kv = kv.as_ref();
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            RunError::Refused(format!(
                "--shift {kv:?} is not KEY=VALUE (e.g. x_cov=3, x_mean=2e1, noise=1)"
            ))
        })?;
        let k = k.trim();
        if !seen.insert(k.strip_prefix("shift.").unwrap_or(k).to_string()) {
            return Err(RunError::Refused(format!("--shift {k} given twice")));
        }
        t.shift.set(k, v)?;
    }
    if let Some(h) = holdout {
        if !t.taus.contains(&Tau::Opt) {
            return Err(RunError::Refused(
                "--tau-holdout sizes the held-out set of --tau opt; give --tau ...,opt with it"
                    .into(),
            ));
        }
        t.holdout = h;
    }
    t.check()?;
    Ok(t)
}

/// Test lengths as every front end writes them: `10,20,40,100` (positive integers; an empty
/// item is an error, see [`icl_core::list::items`]).
pub fn parse_lengths(text: &str) -> Result<Vec<usize>> {
    if text.trim().is_empty() {
        return Err(RunError::Refused("no test lengths given".into()));
    }
    icl_core::list::items("lengths", text)?
        .into_iter()
        .map(|p| {
            p.parse::<usize>().ok().filter(|&x| x > 0).ok_or_else(|| {
                RunError::Refused(format!("lengths: {p:?} is not a positive integer"))
            })
        })
        .collect()
}

/// A test eigenvalue range as every front end writes it: `MIN,MAX`, two numbers (the range
/// itself is checked by the evaluation: 0 < MIN <= MAX, finite).
pub fn parse_lambda_range(text: &str) -> Result<(f64, f64)> {
    let bad = || {
        RunError::Refused(format!(
            "lambda_range needs two numbers MIN,MAX (got {text:?})"
        ))
    };
    let v = icl_core::list::items("lambda_range", text)?;
    match v[..] {
        [a, b] => Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)),
        _ => Err(bad()),
    }
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

/// Check the options every front end gives (lengths, samples, temperatures).
pub(crate) fn check(o: &EvalOptions) -> Result<()> {
    o.temper.check()?;
    if o.samples < 2 {
        return Err(RunError::Refused(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    icl_core::budget::samples(o.samples as u64, "samples")?;
    icl_core::budget::samples(o.multilayer.alignment as u64, "alignment")?;
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

/// The temperatures of one length: (tau, whether `opt` chose it).
type Taus = Vec<(f64, bool)>;

/// The temperatures of one length, `opt` resolved on held-out sequences: (tau, chosen by opt).
fn resolve_taus<T: RunScalar>(
    m: &Model<T>,
    engines: &Engines,
    task: &Task,
    len: usize,
    o: &EvalOptions,
) -> Result<Taus> {
    let mut opt = None;
    o.temper
        .taus
        .iter()
        .map(|t| match *t {
            Tau::Value(v) => Ok((v, false)),
            Tau::Opt => {
                if opt.is_none() {
                    let mut runner = Runner::new(T::engine(&engines.0)?);
                    let (tau, _) =
                        select_temperature(task, len, o.temper.holdout, o.seed, m, &mut runner)?;
                    opt = Some(tau);
                }
                Ok((opt.unwrap_or(1.0), true))
            }
        })
        .collect()
}

fn risks<T: RunScalar>(
    m: &Model<T>,
    engines: &Engines,
    task: &Task,
    len: usize,
    o: &EvalOptions,
    ests: &[Estimator],
) -> Result<(Taus, Vec<RiskEstimate>)> {
    let taus = resolve_taus(m, engines, task, len, o)?;
    let tv: Vec<f64> = taus.iter().map(|t| t.0).collect();
    let mut runner = Runner::new(T::engine(&engines.0)?);
    let r = mc_risk_tempered(
        task,
        len,
        o.samples,
        o.seed,
        Some((m, &mut runner)),
        &tv,
        ests,
    )?;
    Ok((taus, r))
}

/// Risks of `model` (config `cfg`) and the baselines at every length.
pub fn eval_model(cfg: &Config, model: &AnyModel, o: &EvalOptions) -> Result<EvalRows> {
    check(o)?;
    let engines = Engines::named(o.engine.as_deref());
    crate::engines::check(&engines.0, model.dtype())?;
    let task = Task::new(cfg)?.shifted(&o.temper.shift)?;
    let shift = Some(shift_json(&o.temper.shift)).filter(|m| !m.is_empty());
    let mut rows = Vec::new();
    for &len in &o.lengths {
        let base = baselines(cfg, len)?;
        let ests: Vec<Estimator> = base.iter().map(|(_, e)| e.clone()).collect();
        let (taus, res) = dispatch!(model, m => risks(m, &engines, &task, len, o, &ests)?);
        let names = taus
            .iter()
            .map(|&t| ("model".to_string(), Some(t)))
            .chain(base.into_iter().map(|(n, _)| (n, None)));
        for ((estimator, tau), r) in names.zip(res) {
            rows.push(EvalRow {
                estimator,
                len,
                risk: r.risk,
                stderr: r.stderr,
                eta: None,
                eta_x: None,
                tau: tau.map(|t| t.0),
                tau_opt: tau.is_some_and(|t| t.1),
                shift: shift.clone(),
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
        d: None,
        normalization: None,
        train_len: None,
        log_lengths: false,
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
    let shift = Some(shift_json(&o.temper.shift)).filter(|m| !m.is_empty());
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
                tau: r.tau,
                tau_opt: r.tau_opt,
                shift: shift.clone(),
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
        d: None,
        normalization: None,
        train_len: None,
        log_lengths: false,
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
        TaskKind::Iv if !o.temper.is_plain() => {
            return Err(RunError::Refused(
                "--tau and --shift are not implemented for IV runs (task.kind = iv)".into(),
            ))
        }
        TaskKind::Iv => {
            let r = reference.map(|r| r.to::<T>());
            icl_core::families::iv::eval::iv(
                cfg,
                m,
                r.as_ref()
                    .map(|model| icl_core::families::iv::eval::Reference { model }),
                &mut runner,
                &mo,
            )?
        }
        TaskKind::Varying => ml_eval::regression_at(cfg, m, &mut runner, &mo, &o.temper)?,
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
    let net = &model.spec().net;
    if let (Net::Stack(s), Some(k)) = (net, o.multilayer.stack) {
        if s.layers.saturating_mul(k) > MAX_STACK_DEPTH {
            return Err(icl_core::Error::TooLarge(format!(
                "--stack {k}: {} layers (the model's {} times {k}); at most {MAX_STACK_DEPTH}",
                s.layers.saturating_mul(k),
                s.layers
            ))
            .into());
        }
    }
    icl_core::budget::reserve(
        transformer_memory(net, cfg.task.d, o, engines.0 == "scalar"),
        || {
            "this evaluation (--samples x the longest --lengths, the depth: the model's layers x --stack)".into()
        },
    )?;
    if reference.is_some() && !matches!(model.spec().net, Net::Iv(_)) {
        return Err(RunError::Refused(
            "--ref applies to IV two-stage runs (model.arch = iv2stage)".into(),
        ));
    }
    let rep = dispatch!(model, m => ml_eval_typed(cfg, m, reference, &engines, o)?);
    Ok(ml_rows(rep, o, engines.0))
}

/// [`eval_model`] for the run in `dir`. A numerical failure under a temperature, a shift or an
/// eigenvalue range is an input error that names them (see [`extreme_inputs`]).
pub fn eval_run(dir: &RunDir, o: &EvalOptions) -> Result<EvalRows> {
    let mut res = eval_run_inner(dir, o).map_err(|e| extreme_inputs(o, e))?;
    res.train_len = crate::checkpoint::load_config(&dir.config())
        .ok()
        .map(|c| c.task.len);
    Ok(res)
}

/// A numerical failure (a risk that is not finite, a singular system) of an evaluation with a
/// temperature other than 1, a test-time shift or an eigenvalue range is those values' doing:
/// a checkpoint's parameters are finite, and f64 cannot evaluate with, say, `tau = 1e-300` or a
/// noise of 1e308. It becomes [`icl_core::Error::InvalidArgument`] naming them; other errors
/// are unchanged.
fn extreme_inputs(o: &EvalOptions, e: RunError) -> RunError {
    let RunError::Core(icl_core::Error::Numerical(m)) = &e else {
        return e;
    };
    let mut given: Vec<String> = o
        .temper
        .taus
        .iter()
        .filter_map(|t| match t {
            Tau::Value(v) if *v != 1.0 => Some(format!("tau {v:?}")),
            _ => None,
        })
        .collect();
    // numbers in their shortest form (1e308, not 309 digits)
    let short = |v: &str| {
        v.parse::<f64>()
            .map(|x| format!("{x:?}"))
            .unwrap_or_else(|_| v.to_string())
    };
    given.extend(
        icl_core::config::shift::describe(&o.temper.shift)
            .into_iter()
            .map(|(k, v)| {
                format!(
                    "shift {}={}",
                    k.strip_prefix("shift.").unwrap_or(&k),
                    short(&v)
                )
            }),
    );
    if let Some((lo, hi)) = o.multilayer.lambda_range {
        given.push(format!("lambda range {lo:?},{hi:?}"));
    }
    if given.is_empty() {
        return e;
    }
    RunError::Core(icl_core::Error::InvalidArgument(format!(
        "{}: the evaluation is not finite in f64 with these values ({m}); give less extreme ones",
        given.join(", ")
    )))
}

/// Refuse the multilayer paper's options (`--lambda-range`, `--stack`, ...) for the runs of other
/// families.
fn no_multilayer_options(o: &EvalOptions) -> Result<()> {
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
    Ok(())
}

fn eval_run_inner(dir: &RunDir, o: &EvalOptions) -> Result<EvalRows> {
    check(o)?;
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    if let Net::Gpt2(_) = &loaded.model.spec().net {
        return eval_gpt2(&loaded.config, &loaded.model, o);
    }
    if !loaded.model.spec().is_attention() {
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
    no_multilayer_options(o)?;
    eval_model(&loaded.config, &loaded.model, o)
}

/// The estimators beside a GPT-2 model (Garg et al. 2022, Figs. 2 and 4): minimum-norm least
/// squares, 3 nearest neighbours, averaging, and ridge at the task's Bayes lambda (sigma^2 over
/// the task vector's prior variance: 1 for the `linear`, `eigs` and `varying` tasks' N(0, I_d),
/// 1/d for the isotropic task's N(0, I_d/d)) where it is not 0 (at 0 it is least squares); on
/// the function classes their `get_relevant_baselines`: the Lasso over their alpha grid (sparse),
/// CART trees of depth 4 and unbounded and boosted trees (tree), a two-layer ReLU network fitted
/// by Adam (relu2nn).
pub fn gpt2_baselines(cfg: &Config) -> Vec<Estimator> {
    match cfg.task.kind {
        TaskKind::Sparse => {
            let mut v = vec![
                Estimator::Lstsq,
                Estimator::Knn { k: 3 },
                Estimator::Averaging,
            ];
            v.extend([1.0, 0.1, 0.01, 0.001, 0.0001].map(|alpha| Estimator::Lasso { alpha }));
            return v;
        }
        TaskKind::Relu2nn => {
            return vec![
                Estimator::Lstsq,
                Estimator::Knn { k: 3 },
                Estimator::Averaging,
                Estimator::Mlp,
            ]
        }
        TaskKind::Tree => {
            return vec![
                Estimator::Lstsq,
                Estimator::Knn { k: 3 },
                Estimator::Tree { max_depth: Some(4) },
                Estimator::Tree { max_depth: None },
                Estimator::Boost,
                Estimator::Averaging,
            ]
        }
        _ => {}
    }
    let prior = if cfg.task.kind != TaskKind::Isotropic {
        1.0
    } else {
        1.0 / cfg.task.d as f64
    };
    let mut v = vec![
        Estimator::Lstsq,
        Estimator::Knn { k: 3 },
        Estimator::Averaging,
    ];
    if cfg.task.sigma2 > 0.0 {
        v.push(Estimator::Ridge {
            lambda: cfg.task.sigma2 / prior,
        });
    }
    v
}

/// E y² of a GPT-2 run's task, what Garg et al.'s figures divide the squared error by
/// (`plot_utils.collect_results`): k for sparse linear functions, 1 for decision trees, d
/// otherwise (linear functions, E (w·x)² = d; two-layer networks, whose scaling gives d too).
pub fn normalization(cfg: &Config) -> f64 {
    normalization_at(cfg, cfg.task.d)
}

/// The curriculum stage of a row logged at `step` (steps done): the dimension and context length
/// of its last step (0-based `step - 1`) and E y² at that dimension ([`normalization_at`]), what
/// the row's loss is divided by in `loss.svg` and TensorBoard.
pub fn row_stage(
    cfg: &Config,
    c: &icl_core::families::gpt2::objective::Curriculum,
    step: u64,
) -> (usize, usize, f64) {
    let (d, l) = c.at(step.saturating_sub(1));
    (d, l, normalization_at(cfg, d))
}

/// [`normalization`] with `d` of `cfg.task.d`'s coordinates in use (a curriculum's stage, the
/// others zero).
pub fn normalization_at(cfg: &Config, d: usize) -> f64 {
    match cfg.task.kind {
        TaskKind::Sparse => cfg.task.sparsity as f64,
        TaskKind::Tree => 1.0,
        _ => d as f64,
    }
}

/// Risks of a GPT-2 run at every prompt position 0..=L (L the longest of `o.lengths`): the model
/// at each temperature and [`gpt2_baselines`]; `d` is reported for the plot's risk / d.
pub fn eval_gpt2(cfg: &Config, model: &AnyModel, o: &EvalOptions) -> Result<EvalRows> {
    eval_gpt2_with(cfg, model, o, &gpt2_baselines(cfg))
}

/// [`eval_gpt2`] with the baselines `ests` (the end of training leaves out the fitted ones).
pub fn eval_gpt2_with(
    cfg: &Config,
    model: &AnyModel,
    o: &EvalOptions,
    ests: &[Estimator],
) -> Result<EvalRows> {
    check(o)?;
    no_multilayer_options(o)?;
    let engines = Engines::named(o.engine.as_deref());
    crate::engines::check(&engines.0, model.dtype())?;
    let task = Task::new(cfg)?.shifted(&o.temper.shift)?;
    let shift = Some(shift_json(&o.temper.shift)).filter(|m| !m.is_empty());
    // every position up to the longest length asked for, within the learned positions (the
    // default lengths 10,20,40,100 give 0..=L of a garg-linear model)
    let positions = match &model.spec().net {
        Net::Gpt2(sp) => sp.positions,
        _ => return Err(RunError::Refused("not a GPT-2 model".into())),
    };
    let len = o
        .lengths
        .iter()
        .copied()
        .max()
        .unwrap_or(cfg.task.len)
        .min(positions - 1);
    let opt = o.temper.taus.contains(&Tau::Opt);
    // the temperatures evaluated: those given, then every one `opt` chose at some position
    let (chosen, taus, res) = dispatch!(model, m => {
        let Net::Gpt2(sp) = &m.spec.net else {
            return Err(RunError::Refused("not a GPT-2 model".into()));
        };
        let mut runner = icl_core::engine::Gpt2Runner::new(<_ as RunScalar>::gpt2_engine(&engines.0)?);
        let chosen = if opt {
            icl_core::families::gpt2::eval::select_position_taus(sp, &m.params, &task, len, o.temper.holdout, o.seed, &mut runner)?
        } else {
            Vec::new()
        };
        let mut taus: Vec<f64> = Vec::new();
        for t in o.temper.taus.iter().filter_map(|t| match t {
            Tau::Value(v) => Some(*v),
            Tau::Opt => None,
        }).chain(chosen.iter().map(|c| c.0)) {
            if !taus.contains(&t) {
                taus.push(t);
            }
        }
        let res = icl_core::families::gpt2::eval::position_risks(sp, &m.params, &task, len, o.samples, o.seed, &mut runner, &taus, ests)?;
        (chosen, taus, res)
    });
    let at = |t: f64| taus.iter().position(|&x| x == t).unwrap_or(0);
    let row =
        |estimator: &str, i: usize, r: &RiskEstimate, tau: Option<f64>, tau_opt: bool| EvalRow {
            estimator: estimator.to_string(),
            len: i,
            risk: r.risk,
            stderr: r.stderr,
            eta: None,
            eta_x: None,
            tau,
            tau_opt,
            shift: shift.clone(),
        };
    let mut rows = Vec::new();
    for t in &o.temper.taus {
        for i in 0..=len {
            rows.push(match *t {
                Tau::Value(v) => row("model", i, &res[at(v)][i], Some(v), false),
                Tau::Opt => row(
                    "model",
                    i,
                    &res[at(chosen[i].0)][i],
                    Some(chosen[i].0),
                    true,
                ),
            });
        }
    }
    for (e, per) in ests.iter().zip(&res[taus.len()..]) {
        for (i, r) in per.iter().enumerate() {
            rows.push(row(&e.name(), i, r, None, false));
        }
    }
    Ok(EvalRows {
        rows,
        samples: o.samples,
        seed: o.seed,
        engine: engines.0,
        target: Some("label".into()),
        etas: Vec::new(),
        alignment: Vec::new(),
        lambda_range: None,
        stack: None,
        d: Some(cfg.task.d),
        normalization: Some(normalization(cfg)),
        train_len: None,
        log_lengths: false,
    })
}

/// Write the figure of `res` (risk against L' of the model and every baseline, error bars of one
/// standard error; He et al. 2025 figure 3) to `path`: PNG if it ends in `.png`, SVG if in
/// `.svg` (other names are refused).
pub fn write_risk_plot(res: &EvalRows, path: &std::path::Path) -> Result<()> {
    crate::plot::figures::risk_vs_len(res)?.write(path)
}
