//! The temperature paper's quantities (Lemma 4.1, Theorems 4.6-4.7): the optimal temperature and
//! the error of the linearised layer in the exact and the paper's form, and its Monte Carlo
//! ([`crate::theory::temperature`]); with `--run`, of a trained run's linearised layer.
use super::{bad, Ctx, Out, Trained, Value, P, Q};
use crate::budget::product;
use crate::theory::temperature;
use crate::{Error, Result};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

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
pub(super) fn run_defaults(
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

/// The quantities of the temperature paper.
pub fn quantities() -> Vec<Q> {
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
