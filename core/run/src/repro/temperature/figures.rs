//! The temperature paper's figures (spec §9) as experiments: Figs. 1a, 1b, 1c, 2a–2c, 4, 7 and 8.
//!
//! Every point is the linearised-softmax layer with its Lemma 4.1 parameters (population form,
//! recomputed at each l, train: mu = 0, Sigma = I, sigma_tr = 0.1) on the test distribution:
//! * at tau = 1 and at tau_opt: the closed form in both forms (`exact`: the exact finite-size
//!   error, `docs/temperature-exact.md`; `paper`: Theorem 4.6/4.7) and the conditional Monte Carlo
//!   (spec §10) with its standard error, evaluated at the exact form's tau_opt;
//! * tau_opt in both forms, from the Monte Carlo's coefficients (2a/b with its standard error) and
//!   as the minimiser of the Monte Carlo curve on a grid of 4001 log-spaced points in [0.02, 50];
//! * the oracle Bayes ridge (test prior and noise, context centred by its own mean; spec §4) by
//!   Monte Carlo on the same prompts, and for Fig. 2b also the train-prior ridge (sigma_tr, N(0, I));
//! * for Fig. 4 linear attention (eq. 6) with the same parameters at tau = 1, by Monte Carlo, and
//!   its large-l floor `|mu_x|^4 (1 + |mu_x|^2) + sigma^2` (spec §2.6).
//!
//! Choices the paper leaves open (spec §11): d = 50; the shift sizes (Fig. 1b Sigma_x = 2I,
//! Fig. 1c Sigma_w = 2I with mu_w = e_1, Fig. 2a sigma_test = 1, Fig. 4 mu_x = 2e_1); the grids
//! below; population rather than m = 5000 sampled pretraining prompts (the sampled M11 is within
//! ~1 % of it, measured by `icl repro temperature`'s `lemma41-finite-m`); errors are raw MSE with
//! the query noise.
use crate::error::{Result, RunError};
use crate::plot::{curves_svg, Curve, Style};
use crate::repro::experiment::{get, write_csv, ExperimentSummary, Experiments, Row};
use crate::repro::Scale;
use icl_core::theory::temperature::mc::{self, Estimator};
use icl_core::theory::temperature::ridge::{self, Centring};
use icl_core::theory::temperature::{self as tp, exact, linear, Gaussian};
use std::collections::BTreeMap;
use std::path::Path;

/// The temperature paper's computed experiments (its row of [`crate::repro::PAPERS`]).
pub const EXPERIMENTS: Experiments = Experiments {
    names: NAMES,
    compute: run,
};

/// The temperature experiments, in the order they are computed.
pub const NAMES: &[&str] = &[
    "temperature-fig1a",
    "temperature-fig1b",
    "temperature-fig1c",
    "temperature-fig2",
    "temperature-fig4",
    "temperature-fig7",
    "temperature-fig5",
];

/// The dimension of every figure (the paper's).
pub const D: usize = 50;
/// The training noise standard deviation (the paper's).
pub const SIGMA_TR: f64 = 0.1;
const SEED: u64 = 2026;

/// Sizes and grids at a scale.
struct Sizes {
    n_mc: usize,
    n_ridge: usize,
    ls: Vec<usize>,
    sigmas: Vec<f64>,
    ls_fig4: Vec<usize>,
    n_fig4: usize,
    alphas: Vec<f64>,
    betas: Vec<f64>,
    sigmas7: Vec<f64>,
}

fn sizes(scale: Scale) -> Sizes {
    match scale {
        Scale::Smoke => Sizes {
            n_mc: 2000,
            n_ridge: 200,
            ls: vec![25, 50, 100, 200],
            sigmas: vec![0.1, 0.5, 1.0, 2.0, 3.0],
            ls_fig4: vec![100, 400, 1600],
            n_fig4: 400,
            alphas: vec![0.5, 1.0, 2.0, 3.0],
            betas: vec![0.25, 1.0, 4.0],
            sigmas7: vec![0.0, 1.0, 3.0],
        },
        Scale::Paper => Sizes {
            n_mc: 20_000,
            n_ridge: 2000,
            ls: vec![10, 20, 50, 100, 200, 500, 1000],
            sigmas: vec![0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0],
            ls_fig4: vec![25, 50, 100, 200, 400, 800, 1600],
            n_fig4: 4000,
            alphas: vec![0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0],
            betas: vec![0.25, 0.5, 1.0, 2.0, 4.0],
            sigmas7: vec![0.0, 0.25, 0.5, 1.0, 2.0, 3.0],
        },
    }
}

fn put(r: &mut Row, k: &str, v: f64) {
    r.insert(k.into(), if v.is_finite() { Some(v) } else { None });
}

fn iso(alpha: f64, beta: f64, sigma: f64) -> Gaussian {
    Gaussian::isotropic(D, alpha, beta, sigma * sigma)
}

fn e1(c: f64) -> Vec<f64> {
    let mut v = vec![0.0; D];
    v[0] = c;
    v
}

/// The tau grid of the Monte Carlo minimiser: 4001 log-spaced points (0.2 % apart) in [0.02, 50].
fn grid_argmin(g: impl Fn(f64) -> f64) -> f64 {
    let (lo, hi, n) = (0.02f64.ln(), 50f64.ln(), 4001);
    (0..n)
        .map(|i| (lo + (hi - lo) * i as f64 / (n - 1) as f64).exp())
        .min_by(|a, b| g(*a).total_cmp(&g(*b)))
        .unwrap_or(f64::NAN)
}

/// What one experiment accumulates.
struct Ctx {
    sz: Sizes,
    prompts: u64,
}

impl Ctx {
    /// The layer at one (train, test, l): both closed forms, the Monte Carlo, tau_opt four ways,
    /// the heuristic, and the oracle Bayes ridge.
    fn point(&mut self, train: &Gaussian, test: &Gaussian, l: usize, n: usize) -> Result<Row> {
        let p = tp::lemma41(train, l)?;
        let ex = exact::coefficients(&p, test, l)?;
        let pa = tp::coefficients(&p, test, l)?;
        let m = mc::coefficients(&p, test, l, n, SEED, Estimator::Conditional)?;
        self.prompts += n as u64;
        let mut r = Row::new();
        put(&mut r, "l", l as f64);
        let t_ex = ex.tau_opt().unwrap_or(f64::NAN);
        put(&mut r, "tau_opt_exact", t_ex);
        put(&mut r, "tau_opt_paper", pa.tau_opt().unwrap_or(f64::NAN));
        let (t_mc, t_se) = m.tau_opt().unwrap_or((f64::NAN, f64::NAN));
        put(&mut r, "tau_opt_mc", t_mc);
        put(&mut r, "tau_opt_mc_se", t_se);
        put(&mut r, "tau_opt_grid", grid_argmin(|t| m.coeffs.g(t)));
        put(&mut r, "tau_heuristic", tp::tau_heuristic(&p, test, l)?);
        put(&mut r, "G1_exact", ex.g(1.0));
        put(&mut r, "G1_paper", pa.g(1.0));
        let (g1, g1se) = m.g(1.0);
        put(&mut r, "G1_mc", g1);
        put(&mut r, "G1_mc_se", g1se);
        put(&mut r, "Gmin_exact", ex.g_min().unwrap_or(f64::NAN));
        put(&mut r, "Gmin_paper", pa.g_min().unwrap_or(f64::NAN));
        let (go, gose) = if t_ex.is_finite() {
            m.g(t_ex)
        } else {
            (f64::NAN, f64::NAN)
        };
        put(&mut r, "Gopt_mc", go);
        put(&mut r, "Gopt_mc_se", gose);
        let (gm, gmse) = m.g_min().unwrap_or((f64::NAN, f64::NAN));
        put(&mut r, "Gmin_mc", gm);
        put(&mut r, "Gmin_mc_se", gmse);
        let nr = self.sz.n_ridge;
        let (b, bse) = ridge::error(test, test, l, Centring::Context, nr, SEED)?;
        self.prompts += nr as u64;
        put(&mut r, "bayes_mc", b);
        put(&mut r, "bayes_mc_se", bse);
        Ok(r)
    }
}

/// The columns every model row has, in CSV order.
const MODEL_COLS: &[&str] = &[
    "l",
    "G1_exact",
    "G1_paper",
    "G1_mc",
    "G1_mc_se",
    "Gmin_exact",
    "Gmin_paper",
    "Gopt_mc",
    "Gopt_mc_se",
    "Gmin_mc",
    "Gmin_mc_se",
    "bayes_mc",
    "bayes_mc_se",
    "tau_opt_exact",
    "tau_opt_paper",
    "tau_opt_mc",
    "tau_opt_mc_se",
    "tau_opt_grid",
    "tau_heuristic",
];

fn curve(rows: &[Row], x: &str, y: &str, se: Option<&str>, name: &str, style: Style) -> Curve {
    Curve {
        name: name.into(),
        points: rows
            .iter()
            .map(|r| (get(r, x), get(r, y), se.map(|s| get(r, s)).unwrap_or(0.0)))
            .collect(),
        style,
    }
}

/// The error curves of a figure: tau = 1 and tau_opt (exact and paper forms dashed, Monte Carlo
/// with error bars) and the oracle Bayes ridge.
fn error_curves(rows: &[Row], x: &str) -> Vec<Curve> {
    vec![
        curve(
            rows,
            x,
            "G1_exact",
            None,
            "τ = 1, exact form",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "G1_paper",
            None,
            "τ = 1, paper form (Thm 4.6)",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "G1_mc",
            Some("G1_mc_se"),
            "τ = 1, Monte Carlo",
            Style::ErrorBars,
        ),
        curve(
            rows,
            x,
            "Gmin_exact",
            None,
            "τ_opt, exact form",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "Gmin_paper",
            None,
            "τ_opt, paper form (Thm 4.7)",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "Gopt_mc",
            Some("Gopt_mc_se"),
            "τ_opt (exact), Monte Carlo",
            Style::ErrorBars,
        ),
        curve(
            rows,
            x,
            "bayes_mc",
            Some("bayes_mc_se"),
            "Bayes ridge (oracle), Monte Carlo",
            Style::ErrorBars,
        ),
    ]
}

fn tau_curves(rows: &[Row], x: &str) -> Vec<Curve> {
    vec![
        curve(
            rows,
            x,
            "tau_opt_exact",
            None,
            "τ_opt, exact form",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "tau_opt_paper",
            None,
            "τ_opt, paper form (eq. 15)",
            Style::Dashed,
        ),
        curve(
            rows,
            x,
            "tau_heuristic",
            None,
            "moment-ratio heuristic (eq. 136)",
            Style::Solid,
        ),
        curve(
            rows,
            x,
            "tau_opt_mc",
            Some("tau_opt_mc_se"),
            "Monte Carlo 2a/b",
            Style::ErrorBars,
        ),
        curve(
            rows,
            x,
            "tau_opt_grid",
            None,
            "Monte Carlo grid argmin",
            Style::Solid,
        ),
    ]
}

/// One experiment's output: tables, figures, settings.
struct Out {
    tables: BTreeMap<String, Vec<Row>>,
    setting: BTreeMap<String, String>,
    figure: &'static str,
    description: String,
}

fn setting(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn base_setting(sz: &Sizes, test: &str) -> Vec<(&'static str, String)> {
    vec![
        ("d", D.to_string()),
        (
            "train",
            format!("x ~ N(0, I), w ~ N(0, I), sigma_tr = {SIGMA_TR}"),
        ),
        ("test", test.to_string()),
        (
            "pretraining",
            "Lemma 4.1, population form, recomputed at each l".into(),
        ),
        (
            "monte_carlo",
            format!(
                "{} prompts per point (conditional estimator), seed {SEED}",
                sz.n_mc
            ),
        ),
        (
            "ridge",
            format!(
                "{} prompts per point, oracle prior, context centred",
                sz.n_ridge
            ),
        ),
    ]
}

/// An l-sweep figure.
fn l_sweep(
    ctx: &mut Ctx,
    dir: &Path,
    name: &str,
    title: &str,
    test: &Gaussian,
) -> Result<Vec<Row>> {
    let train = iso(1.0, 1.0, SIGMA_TR);
    let ls = ctx.sz.ls.clone();
    let n = ctx.sz.n_mc;
    let rows = ls
        .iter()
        .map(|&l| ctx.point(&train, test, l, n))
        .collect::<Result<Vec<_>>>()?;
    write_csv(&dir.join(format!("{name}.csv")), MODEL_COLS, &rows)?;
    curves_svg(
        &dir.join(format!("{name}.svg")),
        title,
        "l (tokens per prompt)",
        "test error (MSE)",
        &error_curves(&rows, "l"),
        true,
        true,
    )?;
    Ok(rows)
}

fn fig1(ctx: &mut Ctx, dir: &Path, which: &str) -> Result<Out> {
    let (test, what, title, figure) = match which {
        "a" => (
            iso(1.0, 1.0, SIGMA_TR),
            "no shift (the training distribution)",
            "Fig. 1a: no shift (d = 50)",
            "Fig. 1a",
        ),
        "b" => (
            iso(2.0, 1.0, SIGMA_TR),
            "Sigma_x = 2I (covariance shift)",
            "Fig. 1b: covariance shift Σx = 2I (d = 50)",
            "Fig. 1b",
        ),
        _ => (
            Gaussian {
                mu_w: e1(1.0),
                ..iso(1.0, 2.0, SIGMA_TR)
            },
            "Sigma_w = 2I, mu_w = e_1 (task shift)",
            "Fig. 1c: task shift Σw = 2I, μw = e₁ (d = 50)",
            "Fig. 1c",
        ),
    };
    let name = format!("fig1{which}");
    let rows = l_sweep(ctx, dir, &name, title, &test)?;
    Ok(Out {
        tables: [(name, rows)].into_iter().collect(),
        setting: setting(&base_setting(&ctx.sz, what)),
        figure,
        description: format!("{figure}: test error against l at tau = 1 and tau_opt, closed forms and Monte Carlo, oracle Bayes ridge; test {what}"),
    })
}

fn fig2(ctx: &mut Ctx, dir: &Path) -> Result<Out> {
    let a = l_sweep(
        ctx,
        dir,
        "fig2a",
        "Fig. 2a: test noise σ = 1 (σ_tr = 0.1, d = 50)",
        &iso(1.0, 1.0, 1.0),
    )?;
    let train = iso(1.0, 1.0, SIGMA_TR);
    let n = ctx.sz.n_mc;
    let mut b = Vec::new();
    for &s in &ctx.sz.sigmas.clone() {
        let test = iso(1.0, 1.0, s);
        let mut r = ctx.point(&train, &test, D, n)?;
        put(&mut r, "sigma_test", s);
        let (t, tse) = ridge::error(&train, &test, D, Centring::Context, ctx.sz.n_ridge, SEED)?;
        ctx.prompts += ctx.sz.n_ridge as u64;
        put(&mut r, "ridge_train_mc", t);
        put(&mut r, "ridge_train_mc_se", tse);
        b.push(r);
    }
    let mut cols = vec!["sigma_test"];
    cols.extend_from_slice(MODEL_COLS);
    cols.extend_from_slice(&["ridge_train_mc", "ridge_train_mc_se"]);
    write_csv(&dir.join("fig2b.csv"), &cols, &b)?;
    let mut cb = error_curves(&b, "sigma_test");
    cb.push(curve(
        &b,
        "sigma_test",
        "ridge_train_mc",
        Some("ridge_train_mc_se"),
        "ridge with the train prior (σ_tr), Monte Carlo",
        Style::ErrorBars,
    ));
    curves_svg(
        &dir.join("fig2b.svg"),
        "Fig. 2b: error against test noise at l = d = 50",
        "σ_test",
        "test error (MSE)",
        &cb,
        false,
        true,
    )?;
    curves_svg(
        &dir.join("fig2c.svg"),
        "Fig. 2c: τ_opt against test noise at l = d = 50",
        "σ_test",
        "τ_opt",
        &tau_curves(&b, "sigma_test"),
        false,
        false,
    )?;
    let mut st = base_setting(
        &ctx.sz,
        "Fig. 2a: sigma_test = 1 against l; Figs. 2b, 2c: sigma_test swept at l = d = 50",
    );
    st.push((
        "ridge_train",
        "Fig. 2b also: ridge with the train prior N(0, I) and sigma_tr = 0.1".into(),
    ));
    Ok(Out {
        tables: [("fig2a".to_string(), a), ("fig2b".to_string(), b)].into_iter().collect(),
        setting: setting(&st),
        figure: "Figs. 2a, 2b, 2c",
        description: "Fig. 2: a test-noise shift (sigma_tr = 0.1): (a) error against l at sigma_test = 1; (b) error against sigma_test at l = d, with the oracle and the train-prior ridge; (c) tau_opt against sigma_test (fig2b.csv's tau columns)".into(),
    })
}

fn fig4(ctx: &mut Ctx, dir: &Path) -> Result<Out> {
    let train = iso(1.0, 1.0, SIGMA_TR);
    let mu = e1(2.0);
    let test = Gaussian {
        mu_x: mu.clone(),
        ..train.clone()
    };
    let floor = linear::mean_shift_floor(&mu, SIGMA_TR * SIGMA_TR);
    let n = ctx.sz.n_fig4;
    let mut rows = Vec::new();
    for &l in &ctx.sz.ls_fig4.clone() {
        let mut r = ctx.point(&train, &test, l, n)?;
        let p = tp::lemma41(&train, l)?;
        let m = linear::coefficients(&p, &test, l, n, SEED, Estimator::Conditional)?;
        ctx.prompts += n as u64;
        let (g, se) = m.g(1.0);
        put(&mut r, "linear_mc", g);
        put(&mut r, "linear_mc_se", se);
        put(&mut r, "linear_floor", floor);
        rows.push(r);
    }
    let mut cols = MODEL_COLS.to_vec();
    cols.extend_from_slice(&["linear_mc", "linear_mc_se", "linear_floor"]);
    write_csv(&dir.join("fig4.csv"), &cols, &rows)?;
    let mut c = error_curves(&rows, "l");
    c.push(curve(
        &rows,
        "l",
        "linear_mc",
        Some("linear_mc_se"),
        "linear attention (eq. 6), τ = 1, Monte Carlo",
        Style::ErrorBars,
    ));
    c.push(curve(
        &rows,
        "l",
        "linear_floor",
        None,
        "linear attention floor |μ|⁴(1+|μ|²)+σ²",
        Style::Dashed,
    ));
    curves_svg(
        &dir.join("fig4.svg"),
        "Fig. 4: input-mean shift μx = 2e₁ (d = 50)",
        "l (tokens per prompt)",
        "test error (MSE)",
        &c,
        true,
        true,
    )?;
    let mut st = base_setting(
        &ctx.sz,
        "mu_x = 2 e_1 (input-mean shift), otherwise as train",
    );
    st.push((
        "monte_carlo",
        format!("{n} prompts per point (conditional estimator), seed {SEED}"),
    ));
    st.push((
        "linear",
        "linear attention (eq. 6) with the same Lemma 4.1 parameters at tau = 1".into(),
    ));
    Ok(Out {
        tables: [("fig4".to_string(), rows)].into_iter().collect(),
        setting: setting(&st),
        figure: "Fig. 4",
        description: "Fig. 4: input-mean shift mu_x = 2 e_1: the linearised layer (centred statistics) against linear attention (uncentred, eq. 6) and the oracle Bayes ridge, against l".into(),
    })
}

fn fig7(ctx: &mut Ctx, dir: &Path) -> Result<Out> {
    let l = 2 * D;
    let train = iso(1.0, 1.0, SIGMA_TR);
    let n = ctx.sz.n_mc;
    let mut tables = BTreeMap::new();
    let sweeps: [(&str, &str, Vec<f64>); 3] = [
        ("alpha", "α (test Σx = αI)", ctx.sz.alphas.clone()),
        ("beta", "β (test Σw = βI)", ctx.sz.betas.clone()),
        ("sigma", "σ (test noise)", ctx.sz.sigmas7.clone()),
    ];
    for (key, label, vals) in sweeps {
        let mut rows = Vec::new();
        for &v in &vals {
            let test = match key {
                "alpha" => iso(v, 1.0, SIGMA_TR),
                "beta" => iso(1.0, v, SIGMA_TR),
                _ => iso(1.0, 1.0, v),
            };
            let mut r = ctx.point(&train, &test, l, n)?;
            put(&mut r, key, v);
            rows.push(r);
        }
        let mut cols = vec![key];
        cols.extend_from_slice(MODEL_COLS);
        let name = format!("fig7-{key}");
        write_csv(&dir.join(format!("{name}.csv")), &cols, &rows)?;
        curves_svg(
            &dir.join(format!("fig7-{key}.svg")),
            &format!("Fig. 7: τ_opt against {label} (d = 50, l = 100)"),
            label,
            "τ_opt",
            &tau_curves(&rows, key),
            false,
            false,
        )?;
        curves_svg(
            &dir.join(format!("fig8-{key}.svg")),
            &format!("Fig. 8: test error against {label} (d = 50, l = 100)"),
            label,
            "test error (MSE)",
            &error_curves(&rows, key),
            false,
            true,
        )?;
        tables.insert(name, rows);
    }
    Ok(Out {
        tables,
        setting: setting(&base_setting(&ctx.sz, "Sigma_x = alpha I, Sigma_w = beta I, noise sigma; one varies, the others stay at (1, 1, 0.1); l = 2d = 100")),
        figure: "Figs. 7, 8",
        description: "Figs. 7 and 8: tau_opt (exact and paper forms, Monte Carlo, the moment-ratio heuristic) and the test errors at tau = 1 and tau_opt against alpha, beta and sigma at l = 100".into(),
    })
}

/// Fig. 5 (App. D): softmax(x/tau), its linearisation lin_sm(x/tau) = 1/l + (x - mean x)/(l tau)
/// and the plain scaling x/(l tau) of one vector x ~ N(0, I_l) (l = 100, from `stream(SEED, Eval,
/// 0, 0)`) at several tau: the sorted values (the figure; a histogram's information) and their
/// summary per tau.
fn fig5(dir: &Path) -> Result<Out> {
    use icl_core::rng::{self, Domain};
    let l = 100;
    let mut x = vec![0.0; l];
    rng::fill_normal(&mut rng::stream(SEED, Domain::Eval, 0, 0), &mut x);
    let lf = l as f64;
    let stats = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / v.len() as f64).sqrt();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (m, sd, lo, hi)
    };
    let (_, sd_x, _, _) = stats(&x);
    let mut rows = Vec::new();
    let mut values = Vec::new();
    let mut curves = Vec::new();
    for tau in [0.1, 0.3, 1.0, 3.0, 10.0] {
        let z: Vec<f64> = x.iter().map(|v| v / tau).collect();
        let sm = tp::softmax(&z);
        let ls = tp::linearized_softmax(&z);
        let lin: Vec<f64> = x.iter().map(|v| v / (lf * tau)).collect();
        let mut r = Row::new();
        put(&mut r, "tau", tau);
        for (name, v) in [("softmax", &sm), ("lin_sm", &ls), ("linear", &lin)] {
            let (m, sd, lo, hi) = stats(v);
            put(&mut r, &format!("{name}_mean"), m);
            put(&mut r, &format!("{name}_sd"), sd);
            put(&mut r, &format!("{name}_min"), lo);
            put(&mut r, &format!("{name}_max"), hi);
        }
        put(&mut r, "sd_x_over_l_tau", sd_x / (lf * tau));
        put(&mut r, "one_over_l", 1.0 / lf);
        rows.push(r);
        let sorted = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(|a, b| a.total_cmp(b));
            s
        };
        let (a, b, c) = (sorted(&sm), sorted(&ls), sorted(&lin));
        for i in 0..l {
            let mut v = Row::new();
            put(&mut v, "tau", tau);
            put(&mut v, "rank", i as f64);
            put(&mut v, "softmax", a[i]);
            put(&mut v, "lin_sm", b[i]);
            put(&mut v, "linear", c[i]);
            values.push(v);
        }
        if tau == 0.3 || tau == 3.0 {
            for (name, v, style) in [
                ("softmax", &a, Style::Solid),
                ("lin_sm", &b, Style::Dashed),
                ("x/(lτ)", &c, Style::Solid),
            ] {
                curves.push(Curve {
                    name: format!("{name}, τ = {tau}"),
                    points: v
                        .iter()
                        .enumerate()
                        .map(|(i, y)| (i as f64, *y, 0.0))
                        .collect(),
                    style,
                });
            }
        }
    }
    curves.push(Curve {
        name: "1/l".into(),
        points: vec![(0.0, 1.0 / lf, 0.0), ((l - 1) as f64, 1.0 / lf, 0.0)],
        style: Style::Dashed,
    });
    let cols = [
        "tau",
        "softmax_mean",
        "softmax_sd",
        "softmax_min",
        "softmax_max",
        "lin_sm_mean",
        "lin_sm_sd",
        "lin_sm_min",
        "lin_sm_max",
        "linear_mean",
        "linear_sd",
        "linear_min",
        "linear_max",
        "sd_x_over_l_tau",
        "one_over_l",
    ];
    write_csv(&dir.join("fig5.csv"), &cols, &rows)?;
    write_csv(
        &dir.join("fig5-values.csv"),
        &["tau", "rank", "softmax", "lin_sm", "linear"],
        &values,
    )?;
    curves_svg(
        &dir.join("fig5.svg"),
        "Fig. 5: sorted attention weights of one x ~ N(0, I), l = 100",
        "rank",
        "weight",
        &curves,
        false,
        false,
    )?;
    Ok(Out {
        tables: [("fig5".to_string(), rows), ("fig5-values".to_string(), values)].into_iter().collect(),
        setting: setting(&[("l", l.to_string()), ("x", format!("one draw of N(0, I_l), stream (seed {SEED}, eval, 0, 0)")), ("tau", "0.1, 0.3, 1, 3, 10".into())]),
        figure: "Fig. 5",
        description: "Fig. 5 (App. D): softmax(x/tau), the linearised softmax 1/l + (x - mean x)/(l tau) and x/(l tau) of one random x, sorted (the information of the paper's histograms), and their mean, sd, min and max per tau".into(),
    })
}

/// Compute experiment `name` into `dir`.
pub fn run(name: &str, scale: Scale, dir: &Path) -> Result<ExperimentSummary> {
    let t0 = std::time::Instant::now();
    let mut ctx = Ctx {
        sz: sizes(scale),
        prompts: 0,
    };
    let out = match name {
        "temperature-fig1a" => fig1(&mut ctx, dir, "a")?,
        "temperature-fig1b" => fig1(&mut ctx, dir, "b")?,
        "temperature-fig1c" => fig1(&mut ctx, dir, "c")?,
        "temperature-fig2" => fig2(&mut ctx, dir)?,
        "temperature-fig4" => fig4(&mut ctx, dir)?,
        "temperature-fig7" => fig7(&mut ctx, dir)?,
        "temperature-fig5" => {
            ctx.prompts = 1; // one random vector
            fig5(dir)?
        }
        _ => {
            return Err(RunError::UnknownName(format!(
                "experiment {name:?} ({})",
                NAMES.join(", ")
            )))
        }
    };
    Ok(ExperimentSummary {
        experiment: name.into(),
        figure: out.figure.into(),
        scale: scale.name().into(),
        description: out.description,
        setting: out.setting,
        tables: out.tables,
        prompts: ctx.prompts,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
