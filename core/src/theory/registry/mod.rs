//! The theory registry: every closed form, dynamical system and Monte Carlo quantity of the four
//! papers, each declared **once** with its name, paper, description, typed parameters (name,
//! default, documentation, kind and range) and the function that computes it. `icl theory`, the C
//! and C++ APIs and Python are built from this table; no front end computes a quantity itself.
//!
//! Each paper registers its quantities in its own table, beside their helpers: [`he2025`],
//! [`zhang2025`], [`temperature`], [`multilayer`]; [`PAPERS`] lists the tables and [`registry`]
//! joins them. This file holds what they share: parameters and their kinds, values, outputs,
//! [`evaluate`].
//!
//! **Adding a quantity** is one `Q { .. }` entry in its paper's table; **adding a paper** is one
//! file of quantities and one row of [`PAPERS`]; **adding a parameter** is one
//! `P(name, default, doc)` in its list, with its kind in [`kind_of`] if the name is new. A
//! parameter's value is text (as on a command line) or a number; [`evaluate`] checks every value
//! against its kind and range before the quantity runs, so errors name the parameter.
use crate::budget;
use crate::config::{Config, Range, MAX_D, MAX_HEADS};
use crate::model::Model;
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
/// layer (`icl_core_run::theory::evaluate`) does and passes the run here ([`evaluate_with`]).
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
            for (k, v) in temperature::run_defaults(q.name, t, &vals)? {
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

/// A `&'static [P]` from a list of parameters.
macro_rules! params {
    ($($p:expr),* $(,)?) => {{
        const X: &[P] = &[$($p),*];
        X
    }};
}

// each paper's quantities, beside its helpers (after `params!`, which they use)
pub mod he2025;
pub mod multilayer;
pub mod temperature;
pub mod zhang2025;

/// A paper's table of quantities.
pub type Quantities = fn() -> Vec<Q>;

/// Each paper's table of quantities (`registry/<paper>.rs`), in the order `icl theory --list`
/// prints them. A new paper's table is one more row.
pub const PAPERS: &[(&str, Quantities)] = &[
    ("he2025", he2025::quantities),
    ("zhang2025", zhang2025::quantities),
    ("temperature", temperature::quantities),
    ("multilayer", multilayer::quantities),
];

/// Every quantity, paper by paper.
pub fn registry() -> Vec<Q> {
    PAPERS
        .iter()
        .flat_map(|(_, quantities)| quantities())
        .collect()
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

    /// Each paper's table holds that paper's quantities, and the registry is the tables in order.
    #[test]
    fn each_table_is_one_papers() {
        let mut all = Vec::new();
        for (paper, quantities) in PAPERS {
            let qs = quantities();
            assert!(!qs.is_empty(), "{paper}");
            for q in qs {
                assert_eq!(q.paper, *paper, "{}", q.name);
                all.push(q.name);
            }
        }
        let names: Vec<&str> = registry().iter().map(|q| q.name).collect();
        assert_eq!(names, all);
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
