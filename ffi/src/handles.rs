//! The objects behind the C handles and the C++ classes: a configuration, a task sampler, a model
//! (with the engine that runs it) and a trainer. Everything here is safe Rust taking slices of f64;
//! the C layer (`crate::c`) checks pointers and lengths, the C++ layer (`crate::cxx`) passes slices.
//! Models and trainers are the run layer's ([`icl_core_run::any`]): created, trained, evaluated and
//! saved by `icl-core-run`, as for the CLI and Python; this layer converts.
//!
//! Models and trainers compute in the precision of their config (`train.dtype`, f32 by default);
//! inputs and outputs cross the boundary as f64 (inputs are rounded to the model's precision, as
//! `icl train` rounds the sampled data).
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core::budget::{try_map, try_vec};
use icl_core::config::Config;
use icl_core::families::attention::analysis::analyze;
use icl_core::families::attention::eval::RiskEstimate;
use icl_core::rng::Domain;
use icl_core::train::Options;
use icl_core::{Batch, Model, Scalar, Task};
use icl_core_run::any::{AnyModel, AnyTrainer, Either, EnginedModel, EnginedTrainer, Start};
use icl_core_run::{default_engine, dispatch, Engines, RunError};
use std::path::Path;

/// A run configuration (`icl_config` in C, `icl::Config` in C++).
#[allow(non_camel_case_types)]
#[derive(Debug, Clone)]
pub struct icl_config {
    pub cfg: Config,
}

/// A task sampler (`icl_task` in C, `icl::TaskSampler` in C++).
#[allow(non_camel_case_types)]
#[derive(Debug, Clone)]
pub struct icl_task {
    pub cfg: Config,
    pub task: Task,
}

/// A model and the engine that runs it (`icl_model` in C, `icl::Model` in C++).
#[allow(non_camel_case_types)]
pub struct icl_model {
    /// The run configuration the model belongs to (saved in its checkpoints).
    pub cfg: Config,
    /// Training steps behind the parameters (saved in checkpoints).
    pub step: u64,
    pub inner: EnginedModel,
}

/// A trainer: task, model, optimiser, log and engine (`icl_trainer` in C, `icl::Trainer` in C++).
#[allow(non_camel_case_types)]
pub struct icl_trainer {
    pub inner: EnginedTrainer,
}

/// Shape of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub d: usize,
    pub n_out: usize,
    pub heads: usize,
    pub n_params: usize,
    /// The training context length L of the config.
    pub train_len: usize,
    pub is_f64: bool,
}

/// Per-head circuits: omega (H values) and mu (H x n_out, row-major), plus the effective KQ
/// (H x E x E) and OV (H x n_out x E).
#[derive(Debug, Clone, PartialEq)]
pub struct HeadCircuits {
    pub omega: Vec<f64>,
    pub mu: Vec<f64>,
    pub kq: Vec<f64>,
    pub ov: Vec<f64>,
}

/// One row of the training log (as in `metrics.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub step: u64,
    pub loss: f64,
    pub omega: Vec<f64>,
    pub mu: Vec<f64>,
}

// ------------------------------------------------------------------------------------------------
// Shapes and conversions.

/// Random-stream domain of sampled sequences: 0 = training batches, 1 = evaluation samples.
pub fn domain_of(code: u32) -> FfiResult<Domain> {
    match code {
        0 => Ok(Domain::Train),
        1 => Ok(Domain::Eval),
        _ => Err(FfiError::argument(format!(
            "domain = {code}; expected ICL_DOMAIN_TRAIN (0) or ICL_DOMAIN_EVAL (1)"
        ))),
    }
}

fn mul(what: &str, xs: &[usize]) -> FfiResult<usize> {
    xs.iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .ok_or_else(|| FfiError::size(format!("{what}: size overflows")))
}

/// Largest context length a call takes: the largest `task.L` of a configuration.
pub const MAX_LEN: usize = icl_core::config::MAX_L as usize;

/// Fail with `ICL_ERR_SIZE` unless `1 <= len <= MAX_LEN`.
pub fn check_context_len(len: usize) -> FfiResult<()> {
    if len == 0 || len > MAX_LEN {
        return Err(FfiError::size(format!(
            "context length L = {len}; 1 <= L <= {MAX_LEN} (the range of task.L)"
        )));
    }
    Ok(())
}

/// Sizes of a token-major batch of `n` sequences of context length `len`: (z values, y values).
pub fn batch_sizes(n: usize, len: usize, d: usize, n_out: usize) -> FfiResult<(usize, usize)> {
    if n == 0 {
        return Err(FfiError::size("need n >= 1 sequences (n = 0)"));
    }
    check_context_len(len)?;
    let toks = len
        .checked_add(1)
        .ok_or_else(|| FfiError::size("L overflows"))?;
    Ok((mul("z", &[n, toks, d + n_out])?, mul("y", &[n, n_out])?))
}

/// Fail with `ICL_ERR_SIZE` unless `got == want`.
pub fn check_len(what: &str, got: usize, want: usize) -> FfiResult<()> {
    if got != want {
        return Err(FfiError::size(format!(
            "{what} has {got} values; {want} needed"
        )));
    }
    Ok(())
}

/// Fail with `ICL_ERR_NONFINITE` at the first NaN or infinity.
pub fn check_finite(what: &str, xs: &[f64]) -> FfiResult<()> {
    Ok(icl_core::scalar::check_finite(what, xs)?)
}

/// Read a checkpoint. A path that names a folder is `ICL_ERR_IO`, like any other file the
/// operating system cannot read as one.
fn load_checkpoint(path: &Path) -> FfiResult<icl_core_run::checkpoint::Loaded> {
    icl_core_run::checkpoint::load(path).map_err(|e| match e {
        icl_core_run::RunError::Refused(m) => FfiError::new(icl_status::ICL_ERR_IO, m),
        other => other.into(),
    })
}

/// `xs` in precision `T`, allocated fallibly: a copy the caller's buffer fits but the memory left
/// does not is `ICL_ERR_SIZE`, not an abort.
fn cast<T: Scalar>(xs: &[f64], what: &str) -> FfiResult<Vec<T>> {
    Ok(try_map(xs, what, |&x| T::of(x))?)
}

fn widen<T: Scalar>(xs: &[T]) -> Vec<f64> {
    xs.iter().map(|x| x.to_f64()).collect()
}

/// [`widen`], allocated fallibly.
fn try_widen<T: Scalar>(xs: &[T], what: &str) -> FfiResult<Vec<f64>> {
    Ok(try_map(xs, what, |x| x.to_f64())?)
}

/// A batch in precision `T` from token-major `z` and targets `y` (sizes and finiteness checked;
/// values that overflow `T` are reported as non-finite).
pub fn batch_from<T: Scalar>(
    n: usize,
    len: usize,
    d: usize,
    n_out: usize,
    z: &[f64],
    y: &[f64],
) -> FfiResult<Batch<T>> {
    let (zn, yn) = batch_sizes(n, len, d, n_out)?;
    check_len("z", z.len(), zn)?;
    check_len("y", y.len(), yn)?;
    // one copy, in the model's precision; the query's y-slots are ignored (read as 0, whatever
    // they hold, NaN included), and `from_parts` reports the first value that is not finite
    let e = d + n_out;
    let mut zt: Vec<T> = cast(z, "z in the model's precision")?;
    for b in 0..n {
        zt[(b * (len + 1) + len) * e + d..][..n_out].fill(T::zero());
    }
    Ok(Batch::from_parts(n, len, d, n_out, zt, cast(y, "y")?)?)
}

/// A batch in precision `T` from contexts `x` ([n][L][d]), `y` ([n][L][n_out]) and queries
/// `xq` ([n][d]); the targets are zero.
pub fn batch_from_context<T: Scalar>(
    n: usize,
    len: usize,
    d: usize,
    n_out: usize,
    x: &[f64],
    y: &[f64],
    xq: &[f64],
) -> FfiResult<Batch<T>> {
    batch_sizes(n, len, d, n_out)?;
    check_len("x", x.len(), mul("x", &[n, len, d])?)?;
    check_len("y", y.len(), mul("y", &[n, len, n_out])?)?;
    check_len("xq", xq.len(), mul("xq", &[n, d])?)?;
    check_finite("x", x)?;
    check_finite("y", y)?;
    check_finite("xq", xq)?;
    let e = d + n_out;
    // the tokens, in the model's precision, allocated fallibly
    let mut z: Vec<T> = try_vec(n * (len + 1) * e, T::zero(), "the batch's tokens")?;
    for b in 0..n {
        for l in 0..len {
            let tok = &mut z[(b * (len + 1) + l) * e..][..e];
            for (t, v) in tok[..d].iter_mut().zip(&x[(b * len + l) * d..][..d]) {
                *t = T::of(*v);
            }
            for (t, v) in tok[d..]
                .iter_mut()
                .zip(&y[(b * len + l) * n_out..][..n_out])
            {
                *t = T::of(*v);
            }
        }
        for (t, v) in z[(b * (len + 1) + len) * e..][..d]
            .iter_mut()
            .zip(&xq[b * d..][..d])
        {
            *t = T::of(*v);
        }
    }
    Ok(Batch::from_parts(
        n,
        len,
        d,
        n_out,
        z,
        try_vec(n * n_out, T::zero(), "the batch's targets")?,
    )?)
}

/// The per-head circuits of a one-layer attention model; multi-layer models (transformers, the
/// IV model) have no per-head KQ and OV (`ICL_ERR_UNSUPPORTED`).
fn circuits_of<T: Scalar>(model: &Model<T>) -> FfiResult<HeadCircuits> {
    let Ok(spec) = model.attention() else {
        return Err(icl_core::Error::Unsupported(format!(
            "{} has no per-head circuits (omega, mu, KQ, OV are those of one-layer attention models)",
            model.describe()
        ))
        .into());
    };
    let circ = model.circuits()?;
    let rep = analyze(spec, &circ);
    Ok(HeadCircuits {
        omega: rep.heads.iter().map(|h| h.omega).collect(),
        mu: rep
            .heads
            .iter()
            .flat_map(|h| h.mu_all.iter().copied())
            .collect(),
        kq: widen(&circ.kq),
        ov: widen(&circ.ov),
    })
}

fn set_params_of<T: Scalar>(model: &mut Model<T>, p: &[f64]) -> FfiResult<()> {
    check_len("params", p.len(), model.params.len())?;
    check_finite("params", p)?;
    let v: Vec<T> = cast(p, "params")?;
    if let Some(i) = v.iter().position(|x| !x.finite()) {
        return Err(FfiError::nonfinite(format!(
            "params[{i}] = {} overflows {}",
            p[i],
            T::NAME
        )));
    }
    model.params = v;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Configuration.

impl icl_config {
    /// The named preset (`icl presets` lists them).
    pub fn preset(name: &str) -> FfiResult<Self> {
        Ok(icl_config {
            cfg: icl_core::presets::preset(name)?,
        })
    }
    /// A TOML text on top of the defaults (the `he2025` preset), validated.
    pub fn from_toml(text: &str) -> FfiResult<Self> {
        Ok(icl_config {
            cfg: Config::from_toml(text)?,
        })
    }
    /// Set one dotted key (`model.heads`, `train.lr`, ...); the value is checked now, the
    /// cross-field rules when the config is used.
    pub fn set_key(&mut self, key: &str, value: &str) -> FfiResult<()> {
        let mut c = self.cfg.clone();
        c.set(key, value)?;
        self.cfg = c;
        Ok(())
    }
    /// The current value of a key as text (the form `set_key` accepts).
    pub fn get_key(&self, key: &str) -> FfiResult<String> {
        Ok(self.cfg.get(key)?.to_string())
    }
    /// Cross-field validation.
    pub fn validate(&self) -> FfiResult<()> {
        Ok(self.cfg.validate()?)
    }
    /// The config as TOML text (round-trips through `from_toml`).
    pub fn toml(&self) -> String {
        self.cfg.to_toml()
    }
}

// ------------------------------------------------------------------------------------------------
// Task sampler.

impl icl_task {
    /// The sampler of a config.
    pub fn new(cfg: &Config) -> FfiResult<Self> {
        Ok(icl_task {
            cfg: cfg.clone(),
            task: Task::new(cfg)?,
        })
    }
    /// (d, n_out, training L).
    pub fn dims(&self) -> (usize, usize, usize) {
        (self.task.d, self.task.n_out, self.cfg.task.len)
    }
    /// Sample `n` sequences of context length `len` into token-major `z` and targets `y`;
    /// sequence b comes from stream (seed, domain, step, b), exactly as the trainer's batch of
    /// `step` (domain Train) or the evaluation samples (domain Eval, step = test length).
    #[allow(clippy::too_many_arguments)]
    pub fn sample(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        n: usize,
        len: usize,
        z: &mut [f64],
        y: &mut [f64],
    ) -> FfiResult<()> {
        let (d, no) = (self.task.d, self.task.n_out);
        let (zn, yn) = batch_sizes(n, len, d, no)?;
        check_len("z", z.len(), zn)?;
        check_len("y", y.len(), yn)?;
        let b = self.sample_batch(seed, domain, step, n, len)?;
        z.copy_from_slice(&b.z);
        y.copy_from_slice(&b.y);
        Ok(())
    }

    /// [`icl_task::sample`] into a batch of its own, allocated fallibly (`ICL_ERR_SIZE` when the
    /// memory is not available).
    pub fn sample_batch(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        n: usize,
        len: usize,
    ) -> FfiResult<Batch<f64>> {
        let (d, no) = (self.task.d, self.task.n_out);
        batch_sizes(n, len, d, no)?;
        let mut b = Batch::<f64>::try_zeros(n, len, d, no)?;
        self.task
            .sample_into(seed, domain, step, 0, &mut b, &mut Vec::new());
        Ok(b)
    }
}

// ------------------------------------------------------------------------------------------------
// Model.

/// The run layer's engine errors as the C API reports them: an engine that cannot run this
/// precision (vulkan in f64) is `ICL_ERR_UNSUPPORTED`, like a missing Vulkan device; an unknown
/// name `ICL_ERR_UNKNOWN_NAME`. Names are case-sensitive ("simd", not "SIMD").
fn engine_err(e: RunError) -> FfiError {
    match e {
        RunError::Refused(m) => FfiError::new(icl_status::ICL_ERR_UNSUPPORTED, m),
        other => other.into(),
    }
}

/// The parameter and circuit accessors the model and trainer handles share (C's
/// `icl_model_get_params` and `icl_trainer_get_params`, ...): written once, for both.
pub trait HasModel {
    /// The model, of either precision.
    fn model_any(&self) -> Either<&Model<f32>, &Model<f64>>;
    /// The model, mutably.
    fn model_any_mut(&mut self) -> Either<&mut Model<f32>, &mut Model<f64>>;
    /// The run configuration.
    fn config(&self) -> &Config;

    /// Shape of the model.
    fn dims(&self) -> Dims {
        let is_f64 = self.model_any().is_f64();
        let (train_len, heads) = (self.config().task.len, self.config().model.heads);
        dispatch!(self.model_any(), m => Dims {
            d: m.spec.d,
            n_out: m.spec.n_out,
            heads,
            n_params: m.params.len(),
            train_len,
            is_f64,
        })
    }
    /// The flat parameters, widened to f64.
    fn params(&self) -> Vec<f64> {
        dispatch!(self.model_any(), m => widen(&m.params))
    }
    /// Replace the flat parameters (rounded to the model's precision; a trainer keeps its
    /// optimiser state).
    fn set_params(&mut self, p: &[f64]) -> FfiResult<()> {
        dispatch!(self.model_any_mut(), m => set_params_of(m, p))
    }
    /// Per-head circuits.
    fn circuits(&self) -> FfiResult<HeadCircuits> {
        dispatch!(self.model_any(), m => circuits_of(m))
    }
}

impl HasModel for icl_model {
    fn model_any(&self) -> Either<&Model<f32>, &Model<f64>> {
        match &self.inner {
            Either::F32(s) => Either::F32(&s.value),
            Either::F64(s) => Either::F64(&s.value),
        }
    }
    fn model_any_mut(&mut self) -> Either<&mut Model<f32>, &mut Model<f64>> {
        match &mut self.inner {
            Either::F32(s) => Either::F32(&mut s.value),
            Either::F64(s) => Either::F64(&mut s.value),
        }
    }
    fn config(&self) -> &Config {
        &self.cfg
    }
}

impl HasModel for icl_trainer {
    fn model_any(&self) -> Either<&Model<f32>, &Model<f64>> {
        match &self.inner {
            Either::F32(s) => Either::F32(&s.value.model),
            Either::F64(s) => Either::F64(&s.value.model),
        }
    }
    fn model_any_mut(&mut self) -> Either<&mut Model<f32>, &mut Model<f64>> {
        match &mut self.inner {
            Either::F32(s) => Either::F32(&mut s.value.model),
            Either::F64(s) => Either::F64(&mut s.value.model),
        }
    }
    fn config(&self) -> &Config {
        dispatch!(&self.inner, s => &s.value.cfg)
    }
}

impl icl_model {
    /// A freshly initialised model of a config (seed `train.seed`, precision `train.dtype`), run
    /// by the default engine.
    pub fn new(cfg: &Config) -> FfiResult<Self> {
        Self::of(cfg.clone(), 0, AnyModel::init(cfg)?, default_engine())
    }

    fn of(cfg: Config, step: u64, model: AnyModel, engine: &str) -> FfiResult<Self> {
        Ok(icl_model {
            cfg,
            step,
            inner: model.with_engine(engine).map_err(engine_err)?,
        })
    }

    /// Load a checkpoint (`model.safetensors` of a run folder, as `icl train` writes it).
    pub fn load(path: &Path) -> FfiResult<Self> {
        let l = load_checkpoint(path)?;
        Self::of(l.config, l.step, l.model, default_engine())
    }

    /// Write a checkpoint that `load` and `icl eval`/`icl analyze` read.
    pub fn save(&self, path: &Path) -> FfiResult<()> {
        dispatch!(&self.inner, s => icl_core_run::checkpoint::save_model(path, &s.value, &self.cfg, self.step))?;
        Ok(())
    }

    /// Run the model with another engine (same names as `icl --engine`).
    pub fn set_engine(&mut self, name: &str) -> FfiResult<()> {
        dispatch!(&mut self.inner, s => s.set_engine(name)).map_err(engine_err)
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &str {
        dispatch!(&self.inner, s => &s.engine)
    }

    /// Predictions ([n][n_out]) for contexts x ([n][L][d]), y ([n][L][n_out]) and queries xq ([n][d]).
    pub fn predict(
        &mut self,
        n: usize,
        len: usize,
        x: &[f64],
        y: &[f64],
        xq: &[f64],
        out: &mut [f64],
    ) -> FfiResult<()> {
        let Dims { d, n_out, .. } = self.dims();
        check_len("out", out.len(), n.saturating_mul(n_out))?;
        let p = dispatch!(&mut self.inner, s => {
            let b = batch_from_context(n, len, d, n_out, x, y, xq)?;
            try_widen(&s.predict(&b)?, "predictions")?
        });
        out.copy_from_slice(&p);
        Ok(())
    }

    /// The length of [`Self::predict_prompts`]' output (saturating): n k for GPT-2 models, n n_out
    /// otherwise.
    pub fn prompt_outputs(&self, n: usize, k: usize) -> usize {
        let gpt2 =
            dispatch!(self.model_any(), m => matches!(m.spec.net, icl_core::model::Net::Gpt2(_)));
        if gpt2 {
            n.saturating_mul(k)
        } else {
            n.saturating_mul(self.dims().n_out)
        }
    }

    /// Predictions on `n` prompts of `k` pairs (`xs` [n][k][d], `ys` [n][k]) into `out`: [n][k]
    /// for GPT-2 models (every x position), [n][n_out] otherwise (the last x as the query).
    pub fn predict_prompts(
        &mut self,
        n: usize,
        k: usize,
        xs: &[f64],
        ys: &[f64],
        out: &mut [f64],
    ) -> FfiResult<()> {
        check_len("out", out.len(), self.prompt_outputs(n, k))?;
        out.copy_from_slice(&self.prompt_predictions(n, k, xs, ys)?);
        Ok(())
    }

    /// [`Self::predict_prompts`]' values, in a new vector.
    pub fn prompt_predictions(
        &self,
        n: usize,
        k: usize,
        xs: &[f64],
        ys: &[f64],
    ) -> FfiResult<Vec<f64>> {
        let engine = self.engine_name();
        let p = dispatch!(self.model_any(), m => icl_core_run::predict::predict_prompts_of(m, engine, xs, ys, n, k))?;
        Ok(p.values)
    }

    /// Predictions ([n][n_out]) for a token-major batch `z` ([n][L+1][E], the query's y-slots ignored).
    pub fn predict_batch(
        &mut self,
        n: usize,
        len: usize,
        z: &[f64],
        out: &mut [f64],
    ) -> FfiResult<()> {
        let Dims { d, n_out, .. } = self.dims();
        check_len("out", out.len(), n.saturating_mul(n_out))?;
        let y = try_vec(out.len(), 0.0, "targets")?;
        let p = dispatch!(&mut self.inner, s => {
            let b = batch_from(n, len, d, n_out, z, &y)?;
            try_widen(&s.predict(&b)?, "predictions")?
        });
        out.copy_from_slice(&p);
        Ok(())
    }

    /// Loss (MSE over sequences and outputs) of a token-major batch and its gradient with
    /// respect to the flat parameters (written to `grad`).
    pub fn loss_grad(
        &mut self,
        n: usize,
        len: usize,
        z: &[f64],
        y: &[f64],
        grad: &mut [f64],
    ) -> FfiResult<f64> {
        let Dims {
            d, n_out, n_params, ..
        } = self.dims();
        dispatch!(&mut self.inner, s => {
            let b = batch_from(n, len, d, n_out, z, y)?;
            check_len("grad", grad.len(), n_params)?;
            let (loss, g) = s.loss_grad(&b)?;
            for (o, v) in grad.iter_mut().zip(&g) {
                *o = v.to_f64();
            }
            Ok(loss)
        })
    }

    /// Monte Carlo risk at test length `len` with `n` samples from stream (seed, Eval, len, i), on
    /// the task of `task` (or of the model's own config), as `icl eval` computes it.
    pub fn risk(
        &mut self,
        task: Option<&icl_task>,
        len: usize,
        n: usize,
        seed: u64,
    ) -> FfiResult<RiskEstimate> {
        if n < 2 {
            return Err(FfiError::size(format!(
                "samples = {n}; a Monte Carlo estimate with a standard error needs at least 2"
            )));
        }
        check_context_len(len)?;
        let own;
        let t = match task {
            Some(t) => &t.task,
            None => {
                own = Task::new(&self.cfg)?;
                &own
            }
        };
        let Dims { d, n_out, .. } = self.dims();
        if t.d != d || t.n_out != n_out {
            return Err(FfiError::size(format!(
                "task has d = {} and n_out = {}, model has d = {d} and n_out = {n_out}",
                t.d, t.n_out
            )));
        }
        Ok(dispatch!(&mut self.inner, s => s.risk(t, len, n, seed))?)
    }
}

// ------------------------------------------------------------------------------------------------
// Trainer.

impl icl_trainer {
    /// A trainer of `cfg` run by the named engine (`None`: the CLI's default engine), made by the
    /// run layer as for `icl train`.
    fn start(
        cfg: &Config,
        engine: Option<&str>,
        from: Start,
        step: Option<u64>,
    ) -> FfiResult<Self> {
        let e = engine.unwrap_or(default_engine());
        let mut tr = AnyTrainer::new(cfg, &Engines(e.into(), None), from, &Options::default())
            .map_err(engine_err)?;
        if let Some(s) = step {
            dispatch!(&mut tr, t => t.step = s);
        }
        Ok(icl_trainer {
            inner: tr.with_engine(e).map_err(engine_err)?,
        })
    }

    /// A trainer for a config, run by the named engine (`None`: the CLI's default engine): the
    /// one trainer of every front end, so a preset runs the same protocol as `icl train` (online
    /// batches, or full-batch descent on a fixed set).
    pub fn new(cfg: &Config, engine: Option<&str>) -> FfiResult<Self> {
        Self::start(cfg, engine, Start::Fresh, None)
    }

    /// A trainer that continues from a checkpoint. A checkpoint with trainer state (written by
    /// `icl train` or [`icl_trainer::save`]) continues bit for bit: optimiser moments, log and step;
    /// one without (an imported model) starts a fresh optimiser at the saved parameters and step.
    pub fn from_checkpoint(path: &Path, engine: Option<&str>) -> FfiResult<Self> {
        let l = load_checkpoint(path)?;
        match l.state {
            Some(state) => {
                let e = engine.unwrap_or(default_engine());
                let tr = AnyTrainer::resume(
                    &l.config,
                    &Engines(e.into(), None),
                    state,
                    &Options::default(),
                )
                .map_err(engine_err)?;
                Ok(icl_trainer {
                    inner: tr.with_engine(e).map_err(engine_err)?,
                })
            }
            None => Self::start(
                &l.config,
                engine,
                Start::Model(Box::new(l.model)),
                Some(l.step),
            ),
        }
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &str {
        dispatch!(&self.inner, s => &s.engine)
    }

    /// Steps completed.
    pub fn step(&self) -> u64 {
        dispatch!(&self.inner, s => s.value.step)
    }

    /// Run `steps` optimiser steps on the trainer's own batches (the batch of step t from stream
    /// (seed, Train, t, b), as `icl train`); per-step losses go to `losses` (length `steps`) if
    /// given. Returns the mean loss of these steps. The one trainer logs the final row when a
    /// step completes `train.steps` and leaves a failing step undone; the losses of the steps
    /// done are in `losses` even when a later step fails.
    pub fn train(&mut self, steps: u64, mut losses: Option<&mut [f64]>) -> FfiResult<f64> {
        if let Some(l) = losses.as_deref() {
            if (l.len() as u64) < steps {
                return Err(FfiError::size(format!(
                    "losses has {} values; {steps} needed",
                    l.len()
                )));
            }
        }
        let mut sum = 0.0;
        for i in 0..steps {
            let loss = dispatch!(&mut self.inner, s => s.value.step())?;
            if let Some(l) = losses.as_deref_mut() {
                l[i as usize] = loss;
            }
            sum += loss;
        }
        Ok(if steps > 0 { sum / steps as f64 } else { 0.0 })
    }

    /// One optimiser step on a caller's token-major batch; counts as a step (the following
    /// sampled steps use the next stream) but is not entered in the log.
    pub fn step_batch(&mut self, n: usize, len: usize, z: &[f64], y: &[f64]) -> FfiResult<f64> {
        let Dims { d, n_out, .. } = self.dims();
        Ok(dispatch!(&mut self.inner, s => {
            let b = batch_from(n, len, d, n_out, z, y)?;
            s.step_on(&b)?
        }))
    }

    /// A copy of the current model (same config, step and engine).
    pub fn model(&self) -> FfiResult<icl_model> {
        let model = dispatch!(&self.inner, s => AnyModel::from_model(&s.value.model));
        icl_model::of(
            self.config().clone(),
            self.step(),
            model,
            self.engine_name(),
        )
    }

    /// Write the current model with the trainer's state (the `model.safetensors` of
    /// `icl train`): `from_checkpoint` continues it bit for bit.
    pub fn save(&self, path: &Path) -> FfiResult<()> {
        dispatch!(&self.inner, s => {
            let t = &s.value;
            let cols: Vec<String> = t.columns().iter().map(|c| c.name.clone()).collect();
            icl_core_run::checkpoint::save(path, &t.cfg, &t.state(), &t.model, &cols, None)
        })?;
        Ok(())
    }

    /// Number of log rows.
    pub fn log_len(&self) -> usize {
        dispatch!(&self.inner, s => s.value.log.len() + s.value.early.len())
    }

    /// The log's column names: the header of `metrics.csv` ("step", "loss", then the probes').
    pub fn log_columns(&self) -> Vec<String> {
        dispatch!(&self.inner, s => ["step", "loss"]
            .iter()
            .map(|c| c.to_string())
            .chain(s.value.columns().iter().map(|c| c.name.clone()))
            .collect())
    }

    /// Log row `i` as numbers in [`icl_trainer::log_columns`] order: step, loss, the probes'.
    pub fn log_values(&self, i: usize) -> FfiResult<Vec<f64>> {
        dispatch!(&self.inner, s => {
            let t = &s.value;
            let rows = t.rows();
            let r = rows.get(i).ok_or_else(|| {
                FfiError::size(format!("log row {i} of {}", rows.len()))
            })?;
            Ok([r.step as f64, r.loss].into_iter().chain(r.values.iter().copied()).collect())
        })
    }

    /// Log row `i` (rows as in `metrics.csv`) with its omega and mu columns (empty when the log
    /// has none: the `eigs` task, multi-layer models).
    pub fn log_row(&self, i: usize) -> FfiResult<LogEntry> {
        dispatch!(&self.inner, s => {
            let t = &s.value;
            let rows = t.rows();
            let r = rows.get(i).ok_or_else(|| {
                FfiError::size(format!("log row {i} of {}", rows.len()))
            })?;
            Ok(LogEntry { step: r.step, loss: r.loss, omega: t.group(r, "omega"), mu: t.group(r, "mu") })
        })
    }
}
