//! Run configuration: task, model and training settings, addressable by dotted keys
//! (`task.d`, `model.heads`, `train.lr`, ...) so that presets, `--set key=value`, TOML files and the
//! C API all go through one parser, [`Config::set`], which validates every value.
use crate::{Error, Result};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The data distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// x ~ N(0, I_d), beta ~ N(0, I_d/d) (He et al. 2025 §1.1).
    Isotropic,
    /// x ~ N(0, Sigma) with Sigma = KMS(rho) or a given SPD matrix.
    Anisotropic,
    /// N outputs with supports S_n (He et al. 2025 §B.4).
    MultiTask,
    /// x ~ N(0, Lambda) with Lambda = Q diag(eigs) Q^T, task vector w ~ N(0, I_d) (not scaled),
    /// optionally a fixed task vector for a fraction of sequences (Zhang et al. 2025 §2.1, App. G).
    Eigs,
}

/// Eigenbasis of the `eigs` task's covariance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Q from the QR decomposition of a Gaussian d x d matrix (signs fixed so diag R > 0).
    Haar,
    /// Q = I: Lambda = diag(eigs).
    Identity,
}

/// Linear attention's normaliser L_0 (the "1/N" of Zhang et al. 2025).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinNorm {
    /// L_0 = the context length N (the paper; per prefix under next-token prediction).
    Len,
    /// L_0 = N + 1 (the reference code's next-token loop divides by the prefix length).
    LenPlusOne,
    /// A fixed number, e.g. 1 for the reference code's fixed-length forward (no 1/N).
    Value(f64),
}

/// Which multi-task generator (spec §1.3): the paper's or the reference code's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiTaskVariant {
    /// One beta ~ N(0, I_d/d); y_n = beta_{S_n}.x_{S_n} + eps_n, eps ~ N(0, sigma^2); noisy query.
    Paper,
    /// Independent beta_n ~ N(0, I_{|S_n|}), noise std sqrt(|S_n|) sigma, noiseless query.
    Code,
}

/// Attention kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKind {
    /// Normalised attention with activation f (exp = softmax).
    Softmax,
    /// Linear attention with the 1/L factor frozen at the training length (spec §2.6).
    Linear,
}

/// How the per-head circuits are parametrised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// Q, K, V per head and a shared output projection O (reference-code layout).
    Full,
    /// Merged KQ (E x E) and OV (n_out x E) per head.
    Merged,
    /// omega (scalar) and mu (n_out) per head: KQ_11 = omega I, OV_22 = mu.
    Reduced,
    /// Separate key and query of rank R per head (K_h, Q_h in R^{R x E}, KQ = scale K^T Q) and
    /// OV (n_out x E): Zhang et al. (2025) ATTN_S with full weights.
    Separate,
    /// Merged KQ with the zero blocks removed: U_h (d x d) = KQ_11 and v_h = OV_22
    /// (Zhang et al. 2025 reduced ATTN_M, eq. (M)).
    MergedReduced,
    /// Separate rank-R key/query with the zero blocks removed: k_{h,r}, q_{h,r} in R^d and v_h = OV_22
    /// (Zhang et al. 2025 reduced ATTN_S, eq. (S)).
    SeparateReduced,
}

/// Normalised activation f in sigma(nu)_i = f(nu_i) / sum_j f(nu_j) (He et al. §B.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// exp: ordinary softmax.
    Exp,
    /// f1(x) = 1 + C x.
    Affine,
    /// f2(x) = (1 + C x)^2.
    Square,
    /// f3(x) = 1 + tanh x.
    Tanh,
}

/// Parameter initialisation schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitKind {
    /// PyTorch `nn.Linear` default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    Torch,
    /// Reference code `small_id`: Q, K, V, O = 1e-6 I (or `init_scale` I).
    SmallId,
    /// Reference code `small_id_qk`: Q, K = 1e-4 I, V and O torch default.
    SmallIdQk,
    /// Reference code `oppo_small_id`: Q = +-1e-6 I by head parity, K, V, O = 1e-6 I.
    OppoSmallId,
    /// Every parameter N(0, init_scale^2).
    Gaussian,
    /// Zhang et al. (2025) App. C.2: v ~ N(0, w^2/H), U ~ N(0, w^2/(H d^2)) (merged) or
    /// k, q ~ N(0, w^2/(H R d)) (separate); zero blocks exactly 0 (w = init_scale).
    ZhangPaper,
    /// The Zhang et al. reference code: merged v, U ~ N(0, w^2); separate k, q ~ N(0, w^2/(R(d+1))),
    /// v ~ N(0, w^2); zero blocks exactly 0.
    ZhangCode,
}

/// Optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// Stochastic gradient descent with optional momentum (PyTorch semantics).
    Sgd,
    /// Adam (PyTorch semantics, bias-corrected).
    Adam,
}

/// Compute precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F64,
}

/// Task settings (`task.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskConfig {
    pub kind: TaskKind,
    /// Covariate dimension d.
    pub d: usize,
    /// Context length L used for training.
    pub len: usize,
    /// Label noise variance sigma^2.
    pub sigma2: f64,
    /// KMS correlation rho for the anisotropic task (used when `cov` is empty).
    pub rho: f64,
    /// Optional explicit covariance, row-major d x d (anisotropic task).
    pub cov: Vec<f64>,
    /// Multi-task supports S_n (0-based indices).
    pub supports: Vec<Vec<usize>>,
    pub variant: MultiTaskVariant,
    /// Whether the query target carries noise.
    pub query_noise: bool,
    /// Covariance eigenvalues of the `eigs` task (d of them).
    pub eigs: Vec<f64>,
    /// Eigenbasis of the `eigs` task.
    pub basis: Basis,
    /// Seed of the random eigenbasis and of the fixed task vector.
    pub basis_seed: u64,
    /// Fraction of sequences with a random task vector; the rest share one fixed w* (App. G).
    pub icl_fraction: f64,
    /// Finite training set of P sequences trained full batch (0: fresh data every step).
    pub p: usize,
    /// Centre x across the training set at every position (reference code).
    pub centre: bool,
    /// Whiten the random task vectors of the training set: mean 0, covariance I (reference code).
    pub whiten: bool,
    /// Next-token-prediction loss over all prefixes, context lengths 1..=L (App. A.3).
    pub ntp: bool,
}

/// Model settings (`model.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub attention: AttentionKind,
    pub param: Param,
    pub heads: usize,
    pub activation: Activation,
    /// The constant C of the affine and square activations.
    pub c: f64,
    /// Score scale; `None` means 1/sqrt(d+n_out) for the full parametrisation and 1 otherwise.
    pub scale: Option<f64>,
    /// Whether the query attends to itself; `None` means no for softmax, yes for linear.
    pub self_attend: Option<bool>,
    pub init: InitKind,
    /// Scale for the identity-like and Gaussian inits (`None`: the scheme's default).
    pub init_scale: Option<f64>,
    /// Rank R of the separate key/query parametrisations.
    pub rank: usize,
    /// Linear attention's normaliser L_0.
    pub lin_norm: LinNorm,
}

/// Training settings (`train.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub momentum: f64,
    pub batch: usize,
    pub steps: u64,
    pub seed: u64,
    /// Log loss and per-head (omega, mu) every this many steps.
    pub log_every: u64,
    /// Keep a KQ snapshot every this many steps (0: none).
    pub snapshot_every: u64,
    pub dtype: Dtype,
}

/// A whole run configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub task: TaskConfig,
    pub model: ModelConfig,
    pub train: TrainConfig,
}

impl Default for Config {
    /// The `he2025` preset (He et al. 2025 §3 / §5 common setup).
    fn default() -> Self {
        Config {
            task: TaskConfig {
                kind: TaskKind::Isotropic,
                d: 5,
                len: 40,
                sigma2: 0.1,
                rho: 0.5,
                cov: Vec::new(),
                supports: Vec::new(),
                variant: MultiTaskVariant::Paper,
                query_noise: true,
                eigs: Vec::new(),
                basis: Basis::Haar,
                basis_seed: 0,
                icl_fraction: 1.0,
                p: 0,
                centre: false,
                whiten: false,
                ntp: false,
            },
            model: ModelConfig {
                attention: AttentionKind::Softmax,
                param: Param::Full,
                heads: 2,
                activation: Activation::Exp,
                c: 1.0,
                scale: None,
                self_attend: None,
                init: InitKind::Torch,
                init_scale: None,
                rank: 1,
                lin_norm: LinNorm::Len,
            },
            train: TrainConfig {
                optimizer: OptimizerKind::Adam,
                lr: 1e-3,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                momentum: 0.0,
                batch: 256,
                steps: 500_000,
                seed: 1029,
                log_every: 1000,
                snapshot_every: 10_000,
                dtype: Dtype::F32,
            },
        }
    }
}

/// Every key [`Config::set`] accepts, with a one-line description.
pub const KEYS: &[(&str, &str)] = &[
    ("task.kind", "isotropic | anisotropic | multitask | eigs"),
    ("task.d", "covariate dimension d >= 1"),
    ("task.L", "training context length L >= 1 (alias task.len)"),
    ("task.sigma2", "label noise variance sigma^2 >= 0"),
    (
        "task.rho",
        "KMS correlation rho in (-1, 1) for the anisotropic task",
    ),
    (
        "task.cov",
        "explicit SPD covariance, d*d comma-separated numbers, row-major (anisotropic)",
    ),
    (
        "task.supports",
        "multi-task supports, 1-based, e.g. 1,2,3,4;3,4,5,6",
    ),
    ("task.variant", "multi-task generator: paper | code"),
    (
        "task.query_noise",
        "whether the query target is noisy: true | false",
    ),
    (
        "task.eigs",
        "eigs task: covariance eigenvalues, comma-separated (also sets task.d)",
    ),
    ("task.basis", "eigs task eigenbasis: haar | identity"),
    (
        "task.basis_seed",
        "seed of the random eigenbasis and of the fixed task vector",
    ),
    (
        "task.icl_fraction",
        "fraction of sequences with a random task vector in [0, 1] (rest share w*)",
    ),
    (
        "task.P",
        "finite training set of P sequences, trained full batch (0: fresh data every step)",
    ),
    (
        "task.centre",
        "centre x across the training set at every position: true | false",
    ),
    (
        "task.whiten",
        "whiten the training set's task vectors (mean 0, covariance I): true | false",
    ),
    (
        "task.ntp",
        "next-token-prediction loss over all prefixes (lengths 1..=L): true | false",
    ),
    ("model.attention", "softmax | linear"),
    (
        "model.param",
        "full | merged | reduced | separate | merged_reduced | separate_reduced",
    ),
    ("model.rank", "rank R >= 1 of the separate key/query"),
    (
        "model.lin_norm",
        "linear attention's 1/L_0: N (context length) | N+1 | a number (1: no 1/N)",
    ),
    ("model.heads", "number of heads H >= 1"),
    (
        "model.activation",
        "exp | affine | square | tanh (f(x) = e^x, 1+Cx, (1+Cx)^2, 1+tanh x)",
    ),
    (
        "model.c",
        "the constant C of the affine and square activations",
    ),
    (
        "model.scale",
        "score scale, or auto (1/sqrt(d+n_out) for full, 1 otherwise)",
    ),
    (
        "model.self_attend",
        "query attends to itself: true | false | auto (softmax no, linear yes)",
    ),
    (
        "model.init",
        "torch | small_id | small_id_qk | oppo_small_id | gaussian | zhang_paper | zhang_code",
    ),
    (
        "model.init_scale",
        "scale of identity and Gaussian inits, or auto",
    ),
    ("train.optimizer", "adam | sgd"),
    ("train.lr", "learning rate > 0"),
    ("train.beta1", "Adam beta1 in [0, 1)"),
    ("train.beta2", "Adam beta2 in [0, 1)"),
    ("train.eps", "Adam epsilon > 0"),
    ("train.momentum", "SGD momentum in [0, 1)"),
    ("train.batch", "sequences per step >= 1"),
    ("train.steps", "optimiser steps"),
    ("train.seed", "random seed (u64)"),
    ("train.log_every", "log every k steps >= 1"),
    (
        "train.snapshot_every",
        "KQ snapshot every k steps (0: none)",
    ),
    ("train.dtype", "f32 | f64"),
];

fn num(key: &str, v: &str) -> Result<f64> {
    let x: f64 = v
        .trim()
        .parse()
        .map_err(|_| Error::InvalidConfig(format!("{key} = {v:?} is not a number")))?;
    if !x.is_finite() {
        return Err(Error::NonFinite(format!("{key} = {v}")));
    }
    Ok(x)
}

fn uint(key: &str, v: &str) -> Result<u64> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| Error::InvalidConfig(format!("{key} = {v:?} is not a non-negative integer")))
}

fn boolean(key: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(Error::InvalidConfig(format!(
            "{key} = {v:?} is not true/false"
        ))),
    }
}

fn choice<T: Copy>(key: &str, v: &str, options: &[(&str, T)]) -> Result<T> {
    let v = v.trim();
    options
        .iter()
        .find(|(n, _)| *n == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            Error::InvalidConfig(format!(
                "{key} = {v:?}; expected one of {}",
                names.join(", ")
            ))
        })
}

/// Parse a comma-separated list of finite numbers.
pub fn parse_list(key: &str, v: &str) -> Result<Vec<f64>> {
    v.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| num(key, s))
        .collect()
}

const TASKS: &[(&str, TaskKind)] = &[
    ("isotropic", TaskKind::Isotropic),
    ("anisotropic", TaskKind::Anisotropic),
    ("multitask", TaskKind::MultiTask),
    ("eigs", TaskKind::Eigs),
];
const BASES: &[(&str, Basis)] = &[("haar", Basis::Haar), ("identity", Basis::Identity)];
const VARIANTS: &[(&str, MultiTaskVariant)] = &[
    ("paper", MultiTaskVariant::Paper),
    ("code", MultiTaskVariant::Code),
];
const ATTNS: &[(&str, AttentionKind)] = &[
    ("softmax", AttentionKind::Softmax),
    ("linear", AttentionKind::Linear),
];
const PARAMS: &[(&str, Param)] = &[
    ("full", Param::Full),
    ("merged", Param::Merged),
    ("reduced", Param::Reduced),
    ("separate", Param::Separate),
    ("merged_reduced", Param::MergedReduced),
    ("separate_reduced", Param::SeparateReduced),
];
const ACTS: &[(&str, Activation)] = &[
    ("exp", Activation::Exp),
    ("affine", Activation::Affine),
    ("square", Activation::Square),
    ("tanh", Activation::Tanh),
];
const INITS: &[(&str, InitKind)] = &[
    ("torch", InitKind::Torch),
    ("small_id", InitKind::SmallId),
    ("small_id_qk", InitKind::SmallIdQk),
    ("oppo_small_id", InitKind::OppoSmallId),
    ("gaussian", InitKind::Gaussian),
    ("zhang_paper", InitKind::ZhangPaper),
    ("zhang_code", InitKind::ZhangCode),
];
const OPTS: &[(&str, OptimizerKind)] =
    &[("adam", OptimizerKind::Adam), ("sgd", OptimizerKind::Sgd)];
const DTYPES: &[(&str, Dtype)] = &[("f32", Dtype::F32), ("f64", Dtype::F64)];

fn name_of<T: Copy + PartialEq>(options: &[(&'static str, T)], t: T) -> &'static str {
    options
        .iter()
        .find(|(_, x)| *x == t)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

impl Config {
    /// Set one dotted key from its text value, validating the value (not yet cross-field rules:
    /// call [`Config::validate`] after the last `set`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        let (t, m, tr) = (&mut self.task, &mut self.model, &mut self.train);
        match key {
            "task.kind" => t.kind = choice(key, v, TASKS)?,
            "task.d" => t.d = uint(key, v)? as usize,
            "task.L" | "task.len" => t.len = uint(key, v)? as usize,
            "task.sigma2" => t.sigma2 = num(key, v)?,
            "task.rho" => t.rho = num(key, v)?,
            "task.cov" => t.cov = parse_list(key, v)?,
            "task.supports" => {
                let mut sets = Vec::new();
                for part in v.split(';').filter(|p| !p.trim().is_empty()) {
                    let mut s = Vec::new();
                    for i in part.split(',').filter(|p| !p.trim().is_empty()) {
                        let i = uint(key, i)?;
                        if i == 0 {
                            return Err(Error::InvalidConfig(format!(
                                "{key}: indices are 1-based"
                            )));
                        }
                        s.push(i as usize - 1);
                    }
                    sets.push(s);
                }
                t.supports = sets;
            }
            "task.variant" => t.variant = choice(key, v, VARIANTS)?,
            "task.query_noise" => t.query_noise = boolean(key, v)?,
            "task.eigs" => {
                t.eigs = parse_list(key, v)?;
                t.d = t.eigs.len();
            }
            "task.basis" => t.basis = choice(key, v, BASES)?,
            "task.basis_seed" => t.basis_seed = uint(key, v)?,
            "task.icl_fraction" => t.icl_fraction = num(key, v)?,
            "task.P" => t.p = uint(key, v)? as usize,
            "task.centre" => t.centre = boolean(key, v)?,
            "task.whiten" => t.whiten = boolean(key, v)?,
            "task.ntp" => t.ntp = boolean(key, v)?,
            "model.attention" => m.attention = choice(key, v, ATTNS)?,
            "model.param" => m.param = choice(key, v, PARAMS)?,
            "model.heads" => m.heads = uint(key, v)? as usize,
            "model.rank" => m.rank = uint(key, v)? as usize,
            "model.lin_norm" => {
                m.lin_norm = match v {
                    "N" | "len" => LinNorm::Len,
                    "N+1" | "len+1" => LinNorm::LenPlusOne,
                    _ => LinNorm::Value(num(key, v)?),
                }
            }
            "model.activation" => m.activation = choice(key, v, ACTS)?,
            "model.c" => m.c = num(key, v)?,
            "model.scale" => {
                m.scale = if v == "auto" {
                    None
                } else {
                    Some(num(key, v)?)
                }
            }
            "model.self_attend" => {
                m.self_attend = if v == "auto" {
                    None
                } else {
                    Some(boolean(key, v)?)
                }
            }
            "model.init" => m.init = choice(key, v, INITS)?,
            "model.init_scale" => {
                m.init_scale = if v == "auto" {
                    None
                } else {
                    Some(num(key, v)?)
                }
            }
            "train.optimizer" => tr.optimizer = choice(key, v, OPTS)?,
            "train.lr" => tr.lr = num(key, v)?,
            "train.beta1" => tr.beta1 = num(key, v)?,
            "train.beta2" => tr.beta2 = num(key, v)?,
            "train.eps" => tr.eps = num(key, v)?,
            "train.momentum" => tr.momentum = num(key, v)?,
            "train.batch" => tr.batch = uint(key, v)? as usize,
            "train.steps" => tr.steps = uint(key, v)?,
            "train.seed" => tr.seed = uint(key, v)?,
            "train.log_every" => tr.log_every = uint(key, v)?,
            "train.snapshot_every" => tr.snapshot_every = uint(key, v)?,
            "train.dtype" => tr.dtype = choice(key, v, DTYPES)?,
            _ => {
                return Err(Error::UnknownKey(format!(
                    "{key} (see `icl presets --keys` for the list)"
                )))
            }
        }
        Ok(())
    }

    /// Number of outputs: N for the multi-task task, 1 otherwise.
    pub fn n_out(&self) -> usize {
        match self.task.kind {
            TaskKind::MultiTask => self.task.supports.len(),
            _ => 1,
        }
    }

    /// Cross-field validation. Every public entry point that builds a task or model calls it.
    pub fn validate(&self) -> Result<()> {
        let (t, m, tr) = (&self.task, &self.model, &self.train);
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if t.d == 0 {
            return bad("task.d must be >= 1".into());
        }
        if t.d > 4096 {
            return bad(format!(
                "task.d = {} is larger than the supported 4096",
                t.d
            ));
        }
        if t.len == 0 {
            return bad("task.L must be >= 1".into());
        }
        if !(t.sigma2 >= 0.0) || !t.sigma2.is_finite() {
            return bad(format!(
                "task.sigma2 must be a finite number >= 0, got {}",
                t.sigma2
            ));
        }
        match t.kind {
            TaskKind::Anisotropic => {
                if t.cov.is_empty() {
                    if !(t.rho > -1.0 && t.rho < 1.0) {
                        return bad(format!("task.rho must be in (-1, 1), got {}", t.rho));
                    }
                } else if t.cov.len() != t.d * t.d {
                    return bad(format!(
                        "task.cov has {} entries; d*d = {} needed",
                        t.cov.len(),
                        t.d * t.d
                    ));
                }
            }
            TaskKind::MultiTask => {
                if t.supports.is_empty() {
                    return bad(
                        "task.supports must list at least one support for the multitask task"
                            .into(),
                    );
                }
                for s in &t.supports {
                    if s.is_empty() {
                        return bad("task.supports has an empty support".into());
                    }
                    if let Some(i) = s.iter().find(|&&i| i >= t.d) {
                        return bad(format!("task.supports index {} exceeds d = {}", i + 1, t.d));
                    }
                }
            }
            TaskKind::Eigs => {
                if t.eigs.len() != t.d {
                    return bad(format!(
                        "task.eigs has {} eigenvalues; task.d = {} needed",
                        t.eigs.len(),
                        t.d
                    ));
                }
                if let Some(l) = t.eigs.iter().find(|l| {
                    l.partial_cmp(&&0.0) != Some(core::cmp::Ordering::Greater) || !l.is_finite()
                }) {
                    return bad(format!("task.eigs must be finite and > 0, got {l}"));
                }
                if !(0.0..=1.0).contains(&t.icl_fraction) {
                    return bad(format!(
                        "task.icl_fraction must be in [0, 1], got {}",
                        t.icl_fraction
                    ));
                }
            }
            TaskKind::Isotropic => {}
        }
        if t.kind != TaskKind::Eigs && (t.p > 0 || t.ntp || t.icl_fraction != 1.0) {
            return bad(
                "task.P, task.ntp and task.icl_fraction apply to the eigs task only".into(),
            );
        }
        if m.rank == 0 || m.rank > 4096 {
            return bad(format!("model.rank must be in 1..=4096, got {}", m.rank));
        }
        if let LinNorm::Value(x) = m.lin_norm {
            if x.is_nan() || x <= 0.0 || !x.is_finite() {
                return bad(format!(
                    "model.lin_norm must be N, N+1 or a number > 0, got {x}"
                ));
            }
        }
        if m.heads == 0 || m.heads > 1024 {
            return bad(format!("model.heads must be in 1..=1024, got {}", m.heads));
        }
        if let Some(s) = m.scale {
            if !s.is_finite() || s == 0.0 {
                return bad(format!("model.scale must be finite and non-zero, got {s}"));
            }
        }
        if m.attention == AttentionKind::Linear && m.activation != Activation::Exp {
            return bad(
                "model.activation applies to softmax attention only; linear attention has none"
                    .into(),
            );
        }
        if m.param == Param::Reduced
            && m.attention == AttentionKind::Softmax
            && t.kind == TaskKind::Anisotropic
        {
            // allowed: reduced model on anisotropic data is simply a restricted model
        }
        if !(tr.lr > 0.0) {
            return bad(format!("train.lr must be > 0, got {}", tr.lr));
        }
        if !(0.0..1.0).contains(&tr.beta1) || !(0.0..1.0).contains(&tr.beta2) {
            return bad("train.beta1 and train.beta2 must be in [0, 1)".into());
        }
        if !(tr.eps > 0.0) {
            return bad("train.eps must be > 0".into());
        }
        if !(0.0..1.0).contains(&tr.momentum) {
            return bad("train.momentum must be in [0, 1)".into());
        }
        if tr.batch == 0 {
            return bad("train.batch must be >= 1".into());
        }
        if tr.log_every == 0 {
            return bad("train.log_every must be >= 1".into());
        }
        Ok(())
    }

    /// The effective score scale.
    pub fn score_scale(&self) -> f64 {
        self.model.scale.unwrap_or(match self.model.param {
            Param::Full => 1.0 / libm::sqrt((self.task.d + self.n_out()) as f64),
            _ => 1.0,
        })
    }

    /// Whether the query attends to itself.
    pub fn self_attend(&self) -> bool {
        self.model
            .self_attend
            .unwrap_or(self.model.attention == AttentionKind::Linear)
    }

    /// All keys with their current values as text, in [`KEYS`] order (round-trips through `set`).
    pub fn entries(&self) -> Vec<(String, String)> {
        let (t, m, tr) = (&self.task, &self.model, &self.train);
        let f = |x: f64| format!("{x:?}");
        let opt = |x: Option<f64>| x.map(|x| format!("{x:?}")).unwrap_or_else(|| "auto".into());
        let list = |xs: &[f64]| {
            xs.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let supports = t
            .supports
            .iter()
            .map(|s| {
                s.iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join(";");
        let mut e: Vec<(&str, String)> = alloc::vec![
            ("task.kind", name_of(TASKS, t.kind).into()),
            ("task.d", t.d.to_string()),
            ("task.L", t.len.to_string()),
            ("task.sigma2", f(t.sigma2)),
            ("task.rho", f(t.rho)),
            ("task.cov", list(&t.cov)),
            ("task.supports", supports),
            ("task.variant", name_of(VARIANTS, t.variant).into()),
            ("task.query_noise", t.query_noise.to_string()),
            ("task.eigs", list(&t.eigs)),
            ("task.basis", name_of(BASES, t.basis).into()),
            ("task.basis_seed", t.basis_seed.to_string()),
            ("task.icl_fraction", f(t.icl_fraction)),
            ("task.P", t.p.to_string()),
            ("task.centre", t.centre.to_string()),
            ("task.whiten", t.whiten.to_string()),
            ("task.ntp", t.ntp.to_string()),
            ("model.attention", name_of(ATTNS, m.attention).into()),
            ("model.param", name_of(PARAMS, m.param).into()),
            ("model.heads", m.heads.to_string()),
            ("model.rank", m.rank.to_string()),
            (
                "model.lin_norm",
                match m.lin_norm {
                    LinNorm::Len => "N".into(),
                    LinNorm::LenPlusOne => "N+1".into(),
                    LinNorm::Value(x) => f(x),
                }
            ),
            ("model.activation", name_of(ACTS, m.activation).into()),
            ("model.c", f(m.c)),
            ("model.scale", opt(m.scale)),
            (
                "model.self_attend",
                m.self_attend
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "auto".into())
            ),
            ("model.init", name_of(INITS, m.init).into()),
            ("model.init_scale", opt(m.init_scale)),
            ("train.optimizer", name_of(OPTS, tr.optimizer).into()),
            ("train.lr", f(tr.lr)),
            ("train.beta1", f(tr.beta1)),
            ("train.beta2", f(tr.beta2)),
            ("train.eps", f(tr.eps)),
            ("train.momentum", f(tr.momentum)),
            ("train.batch", tr.batch.to_string()),
            ("train.steps", tr.steps.to_string()),
            ("train.seed", tr.seed.to_string()),
            ("train.log_every", tr.log_every.to_string()),
            ("train.snapshot_every", tr.snapshot_every.to_string()),
            ("train.dtype", name_of(DTYPES, tr.dtype).into()),
        ];
        e.retain(|(k, v)| {
            !(v.is_empty() && (*k == "task.cov" || *k == "task.supports" || *k == "task.eigs"))
        });
        e.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Render as TOML (`[task]`, `[model]`, `[train]` sections).
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let mut section = "";
        for (k, v) in self.entries() {
            let (s, name) = k.split_once('.').unwrap_or(("", k.as_str()));
            if s != section {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("[{s}]\n"));
                section = match s {
                    "task" => "task",
                    "model" => "model",
                    _ => "train",
                };
            }
            out.push_str(&format!("{name} = {}\n", crate::toml::render_value(&v)));
        }
        out
    }

    /// Parse a TOML config on top of the defaults (`he2025`) and validate it.
    pub fn from_toml(text: &str) -> Result<Config> {
        let mut c = Config::default();
        c.apply_toml(text)?;
        Ok(c)
    }

    /// Apply the entries of a TOML text on top of this config, then validate.
    pub fn apply_toml(&mut self, text: &str) -> Result<()> {
        for (k, v) in crate::toml::parse(text)? {
            self.set(&k, &v)?;
        }
        self.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_round_trip() {
        let mut c = Config::default();
        c.set("task.kind", "multitask").unwrap();
        c.set("task.d", "6").unwrap();
        c.set("task.supports", "1,2,3,4;3,4,5,6").unwrap();
        c.set("model.scale", "0.25").unwrap();
        c.validate().unwrap();
        let back = Config::from_toml(&c.to_toml()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.n_out(), 2);
    }

    #[test]
    fn rejects_bad_values() {
        let mut c = Config::default();
        assert!(matches!(c.set("task.nope", "1"), Err(Error::UnknownKey(_))));
        assert!(matches!(
            c.set("task.sigma2", "NaN"),
            Err(Error::InvalidConfig(_) | Error::NonFinite(_))
        ));
        c.set("task.d", "0").unwrap();
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.set("task.sigma2", "-1").unwrap();
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.set("task.L", "0").unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn every_documented_key_is_settable() {
        let c = Config::default();
        for (k, v) in c.entries() {
            let mut c2 = c.clone();
            c2.set(&k, &v).unwrap();
            assert_eq!(c2, c, "{k}");
            assert!(KEYS.iter().any(|(n, _)| *n == k), "{k} undocumented");
        }
    }
}
