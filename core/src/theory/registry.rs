//! The theory registry: every closed form, dynamical system and Monte Carlo quantity of the four
//! papers, each declared **once** with its name, paper, description, typed parameters (name,
//! default, documentation, kind and range) and the function that computes it. `icl theory`, the C
//! and C++ APIs and Python are built from this table; no front end computes a quantity itself.
//!
//! **Adding a quantity** is one `Q { .. }` entry in [`registry`]; **adding a parameter** is one
//! `P(name, default, doc)` in its list, with its kind in [`kind_of`] if the name is new. A
//! parameter's value is text (as on a command line) or a number; [`evaluate`] checks every value
//! against its kind and range before the quantity runs, so errors name the parameter.
use crate::budget::{self, product};
use crate::config::{Config, Range, MAX_D, MAX_HEADS};
use crate::model::Model;
use crate::theory::{he2025, multilayer, ode, temperature, zhang2025};
use crate::{Error, Result};
use alloc::borrow::ToOwned;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

fn bad(m: impl Into<String>) -> Error {
    Error::InvalidArgument(m.into())
}

/// A value a quantity returns: a number, text, a list, or nothing (`null` in JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Num(f64),
    Text(String),
    List(Vec<Value>),
}

impl Value {
    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            _ => None,
        }
    }
    /// The numbers of a list of numbers (or a single number as a list of one).
    pub fn as_f64s(&self) -> Option<Vec<f64>> {
        match self {
            Value::Num(x) => Some(vec![*x]),
            Value::List(v) => v.iter().map(Value::as_f64).collect(),
            _ => None,
        }
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::Num(x)
    }
}
impl From<usize> for Value {
    fn from(x: usize) -> Self {
        Value::Num(x as f64)
    }
}
impl From<&str> for Value {
    fn from(x: &str) -> Self {
        Value::Text(x.into())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(x: Option<T>) -> Self {
        x.map_or(Value::Null, Into::into)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(x: Vec<T>) -> Self {
        Value::List(x.into_iter().map(Into::into).collect())
    }
}
impl<T: Into<Value> + Clone> From<&Vec<T>> for Value {
    fn from(x: &Vec<T>) -> Self {
        Value::List(x.iter().cloned().map(Into::into).collect())
    }
}
impl<T: Into<Value> + Clone> From<&[T]> for Value {
    fn from(x: &[T]) -> Self {
        Value::List(x.iter().cloned().map(Into::into).collect())
    }
}
impl<T: Into<Value> + Clone, const N: usize> From<[T; N]> for Value {
    fn from(x: [T; N]) -> Self {
        Value::List(x.iter().cloned().map(Into::into).collect())
    }
}

/// One parameter of a quantity as written in the table: name, default (`None`: required), doc.
pub struct P(pub &'static str, pub Option<&'static str>, pub &'static str);

/// What a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A finite number in the range.
    Num(Range),
    /// A number in the range, or the given word (e.g. `opt`).
    NumOr(&'static str, Range),
    /// An integer in the range.
    Int(Range),
    /// A comma-separated list of at most the given number of finite numbers, each in the range.
    List(Range, usize),
    /// A mean vector: one value m (every entry m, i.e. m 1) or d values.
    Mean,
    /// A covariance: one value c (c I), d values (diagonal) or d*d values (row-major); SPD.
    Cov,
    /// One of the words.
    Choice(&'static [&'static str]),
    /// A run folder (read by the run layer, never by the core), or `none`.
    Folder,
    /// true | false.
    Bool,
}

impl Kind {
    /// What the kind accepts, in words.
    pub fn describe(&self) -> String {
        match self {
            Kind::Num(r) => format!("number in {r}"),
            Kind::NumOr(w, r) => format!("`{w}` or a number in {r}"),
            Kind::Int(r) => format!("integer in {r}"),
            Kind::List(Range::Any, n) => format!("at most {n} comma-separated numbers"),
            Kind::List(r, n) => format!("at most {n} comma-separated numbers in {r}"),
            Kind::Mean => {
                "1 value m (the mean m 1, every entry m: its norm m sqrt(d) grows with d; the temperature paper's form assumes a bounded norm) or d values"
                    .into()
            }
            Kind::Cov => {
                "1 value c (c I), d values (diagonal) or d*d values (row-major), positive definite"
                    .into()
            }
            Kind::Choice(w) => w.join(" | "),
            Kind::Bool => "true | false".into(),
            Kind::Folder => "a run folder (written by `icl train`), or none".into(),
        }
    }

    /// Check a value's text against the kind (`name` for messages).
    pub fn check(&self, name: &str, text: &str) -> Result<()> {
        let t = text.trim();
        let num = |r: &Range| -> Result<()> {
            let x: f64 = t
                .parse()
                .map_err(|_| bad(format!("--{name}: {t:?} is not a number")))?;
            check_range(name, x, r)
        };
        match self {
            Kind::Num(r) => num(r),
            Kind::NumOr(w, r) => {
                if t == *w {
                    Ok(())
                } else {
                    num(r)
                }
            }
            Kind::Int(r) => {
                let x: u64 = t
                    .parse()
                    .map_err(|_| bad(format!("--{name}: {t:?} is not a non-negative integer")))?;
                check_range(name, x as f64, r)
            }
            Kind::List(r, n) => {
                let v = parse_list(name, t)?;
                if v.len() > *n {
                    return Err(Error::TooLarge(format!(
                        "--{name}: {} values, more than the {n} it takes",
                        v.len()
                    )));
                }
                v.iter().try_for_each(|x| check_range(name, *x, r))
            }
            Kind::Mean | Kind::Cov => parse_list(name, t).map(|_| ()),
            Kind::Choice(w) => {
                if w.contains(&t) {
                    Ok(())
                } else {
                    Err(bad(format!(
                        "--{name}: {t:?} is not one of {}",
                        w.join(", ")
                    )))
                }
            }
            Kind::Bool => match t {
                "true" | "false" | "1" | "0" | "yes" | "no" => Ok(()),
                _ => Err(bad(format!("--{name}: {t:?} is not true or false"))),
            },
            Kind::Folder => {
                if t.is_empty() {
                    Err(bad(format!("--{name}: give a run folder or none")))
                } else {
                    Ok(())
                }
            }
        }
    }
}

fn check_range(name: &str, x: f64, r: &Range) -> Result<()> {
    r.check(&format!("--{name}"), x).map_err(|e| match e {
        Error::InvalidConfig(m) => bad(m),
        other => other,
    })
}

/// Longest list parameter (a 4096 x 4096 matrix).
pub const MAX_LIST: usize = 4096 * 4096;

fn parse_list(name: &str, t: &str) -> Result<Vec<f64>> {
    let v: Vec<f64> = crate::list::items(&format!("--{name}"), t)?
        .into_iter()
        .map(|p| {
            p.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(format!("--{name}: {p:?} is not a finite number")))
        })
        .collect::<Result<_>>()?;
    if v.len() > MAX_LIST {
        return Err(Error::TooLarge(format!(
            "--{name}: more than {MAX_LIST} values"
        )));
    }
    Ok(v)
}

const POS: Range = Range::Real {
    min: 0.0,
    max: f64::INFINITY,
    min_open: true,
    max_open: true,
};
const NONNEG: Range = Range::Real {
    min: 0.0,
    max: f64::INFINITY,
    min_open: false,
    max_open: true,
};
const DIM: Range = Range::Int { min: 1, max: 4096 };
const LEN: Range = Range::Int {
    min: 1,
    max: 10_000_000,
};
const COUNT: Range = Range::Int {
    min: 0,
    max: 1_000_000_000,
};

/// The kind of parameter `p` of quantity `q`: the one table of parameter kinds.
pub fn kind_of(q: &str, p: &P) -> Kind {
    match (p.0, p.1) {
        ("d" | "D" | "q" | "p", _) => Kind::Int(DIM),
        ("L" | "l", _) if q.starts_with("temperature") || q == "optimal-temperature" => {
            Kind::Int(Range::Int {
                min: 2,
                max: 10_000_000,
            })
        }
        ("L" | "N", _) => Kind::Int(LEN),
        ("n", _) => Kind::Int(Range::Int {
            min: 2,
            max: budget::MAX_SAMPLES,
        }),
        ("n-max", _) => Kind::Int(Range::Int {
            min: 0,
            max: 10_000_000,
        }),
        ("form", _) => Kind::Choice(&["exact", "paper"]),
        ("run", _) => Kind::Folder,
        ("estimator", _) => Kind::Choice(&["conditional", "plain"]),
        ("l-train", _) => Kind::NumOr(
            "l",
            Range::Int {
                min: 2,
                max: 10_000_000,
            },
        ),
        ("pretrain-m", _) => Kind::NumOr(
            "population",
            Range::Int {
                min: 1,
                max: budget::MAX_SAMPLES,
            },
        ),
        ("seed" | "pretrain-seed", _) => Kind::Int(Range::Int {
            min: 0,
            max: u64::MAX,
        }),
        ("steps", _) => Kind::Int(COUNT),
        ("every", _) => Kind::Int(Range::Int {
            min: 1,
            max: 1_000_000_000,
        }),
        ("m", _) => Kind::Int(Range::Int { min: 0, max: 4095 }),
        ("H", _) => Kind::Int(Range::Int { min: 1, max: 1024 }),
        ("R", _) => Kind::Int(DIM),
        ("sigma2" | "sigma" | "train-sigma" | "test-sigma" | "lambda", _) => Kind::Num(NONNEG),
        ("rho", _) => Kind::Num(Range::Real {
            min: -1.0,
            max: 1.0,
            min_open: true,
            max_open: true,
        }),
        ("eta", Some("opt")) => Kind::NumOr("opt", POS),
        ("gamma", Some("sigma-tilde")) => Kind::Choice(&["sigma-tilde", "sigma", "identity"]),
        ("variant", _) => Kind::Choice(&["vanilla", "debiased"]),
        ("model" | "arch", _) => Kind::Choice(&["merged", "separate"]),
        ("scheme", _) => Kind::Choice(&["euler", "rk4"]),
        ("adaptive", _) => Kind::Bool,
        // per-head values: at most model.heads' limit; eigenvalues: at most task.d's
        ("omega" | "mu", _) => Kind::List(Range::Any, MAX_HEADS as usize),
        ("eigs", _) => Kind::List(POS, MAX_D as usize),
        (n, _) if n.ends_with("mu-x") || n.ends_with("mu-w") => Kind::Mean,
        (n, _) if n.ends_with("sigma-x") || n.ends_with("sigma-w") => Kind::Cov,
        ("eta-x" | "eta-y", _) => Kind::Num(Range::Any),
        ("t", _) => Kind::Num(NONNEG),
        _ => Kind::Num(POS),
    }
}

/// A recorded trajectory: column names, rows, which columns to plot against column 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Traj {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
    pub plot: Vec<usize>,
    pub log_y: bool,
    /// Horizontal dashed reference lines (name, y), e.g. theory plateaus.
    pub refs: Vec<(String, f64)>,
}

/// What a quantity returns: the value, extra named outputs, an optional trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    pub value: Value,
    pub extra: Vec<(&'static str, Value)>,
    pub traj: Option<Traj>,
}

impl Out {
    fn num(v: f64) -> Out {
        Out {
            value: Value::Num(v),
            extra: Vec::new(),
            traj: None,
        }
    }
    fn list(v: &[f64]) -> Out {
        Out {
            value: Value::from(v),
            extra: Vec::new(),
            traj: None,
        }
    }
    fn with(mut self, k: &'static str, v: Value) -> Out {
        self.extra.push((k, v));
        self
    }
}

/// A computable quantity.
pub struct Q {
    pub name: &'static str,
    pub paper: &'static str,
    pub about: &'static str,
    pub params: &'static [P],
    /// Parameters shared with other quantities, after `params` (e.g. d, L, sigma^2).
    pub shared: &'static [P],
    pub run: fn(&Ctx) -> Result<Out>,
}

impl Q {
    /// The parameters with their kinds.
    pub fn param_kinds(&self) -> Vec<(&'static P, Kind)> {
        self.all_params()
            .map(|p| (p, kind_of(self.name, p)))
            .collect()
    }

    /// Every parameter: its own, then the shared ones.
    pub fn all_params(&self) -> impl Iterator<Item = &'static P> {
        self.params.iter().chain(self.shared)
    }
}

/// A trained run a front end loaded for a `--run` parameter: the core reads no folders, the run
/// layer (`icl_run::theory::evaluate`) does and passes the run here ([`evaluate_with`]).
#[derive(Debug, Clone)]
pub struct Trained {
    pub config: Config,
    pub model: Model<f64>,
}

/// The checked parameter values of one evaluation (defaults filled in), and the loaded run.
pub struct Ctx {
    /// The quantity's name (for messages).
    pub name: &'static str,
    pub vals: BTreeMap<String, String>,
    pub run: Option<Trained>,
}

impl Ctx {
    /// Refuse working memory `bytes` (`None`: the sizes overflow) beyond the budget
    /// ([`budget::reserve`]); `drivers` names the parameters it grows with.
    fn memory(&self, bytes: Option<u64>, drivers: &str) -> Result<()> {
        budget::reserve(bytes, || format!("{} ({drivers})", self.name))
    }
    /// Refuse more than [`budget::MAX_STEPS`] integration steps or trajectory rows: `n` of them,
    /// `what` names the parameters (`--t-end / --dt`). Returns the count.
    fn count(&self, n: f64, what: &str) -> Result<u64> {
        budget::steps(n, || format!("{}: {what}", self.name))
    }
    fn raw(&self, k: &str) -> Result<&str> {
        self.vals
            .get(k)
            .map(|s| s.as_str())
            .ok_or_else(|| bad(format!("missing --{k}")))
    }
    fn f(&self, k: &str) -> Result<f64> {
        let s = self.raw(k)?;
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| bad(format!("--{k}: {s:?} is not a finite number")))
    }
    fn u64(&self, k: &str) -> Result<u64> {
        let s = self.raw(k)?;
        s.trim()
            .parse::<u64>()
            .map_err(|_| bad(format!("--{k}: {s:?} is not a non-negative integer")))
    }
    fn u(&self, k: &str) -> Result<usize> {
        let x = self.u64(k)?;
        usize::try_from(x).map_err(|_| bad(format!("--{k} = {x} is too large")))
    }
    fn list(&self, k: &str) -> Result<Vec<f64>> {
        parse_list(k, self.raw(k)?)
    }
    fn s(&self, k: &str) -> Result<String> {
        Ok(self.raw(k)?.to_string())
    }
    fn he(&self) -> Result<he2025::Setting> {
        he2025::Setting::new(self.u("d")?, self.u("L")?, self.f("sigma2")?)
    }
}

/// Evaluate quantity `name` with parameters given as (name, text) pairs: unknown or repeated
/// parameters, missing required ones, and values outside their kind or range are errors naming
/// the parameter; defaults fill in the rest. Returns the output and the values used.
pub fn evaluate(name: &str, args: &[(String, String)]) -> Result<(Out, BTreeMap<String, String>)> {
    evaluate_with(name, args, None)
}

/// [`evaluate`] with the run a front end loaded for `--run` (`Some` exactly when the arguments
/// name a run folder): the run's values become the defaults of the parameters it determines
/// ([`run_defaults`]), and parameters that describe what the run replaces are refused.
pub fn evaluate_with(
    name: &str,
    args: &[(String, String)],
    run: Option<Trained>,
) -> Result<(Out, BTreeMap<String, String>)> {
    let reg = registry();
    let q = reg.iter().find(|q| q.name == name).ok_or_else(|| {
        Error::UnknownName(format!(
            "quantity {name:?}; `icl theory --list` names them all"
        ))
    })?;
    let mut vals = BTreeMap::new();
    for (k, v) in args {
        if !q.all_params().any(|p| p.0 == k) {
            let known: Vec<String> = q.all_params().map(|p| format!("--{}", p.0)).collect();
            return Err(Error::InvalidArgument(format!(
                "{name}: unknown parameter --{k} (takes {})",
                known.join(", ")
            )));
        }
        if vals.insert(k.clone(), v.clone()).is_some() {
            return Err(bad(format!("{name}: --{k} given twice")));
        }
    }
    // an empty value is left to the kind check ("give a run folder or none")
    let wants_run = vals
        .get("run")
        .is_some_and(|v| !matches!(v.trim(), "none" | ""));
    match (&run, wants_run) {
        (None, true) => {
            return Err(Error::Unsupported(
                "--run: the core registry reads no folders; the run layer (icl theory, the C and Python APIs) loads the run".into(),
            ))
        }
        (Some(_), false) => {
            return Err(bad(format!(
                "{name}: a loaded run was passed without a --run parameter"
            )))
        }
        (Some(t), true) => {
            for (k, v) in run_defaults(q.name, t, &vals)? {
                vals.entry(k.to_owned()).or_insert(v);
            }
        }
        (None, false) => {}
    }
    for (p, kind) in q.param_kinds() {
        match (vals.get(p.0), p.1) {
            (Some(v), _) => kind.check(p.0, v)?,
            (None, Some(d)) => {
                vals.insert(p.0.to_owned(), d.to_owned());
            }
            (None, None) => {
                return Err(bad(format!("{name}: missing --{} ({})", p.0, p.2)));
            }
        }
    }
    let ctx = Ctx {
        name: q.name,
        vals,
        run,
    };
    let out = (q.run)(&ctx)?;
    Ok((out, ctx.vals))
}

const HE: &[P] = &[
    P("d", Some("5"), "covariate dimension"),
    P("L", Some("40"), "context length"),
    P("sigma2", Some("0.1"), "label noise variance"),
];

/// A `&'static [P]` from a list of parameters.
macro_rules! params {
    ($($p:expr),* $(,)?) => {{
        const X: &[P] = &[$($p),*];
        X
    }};
}

/// Every quantity, paper by paper.
pub fn registry() -> Vec<Q> {
    let mut v = vec![
        // ---------------- He et al. (2025)
        Q { name: "eta-star", paper: "he2025", about: "optimal debiased-GD step eta* = L/(d(1+sigma^2)+L) (Thm 4.2(ii))", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.eta_star())) },
        Q { name: "eta-vgd-star", paper: "he2025", about: "optimal vanilla-GD step L/(d(1+sigma^2)+L+1)", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.eta_vgd_star())) },
        Q {
            name: "mu-gamma",
            paper: "he2025",
            about: "OV value on the solution manifold, gamma/(2(gamma^2+lambda sinh(d gamma^2))) (eq. 4.5, corrected)",
            params: params!(P("gamma", None, "KQ scale gamma > 0")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let g = c.f("gamma")?;
                let m = s.mu_gamma(g)?;
                Ok(Out::num(m).with("eta_eff", Value::from(2.0 * g * m)).with("manifold_loss", Value::from(s.manifold_loss(g)?)))
            },
        },
        Q {
            name: "mu-star",
            paper: "he2025",
            about: "minimiser over mu of L~ at fixed omega: (omega omega^T + lambda E)^{-1} omega",
            params: params!(P("omega", None, "per-head omega, comma-separated")),
            shared: HE,
            run: |c| Ok(Out::list(&c.he()?.mu_star(&c.list("omega")?)?)),
        },
        Q {
            name: "approx-loss",
            paper: "he2025",
            about: "approximate loss L~(omega, mu) (eq. 4.1); also its gradient",
            params: params!(P("omega", None, "per-head omega"), P("mu", None, "per-head mu")),
            shared: HE,
            run: |c| {
                let (om, mu) = (c.list("omega")?, c.list("mu")?);
                let (mut go, mut gm) = (vec![0.0; om.len()], vec![0.0; om.len()]);
                let l = c.he()?.approx_loss_grad(&om, &mu, &mut go, &mut gm)?;
                Ok(Out::num(l).with("grad_omega", Value::from(go)).with("grad_mu", Value::from(gm)))
            },
        },
        Q {
            name: "manifold-loss",
            paper: "he2025",
            about: "L~ on S_gamma with optimal ||mu||_1: sigma^2 + 1 - (1 + lambda sinh(d gamma^2)/gamma^2)^-1",
            params: params!(P("gamma", None, "KQ scale")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                Ok(Out::num(s.manifold_loss(c.f("gamma")?)?).with("infimum", Value::from(s.approx_loss_star())))
            },
        },
        Q {
            name: "nw-optimum",
            paper: "he2025",
            about: "single-head L~ optimum [omega*, mu*] = [1/sqrt(d), sqrt(d)/(1+e(1+sigma^2)d/L)] and its L~",
            params: HE,
            shared: &[],
            run: |c| {
                let s = c.he()?;
                let (w, m) = s.nw_optimum();
                Ok(Out::list(&[w, m]).with("approx_loss", Value::from(s.approx_loss(&[w], &[m])?)))
            },
        },
        Q {
            name: "gd-risk",
            paper: "he2025",
            about: "exact finite-L risk of one-step GD (F.25-F.29; debiased: spec 3.1); eta defaults to the variant's optimum",
            params: params!(P("variant", Some("debiased"), "vanilla | debiased"), P("eta", Some("opt"), "step size or `opt`")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let vanilla = match c.s("variant")?.as_str() {
                    "vanilla" => true,
                    "debiased" => false,
                    v => return Err(bad(format!("--variant: {v:?} is not vanilla or debiased"))),
                };
                let eta = if c.raw("eta")? == "opt" { if vanilla { s.eta_vgd_star() } else { s.eta_star() } } else { c.f("eta")? };
                let r = if vanilla { s.vanilla_gd_risk(eta) } else { s.debiased_gd_risk(eta) };
                Ok(Out::num(r).with("eta", Value::from(eta)))
            },
        },
        Q {
            name: "gd-risk-asymptotic",
            paper: "he2025",
            about: "L -> inf, d/L -> xi limit of the GD risk (F.33) at eta (default eta* limit)",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance"), P("eta", Some("opt"), "step size or `opt`")),
            shared: &[],
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                if c.raw("eta")? == "opt" {
                    Ok(Out::num(he2025::gd_risk_star_asymptotic(xi, s2)).with("eta", Value::from(1.0 / (xi * (1.0 + s2) + 1.0))))
                } else {
                    Ok(Out::num(he2025::gd_risk_asymptotic(xi, s2, c.f("eta")?)))
                }
            },
        },
        Q { name: "ols-risk", paper: "he2025", about: "OLS risk sigma^2 (1 + d/(L-d-1))", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.ols_risk()?)) },
        Q {
            name: "bayes-risk",
            paper: "he2025",
            about: "asymptotic Bayes risk (F.36) at xi = d/L",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            shared: &[],
            run: |c| Ok(Out::num(he2025::bayes_risk_asymptotic(c.f("xi")?, c.f("sigma2")?)?)),
        },
        Q {
            name: "bayes-risk-mc",
            paper: "he2025",
            about: "finite-L Bayes risk sigma^2(1 + E tr((X^T X + d sigma^2 I)^-1)) by Monte Carlo: [mean, stderr]",
            params: params!(P("n", Some("20000"), "samples"), P("seed", Some("0"), "seed")),
            shared: HE,
            run: |c| {
                let (m, se) = c.he()?.bayes_risk_mc(c.u("n")?, c.u64("seed")?)?;
                Ok(Out::list(&[m, se]))
            },
        },
        Q {
            name: "ratio-bound",
            paper: "he2025",
            about: "Thm 4.2(iii) bound on E(gd(eta*))/BayesRisk; also the actual asymptotic ratio",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            shared: &[],
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                let ratio = he2025::gd_risk_star_asymptotic(xi, s2) / he2025::bayes_risk_asymptotic(xi, s2)?;
                Ok(Out::num(he2025::ratio_bound(xi, s2)?).with("ratio", Value::from(ratio)))
            },
        },
        Q {
            name: "sigma-tilde",
            paper: "he2025",
            about: "Sigma~ = (1+1/L)Sigma + (tr Sigma + d sigma^2)/L I (B.6) for KMS(rho) (row-major); also its inverse",
            params: params!(P("rho", Some("0.5"), "KMS correlation")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let d = s.d as u64;
                // KMS(rho), Sigma~, its inverse and their output (2 d^2 numbers)
                c.memory(sum(&[product(&[8 * 8, d, d]), product(&[2, d, d]).and_then(out_bytes)]), "--d squared")?;
                let st = he2025::sigma_tilde(&crate::data::covariance::kms(s.d, c.f("rho")?), s.d, s.l, s.sigma2)?;
                let inv = he2025::inverse(&st, s.d)?;
                Ok(Out::list(&st).with("inverse", Value::from(inv)))
            },
        },
        Q {
            name: "precond-gd-risk",
            paper: "he2025",
            about: "exact risk of preconditioned vanilla GD with Gamma in {sigma-tilde, sigma, identity}, x ~ N(0, KMS(rho)) (Lemma G.4)",
            params: params!(P("gamma", Some("sigma-tilde"), "sigma-tilde | sigma | identity"), P("eta", Some("1"), "step size"), P("rho", Some("0.5"), "KMS correlation")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let d = s.d;
                c.memory(product(&[16 * 8, d as u64, d as u64]), "--d squared")?;
                let sigma = crate::data::covariance::kms(d, c.f("rho")?);
                let g = match c.s("gamma")?.as_str() {
                    "sigma-tilde" => he2025::sigma_tilde(&sigma, d, s.l, s.sigma2)?,
                    "sigma" => sigma.clone(),
                    "identity" => (0..d * d).map(|k| if k / d == k % d { 1.0 } else { 0.0 }).collect(),
                    v => return Err(bad(format!("--gamma: {v:?} is not sigma-tilde, sigma or identity"))),
                };
                let eta = c.f("eta")?;
                let a: Vec<f64> = he2025::inverse(&g, d)?.iter().map(|v| v * eta).collect();
                Ok(Out::num(he2025::precond_gd_risk(&sigma, &a, d, s.l, s.sigma2)?))
            },
        },
        Q {
            name: "he2025-flow",
            paper: "he2025",
            about: "two-head gradient flow (D.4) from phi = rho = alpha: value = peak of rho; tau1, tau2, final state; trajectory",
            params: params!(
                P("alpha", Some("0.001"), "initial scale"),
                P("t-end", Some("2000"), "final time"),
                P("dt", Some("0.01"), "RK4 step (ignored with --adaptive)"),
                P("adaptive", Some("false"), "use Dormand-Prince RK45 (true/false)"),
                P("sample-dt", Some("0.1"), "trajectory spacing")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let (t_end, sample_dt) = (c.f("t-end")?, c.f("sample-dt")?);
                let method = if bool_flag(c, "adaptive")? {
                    he2025::Method::Adaptive(ode::Adaptive::default())
                } else {
                    let dt = c.f("dt")?;
                    c.count(t_end / dt, "--t-end / --dt (RK4 steps; --adaptive picks its own)")?;
                    he2025::Method::Rk4 { dt }
                };
                let rows = c.count(t_end / sample_dt, "--t-end / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(rows, 6), "--t-end / --sample-dt")?;
                let f = s.two_head_flow(c.f("alpha")?, &he2025::FlowOptions { t_end, method, sample_dt })?;
                let rows: Vec<Vec<f64>> = f.trajectory.iter().map(|r| vec![r[0], r[1], r[2], 2.0 * r[3], 2.0 * r[1] * r[2], s.phi_star(r[2])]).collect();
                Ok(Out::num(f.peak_rho)
                    .with("tau1", Value::from(f.tau1))
                    .with("tau2", Value::from(f.tau2))
                    .with("phi_end", Value::from(f.final_state[0]))
                    .with("rho_end", Value::from(f.final_state[1]))
                    .with("eta_eff_end", Value::from(2.0 * f.final_state[0] * f.final_state[1]))
                    .with("eta_star", Value::from(s.eta_star()))
                    .with_traj(Traj {
                        title: format!("He et al. (2025) (D.4), d = {}, L = {}, sigma^2 = {}", s.d, s.l, s.sigma2),
                        columns: ["t", "phi", "rho", "approx_loss", "two_phi_rho", "phi_star"].iter().map(|s| s.to_string()).collect(),
                        rows,
                        plot: vec![1, 2, 3, 4],
                        log_y: false,
                        refs: vec![("eta*".into(), s.eta_star()), ("L~*".into(), s.approx_loss_star())],
                    }))
            },
        },
        Q {
            name: "he2025-gd",
            paper: "he2025",
            about: "gradient descent on L~/2 from any (omega, mu): value = final L~; final omega, mu; trajectory",
            params: params!(
                P("omega", None, "initial per-head omega"),
                P("mu", None, "initial per-head mu"),
                P("lr", Some("0.01"), "step size"),
                P("steps", Some("100000"), "GD steps (at most 10^7)"),
                P("every", Some("100"), "trajectory spacing (steps)")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let (om0, mu0) = (c.list("omega")?, c.list("mu")?);
                let h = om0.len();
                let (steps, every) = (c.u("steps")?, c.u("every")?);
                c.count(steps as f64, "--steps (GD steps)")?;
                c.memory(traj_bytes(steps as u64 / every as u64, 2 + 2 * h as u64), "--steps / --every x the heads")?;
                let mut rows = Vec::new();
                let mut last = f64::NAN;
                let (om, mu) = s.gd_approx_loss(&om0, &mu0, c.f("lr")?, steps, every, &mut |st, l, o, m| {
                    let mut r = vec![st as f64, l];
                    r.extend_from_slice(o);
                    r.extend_from_slice(m);
                    rows.push(r);
                    last = l;
                    true
                })?;
                let mut cols = vec!["step".to_string(), "approx_loss".to_string()];
                cols.extend((0..h).map(|i| format!("omega{}", i + 1)));
                cols.extend((0..h).map(|i| format!("mu{}", i + 1)));
                Ok(Out::num(last).with("omega", Value::from(om)).with("mu", Value::from(mu)).with_traj(Traj {
                    title: format!("GD on L~/2, H = {h}"),
                    columns: cols,
                    rows,
                    plot: (2..2 + 2 * h).collect(),
                    log_y: false,
                    refs: Vec::new(),
                }))
            },
        },
        // ---------------- Zhang et al. (2025)
        Q {
            name: "plateaus",
            paper: "zhang2025",
            about: "plateau losses L(M_0..M_D) = tr(Lambda) - sum_{d<=m} lambda_d/(1+(1+tr/lambda_d)/N) (eqs. 19, 63); --n-max uses E(1/N) (eq. 26)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: NTP training with N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                zhang2025::a_coeffs(&eigs, inv)?; // validates the eigenvalues
                Ok(Out::list(&zhang2025::plateau_losses_inv_n(&eigs, inv)).with("e_inv_n", Value::from(inv)))
            },
        },
    ];
    v.extend(zhang_quantities());
    v.extend(temperature_quantities());
    v.extend(multilayer_quantities());
    v
}

impl Out {
    fn with_traj(mut self, t: Traj) -> Out {
        self.traj = Some(t);
        self
    }
}

/// Memory one number of a quantity's output takes on its way out, generously: the registry's
/// [`Value`], then a front end's JSON value or text (measured: about 300 bytes a number for a
/// 4096 x 4096 matrix through `icl theory`).
const OUT_NUMBER_BYTES: u64 = 400;

/// Memory of `n` output numbers.
fn out_bytes(n: u64) -> Option<u64> {
    n.checked_mul(OUT_NUMBER_BYTES)
}

/// Memory of a recorded trajectory of `rows` rows of `cols` numbers: the integrator's own record,
/// the rows (a vector each) and their CSV text (`--csv`), generously.
fn traj_bytes(rows: u64, cols: u64) -> Option<u64> {
    rows.checked_add(2)?
        .checked_mul(cols.checked_add(4)?.checked_mul(48)?.checked_add(64)?)
}

/// `a + b + ...`, `None` when a term is `None` or the sum overflows.
fn sum(xs: &[Option<u64>]) -> Option<u64> {
    xs.iter().try_fold(0u64, |a, x| a.checked_add((*x)?))
}

fn bool_flag(c: &Ctx, k: &str) -> Result<bool> {
    match c.raw(k)? {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        v => Err(bad(format!("--{k}: {v:?} is not true or false"))),
    }
}

// ------------------------------------------------------------------------------------------------
// Zhang et al. (2025)

/// E(1/N): 1/N, or H_{n_max}/n_max when `--n-max` > 0.
fn inv_n(c: &Ctx) -> Result<f64> {
    let nmax = c.u("n-max")?;
    if nmax > 0 {
        Ok(zhang2025::mean_inv_uniform(nmax))
    } else {
        let n = c.f("N")?;
        if n <= 0.0 {
            return Err(bad("--N must be > 0"));
        }
        Ok(1.0 / n)
    }
}

fn zhang_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "zhang-m-star",
            paper: "zhang2025",
            about: "global minimiser M* = E(Lambda_hat^2)^-1 Lambda in the eigenbasis (diagonal lambda_d/a_d); also L* and a_d",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                let m: Vec<f64> = l.iter().zip(&a).map(|(x, a)| x / a).collect();
                let lstar = *zhang2025::plateau_losses_inv_n(&eigs, inv).last().unwrap_or(&f64::NAN);
                Ok(Out::list(&m).with("loss_star", Value::from(lstar)).with("a", Value::from(a)))
            },
        },
        Q {
            name: "v-star",
            paper: "zhang2025",
            about: "grown value weights v*_d = (lambda_d/a_d)^(1/3) (Eq. 20); also the minimum norm 3 sum v*^2 (App. E.7)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let v = zhang2025::v_star(&eigs, inv)?;
                let (_, norm) = zhang2025::min_norm(&eigs, inv, v.len())?;
                Ok(Out::list(&v).with("min_norm", Value::from(norm)))
            },
        },
        Q {
            name: "white-loss",
            paper: "zhang2025",
            about: "ATTN_M loss at time t for Lambda = cI from aligned small init s(0) = w^2 (Eqs. 10, 48-51, c-generalised); trajectory 0..t",
            params: params!(
                P("t", Some("10"), "time (tau)"),
                P("D", Some("4"), "dimension"),
                P("N", Some("31"), "context length"),
                P("c", Some("1"), "Lambda = c I"),
                P("w-init", Some("0.001"), "init scale (s0 = w^2)"),
                P("sample-dt", Some("0.05"), "trajectory spacing")
            ),
            shared: &[],
            run: |c| {
                let (t, d, n, cc, w) = (c.f("t")?, c.u("D")?, c.f("N")?, c.f("c")?, c.f("w-init")?);
                let (sig, l) = zhang2025::white_time_course(t, d, n, cc, w * w)?;
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(bad("--sample-dt must be > 0"));
                }
                let k = c.count(t / dt, "--t / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(k, 3), "--t / --sample-dt")?;
                let mut rows = Vec::new();
                for i in 0..=k {
                    let ti = (i as f64 * dt).min(t);
                    let (s, li) = zhang2025::white_time_course(ti, d, n, cc, w * w)?;
                    rows.push(vec![ti, li, s]);
                }
                let (s_inf, l_inf) = zhang2025::white_time_course(1e12, d, n, cc, w * w)?;
                Ok(Out::num(l).with("sigma", Value::from(sig)).with("loss_inf", Value::from(l_inf)).with("sigma_inf", Value::from(s_inf)).with_traj(Traj {
                    title: format!("ATTN_M, Lambda = {cc} I, D = {d}, N = {n}"),
                    columns: vec!["t".into(), "loss".into(), "sigma".into()],
                    rows,
                    plot: vec![1, 2],
                    log_y: false,
                    refs: vec![("L(inf)".into(), l_inf), ("sigma(inf)".into(), s_inf)],
                }))
            },
        },
        Q {
            name: "plateau-time",
            paper: "zhang2025",
            about: "plateau predictions: merged ln(1/w)/||Lambda^2||_F (Eq. 54); separate 1/(lambda_m^2 v0) for each drop (Eqs. 72, 77)",
            params: params!(
                P("model", Some("merged"), "merged | separate"),
                P("eigs", None, "eigenvalues of Lambda"),
                P("w-init", Some("0.000001"), "merged: init scale"),
                P("v0", Some("0.05"), "separate: value weight of each escaping head at the start of its plateau")
            ),
            shared: &[],
            run: |c| {
                let eigs = c.list("eigs")?;
                match c.s("model")?.as_str() {
                    "merged" => {
                        let d = eigs.len();
                        // Lambda and the population's matrices (D x D each)
                        c.memory(product(&[16 * 8, d as u64, d as u64]), "the number of --eigs, squared")?;
                        let lam: Vec<f64> = (0..d * d).map(|k| if k / d == k % d { eigs[k / d] } else { 0.0 }).collect();
                        Ok(Out::num(zhang2025::attn_m_plateau_time(&lam, d, c.f("w-init")?)?))
                    }
                    "separate" => {
                        let v0 = c.f("v0")?;
                        let t = zhang2025::attn_s_plateau_times(&eigs, &vec![v0; eigs.len()])?;
                        Ok(Out::list(&t))
                    }
                    m => Err(bad(format!("--model: {m:?} is not merged or separate"))),
                }
            },
        },
        Q {
            name: "scalar-ode",
            paper: "zhang2025",
            about: "v(t) of the (m+1)-th drop, tau v' = lambda^2 v^2 - lambda a v^5 (Eq. 21), via the implicit F (Eq. 71, corrected); trajectory with the ansatz loss",
            params: params!(
                P("eigs", None, "eigenvalues of Lambda"),
                P("N", Some("31"), "context length"),
                P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max"),
                P("m", Some("0"), "drops already done (0-based)"),
                P("v0", Some("0.05"), "initial v"),
                P("t", Some("200"), "time (tau)"),
                P("sample-dt", Some("1"), "trajectory spacing")
            ),
            shared: &[],
            run: |c| {
                let (eigs, inv, m) = (c.list("eigs")?, inv_n(c)?, c.u("m")?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                if m >= l.len() {
                    return Err(bad(format!("--m must be < D = {}", l.len())));
                }
                let (lam, am) = (l[m], a[m]);
                let levels = zhang2025::plateau_losses_inv_n(&eigs, inv);
                let (v0, t) = (c.f("v0")?, c.f("t")?);
                let v = zhang2025::scalar_ode_v(t, v0, lam, am)?;
                let vs = libm::cbrt(lam / am);
                let t_half = if v0 < vs / 2.0 { Some(zhang2025::scalar_ode_time(v0, vs / 2.0, lam, am)?) } else { None };
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(bad("--sample-dt must be > 0"));
                }
                let k = c.count(t / dt, "--t / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(k, 3), "--t / --sample-dt")?;
                let mut rows = Vec::new();
                for i in 0..=k {
                    let ti = (i as f64 * dt).min(t);
                    let vi = zhang2025::scalar_ode_v(ti, v0, lam, am)?;
                    rows.push(vec![ti, vi, zhang2025::ansatz_loss(levels[m], vi, lam, am)]);
                }
                Ok(Out::num(v).with("v_star", Value::from(vs)).with("t_half", Value::from(t_half)).with_traj(Traj {
                    title: format!("scalar ODE of drop {}", m + 1),
                    columns: vec!["t".into(), "v".into(), "loss".into()],
                    rows,
                    plot: vec![1, 2],
                    log_y: false,
                    refs: Vec::new(),
                }))
            },
        },
        Q {
            name: "linattn-flow",
            paper: "zhang2025",
            about: "exact population gradient flow of ATTN_M / rank-R ATTN_S in weight space (C.2 init): value = final loss; drop times; trajectory",
            params: params!(
                P("arch", Some("separate"), "merged | separate"),
                P("eigs", None, "eigenvalues of Lambda (diagonal basis)"),
                P("N", Some("31"), "context length"),
                P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max"),
                P("H", Some("5"), "heads"),
                P("R", Some("1"), "rank (separate)"),
                P("w-init", Some("0.1"), "init scale"),
                P("seed", Some("0"), "init seed"),
                P("scheme", Some("euler"), "euler (= full-batch GD, lr dt/2) | rk4"),
                P("dt", Some("0.5"), "step (tau)"),
                P("t-end", Some("12000"), "final time (tau)"),
                P("every", Some("10"), "trajectory spacing (steps)")
            ),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let h = c.u("H")?;
                let arch = match c.s("arch")?.as_str() {
                    "merged" => zhang2025::Arch::Merged { heads: h },
                    "separate" => zhang2025::Arch::Separate { heads: h, rank: c.u("R")? },
                    a => return Err(bad(format!("--arch: {a:?} is not merged or separate"))),
                };
                let scheme = match c.s("scheme")?.as_str() {
                    "euler" => zhang2025::Scheme::Euler,
                    "rk4" => zhang2025::Scheme::Rk4,
                    s => return Err(bad(format!("--scheme: {s:?} is not euler or rk4"))),
                };
                let (dt, t_end, every) = (c.f("dt")?, c.f("t-end")?, c.u("every")?);
                let steps = c.count(t_end / dt, "--t-end / --dt (integration steps)")?;
                // the state (y0, y, dy, five RK4 buffers), the D x D matrices of every step, the
                // trajectory (and its loss column) and the final M
                let (d, hh) = (eigs.len() as u64, h as u64);
                let state = match arch {
                    zhang2025::Arch::Merged { .. } => product(&[hh, d, d]),
                    zhang2025::Arch::Separate { rank, .. } => product(&[2, hh, rank as u64, d]),
                }
                .and_then(|x| x.checked_add(hh));
                let rows = steps / every as u64 + 2;
                c.memory(
                    sum(&[
                        state.and_then(|x| x.checked_mul(8 * 8)),
                        product(&[24 * 8, d, d]),
                        traj_bytes(rows, 2 + hh),
                        out_bytes(d * d),
                    ]),
                    "--H x the number of --eigs (squared for merged, x --R for separate), --t-end / --dt / --every",
                )?;
                let pop = zhang2025::Population::diagonal(&eigs, inv)?;
                let y0 = arch.init(pop.d, c.f("w-init")?, c.u64("seed")?);
                let mut traj = Vec::new();
                let mut rows = Vec::new();
                let y = zhang2025::simulate(&pop, arch, &y0, scheme, dt, t_end, every, &mut |t, l, y| {
                    traj.push((t, l));
                    let mut r = vec![t, l];
                    r.extend((0..h).map(|i| y[i]));
                    rows.push(r);
                    true
                })?;
                let levels = zhang2025::plateau_losses_inv_n(&eigs, inv);
                let cr = zhang2025::crossings(&levels, &traj);
                let mut cols = vec!["t".to_string(), "loss".to_string()];
                cols.extend((0..h).map(|i| format!("v{}", i + 1)));
                Ok(Out::num(traj.last().map(|r| r.1).unwrap_or(f64::NAN))
                    .with("crossings", Value::from(cr))
                    .with("plateaus", Value::from(&levels))
                    .with("m_final", Value::from(arch.m(pop.d, &y)))
                    .with_traj(Traj {
                        title: match arch {
                            zhang2025::Arch::Merged { heads } => format!("ATTN_M, H = {heads}, eigenvalues {eigs:?}, N = {}", c.raw("N")?),
                            zhang2025::Arch::Separate { heads, rank } => {
                                format!("ATTN_S, H = {heads}, R = {rank}, eigenvalues {eigs:?}, N = {}", c.raw("N")?)
                            }
                        },
                        columns: cols,
                        rows,
                        plot: vec![1],
                        log_y: false,
                        refs: levels.iter().enumerate().map(|(m, l)| (format!("L(M_{m})"), *l)).collect(),
                    }))
            },
        },
    ]
}

// ------------------------------------------------------------------------------------------------
// Temperature (Theorems 4.6-4.7)

/// A mean flag: one value c (every entry c) or d values.
fn mean_flag(c: &Ctx, k: &str, d: usize) -> Result<Vec<f64>> {
    let v = c.list(k)?;
    match v.len() {
        1 => Ok(vec![v[0]; d]),
        n if n == d => Ok(v),
        n => Err(bad(format!("--{k}: give 1 or d = {d} values (got {n})"))),
    }
}

/// A covariance flag: one value c (c I), d values (diagonal) or d*d values (row-major).
fn cov_flag(c: &Ctx, k: &str, d: usize) -> Result<Vec<f64>> {
    let v = c.list(k)?;
    match v.len() {
        1 => Ok((0..d * d)
            .map(|i| if i / d == i % d { v[0] } else { 0.0 })
            .collect()),
        n if n == d => Ok((0..d * d)
            .map(|i| if i / d == i % d { v[i / d] } else { 0.0 })
            .collect()),
        n if n == d * d => Ok(v),
        n => Err(bad(format!(
            "--{k}: give 1, d = {d} or d*d = {} values (got {n})",
            d * d
        ))),
    }
}

fn gaussian(c: &Ctx, pre: &str, d: usize) -> Result<temperature::Gaussian> {
    let s = c.f(&format!("{pre}-sigma"))?;
    let g = temperature::Gaussian {
        d,
        mu_x: mean_flag(c, &format!("{pre}-mu-x"), d)?,
        sigma_x: cov_flag(c, &format!("{pre}-sigma-x"), d)?,
        mu_w: mean_flag(c, &format!("{pre}-mu-w"), d)?,
        sigma_w: cov_flag(c, &format!("{pre}-sigma-w"), d)?,
        sigma2: s * s,
    };
    g.validate()?;
    Ok(g)
}

const TEMP: &[P] = &[
    P("run", Some("none"), RUN_DOC),
    P("d", Some("50"), "dimension"),
    P(
        "l",
        Some("100"),
        "tokens per test prompt (l-1 context pairs + query)",
    ),
    P(
        "l-train",
        Some("l"),
        "tokens per pretraining prompt for Lemma 4.1 (`l`: the same as --l)",
    ),
    P(
        "pretrain-m",
        Some("population"),
        "Lemma 4.1's X^T X/(ml): `population` (Sigma_x^tr) or from m sampled pretraining prompts",
    ),
    P(
        "pretrain-seed",
        Some("0"),
        "seed of the sampled pretraining prompts",
    ),
    P("train-sigma", Some("0.1"), "train noise std"),
    P(
        "train-mu-x",
        Some("0"),
        "train x mean (the paper's form assumes a bounded norm)",
    ),
    P("train-sigma-x", Some("1"), "train x covariance"),
    P("train-mu-w", Some("0"), "train task mean (bounded norm)"),
    P("train-sigma-w", Some("1"), "train task covariance"),
    P("test-sigma", Some("0.1"), "test noise std"),
    P("test-mu-x", Some("0"), "test x mean (bounded norm)"),
    P("test-sigma-x", Some("1"), "test x covariance"),
    P("test-mu-w", Some("0"), "test task mean (bounded norm)"),
    P("test-sigma-w", Some("1"), "test task covariance"),
];

const RUN_DOC: &str = "a trained one-layer, one-head softmax run: its linearised layer (M11 = C_f KQ_11, m21 set to 0 as Assumption 4.5 asks, v21, v22 = OV) replaces Lemma 4.1, the keys are the run's (context only unless model.self_attend), and d, l = L + 1 and the test distribution default to the run's training ones (Sigma_w = I/d, noise task.sigma2); the train-* and pretrain flags do not apply. It describes the run's linearisation (logits small), not the softmax run itself: `icl eval DIR --tau` measures that (on he2025-h1: G(1) 21 % below the run's, tau_opt 12 % below; docs/papers/temperature.md)";

const FORM_DOC: &str = "exact (default: the exact finite-size error of the model) | paper (Theorem 4.6: leading order in d and l)";

/// Largest d of the exact form (its cost grows like d^3 with a large constant).
const EXACT_MAX_D: usize = 512;

/// A mean norm above which the paper's form is outside its bounded-mean assumption (3.1).
const MEAN_WARN: f64 = 2.0;

/// The flags a loaded run replaces (Lemma 4.1's inputs): refused with `--run`.
const RUN_REPLACES: &[&str] = &[
    "l-train",
    "pretrain-m",
    "pretrain-seed",
    "train-sigma",
    "train-mu-x",
    "train-sigma-x",
    "train-mu-w",
    "train-sigma-w",
];

/// The values a loaded run gives the parameters of quantity `q` not in `given`: d, l = L + 1 (the
/// run's prompts: L context pairs and the query) and its training distribution as the test one;
/// an explicit `--d` must be the run's, and the flags the run replaces are refused.
fn run_defaults(
    q: &str,
    t: &Trained,
    given: &BTreeMap<String, String>,
) -> Result<Vec<(&'static str, String)>> {
    let d = t.model.spec.d;
    if let Some(v) = given.get("d") {
        if v.trim().parse::<usize>().ok() != Some(d) {
            return Err(bad(format!(
                "--d {v}: the run's model has d = {d} (leave --d out to take the run's)"
            )));
        }
    }
    if let Some(k) = RUN_REPLACES.iter().find(|k| given.contains_key(**k)) {
        return Err(bad(format!(
            "--{k} does not apply with --run: the layer's parameters are the run's, not Lemma 4.1's"
        )));
    }
    let mut v = vec![
        ("d", d.to_string()),
        ("l", (t.config.task.len + 1).to_string()),
    ];
    // a non-Gaussian training task leaves the test flags at their defaults (a warning says so)
    if let Ok(g) = temperature::trained::training_distribution(&t.config) {
        let sig = format!("{}", libm::sqrt(g.sigma2));
        let w = format!("{}", 1.0 / d as f64);
        if q == "temperature-isotropic" {
            v.extend([("beta", w), ("sigma", sig)]);
        } else {
            let iso = g.sigma_x == temperature::Gaussian::isotropic(d, 1.0, 1.0, 0.0).sigma_x;
            let sx = if iso {
                "1".to_string()
            } else {
                g.sigma_x
                    .iter()
                    .map(|x| format!("{x}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            v.extend([
                ("test-sigma", sig),
                ("test-sigma-x", sx),
                ("test-sigma-w", w),
            ]);
        }
    }
    Ok(v)
}

/// What the output says about a run's linearised layer.
struct RunInfo {
    keys: &'static str,
    m11_diag: f64,
    m11_offdiag: f64,
    m21: f64,
    v21: f64,
    v22: f64,
}

impl RunInfo {
    fn add(&self, out: Out) -> Out {
        out.with("run_keys", Value::from(self.keys))
            .with("run_M11_diag_mean", Value::from(self.m11_diag))
            .with("run_M11_offdiag_rel", Value::from(self.m11_offdiag))
            .with("run_m21_norm", Value::from(self.m21))
            .with("run_v21_norm", Value::from(self.v21))
            .with("run_v22", Value::from(self.v22))
    }
}

/// A run's linearised layer with m21 set to 0 (Assumption 4.5; the closed forms need it), what
/// it looks like, and the warnings: a large dropped m21, a test distribution not the run's own.
fn run_layer(t: &Trained, w: &mut Vec<String>) -> Result<(temperature::Params, RunInfo)> {
    let mut p = temperature::trained::linearise(&t.model)?;
    let (m11_diag, m11_offdiag, m21, v21) = temperature::trained::summary(&p);
    let m11_norm = libm::sqrt(p.m11.iter().map(|x| x * x).sum::<f64>());
    if m21 > 0.05 * m11_norm {
        w.push(format!(
            "the run's m21 (|m21| = {m21:.3e}, {:.1}% of |M11|) is set to 0 as Assumption 4.5 and the closed forms need: the forms describe the layer without it",
            100.0 * m21 / m11_norm
        ));
    }
    p.m21.iter_mut().for_each(|x| *x = 0.0);
    if let Err(e) = temperature::trained::training_distribution(&t.config) {
        w.push(format!(
            "{e}: the test distribution is the test-* flags' (defaults)"
        ));
    }
    let keys = if p.self_attend {
        "context+query"
    } else {
        "context"
    };
    let v22 = p.v22;
    Ok((
        p,
        RunInfo {
            keys,
            m11_diag,
            m11_offdiag,
            m21,
            v21,
            v22,
        },
    ))
}

/// One temperature evaluation: the parameters, both forms' coefficients, the chosen form, warnings.
struct TempEval {
    p: temperature::Params,
    test: temperature::Gaussian,
    l: usize,
    exact: Option<temperature::Coeffs>,
    paper: temperature::Coeffs,
    exact_form: bool,
    warnings: Vec<String>,
    run: Option<RunInfo>,
}

impl TempEval {
    /// The coefficients of the chosen form.
    fn chosen(&self) -> temperature::Coeffs {
        match (self.exact_form, self.exact) {
            (true, Some(e)) => e,
            _ => self.paper,
        }
    }

    /// The chosen form's value, both forms' values and their relative gap `paper/exact - 1`.
    fn both(
        self,
        f: fn(&temperature::Coeffs) -> Result<f64>,
        key: [&'static str; 3],
    ) -> Result<Out> {
        let v = f(&self.chosen())?;
        let paper = f(&self.paper)?;
        let exact = self.exact.map(|e| f(&e)).transpose()?;
        let k = self.chosen();
        let form = if self.exact_form { "exact" } else { "paper" };
        let gap = exact.map(|e| paper / e - 1.0);
        let mut w = self.warnings;
        let run = self.run;
        if let Some(g) = gap {
            if !self.exact_form && g.abs() > 0.05 {
                w.push(format!(
                    "{}: the paper's leading-order form is {:+.1}% off the exact finite-size value here",
                    key[0],
                    100.0 * g
                ));
            }
        }
        let out = Out::num(v)
            .with("form", Value::from(form))
            .with("forms", Value::from("default exact (the model's exact finite-size error); paper = Theorem 4.6, leading order in d and l"))
            .with("a", Value::from(k.a))
            .with("b", Value::from(k.b))
            .with("c", Value::from(k.c))
            .with(key[1], Value::from(exact))
            .with(key[2], Value::from(paper))
            .with("rel_gap", Value::from(gap))
            .with("warnings", Value::List(w.into_iter().map(Value::Text).collect()));
        Ok(match &run {
            Some(r) => r.add(out),
            None => out,
        })
    }
}

fn mean_warnings(g: &temperature::Gaussian, side: &str, w: &mut Vec<String>) {
    for (name, v) in [("mu-x", &g.mu_x), ("mu-w", &g.mu_w)] {
        let n = libm::sqrt(v.iter().map(|x| x * x).sum::<f64>());
        if n > MEAN_WARN {
            w.push(format!(
                "||{side}-{name}|| = {n:.3} (one value m means m 1, norm m sqrt(d)): the paper's form assumes a bounded mean (Assumption 3.1) and can be far off; the exact form holds"
            ));
        }
    }
}

/// The d x d matrices of a temperature evaluation: both sides' covariances, Lemma 4.1's
/// parameters and both forms' moments (measured: 12 d^2 numbers at d = 2000).
fn temp_memory(c: &Ctx, d: usize) -> Result<()> {
    c.memory(product(&[32 * 8, d as u64, d as u64]), "--d squared")
}

fn temp_eval(c: &Ctx, exact_form: bool) -> Result<TempEval> {
    let (d, l) = (c.u("d")?, c.u("l")?);
    temp_memory(c, d)?;
    let test = gaussian(c, "test", d)?;
    if let Some(t) = &c.run {
        let mut w = Vec::new();
        let (p, info) = run_layer(t, &mut w)?;
        let mut e = temp_eval_params(p, None, test, l, exact_form)?;
        w.append(&mut e.warnings);
        e.warnings = w;
        e.run = Some(info);
        return Ok(e);
    }
    let train = gaussian(c, "train", d)?;
    let l_train = if c.raw("l-train")? == "l" {
        l
    } else {
        c.u("l-train")?
    };
    let how = if c.raw("pretrain-m")? == "population" {
        temperature::Pretrain::Population
    } else {
        temperature::Pretrain::Sampled {
            m: c.u("pretrain-m")?,
            seed: c.u64("pretrain-seed")?,
        }
    };
    let p = temperature::pretrained(&train, l_train, how)?;
    temp_eval_params(p, Some(train), test, l, exact_form)
}

fn temp_eval_params(
    p: temperature::Params,
    train: Option<temperature::Gaussian>,
    test: temperature::Gaussian,
    l: usize,
    exact_form: bool,
) -> Result<TempEval> {
    let d = test.d;
    let mut warnings = Vec::new();
    if let Some(train) = &train {
        mean_warnings(train, "train", &mut warnings);
    }
    mean_warnings(&test, "test", &mut warnings);
    let paper = temperature::coefficients(&p, &test, l)?;
    let exact = if d <= EXACT_MAX_D {
        Some(temperature::exact::coefficients(&p, &test, l)?)
    } else if exact_form {
        return Err(Error::Unsupported(format!(
            "the exact form is evaluated for d <= {EXACT_MAX_D} (got d = {d}); --form paper gives the leading order"
        )));
    } else {
        warnings.push(format!(
            "d > {EXACT_MAX_D}: the exact form is not evaluated"
        ));
        None
    };
    Ok(TempEval {
        p,
        test,
        l,
        exact,
        paper,
        exact_form,
        warnings,
        run: None,
    })
}

fn exact_form(c: &Ctx) -> Result<bool> {
    match c.raw("form")? {
        "exact" => Ok(true),
        "paper" => Ok(false),
        f => Err(bad(format!("--form: {f:?} is not exact or paper"))),
    }
}

fn temperature_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "optimal-temperature",
            paper: "temperature",
            about: "tau_opt = 2a/b (Thm 4.7) of the linearised layer with Lemma-4.1 parameters (train distribution, population or m sampled prompts, l-train tokens) on the test distribution; a, b, c, G(1), G_min in the chosen form, tau_opt in both forms, heuristic",
            params: params!(P("form", Some("exact"), FORM_DOC)),
            shared: TEMP,
            run: |c| {
                let t = temp_eval(c, exact_form(c)?)?;
                let heur = temperature::tau_heuristic(&t.p, &t.test, t.l)?;
                let k = t.chosen();
                let (gm_e, gm_p) = (t.exact.map(|e| e.g_min()).transpose()?, t.paper.g_min()?);
                let (g1_e, g1_p) = (t.exact.map(|e| e.g(1.0)), t.paper.g(1.0));
                Ok(t.both(|k| k.tau_opt(), ["tau_opt", "tau_opt_exact", "tau_opt_paper"])?
                    .with("G_1", Value::from(k.g(1.0)))
                    .with("G_min", Value::from(k.g_min()?))
                    .with("G_1_exact", Value::from(g1_e))
                    .with("G_1_paper", Value::from(g1_p))
                    .with("G_min_exact", Value::from(gm_e))
                    .with("G_min_paper", Value::from(gm_p))
                    .with("tau_heuristic", Value::from(heur)))
            },
        },
        Q {
            name: "temperature-error",
            paper: "temperature",
            about: "G(tau) = a/tau^2 - b/tau + c of the linearised layer at --tau (exact, or Thm 4.6 corrected); both forms and their gap",
            params: params!(P("tau", Some("1"), "temperature"), P("form", Some("exact"), FORM_DOC)),
            shared: TEMP,
            run: |c| {
                let tau = c.f("tau")?;
                if !(tau > 0.0) {
                    return Err(bad("--tau must be > 0"));
                }
                let t = temp_eval(c, exact_form(c)?)?;
                let (e, p) = (t.exact.map(|e| e.g(tau)), t.paper.g(tau));
                let k = t.chosen();
                let gap = e.map(|e| p / e - 1.0);
                let mut w = t.warnings;
                if let (Some(g), false) = (gap, t.exact_form) {
                    if g.abs() > 0.05 {
                        w.push(format!("G({tau}): the paper's leading-order form is {:+.1}% off the exact finite-size value here", 100.0 * g));
                    }
                }
                let out = Out::num(k.g(tau))
                    .with("form", Value::from(if t.exact_form { "exact" } else { "paper" }))
                    .with("forms", Value::from("default exact (the model's exact finite-size error); paper = Theorem 4.6, leading order in d and l"))
                    .with("a", Value::from(k.a))
                    .with("b", Value::from(k.b))
                    .with("c", Value::from(k.c))
                    .with("G_exact", Value::from(e))
                    .with("G_paper", Value::from(p))
                    .with("rel_gap", Value::from(gap))
                    .with("warnings", Value::List(w.into_iter().map(Value::Text).collect()));
                Ok(match &t.run {
                    Some(r) => r.add(out),
                    None => out,
                })
            },
        },
        Q {
            name: "temperature-isotropic",
            paper: "temperature",
            about: "isotropic train (Sigma = I, mean 0), test Sigma_x = alpha I, Sigma_w = beta I: paper form (spec 7.1) tau_opt = k(alpha + (sigma^2/beta + alpha d)/l), k = 1/(1+sigma_tr^2/l), or the exact form; a, b, c, G(1), G_min. With --run: the run's linearised layer on that test distribution (paper form: the matrix Theorem 4.6)",
            params: params!(
                P("run", Some("none"), RUN_DOC),
                P("d", Some("50"), "dimension"),
                P("l", Some("100"), "tokens per prompt"),
                P("alpha", Some("1"), "test Sigma_x = alpha I"),
                P("beta", Some("1"), "test Sigma_w = beta I"),
                P("sigma", Some("0.1"), "test noise std"),
                P("train-sigma", Some("0.1"), "train noise std"),
                P("form", Some("exact"), FORM_DOC)
            ),
            shared: &[],
            run: |c| {
                let (d, l) = (c.u("d")?, c.u("l")?);
                temp_memory(c, d)?;
                let ts = c.f("train-sigma")?;
                let s = c.f("sigma")?;
                let (alpha, beta) = (c.f("alpha")?, c.f("beta")?);
                let test = temperature::Gaussian::isotropic(d, alpha, beta, s * s);
                let t = if let Some(run) = &c.run {
                    let mut w = Vec::new();
                    let (p, info) = run_layer(run, &mut w)?;
                    let mut t = temp_eval_params(p, None, test, l, exact_form(c)?)?;
                    w.append(&mut t.warnings);
                    t.warnings = w;
                    t.run = Some(info);
                    t
                } else {
                    let train = temperature::Gaussian::isotropic(d, 1.0, 1.0, ts * ts);
                    let p = temperature::lemma41(&train, l)?;
                    let mut t = temp_eval_params(p, Some(train), test, l, exact_form(c)?)?;
                    // the scalar reduction of the paper's form (equal to the matrix form here)
                    t.paper = temperature::isotropic(d, l, alpha, beta, s * s, temperature::k_iso(l, ts * ts));
                    t
                };
                let k = t.chosen();
                Ok(t.both(|k| k.tau_opt(), ["tau_opt", "tau_opt_exact", "tau_opt_paper"])?
                    .with("G_1", Value::from(k.g(1.0)))
                    .with("G_min", Value::from(k.g_min()?)))
            },
        },
        Q {
            name: "temperature-mc",
            paper: "temperature",
            about: "Monte Carlo of the linearised layer's test error (same parameters and flags as optimal-temperature): G(tau) with stderr, a, b, c, tau_opt = 2a/b and G_min with stderrs, beside the exact and paper forms",
            params: params!(
                P("tau", Some("1"), "temperature"),
                P("n", Some("10000"), "prompts"),
                P("seed", Some("0"), "seed (prompt i uses stream (seed, eval, l, i))"),
                P("estimator", Some("conditional"), "conditional (spec 10, variance-reduced) | plain")
            ),
            shared: TEMP,
            run: |c| {
                let tau = c.f("tau")?;
                if !(tau > 0.0) {
                    return Err(bad("--tau must be > 0"));
                }
                let est = match c.raw("estimator")? {
                    "plain" => temperature::mc::Estimator::Plain,
                    _ => temperature::mc::Estimator::Conditional,
                };
                let t = temp_eval(c, false)?;
                let m = temperature::mc::coefficients(&t.p, &t.test, t.l, c.u("n")?, c.u64("seed")?, est)?;
                let (g, se) = m.g(tau);
                let se3: Vec<f64> = (0..3).map(|i| libm::sqrt(m.cov[i][i])).collect();
                let (to, to_se) = m.tau_opt().map_or((None, None), |(a, b)| (Some(a), Some(b)));
                let (gm, gm_se) = m.g_min().map_or((None, None), |(a, b)| (Some(a), Some(b)));
                let e = t.exact;
                let out = Out::num(g)
                    .with("stderr", Value::from(se))
                    .with("a", Value::from(m.coeffs.a))
                    .with("b", Value::from(m.coeffs.b))
                    .with("c", Value::from(m.coeffs.c))
                    .with("abc_stderr", Value::from(se3))
                    .with("tau_opt", Value::from(to))
                    .with("tau_opt_stderr", Value::from(to_se))
                    .with("G_min", Value::from(gm))
                    .with("G_min_stderr", Value::from(gm_se))
                    .with("G_exact", Value::from(e.map(|e| e.g(tau))))
                    .with("G_paper", Value::from(t.paper.g(tau)))
                    .with("tau_opt_exact", Value::from(e.and_then(|e| e.tau_opt().ok())))
                    .with("tau_opt_paper", Value::from(t.paper.tau_opt().ok()))
                    .with("G_min_exact", Value::from(e.and_then(|e| e.g_min().ok())))
                    .with("G_min_paper", Value::from(t.paper.g_min().ok()))
                    .with("warnings", Value::List(t.warnings.into_iter().map(Value::Text).collect()));
                Ok(match &t.run {
                    Some(r) => r.add(out),
                    None => out,
                })
            },
        },
    ]
}

// ------------------------------------------------------------------------------------------------
// Multi-layer (Algorithm 1, baselines, IV)

/// Monte Carlo over varying-covariance sequences (noise-free target): mean and stderr of each prediction.
fn ml_mc(
    c: &Ctx,
    steps: usize,
    f: &dyn Fn(&multilayer::Sequence) -> crate::Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (d, l, s2, lo, hi, n, seed) = (
        c.u("d")?,
        c.u("L")?,
        c.f("sigma2")?,
        c.f("lmin")?,
        c.f("lmax")?,
        c.u("n")?,
        c.u64("seed")?,
    );
    if d == 0 || l == 0 || n < 2 || s2 < 0.0 || !(lo > 0.0 && hi >= lo) {
        return Err(bad(
            "need d, L >= 1, n >= 2, sigma2 >= 0 and 0 < lmin <= lmax",
        ));
    }
    c.count(steps as f64, "--steps")?;
    // one sequence (its normals, x, y, U and Sigma), the estimators' copies of X (X and X^T) and
    // the per-step step sizes, predictions and sums
    let (d, l) = (d as u64, l as u64);
    c.memory(
        sum(&[
            product(&[5 * 8, l + 1, d]),
            product(&[3 * 8, l]),
            product(&[8 * 8, d, d]),
            product(&[8 * 8, steps as u64 + 1]),
        ]),
        "--L x --d, --d squared, --steps",
    )?;
    let (d, l) = (d as usize, l as usize);
    let (mut s, mut ss) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut r = crate::rng::stream(seed, crate::rng::Domain::Eval, l as u64, i as u64);
        let q = multilayer::varying_cov_sequence(&mut r, d, l, s2, lo, hi);
        let p = f(&q)?;
        s.resize(p.len(), 0.0);
        ss.resize(p.len(), 0.0);
        for k in 0..p.len() {
            let e = (p[k] - q.yq) * (p[k] - q.yq);
            s[k] += e;
            ss[k] += e * e;
        }
    }
    let nf = n as f64;
    let m: Vec<f64> = s.iter().map(|v| v / nf).collect();
    let se = ss
        .iter()
        .zip(&m)
        .map(|(v, m)| libm::sqrt((v / nf - m * m).max(0.0) / (nf - 1.0)))
        .collect();
    Ok((m, se))
}

/// The parameters of the varying-covariance Monte Carlo quantities.
const ML_MC: &[P] = &[
    P("d", Some("5"), "dimension"),
    P("L", Some("120"), "context length"),
    P("sigma2", Some("0.1"), "noise variance"),
    P("lmin", Some("0.8"), "eigenvalues of Sigma ~ U(lmin, lmax)"),
    P("lmax", Some("1.2"), "see lmin"),
    P("n", Some("4000"), "Monte Carlo sequences"),
    P("seed", Some("0"), "seed"),
];

fn multilayer_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "alg1-risk",
            paper: "multilayer",
            about: "MC error (noise-free target) of Algorithm 1 after s = 1..steps steps on varying-covariance data: list over s",
            params: params!(
                P("eta-x", Some("0.6128"), "covariate step eta_x = -<u1, omega>"),
                P("eta-y", Some("0.7193"), "label step eta_y = <u2, omega>"),
                P("steps", Some("6"), "steps")
            ),
            shared: ML_MC,
            run: |c| {
                let (ex, ey, t) = (c.f("eta-x")?, c.f("eta-y")?, c.u("steps")?);
                let (m, se) = ml_mc(c, t, &|q| Ok(multilayer::algorithm1(&q.x, &q.y, &q.xq, ex, ey, t)?.preds))?;
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
        Q {
            name: "gd-steps-risk",
            paper: "multilayer",
            about: "MC error of K-step GD w <- w - eta/L X^T(Xw - y) on varying-covariance data: list over k = 1..steps",
            params: params!(
                P("eta", Some("0.9"), "step size"),
                P("steps", Some("4"), "steps")
            ),
            shared: ML_MC,
            run: |c| {
                let (eta, t) = (c.f("eta")?, c.u("steps")?);
                let (m, se) = ml_mc(c, t, &|q| multilayer::gd_steps(&q.x, &q.y, &q.xq, eta, t))?;
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
        Q {
            name: "regression-baselines",
            paper: "multilayer",
            about: "MC error [OLS, ridge(lambda)] on varying-covariance data; closed-form OLS excess risk sigma^2 d/(L-d-1)",
            params: &[P("lambda", Some("0.1"), "ridge penalty")],
            shared: ML_MC,
            run: |c| {
                let (d, lam) = (c.u("d")?, c.f("lambda")?);
                let (m, se) = ml_mc(c, 0, &|q| {
                    let dot = |w: &[f64]| w.iter().zip(&q.xq).map(|(a, b)| a * b).sum::<f64>();
                    Ok(vec![dot(&multilayer::ols(&q.x, &q.y, d)?), dot(&multilayer::ridge(&q.x, &q.y, d, lam)?)])
                })?;
                let cf = multilayer::ols_excess_risk(d, c.u("L")?, c.f("sigma2")?).ok();
                Ok(Out::list(&m).with("stderr", Value::from(se)).with("ols_closed_form", Value::from(cf)))
            },
        },
        Q {
            name: "iv-risk",
            paper: "multilayer",
            about: "MC error [2SLS (query theta_hat^T z_q), OLS (query x_q)] on IV data (Liang et al. conventions, noise-free y_q)",
            params: params!(
                P("q", Some("6"), "instrument dimension"),
                P("p", Some("4"), "regressor dimension"),
                P("L", Some("200"), "context length"),
                P("n", Some("2000"), "Monte Carlo sequences"),
                P("seed", Some("0"), "seed")
            ),
            shared: &[],
            run: |c| {
                let (q, p, l, n, seed) = (c.u("q")?, c.u("p")?, c.u("L")?, c.u("n")?, c.u64("seed")?);
                if q == 0 || p == 0 || l <= q.max(p) || n < 2 {
                    return Err(bad("need q, p >= 1, L > max(q, p) and n >= 2"));
                }
                // one sequence (z, u, omega, eps, x, y) and 2SLS's and OLS's copies of Z, X,
                // X_hat and their transposes
                let (q8, p8, l8) = (q as u64, p as u64, l as u64);
                c.memory(
                    sum(&[
                        product(&[8, l8, 3 * q8 + 6 * p8 + 3]),
                        product(&[3 * 8, q8 + p8, q8 + p8]),
                    ]),
                    "--L x (--q + --p), (--q + --p) squared",
                )?;
                let (mut s, mut ss) = ([0.0; 2], [0.0; 2]);
                for i in 0..n {
                    let mut r = crate::rng::stream(seed, crate::rng::Domain::Eval, l as u64, i as u64);
                    let sq = multilayer::iv_sequence(&mut r, q, p, l);
                    let (b2, th) = multilayer::two_sls(&sq.z, &sq.x, &sq.y, q, p)?;
                    let xh: Vec<f64> = (0..p).map(|j| (0..q).map(|k| th[k * p + j] * sq.zq[k]).sum()).collect();
                    let bo = multilayer::ols(&sq.x, &sq.y, p)?;
                    let preds = [b2.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>(), bo.iter().zip(&sq.xq).map(|(a, b)| a * b).sum::<f64>()];
                    for k in 0..2 {
                        let e = (preds[k] - sq.yq) * (preds[k] - sq.yq);
                        s[k] += e;
                        ss[k] += e * e;
                    }
                }
                let nf = n as f64;
                let m: Vec<f64> = s.iter().map(|v| v / nf).collect();
                let se: Vec<f64> = ss.iter().zip(&m).map(|(v, m)| libm::sqrt((v / nf - m * m).max(0.0) / (nf - 1.0))).collect();
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn eval(name: &str, kv: &[(&str, &str)]) -> Result<Out> {
        let args: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(evaluate(name, &args)?.0)
    }

    fn num(o: &Out) -> f64 {
        o.value.as_f64().unwrap()
    }

    #[test]
    fn registry_is_consistent() {
        let reg = registry();
        let mut names: Vec<&str> = reg.iter().map(|q| q.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), reg.len(), "duplicate quantity names");
        for q in &reg {
            let mut f: Vec<&str> = q.params.iter().map(|p| p.0).collect();
            f.sort();
            f.dedup();
            assert_eq!(f.len(), q.params.len(), "{}: duplicate flags", q.name);
        }
        for n in [
            "eta-star",
            "mu-gamma",
            "gd-risk",
            "approx-loss",
            "plateaus",
            "he2025-flow",
            "optimal-temperature",
        ] {
            assert!(names.contains(&n), "{n} missing");
        }
    }

    #[test]
    fn reference_numbers_through_the_cli() {
        let he = [("d", "5"), ("L", "40"), ("sigma2", "0.1")];
        assert!((num(&eval("eta-star", &he).unwrap()) - 0.879121).abs() < 1e-6);
        let mut kv = he.to_vec();
        kv.push(("gamma", "0.1267"));
        assert!((num(&eval("mu-gamma", &kv).unwrap()) - 3.46885).abs() < 1e-5);
        let o = eval("gd-risk", &[("variant", "debiased")]).unwrap();
        assert!((num(&o) - 0.242857).abs() < 1e-6);
        let o = eval(
            "approx-loss",
            &[("omega", "0.1267,-0.1267"), ("mu", "3.5006,-3.5006")],
        )
        .unwrap();
        assert!((num(&o) - 0.221067).abs() < 1e-6);
        let o = eval("plateaus", &[("eigs", "0.4,0.3,0.2,0.1"), ("N", "31")]).unwrap();
        let v: Vec<f64> = o.value.as_f64s().unwrap();
        for (a, b) in v.iter().zip([1.0, 0.640580, 0.377372, 0.209805, 0.135995]) {
            assert!((a - b).abs() < 1e-6);
        }
        for (d, peak) in [("5", 0.576), ("10", 0.455)] {
            let o = eval("he2025-flow", &[("d", d), ("t-end", "50")]).unwrap();
            assert!((num(&o) - peak).abs() < 0.005, "d = {d}: {}", num(&o));
            assert!(o.traj.as_ref().unwrap().rows.len() > 400);
        }
        let o = eval(
            "optimal-temperature",
            &[("test-sigma-x", "2"), ("form", "paper")],
        )
        .unwrap();
        assert!((num(&o) - 2.99980).abs() < 1e-5);
        assert!(eval("eta-star", &[("dd", "3")]).is_err());
        assert!(eval("mu-gamma", &[]).is_err());
        assert!(eval("nope", &[]).is_err());
        assert!(eval("gd-risk", &[("variant", "other")]).is_err());
        // ranges: issue 15's silently accepted cases, and sizes that would not fit in memory
        assert!(eval("gd-risk-asymptotic", &[("xi", "-1")]).is_err());
        assert!(eval("sigma-tilde", &[("rho", "5")]).is_err());
        assert!(eval("sigma-tilde", &[("d", "100000")]).is_err());
        assert!(eval("eta-star", &[("sigma2", "nan")]).is_err());
        assert!(eval("eta-star", &[("d", "5"), ("d", "6")]).is_err());
    }

    /// The audit's cases (each aborted on an allocation of hundreds of GB or ran without bound)
    /// and their neighbours: refused before any work with a size error naming the parameters.
    #[test]
    fn sizes_beyond_the_budget_are_refused_before_any_work() {
        let long = vec!["1"; 1025].join(",");
        let eigs = vec!["1"; 4097].join(",");
        // (quantity, its arguments, the words the error must name)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                "bayes-risk-mc",
                &[("n", "2"), ("d", "4096"), ("L", "10000000")],
                "L x d",
            ),
            (
                "iv-risk",
                &[("n", "2"), ("q", "4096"), ("p", "4096"), ("L", "10000000")],
                "--L x (--q + --p)",
            ),
            (
                "alg1-risk",
                &[("n", "2"), ("d", "4096"), ("L", "10000000")],
                "--L x --d",
            ),
            ("alg1-risk", &[("steps", "1000000000")], "--steps"),
            (
                "gd-steps-risk",
                &[("n", "2"), ("d", "4096"), ("L", "10000000")],
                "--L x --d",
            ),
            (
                "regression-baselines",
                &[("n", "2"), ("d", "4096"), ("L", "10000000")],
                "--L x --d",
            ),
            (
                "temperature-mc",
                &[("n", "2"), ("d", "200"), ("l", "10000000")],
                "l x d",
            ),
            (
                "optimal-temperature",
                &[
                    ("form", "paper"),
                    ("d", "100"),
                    ("l", "10000000"),
                    ("pretrain-m", "2"),
                ],
                "l x d",
            ),
            (
                "he2025-gd",
                &[
                    ("omega", "1"),
                    ("mu", "1"),
                    ("steps", "1000000000"),
                    ("every", "1"),
                ],
                "--steps",
            ),
            (
                "white-loss",
                &[("t", "1e6"), ("sample-dt", "1e-6")],
                "--t / --sample-dt",
            ),
            (
                "white-loss",
                &[("t", "1e300"), ("sample-dt", "1e-300")],
                "--t / --sample-dt",
            ),
            (
                "scalar-ode",
                &[("eigs", "1"), ("t", "1e300"), ("sample-dt", "1e-300")],
                "--t / --sample-dt",
            ),
            (
                "linattn-flow",
                &[("eigs", "1,0.5"), ("t-end", "1e9"), ("every", "1")],
                "--t-end / --dt",
            ),
            (
                "linattn-flow",
                &[
                    ("eigs", "1,0.5"),
                    ("t-end", "1e6"),
                    ("dt", "0.1"),
                    ("every", "1"),
                    ("H", "1024"),
                ],
                "--H",
            ),
            ("he2025-flow", &[("t-end", "1e308")], "--t-end / --dt"),
            ("he2025-flow", &[("dt", "1e-300")], "--t-end / --dt"),
            (
                "he2025-flow",
                &[("t-end", "1e308"), ("adaptive", "true")],
                "--t-end / --sample-dt",
            ),
            ("mu-star", &[("omega", &long)], "--omega"),
            ("plateaus", &[("eigs", &eigs)], "--eigs"),
        ];
        for (name, kv, what) in cases {
            match eval(name, kv) {
                Err(Error::TooLarge(m)) => {
                    assert!(m.contains(what), "{name}: {m:?} should name {what:?}")
                }
                other => panic!(
                    "{name} {kv:?}: expected a size error, got {:?}",
                    other.map(|o| o.value)
                ),
            }
        }
        // at the limit: 10^7 rows are fine, as is a flow on the adaptive path's step budget
        let o = eval("white-loss", &[("t", "1"), ("sample-dt", "1e-5")]).unwrap();
        assert_eq!(o.traj.unwrap().rows.len(), 100_001);
        assert!(eval(
            "he2025-flow",
            &[("t-end", "100"), ("dt", "1e-4"), ("sample-dt", "10")]
        )
        .is_ok());
    }
}
