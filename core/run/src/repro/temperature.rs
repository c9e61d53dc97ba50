//! The temperature paper (linearised-softmax attention under distribution shift): its figure
//! experiments ([`crate::experiments::temperature`]) and the claims measured on them.
//!
//! Nothing is trained: each figure is a computed experiment folder under `runs/`. A claim's
//! `measured` is icl's Monte Carlo of the layer (with its standard error) unless it says otherwise;
//! `exact` and `paper_form` carry the exact finite-size closed form and Theorem 4.6/4.7 of the same
//! quantity. The paper prints no numbers for these figures: `paper_value` is the paper's formula
//! evaluated at the figure's setting (the spec's §7.1 golden table, `icl theory --form paper`), or
//! the spec's derived value where the description says so. Where the Monte Carlo and the paper's
//! form disagree by more than the paper's large-d error, the note says why
//! (`docs/temperature-exact.md`: the paper's form is the leading order in d and l).
use super::{theory, ClaimDef, Measured, RunSpec, Scale};
use crate::error::Result;
use crate::eval::{eval_run, temper_from_text, EvalOptions};
use crate::experiments::{get, row_at, Row};
use crate::folder::RunDir;
use crate::plot::{curves_svg, Curve, Style};
use icl_core::theory::temperature as tp;

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A Monte Carlo claim: `mc ± se` against the paper's value with a relative tolerance, and the
/// exact form within 4 standard errors of the Monte Carlo (it is the same model's exact value).
#[allow(clippy::too_many_arguments)]
fn mc_claim(
    paper: f64,
    mc: f64,
    se: f64,
    exact: f64,
    paper_form: f64,
    rel_tol: f64,
    note: &str,
) -> Measured {
    let z = (mc - exact) / se;
    let ok_paper = (mc / paper - 1.0).abs() <= rel_tol;
    let ok_exact = z.abs() <= 4.0;
    let mut n = format!(
        "Monte Carlo/paper − 1 = {:+.2}%, exact/paper − 1 = {:+.2}%, (MC − exact)/SE = {z:+.2}",
        100.0 * (mc / paper - 1.0),
        100.0 * (exact / paper - 1.0)
    );
    if !note.is_empty() {
        n = format!("{note}; {n}");
    }
    Measured {
        paper_value: paper,
        measured: mc,
        stderr: Some(se),
        exact: Some(exact),
        paper_form: Some(paper_form),
        tolerance: format!(
            "within {}% of the paper's value, and the exact form within 4 SE",
            100.0 * rel_tol
        ),
        pass: ok_paper && ok_exact,
        note: n,
    }
}

fn at(r: &super::Runs, exp: &str, table: &str, k: &str, v: f64) -> Result<Row> {
    let s = r.experiment(exp)?;
    Ok(row_at(s.table(table)?, k, v)?.clone())
}

fn table(r: &super::Runs, exp: &str, table: &str) -> Result<Vec<Row>> {
    Ok(r.experiment(exp)?.table(table)?.to_vec())
}

/// The claim ids and runs of the temperature report.
pub(super) fn plan(scale: Scale) -> (Vec<RunSpec>, Vec<ClaimDef>) {
    let f1a = names(&["temperature-fig1a"]);
    let f1b = names(&["temperature-fig1b"]);
    let f1c = names(&["temperature-fig1a", "temperature-fig1c"]);
    let f2 = names(&["temperature-fig2"]);
    let f4 = names(&["temperature-fig4"]);
    let f7 = names(&["temperature-fig7"]);
    let all = names(crate::experiments::temperature::NAMES);
    let defs = vec![
        ClaimDef {
            id: "fig1a-tau-opt",
            figure: "Fig. 1a, Thm 4.7",
            description: "No shift, d = 50, l = 100: τ_opt = 2a/b = k(1 + (d + σ²)/l) = 1.49995 (eq. 15; spec §7.1). Measured: 2a/b of the Monte Carlo coefficients",
            runs: f1a.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig1a", "fig1a", "l", 100.0)?;
                Ok(mc_claim(1.49995, get(&x, "tau_opt_mc"), get(&x, "tau_opt_mc_se"), get(&x, "tau_opt_exact"), get(&x, "tau_opt_paper"), 0.01, "spec §10 test 6 tolerance for τ* at d = 50"))
            }),
        },
        ClaimDef {
            id: "fig1a-gmin",
            figure: "Fig. 1a, Thm 4.6",
            description: "No shift, d = 50, l = 100: G_min = c − b²/(4a) = 16.6789 (spec §7.1)",
            runs: f1a.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig1a", "fig1a", "l", 100.0)?;
                Ok(mc_claim(16.6789, get(&x, "Gmin_mc"), get(&x, "Gmin_mc_se"), get(&x, "Gmin_exact"), get(&x, "Gmin_paper"), 0.05, "spec §10 test 6 tolerance (5% at d = 50); the paper's form is leading order and sits below the model's error"))
            }),
        },
        ClaimDef {
            id: "fig1a-g1",
            figure: "Fig. 1a, Thm 4.6",
            description: "No shift, d = 50, l = 100: G(1) = a − b + c = 25.0100 (spec §7.1)",
            runs: f1a.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig1a", "fig1a", "l", 100.0)?;
                Ok(mc_claim(25.01, get(&x, "G1_mc"), get(&x, "G1_mc_se"), get(&x, "G1_exact"), get(&x, "G1_paper"), 0.05, "spec §10 test 6 tolerance"))
            }),
        },
        ClaimDef {
            id: "fig1a-towards-bayes",
            figure: "Fig. 1a",
            description: "As l grows the model at τ_opt approaches the Bayes ridge: the gap G(τ_opt) − Bayes falls at every l ≥ d of the sweep (below d the ridge interpolates and its error peaks near l = d, spec §4) (measured: the Monte Carlo G(τ_opt) at the largest l; paper value: Thm 4.6's G_min there)",
            runs: f1a.clone(),
            measure: Box::new(|r| {
                let t: Vec<Row> = table(r, "temperature-fig1a", "fig1a")?
                    .into_iter()
                    .filter(|x| get(x, "l") >= crate::experiments::temperature::D as f64)
                    .collect();
                let gaps: Vec<f64> = t.iter().map(|x| get(x, "Gopt_mc") - get(x, "bayes_mc")).collect();
                let falling = gaps.len() >= 2 && gaps.windows(2).all(|w| w[1] < w[0]) && gaps.iter().all(|g| *g > 0.0);
                let last = t.last().cloned().unwrap_or_default();
                Ok(Measured {
                    paper_value: get(&last, "Gmin_paper"),
                    measured: get(&last, "Gopt_mc"),
                    stderr: Some(get(&last, "Gopt_mc_se")),
                    exact: Some(get(&last, "Gmin_exact")),
                    paper_form: Some(get(&last, "Gmin_paper")),
                    tolerance: "the gap falls with l at every l ≥ d and stays > 0".into(),
                    pass: falling,
                    note: format!(
                        "gaps {} at l = {}; at l = {} the model is {:.0}× the oracle Bayes ridge ({:.4}): the convergence is only as l/d → ∞ (spec §7.1; Corollary 4.4 is asymptotic)",
                        gaps.iter().map(|g| format!("{g:.3}")).collect::<Vec<_>>().join(", "),
                        t.iter().map(|x| format!("{}", get(x, "l"))).collect::<Vec<_>>().join(", "),
                        get(&last, "l"),
                        get(&last, "Gopt_mc") / get(&last, "bayes_mc"),
                        get(&last, "bayes_mc")
                    ),
                })
            }),
        },
        ClaimDef {
            id: "fig1b-tau-opt",
            figure: "Fig. 1b",
            description: "Covariance shift Σx = 2I, l = 100: τ_opt = 2.9998 (eq. 15; spec §7.1)",
            runs: f1b.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig1b", "fig1b", "l", 100.0)?;
                Ok(mc_claim(2.9998, get(&x, "tau_opt_mc"), get(&x, "tau_opt_mc_se"), get(&x, "tau_opt_exact"), get(&x, "tau_opt_paper"), 0.01, ""))
            }),
        },
        ClaimDef {
            id: "fig1b-gain",
            figure: "Fig. 1b",
            description: "Covariance shift Σx = 2I, l = 100: τ = 1 degrades and τ_opt restores: G(1)/G(τ_opt) = 299.95/33.3456 = 8.995 (spec §9)",
            runs: f1b.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig1b", "fig1b", "l", 100.0)?;
                let (g1, s1, go, so) = (get(&x, "G1_mc"), get(&x, "G1_mc_se"), get(&x, "Gopt_mc"), get(&x, "Gopt_mc_se"));
                let q = g1 / go;
                let se = q * ((s1 / g1).powi(2) + (so / go).powi(2)).sqrt();
                let ex = get(&x, "G1_exact") / get(&x, "Gmin_exact");
                let pf = get(&x, "G1_paper") / get(&x, "Gmin_paper");
                Ok(mc_claim(299.95 / 33.3456, q, se, ex, pf, 0.10, "the ratio carries both errors (G(1) −1.5%, G_min +2.9% in the spec's Monte Carlo), so 10%"))
            }),
        },
        ClaimDef {
            id: "fig1c-task-shift-fades",
            figure: "Fig. 1c",
            description: "Task shift Σw = 2I, μw = e₁: its cost at τ_opt, G_shift(τ_opt) − G_noshift(τ_opt), falls as l grows (measured at the largest l; paper value: Thm 4.6's difference there)",
            runs: f1c.clone(),
            measure: Box::new(|r| {
                let a = table(r, "temperature-fig1a", "fig1a")?;
                let c = table(r, "temperature-fig1c", "fig1c")?;
                let diff: Vec<(f64, f64, f64, f64)> = a.iter().zip(&c).map(|(x, y)| {
                    (get(y, "Gopt_mc") - get(x, "Gopt_mc"), (get(y, "Gopt_mc_se").powi(2) + get(x, "Gopt_mc_se").powi(2)).sqrt(),
                     get(y, "Gmin_exact") - get(x, "Gmin_exact"), get(y, "Gmin_paper") - get(x, "Gmin_paper"))
                }).collect();
                let falling = diff.windows(2).all(|w| w[1].0 < w[0].0);
                let last = diff.last().copied().unwrap_or((f64::NAN, f64::NAN, f64::NAN, f64::NAN));
                Ok(Measured {
                    paper_value: last.3,
                    measured: last.0,
                    stderr: Some(last.1),
                    exact: Some(last.2),
                    paper_form: Some(last.3),
                    tolerance: "falls with l at every step".into(),
                    pass: falling,
                    note: format!("cost at l = {}: {}", a.iter().map(|x| format!("{}", get(x, "l"))).collect::<Vec<_>>().join(", "), diff.iter().map(|d| format!("{:.3}", d.0)).collect::<Vec<_>>().join(", ")),
                })
            }),
        },
        ClaimDef {
            id: "fig2b-g1",
            figure: "Fig. 2b",
            description: "Noise shift σ_test = 3 at l = d = 50: G(1) = 67.9764 (≈ 50 + 2σ²; spec §7.1)",
            runs: f2.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig2", "fig2b", "sigma_test", 3.0)?;
                Ok(mc_claim(67.9764, get(&x, "G1_mc"), get(&x, "G1_mc_se"), get(&x, "G1_exact"), get(&x, "G1_paper"), 0.05, ""))
            }),
        },
        ClaimDef {
            id: "fig2b-gmin",
            figure: "Fig. 2b",
            description: "Noise shift σ_test = 3 at l = d = 50: G_min = 36.0642 (spec §7.1)",
            runs: f2.clone(),
            measure: Box::new(|r| {
                let x = at(r, "temperature-fig2", "fig2b", "sigma_test", 3.0)?;
                Ok(mc_claim(36.0642, get(&x, "Gmin_mc"), get(&x, "Gmin_mc_se"), get(&x, "Gmin_exact"), get(&x, "Gmin_paper"), 0.05, "spec §10 test 6 at l = d: +4%"))
            }),
        },
        ClaimDef {
            id: "fig2b-tau-closes-gap",
            figure: "Fig. 2b",
            description: "At l = d, τ_opt lowers the error at every test noise: the smallest relative gain (G(1) − G(τ_opt))/G(1) over σ_test (Monte Carlo, same prompts; paper value: Thm 4.6's)",
            runs: f2.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig2", "fig2b")?;
                let gain = |x: &Row, a: &str, b: &str| (get(x, a) - get(x, b)) / get(x, a);
                let mc = t.iter().map(|x| gain(x, "G1_mc", "Gopt_mc")).fold(f64::INFINITY, f64::min);
                let pf = t.iter().map(|x| gain(x, "G1_paper", "Gmin_paper")).fold(f64::INFINITY, f64::min);
                let ex = t.iter().map(|x| gain(x, "G1_exact", "Gmin_exact")).fold(f64::INFINITY, f64::min);
                let last = t.last().cloned().unwrap_or_default();
                Ok(Measured {
                    paper_value: pf,
                    measured: mc,
                    stderr: None,
                    exact: Some(ex),
                    paper_form: Some(pf),
                    tolerance: "> 0.3 at every σ_test".into(),
                    pass: mc > 0.3,
                    note: format!(
                        "which Bayes (spec §9): at σ_test = {} the oracle ridge (test σ) has {:.3} ± {:.3}, the ridge with the train σ and prior {:.3} ± {:.3}, the model {:.3} at τ = 1 and {:.3} at τ_opt; the absolute gap to the oracle does not grow with σ",
                        get(&last, "sigma_test"), get(&last, "bayes_mc"), get(&last, "bayes_mc_se"), get(&last, "ridge_train_mc"), get(&last, "ridge_train_mc_se"), get(&last, "G1_mc"), get(&last, "Gopt_mc")
                    ),
                })
            }),
        },
        ClaimDef {
            id: "fig2c-tau-rises",
            figure: "Fig. 2c",
            description: "τ_opt rises with σ_test; at l = d = 50, σ_test = 3: τ_opt = k(2 + σ²/50) = 2.17956 (spec §7.1)",
            runs: f2.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig2", "fig2b")?;
                let rising = t.windows(2).all(|w| get(&w[1], "tau_opt_exact") > get(&w[0], "tau_opt_exact"));
                let x = at(r, "temperature-fig2", "fig2b", "sigma_test", 3.0)?;
                let mut m = mc_claim(2.17956, get(&x, "tau_opt_mc"), get(&x, "tau_opt_mc_se"), get(&x, "tau_opt_exact"), get(&x, "tau_opt_paper"), 0.01, "");
                m.pass &= rising;
                m.tolerance.push_str("; the exact τ_opt rises with σ_test");
                Ok(m)
            }),
        },
        ClaimDef {
            id: "fig4-linear-floor",
            figure: "Fig. 4",
            description: "Input-mean shift μx = 2e₁: linear attention (eq. 6) does not recover; its error plateaus near |μ|⁴(1 + |μ|²) + σ² = 80.01 (spec §2.6, derived). Measured at the largest l",
            runs: f4.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig4", "fig4")?;
                let last = t.last().cloned().unwrap_or_default();
                let (m, se) = (get(&last, "linear_mc"), get(&last, "linear_mc_se"));
                let ok = (m / 80.01 - 1.0).abs() <= 0.1;
                Ok(Measured {
                    paper_value: 80.01,
                    measured: m,
                    stderr: Some(se),
                    exact: None,
                    paper_form: None,
                    tolerance: "within 10% of the floor".into(),
                    pass: ok,
                    note: format!("l = {}; the linearised layer there: {:.3} at τ = 1", get(&last, "l"), get(&last, "G1_mc")),
                })
            }),
        },
        ClaimDef {
            id: "fig4-linearised-robust",
            figure: "Fig. 4",
            description: "Input-mean shift μx = 2e₁: the linearised layer (centred statistics) keeps improving with l (its τ = 1 error falls at every l); measured at the largest l",
            runs: f4.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig4", "fig4")?;
                let falling = t.windows(2).all(|w| get(&w[1], "G1_mc") < get(&w[0], "G1_mc"));
                let first = t.first().cloned().unwrap_or_default();
                let last = t.last().cloned().unwrap_or_default();
                let mut m = mc_claim(get(&last, "G1_paper"), get(&last, "G1_mc"), get(&last, "G1_mc_se"), get(&last, "G1_exact"), get(&last, "G1_paper"), 0.10, &format!(
                    "the paper's form ignores the mean inside the centring (the query's zero label): at l = {} it is {:+.1}% off the exact form",
                    get(&first, "l"), 100.0 * (get(&first, "G1_paper") / get(&first, "G1_exact") - 1.0)));
                m.pass &= falling;
                m.tolerance.push_str("; falls with l");
                Ok(m)
            }),
        },
        ClaimDef {
            id: "fig7-alpha",
            figure: "Fig. 7",
            description: "τ_opt increases with α (test Σx = αI), l = 100; at α = 3: τ_opt = k(1.5α + 10⁻⁴) = 4.49965 (spec §7.3)",
            runs: f7.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig7", "fig7-alpha")?;
                let rising = t.windows(2).all(|w| get(&w[1], "tau_opt_mc") > get(&w[0], "tau_opt_mc"));
                let x = at(r, "temperature-fig7", "fig7-alpha", "alpha", 3.0)?;
                let mut m = mc_claim(4.49965, get(&x, "tau_opt_mc"), get(&x, "tau_opt_mc_se"), get(&x, "tau_opt_exact"), get(&x, "tau_opt_paper"), 0.01, "");
                m.pass &= rising;
                m.tolerance.push_str("; the Monte Carlo τ* rises with α");
                Ok(m)
            }),
        },
        ClaimDef {
            id: "fig7-beta-flat",
            figure: "Fig. 7",
            description: "τ_opt is nearly flat in β (test Σw = βI): k(1.5 + 10⁻⁴/β) changes by < 0.05% over the sweep (measured: the exact form's relative range; paper value: eq. 15's)",
            runs: f7.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig7", "fig7-beta")?;
                let range = |k: &str| {
                    let v: Vec<f64> = t.iter().map(|x| get(x, k)).collect();
                    let (lo, hi) = (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                    hi / lo - 1.0
                };
                let (ex, pf, mc) = (range("tau_opt_exact"), range("tau_opt_paper"), range("tau_opt_mc"));
                Ok(Measured {
                    paper_value: pf,
                    measured: ex,
                    stderr: None,
                    exact: Some(ex),
                    paper_form: Some(pf),
                    tolerance: "< 5e-4 in both closed forms".into(),
                    pass: ex < 5e-4 && pf < 5e-4,
                    note: format!("the Monte Carlo τ* varies by {:.2}% over the sweep (its standard error is ~{:.2}%)", 100.0 * mc, 100.0 * get(&t[0], "tau_opt_mc_se") / get(&t[0], "tau_opt_mc")),
                })
            }),
        },
        ClaimDef {
            id: "fig7-sigma",
            figure: "Fig. 7",
            description: "τ_opt increases with the test noise σ, l = 100; at σ = 3: k(1.5 + σ²/100) = 1.58984 (spec §7.1)",
            runs: f7.clone(),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig7", "fig7-sigma")?;
                let rising = t.windows(2).all(|w| get(&w[1], "tau_opt_exact") > get(&w[0], "tau_opt_exact"));
                let x = at(r, "temperature-fig7", "fig7-sigma", "sigma", 3.0)?;
                let mut m = mc_claim(1.58984, get(&x, "tau_opt_mc"), get(&x, "tau_opt_mc_se"), get(&x, "tau_opt_exact"), get(&x, "tau_opt_paper"), 0.01, "");
                m.pass &= rising;
                m.tolerance.push_str("; the exact τ_opt rises with σ");
                Ok(m)
            }),
        },
        ClaimDef {
            id: "fig7-heuristic",
            figure: "Fig. 7, App. J",
            description: "The moment-ratio heuristic (eq. 136, v22 restored) tracks τ_opt (eq. 15): the largest relative difference over the α, β and σ sweeps",
            runs: f7.clone(),
            measure: Box::new(|r| {
                let mut worst: f64 = 0.0;
                let mut worst_ex: f64 = 0.0;
                for k in ["fig7-alpha", "fig7-beta", "fig7-sigma"] {
                    for x in table(r, "temperature-fig7", k)? {
                        worst = worst.max((get(&x, "tau_heuristic") / get(&x, "tau_opt_paper") - 1.0).abs());
                        worst_ex = worst_ex.max((get(&x, "tau_heuristic") / get(&x, "tau_opt_exact") - 1.0).abs());
                    }
                }
                Ok(Measured {
                    paper_value: 0.0,
                    measured: worst,
                    stderr: None,
                    exact: Some(worst_ex),
                    paper_form: Some(worst),
                    tolerance: "< 1e-3 against eq. 15".into(),
                    pass: worst < 1e-3,
                    note: format!("against the exact form's τ_opt the heuristic is up to {:.2}% off", 100.0 * worst_ex),
                })
            }),
        },
        ClaimDef {
            id: "fig8-gain",
            figure: "Fig. 8",
            description: "G(τ_opt) ≤ G(1) at every point of the α, β, σ sweeps: the smallest G(1)/G(τ_opt) (Monte Carlo, same prompts for both τ)",
            runs: f7.clone(),
            measure: Box::new(|r| {
                let (mut mc, mut ex, mut pf) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
                for k in ["fig7-alpha", "fig7-beta", "fig7-sigma"] {
                    for x in table(r, "temperature-fig7", k)? {
                        mc = mc.min(get(&x, "G1_mc") / get(&x, "Gmin_mc"));
                        ex = ex.min(get(&x, "G1_exact") / get(&x, "Gmin_exact"));
                        pf = pf.min(get(&x, "G1_paper") / get(&x, "Gmin_paper"));
                    }
                }
                Ok(Measured {
                    paper_value: pf,
                    measured: mc,
                    stderr: None,
                    exact: Some(ex),
                    paper_form: Some(pf),
                    tolerance: ">= 1".into(),
                    pass: mc >= 1.0 && ex >= 1.0,
                    note: String::new(),
                })
            }),
        },
        ClaimDef {
            id: "sec44-rescaling",
            figure: "§4.4",
            description: "σ = σ_tr = 0, Σx^test = cI (c = 3): τ_opt = c \"fully counteracts\"; exactly τ_opt(c)/τ_opt(1) = c (the paper's τ_opt = c holds only as l/d → ∞: here τ_opt(1) = 1 + d/l). Measured: the exact form's ratio at d = 50, l = 100",
            runs: vec![],
            measure: Box::new(|_| {
                let f = |form: &str, c: &str| theory("optimal-temperature", &[("form", form), ("train-sigma", "0"), ("test-sigma", "0"), ("test-sigma-x", c)]);
                let (e3, e1, p3, p1) = (f("exact", "3")?, f("exact", "1")?, f("paper", "3")?, f("paper", "1")?);
                Ok(Measured {
                    paper_value: 3.0,
                    measured: e3 / e1,
                    stderr: None,
                    exact: Some(e3 / e1),
                    paper_form: Some(p3 / p1),
                    tolerance: "within 1e-9 of 3".into(),
                    pass: (e3 / e1 - 3.0).abs() < 1e-9 && (p3 / p1 - 3.0).abs() < 1e-9,
                    note: format!("τ_opt(3) = {e3:.5} (exact), {p3:.5} (paper form), not 3"),
                })
            }),
        },
        ClaimDef {
            id: "lemma41-finite-m",
            figure: "Lemma 4.1",
            description: "m = 5000 sampled pretraining prompts (the paper's) give M11 within ~3% (relative Frobenius) of the population d I/(1 + σ²/l) (d = 50, l = 100; spec §10 test 4: a (l−1)/l centring bias of 1% and ~1% sampling noise); the figures use the population form",
            runs: vec![],
            measure: Box::new(|_| {
                let (d, l) = (50usize, 100usize);
                let train = tp::Gaussian::isotropic(d, 1.0, 1.0, 0.01);
                let xx = tp::pretraining_cov(&train, l, 5000, 1)?;
                let pf = tp::lemma41_with_cov(&train, l, &xx)?;
                let pop = d as f64 * tp::k_iso(l, 0.01);
                let num: f64 = (0..d * d).map(|k| (pf.m11[k] - if k / d == k % d { pop } else { 0.0 }).powi(2)).sum::<f64>().sqrt();
                let rel = num / (pop * (d as f64).sqrt());
                Ok(Measured {
                    paper_value: 0.03,
                    measured: rel,
                    stderr: None,
                    exact: None,
                    paper_form: None,
                    tolerance: "< 0.03".into(),
                    pass: rel < 0.03,
                    note: String::new(),
                })
            }),
        },
        ClaimDef {
            id: "fig5-shapes",
            figure: "Fig. 5, App. D",
            description: "Softmax and its linearisation behave alike except that lin_sm goes negative at small τ; both concentrate at 1/l as τ grows, x/(lτ) does not (it concentrates at 0). Measured: the smallest lin_sm weight at τ = 0.1 (no number in the paper)",
            runs: names(&["temperature-fig5"]),
            measure: Box::new(|r| {
                let t = table(r, "temperature-fig5", "fig5")?;
                let (first, last) = (t.first().cloned().unwrap_or_default(), t.last().cloned().unwrap_or_default());
                let l_inv = get(&last, "one_over_l");
                let neg = get(&first, "lin_sm_min") < 0.0 && get(&first, "softmax_min") >= 0.0;
                let conc = get(&last, "softmax_sd") < 0.2 * l_inv && get(&last, "lin_sm_sd") < 0.2 * l_inv
                    && (get(&last, "softmax_mean") - l_inv).abs() < 1e-12 && (get(&last, "lin_sm_mean") - l_inv).abs() < 1e-12;
                let lin_off = (get(&last, "linear_mean") - l_inv).abs() > 0.5 * l_inv;
                let sd_rule = t.iter().all(|x| (get(x, "lin_sm_sd") / get(x, "sd_x_over_l_tau") - 1.0).abs() < 1e-12);
                Ok(Measured {
                    paper_value: f64::NAN,
                    measured: get(&first, "lin_sm_min"),
                    stderr: None,
                    exact: None,
                    paper_form: None,
                    tolerance: "< 0 at τ = 0.1 with softmax ≥ 0; at τ = 10 both within sd 0.2/l of 1/l, x/(lτ) off 1/l; sd(lin_sm(x/τ)) = sd(x)/(lτ)".into(),
                    pass: neg && conc && lin_off && sd_rule,
                    note: format!(
                        "at τ = 10: softmax sd {:.2e}, lin_sm sd {:.2e}, x/(lτ) mean {:.2e} (1/l = {l_inv})",
                        get(&last, "softmax_sd"), get(&last, "lin_sm_sd"), get(&last, "linear_mean")
                    ),
                })
            }),
        },
        ClaimDef {
            id: "sgd-pretraining",
            figure: "Lemma 4.1",
            description: "Pretraining measured: the layer's M11 and v21 fitted by SGD on eq. (2) prompts at τ = 1 (v22 = 1/d, m21 = 0 held; d = 4, l = 12, σ = 0.3; 6000 steps of 256 prompts, iterates averaged) against Lemma 4.1. Measured: relative Frobenius distance of the trained M11 to Lemma 4.1's (paper value 0: the paper takes Lemma 4.1 as the pretrained model); exact: the predicted distance 1 − 1/τ_opt (the loss minimiser is M11_Lemma/τ_opt, τ_opt of the exact form at the training distribution)",
            runs: vec![],
            measure: Box::new(|_| {
                use icl_core::theory::temperature::fit::{self, FitOptions};
                let (d, l) = (4usize, 12usize);
                let train = tp::Gaussian::isotropic(d, 1.0, 1.0, 0.09);
                let f = fit::fit(&train, l, FitOptions { steps: 6000, batch: 256, lr: 0.003, seed: 1 })?;
                let lemma = tp::lemma41(&train, l)?;
                let t = tp::exact::coefficients(&lemma, &train, l)?.tau_opt()?;
                let to_lemma = fit::rel_frobenius(&f.params.m11, &lemma.m11);
                let to_target = fit::rel_frobenius(&f.params.m11, &fit::scaled(&lemma.m11, t));
                Ok(Measured {
                    paper_value: 0.0,
                    measured: to_lemma,
                    stderr: None,
                    exact: Some(1.0 - 1.0 / t),
                    paper_form: None,
                    tolerance: "the trained M11 within 2% of M11_Lemma/τ_opt".into(),
                    pass: to_target < 0.02,
                    note: format!(
                        "SGD converges to the loss minimiser, not to Lemma 4.1: |M − M_Lemma/τ_opt|/|M_Lemma/τ_opt| = {to_target:.4} with τ_opt = {t:.4}; Lemma 4.1 imitates Bayes ridge to leading order, and the exact error prefers the smaller attention scale 1/τ_opt (so a trained layer's τ_opt is 1)"
                    ),
                })
            }),
        },
        ClaimDef {
            id: "exact-vs-mc",
            figure: "all",
            description: "The exact form is the layer's error: the largest |Monte Carlo − closed form|/SE of G(1) over every point of every figure (measured: the exact form's; paper value: Thm 4.6's, leading order in d and l)",
            runs: all,
            measure: Box::new(|r| {
                let (mut ze, mut zp, mut npts) = (0.0f64, 0.0f64, 0usize);
                for e in crate::experiments::temperature::NAMES {
                    let s = r.experiment(e)?;
                    for rows in s.tables.values() {
                        for x in rows.iter().filter(|x| get(x, "G1_mc").is_finite()) {
                            let (m, se) = (get(x, "G1_mc"), get(x, "G1_mc_se"));
                            ze = ze.max(((m - get(x, "G1_exact")) / se).abs());
                            zp = zp.max(((m - get(x, "G1_paper")) / se).abs());
                            npts += 1;
                        }
                    }
                }
                Ok(Measured {
                    paper_value: zp,
                    measured: ze,
                    stderr: None,
                    exact: Some(ze),
                    paper_form: Some(zp),
                    tolerance: "< 4.5 (the largest of ~N(0,1) z-scores over all points)".into(),
                    pass: ze < 4.5,
                    note: format!("{npts} points"),
                })
            }),
        },
    ];
    let (mut specs, mut defs) = (Vec::new(), defs);
    if scale == Scale::Paper {
        fig6_plan(&mut specs, &mut defs);
    }
    (specs, defs)
}

/// Fig. 6 (paper scale only), asked of icl's own multi-layer softmax transformer: the paper's
/// GPT-2 checkpoint of Garg et al. cannot be downloaded here, and the spec's fallback is a small
/// model trained on eq. (2) with d = 20, l = 40 (preset `temperature-fig6`: 2-layer looped, 2
/// heads, Σx = I, σ² = 0.01, batch 64, 40k steps).
const FIG6_RUN: &str = "fig6-transformer";
/// Test context lengths of Fig. 6.
const FIG6_LENGTHS: [usize; 6] = [5, 10, 20, 40, 60, 80];
/// Sequences per length (evaluation streams, seed 0).
const FIG6_SAMPLES: usize = 4000;

/// The Fig. 6 measurements: per length `(risk, stderr)` without the shift at τ = 1, under
/// Σx = 3I at τ = 1 and at the held-out τ (with that τ), and ridge under the shift.
struct Fig6 {
    clean: Vec<(f64, f64)>,
    tau1: Vec<(f64, f64)>,
    opt: Vec<(f64, f64, f64)>,
    ridge: Vec<(f64, f64)>,
}

impl Fig6 {
    /// Evaluate the run and write `fig6.csv` and `fig6.svg` into its folder (so the report
    /// carries the figure).
    fn measure(r: &super::Runs) -> Result<Fig6> {
        let dir = RunDir::new(r.path(FIG6_RUN));
        let ev = |tau: &str, shift: &[&str]| -> Result<crate::summary::EvalRows> {
            eval_run(
                &dir,
                &EvalOptions {
                    lengths: FIG6_LENGTHS.to_vec(),
                    samples: FIG6_SAMPLES,
                    seed: 0,
                    engine: None,
                    multilayer: Default::default(),
                    temper: temper_from_text(Some(tau), shift, None)?,
                },
            )
        };
        let clean = ev("1", &[])?;
        let shifted = ev("1,opt", &["x_cov=3"])?;
        let pick = |rows: &crate::summary::EvalRows, est: &str, opt: bool, l: usize| {
            rows.rows
                .iter()
                .find(|x| x.estimator == est && x.len == l && x.tau_opt == opt)
                .map_or((f64::NAN, f64::NAN, f64::NAN), |x| {
                    (x.risk, x.stderr, x.tau.unwrap_or(f64::NAN))
                })
        };
        let two = |x: (f64, f64, f64)| (x.0, x.1);
        let f = Fig6 {
            clean: FIG6_LENGTHS
                .iter()
                .map(|&l| two(pick(&clean, "model", false, l)))
                .collect(),
            tau1: FIG6_LENGTHS
                .iter()
                .map(|&l| two(pick(&shifted, "model", false, l)))
                .collect(),
            opt: FIG6_LENGTHS
                .iter()
                .map(|&l| pick(&shifted, "model", true, l))
                .collect(),
            ridge: FIG6_LENGTHS
                .iter()
                .map(|&l| two(pick(&shifted, "ridge", false, l)))
                .collect(),
        };
        f.write(&r.path(FIG6_RUN))?;
        Ok(f)
    }

    fn write(&self, dir: &std::path::Path) -> Result<()> {
        let mut csv = String::from(
            "l,clean_tau1,clean_tau1_se,shift_tau1,shift_tau1_se,shift_opt,shift_opt_se,tau_opt,ridge_shift,ridge_shift_se\n",
        );
        for (i, l) in FIG6_LENGTHS.iter().enumerate() {
            let (c, t, o, g) = (self.clean[i], self.tau1[i], self.opt[i], self.ridge[i]);
            csv.push_str(&format!(
                "{l},{},{},{},{},{},{},{},{},{}\n",
                c.0, c.1, t.0, t.1, o.0, o.1, o.2, g.0, g.1
            ));
        }
        crate::folder::atomic_write(&dir.join("fig6.csv"), csv.as_bytes())?;
        let curve = |name: &str, v: Vec<(f64, f64)>| Curve {
            name: name.into(),
            points: FIG6_LENGTHS
                .iter()
                .zip(v)
                .map(|(&l, (y, se))| (l as f64, y, se))
                .collect(),
            style: Style::ErrorBars,
        };
        curves_svg(
            &dir.join("fig6.svg"),
            "Fig. 6 on icl's transformer (d = 20, trained at l = 40): Σx = I → 3I",
            "l (test context length)",
            "test error (MSE, noise-free target)",
            &[
                curve("no shift, τ = 1", self.clean.clone()),
                curve("Σx = 3I, τ = 1", self.tau1.clone()),
                curve(
                    "Σx = 3I, held-out best τ",
                    self.opt.iter().map(|x| (x.0, x.1)).collect(),
                ),
                curve("ridge, Σx = 3I", self.ridge.clone()),
            ],
            true,
            true,
        )
    }

    /// The largest rise from one length to the next, in units of the combined standard error.
    fn largest_rise(v: &[(f64, f64)]) -> (f64, usize) {
        let mut best = (f64::NEG_INFINITY, 0);
        for i in 1..v.len() {
            let z = (v[i].0 - v[i - 1].0) / (v[i].1 * v[i].1 + v[i - 1].1 * v[i - 1].1).sqrt();
            if z > best.0 {
                best = (z, i);
            }
        }
        best
    }
}

/// A measurement shared by the Fig. 6 claims (the run is evaluated once per report).
type Fig6Cell = std::rc::Rc<std::cell::OnceCell<Fig6>>;

fn with_fig6<T>(cell: &Fig6Cell, r: &super::Runs, f: impl FnOnce(&Fig6) -> T) -> Result<T> {
    if cell.get().is_none() {
        let v = Fig6::measure(r)?;
        let _ = cell.set(v);
    }
    Ok(f(cell.get().expect("set above")))
}

/// One Fig. 6 claim: `m` gives (measured, tolerance, pass, note) from the shared evaluation; the
/// paper prints no number for Fig. 6.
fn fig6_claim(
    cell: &Fig6Cell,
    id: &'static str,
    description: &'static str,
    m: fn(&Fig6) -> (f64, &'static str, bool, String),
) -> ClaimDef {
    let c = cell.clone();
    ClaimDef {
        id,
        figure: "Fig. 6 (icl's transformer for GPT-2)",
        description,
        runs: names(&[FIG6_RUN]),
        measure: Box::new(move |r| {
            with_fig6(&c, r, |f| {
                let (measured, tolerance, pass, note) = m(f);
                Measured {
                    paper_value: f64::NAN,
                    measured,
                    stderr: None,
                    exact: None,
                    paper_form: None,
                    tolerance: tolerance.into(),
                    pass,
                    note,
                }
            })
        }),
    }
}

/// `l: value` for every Fig. 6 length.
fn by_length(v: &[f64]) -> String {
    FIG6_LENGTHS
        .iter()
        .zip(v)
        .map(|(l, x)| format!("{l}: {x:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The largest rise of `v` over l and where, with the errors per length (the two monotonicity
/// claims).
fn rise(v: &[(f64, f64)], what: &str) -> (f64, String) {
    let (z, i) = Fig6::largest_rise(v);
    let note = format!(
        "largest change between l = {} and {}; {what} at l = {}",
        FIG6_LENGTHS[i - 1],
        FIG6_LENGTHS[i],
        by_length(&v.iter().map(|x| x.0).collect::<Vec<_>>())
    );
    (z, note)
}

fn fig6_plan(specs: &mut Vec<RunSpec>, defs: &mut Vec<ClaimDef>) {
    specs.push(super::spec(FIG6_RUN, "temperature-fig6", &[]));
    let cell: Fig6Cell = Default::default();
    defs.push(fig6_claim(
        &cell,
        "fig6-shift-hurts",
        "The covariance shift Σx = I → 3I degrades the trained transformer's in-context error at τ = 1 at every l (the paper: 'substantially'; no number). Measured: err(shift)/err(no shift) at the training length l = 40",
        |f| {
            let ratio: Vec<f64> = f.tau1.iter().zip(&f.clean).map(|(s, c)| s.0 / c.0).collect();
            (
                ratio[3],
                "the ratio ≥ 2 at every l",
                ratio.iter().all(|&x| x >= 2.0),
                format!("err(shift)/err(no shift) at l = {}", by_length(&ratio)),
            )
        },
    ));
    defs.push(fig6_claim(
        &cell,
        "fig6-tau-helps",
        "Under the shift, the best temperature (every layer's and head's logits divided by τ, chosen per l on held-out prompts from independent streams) improves the error at every l. Measured: err(τ = 1)/err(best τ) at l = 40; the note gives the chosen τ per l (the linearised theory's τ_opt tends to α = 3)",
        |f| {
            let ok = f.tau1.iter().zip(&f.opt).all(|(t, o)| o.0 + 2.0 * (t.1 * t.1 + o.1 * o.1).sqrt() < t.0);
            let ratio: Vec<f64> = f.tau1.iter().zip(&f.opt).map(|(t, o)| t.0 / o.0).collect();
            let taus: Vec<f64> = f.opt.iter().map(|o| o.2).collect();
            (
                ratio[3],
                "err(best τ) below err(τ = 1) by more than 2 SE at every l",
                ok,
                format!("err(τ = 1)/err(best τ) at l = {}; best τ at l = {}", by_length(&ratio), by_length(&taus)),
            )
        },
    ));
    defs.push(fig6_claim(
        &cell,
        "fig6-nonmonotone",
        "Under the shift the error at τ = 1 is non-monotone in l: it rises somewhere as l grows. Measured: the largest rise from one l to the next, in standard errors",
        |f| {
            let (z, note) = rise(&f.tau1, "err(shift, τ = 1)");
            (z, "a rise of more than 2 SE", z > 2.0, note)
        },
    ));
    defs.push(fig6_claim(
        &cell,
        "fig6-opt-monotone",
        "At the best τ per l the error under the shift falls with l (the optimal temperature removes the non-monotonicity). Measured: the largest rise from one l to the next, in standard errors",
        |f| {
            let v: Vec<(f64, f64)> = f.opt.iter().map(|o| (o.0, o.1)).collect();
            let (z, note) = rise(&v, "err(shift, best τ)");
            (z, "no rise of more than 2 SE", z <= 2.0, note)
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_rise_is_in_standard_errors() {
        let v = [(10.0, 1.0), (8.0, 1.0), (11.0, 0.0), (5.0, 2.0)];
        // steps: -2/sqrt(2), +3/1, -6/2
        let (z, i) = Fig6::largest_rise(&v);
        assert!((z - 3.0).abs() < 1e-12 && i == 2, "{z} {i}");
    }

    /// The Fig. 6 claims on a small trained transformer: they are at paper scale only, run on the
    /// run folder `fig6-transformer`, write fig6.csv/svg there, and their numbers are the eval
    /// rows of that run (no shift at tau = 1; x_cov = 3 at tau = 1 and at the held-out tau).
    #[test]
    fn fig6_claims_measure_the_run_and_write_the_figure() {
        let (smoke, _) = plan(Scale::Smoke);
        assert!(smoke.is_empty());
        let (specs, defs) = plan(Scale::Paper);
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].preset.as_deref(), Some("temperature-fig6"));
        icl_core::presets::preset("temperature-fig6").unwrap();
        let fig6: Vec<&ClaimDef> = defs.iter().filter(|d| d.id.starts_with("fig6-")).collect();
        assert_eq!(fig6.len(), 4);

        let out = std::env::temp_dir().join(format!("icl-fig6-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let mut cfg = icl_core::presets::preset("temperature-fig6").unwrap();
        for (k, v) in [
            ("task.d", "3"),
            ("task.L", "10"),
            ("train.batch", "16"),
            ("train.steps", "300"),
            ("train.log_every", "100"),
        ] {
            cfg.set(k, v).unwrap();
        }
        let run = out.join(FIG6_RUN);
        crate::train::train(&cfg, &run, &Default::default(), &mut |_, _, _| true).unwrap();
        let runs = super::super::Runs { dir: out.clone() };
        let m: Vec<Measured> = fig6.iter().map(|d| (d.measure)(&runs).unwrap()).collect();
        let csv = std::fs::read_to_string(run.join("fig6.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + FIG6_LENGTHS.len());
        assert!(std::fs::read_to_string(run.join("fig6.svg"))
            .unwrap()
            .contains("<svg"));

        // independently: the eval rows at l = 40
        let ev = |tau: &str, shift: &[&str]| {
            eval_run(
                &RunDir::new(&run),
                &EvalOptions {
                    lengths: vec![40],
                    samples: FIG6_SAMPLES,
                    seed: 0,
                    engine: None,
                    multilayer: Default::default(),
                    temper: temper_from_text(Some(tau), shift, None).unwrap(),
                },
            )
            .unwrap()
        };
        let model = |r: &crate::summary::EvalRows, opt: bool| {
            r.rows
                .iter()
                .find(|x| x.estimator == "model" && x.tau_opt == opt)
                .unwrap()
                .risk
        };
        let clean = model(&ev("1", &[]), false);
        let shifted = ev("1,opt", &["x_cov=3"]);
        let (t1, topt) = (model(&shifted, false), model(&shifted, true));
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(
            rel(m[0].measured, t1 / clean) < 1e-9,
            "{} vs {}",
            m[0].measured,
            t1 / clean
        );
        assert!(
            rel(m[1].measured, t1 / topt) < 1e-9,
            "{} vs {}",
            m[1].measured,
            t1 / topt
        );
        for x in &m[2..] {
            assert!(x.measured.is_finite());
        }
        // the two monotonicity claims are complementary tests of rises
        assert_eq!(m[3].pass, m[3].measured <= 2.0);
        let _ = std::fs::remove_dir_all(&out);
    }
}
