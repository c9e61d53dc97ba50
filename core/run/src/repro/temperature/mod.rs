//! The temperature paper (linearised-softmax attention under distribution shift): its figure
//! experiments ([`figures`]) and the claims measured on them.
//!
//! Nothing is trained at smoke scale: each figure is a computed experiment folder under `runs/`.
//! A claim's `measured` is icl's Monte Carlo of the layer (with its standard error) unless it says
//! otherwise; `exact` and `paper_form` carry the exact finite-size closed form and Theorem 4.6/4.7
//! of the same quantity. The paper prints no numbers for these figures: `paper_value` is the
//! paper's formula evaluated at the figure's setting (the spec's §7.1 golden table,
//! `icl theory --form paper`), or the spec's derived value where the description says so. Where
//! the Monte Carlo and the paper's form disagree by more than the paper's large-d error, the note
//! says why (`docs/temperature-exact.md`: the paper's form is the leading order in d and l).
//! Paper scale adds Fig. 6 on a trained transformer ([`fig6`]).
mod fig6;
pub(super) mod figures;

use super::claim::{claim, ClaimDef, Reading};
use super::experiment::{get, row_at, Row};
use super::{theory, RunSpec, Runs, Scale};
use crate::error::Result;
use icl_core::theory::temperature as tp;

/// The words of a Monte Carlo claim's tolerance (relative tolerance `rel` against the paper's
/// value), with `also` after them.
fn mc_tolerance(rel: f64, also: &str) -> String {
    format!(
        "within {}% of the paper's value, and the exact form within 4 SE{also}",
        100.0 * rel
    )
}

/// A Monte Carlo reading: `mc ± se` against the paper's value with a relative tolerance, and the
/// exact form within 4 standard errors of the Monte Carlo (it is the same model's exact value).
fn mc(paper: f64, mc: f64, se: f64, exact: f64, paper_form: f64, rel: f64, note: &str) -> Reading {
    let z = (mc - exact) / se;
    let ok_paper = (mc / paper - 1.0).abs() <= rel;
    let ok_exact = z.abs() <= 4.0;
    let mut n = format!(
        "Monte Carlo/paper − 1 = {:+.2}%, exact/paper − 1 = {:+.2}%, (MC − exact)/SE = {z:+.2}",
        100.0 * (mc / paper - 1.0),
        100.0 * (exact / paper - 1.0)
    );
    if !note.is_empty() {
        n = format!("{note}; {n}");
    }
    Reading::new(mc)
        .stderr(Some(se))
        .forms(Some(exact), Some(paper_form))
        .and(ok_paper && ok_exact)
        .note(n)
}

/// A Monte Carlo claim at one point of a figure: quantity `q` (`tau_opt`, `Gmin` or `G1`, read
/// from the columns `q_mc`, `q_mc_se`, `q_exact` and `q_paper`) at the row of experiment `exp`'s
/// table `table` where column `key` is `at`, within `rel` of the paper's value; `rises`: a column
/// of that table that must rise over its rows, and the words that add it to the tolerance.
#[derive(Clone, Copy)]
struct Point {
    exp: &'static str,
    table: &'static str,
    key: &'static str,
    at: f64,
    q: &'static str,
    rel: f64,
    note: &'static str,
    rises: Option<(&'static str, &'static str)>,
}

impl Point {
    fn claim(
        self,
        id: &'static str,
        figure: &'static str,
        description: &'static str,
        paper: f64,
    ) -> ClaimDef {
        claim(id, figure, description)
            .runs([self.exp])
            .paper(paper)
            .stated(mc_tolerance(self.rel, self.rises.map_or("", |r| r.1)))
            .measure(move |r| {
                let t = table(r, self.exp, self.table)?;
                let x = row_at(&t, self.key, self.at)?;
                let col = |c: &str| get(x, &format!("{}_{c}", self.q));
                let m = mc(
                    paper,
                    col("mc"),
                    col("mc_se"),
                    col("exact"),
                    col("paper"),
                    self.rel,
                    self.note,
                );
                Ok(match self.rises {
                    Some((c, _)) => m.and(t.windows(2).all(|w| get(&w[1], c) > get(&w[0], c))),
                    None => m,
                })
            })
    }
}

/// The rows of table `table` of experiment `exp`.
fn table(r: &Runs, exp: &str, table: &str) -> Result<Vec<Row>> {
    Ok(r.experiment(exp)?.table(table)?.to_vec())
}

/// The values of column `k` of `rows`, comma-separated (claim notes).
fn column(rows: &[Row], k: &str) -> String {
    rows.iter()
        .map(|x| format!("{}", get(x, k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// G(1)/G(τ_opt) at σ = 0 and Σx = 2I (spec §9), the paper's gain of Fig. 1b.
const FIG1B_GAIN: f64 = 299.95 / 33.3456;

/// The temperature paper's claims and runs at a scale.
pub(super) fn plan(scale: Scale) -> (Vec<RunSpec>, Vec<ClaimDef>) {
    // a point of a figure (within 1 % of the paper, no note), and the point l = 100 of Fig. 1a
    let point = |exp, table, key, at, q| Point {
        exp,
        table,
        key,
        at,
        q,
        rel: 0.01,
        note: "",
        rises: None,
    };
    let fig1a = |q, rel, note| Point {
        rel,
        note,
        ..point("temperature-fig1a", "fig1a", "l", 100.0, q)
    };
    let mut defs = vec![
        fig1a("tau_opt", 0.01, "spec §10 test 6 tolerance for τ* at d = 50")
            .claim("fig1a-tau-opt", "Fig. 1a, Thm 4.7", "No shift, d = 50, l = 100: τ_opt = 2a/b = k(1 + (d + σ²)/l) = 1.49995 (eq. 15; spec §7.1). Measured: 2a/b of the Monte Carlo coefficients", 1.49995),
        fig1a("Gmin", 0.05, "spec §10 test 6 tolerance (5% at d = 50); the paper's form is leading order and sits below the model's error")
            .claim("fig1a-gmin", "Fig. 1a, Thm 4.6", "No shift, d = 50, l = 100: G_min = c − b²/(4a) = 16.6789 (spec §7.1)", 16.6789),
        fig1a("G1", 0.05, "spec §10 test 6 tolerance")
            .claim("fig1a-g1", "Fig. 1a, Thm 4.6", "No shift, d = 50, l = 100: G(1) = a − b + c = 25.0100 (spec §7.1)", 25.01),
        claim("fig1a-towards-bayes", "Fig. 1a", "As l grows the model at τ_opt approaches the Bayes ridge: the gap G(τ_opt) − Bayes falls at every l ≥ d of the sweep (below d the ridge interpolates and its error peaks near l = d, spec §4) (measured: the Monte Carlo G(τ_opt) at the largest l; no number in the paper: Thm 4.6's G_min there is beside it as the paper form)")
            .runs(["temperature-fig1a"])
            .stated("the gap falls with l at every l ≥ d and stays > 0")
            .measure(|r| {
                let t: Vec<Row> = table(r, "temperature-fig1a", "fig1a")?
                    .into_iter()
                    .filter(|x| get(x, "l") >= figures::D as f64)
                    .collect();
                let gaps: Vec<f64> = t.iter().map(|x| get(x, "Gopt_mc") - get(x, "bayes_mc")).collect();
                let falling = gaps.len() >= 2 && gaps.windows(2).all(|w| w[1] < w[0]) && gaps.iter().all(|g| *g > 0.0);
                let last = t.last().cloned().unwrap_or_default();
                Ok(Reading::new(get(&last, "Gopt_mc"))
                    .stderr(Some(get(&last, "Gopt_mc_se")))
                    .forms(Some(get(&last, "Gmin_exact")), Some(get(&last, "Gmin_paper")))
                    .and(falling)
                    .note(format!(
                        "gaps {} at l = {}; at l = {} the model is {:.0}× the oracle Bayes ridge ({:.4}): the convergence is only as l/d → ∞ (spec §7.1; Corollary 4.4 is asymptotic)",
                        gaps.iter().map(|g| format!("{g:.3}")).collect::<Vec<_>>().join(", "),
                        column(&t, "l"),
                        get(&last, "l"),
                        get(&last, "Gopt_mc") / get(&last, "bayes_mc"),
                        get(&last, "bayes_mc")
                    )))
            }),
        point("temperature-fig1b", "fig1b", "l", 100.0, "tau_opt")
            .claim("fig1b-tau-opt", "Fig. 1b", "Covariance shift Σx = 2I, l = 100: τ_opt = 2.9998 (eq. 15; spec §7.1)", 2.9998),
        claim("fig1b-gain", "Fig. 1b", "Covariance shift Σx = 2I, l = 100: τ = 1 degrades and τ_opt restores: G(1)/G(τ_opt) = 299.95/33.3456 = 8.995 (spec §9)")
            .runs(["temperature-fig1b"])
            .paper(FIG1B_GAIN)
            .stated(mc_tolerance(0.10, ""))
            .measure(|r| {
                let x = row_at(&table(r, "temperature-fig1b", "fig1b")?, "l", 100.0)?.clone();
                let (g1, s1, go, so) = (get(&x, "G1_mc"), get(&x, "G1_mc_se"), get(&x, "Gopt_mc"), get(&x, "Gopt_mc_se"));
                let q = g1 / go;
                let se = q * ((s1 / g1).powi(2) + (so / go).powi(2)).sqrt();
                let ex = get(&x, "G1_exact") / get(&x, "Gmin_exact");
                let pf = get(&x, "G1_paper") / get(&x, "Gmin_paper");
                Ok(mc(FIG1B_GAIN, q, se, ex, pf, 0.10, "the ratio carries both errors (G(1) −1.5%, G_min +2.9% in the spec's Monte Carlo), so 10%"))
            }),
        claim("fig1c-task-shift-fades", "Fig. 1c", "Task shift Σw = 2I, μw = e₁: its cost at τ_opt, G_shift(τ_opt) − G_noshift(τ_opt), falls as l grows (measured at the largest l; no number in the paper: Thm 4.6's difference there is beside it as the paper form)")
            .runs(["temperature-fig1a", "temperature-fig1c"])
            .stated("falls with l at every step")
            .measure(|r| {
                let a = table(r, "temperature-fig1a", "fig1a")?;
                let c = table(r, "temperature-fig1c", "fig1c")?;
                let diff: Vec<(f64, f64, f64, f64)> = a.iter().zip(&c).map(|(x, y)| {
                    (get(y, "Gopt_mc") - get(x, "Gopt_mc"), (get(y, "Gopt_mc_se").powi(2) + get(x, "Gopt_mc_se").powi(2)).sqrt(),
                     get(y, "Gmin_exact") - get(x, "Gmin_exact"), get(y, "Gmin_paper") - get(x, "Gmin_paper"))
                }).collect();
                let falling = diff.windows(2).all(|w| w[1].0 < w[0].0);
                let last = diff.last().copied().unwrap_or((f64::NAN, f64::NAN, f64::NAN, f64::NAN));
                Ok(Reading::new(last.0)
                    .stderr(Some(last.1))
                    .forms(Some(last.2), Some(last.3))
                    .and(falling)
                    .note(format!("cost at l = {}: {}", column(&a, "l"), diff.iter().map(|d| format!("{:.3}", d.0)).collect::<Vec<_>>().join(", "))))
            }),
        Point { rel: 0.05, ..point("temperature-fig2", "fig2b", "sigma_test", 3.0, "G1") }
            .claim("fig2b-g1", "Fig. 2b", "Noise shift σ_test = 3 at l = d = 50: G(1) = 67.9764 (≈ 50 + 2σ²; spec §7.1)", 67.9764),
        Point { rel: 0.05, note: "spec §10 test 6 at l = d: +4%", ..point("temperature-fig2", "fig2b", "sigma_test", 3.0, "Gmin") }
            .claim("fig2b-gmin", "Fig. 2b", "Noise shift σ_test = 3 at l = d = 50: G_min = 36.0642 (spec §7.1)", 36.0642),
        claim("fig2b-tau-closes-gap", "Fig. 2b", "At l = d, τ_opt lowers the error at every test noise: the smallest relative gain (G(1) − G(τ_opt))/G(1) over σ_test (Monte Carlo, same prompts; no number in the paper: Thm 4.6's is beside it as the paper form; the spec's closed form G(1) ≈ 50 + 2σ², G_min ≈ 25 + O(σ²) puts it near 1/2)")
            .runs(["temperature-fig2"])
            .stated("> 0.3 at every σ_test")
            .measure(|r| {
                let t = table(r, "temperature-fig2", "fig2b")?;
                let gain = |x: &Row, a: &str, b: &str| (get(x, a) - get(x, b)) / get(x, a);
                let least = |a: &str, b: &str| t.iter().map(|x| gain(x, a, b)).fold(f64::INFINITY, f64::min);
                let (mc, pf, ex) = (least("G1_mc", "Gopt_mc"), least("G1_paper", "Gmin_paper"), least("G1_exact", "Gmin_exact"));
                let last = t.last().cloned().unwrap_or_default();
                Ok(Reading::new(mc)
                    .forms(Some(ex), Some(pf))
                    .and(mc > 0.3)
                    .note(format!(
                        "which Bayes (spec §9): at σ_test = {} the oracle ridge (test σ) has {:.3} ± {:.3}, the ridge with the train σ and prior {:.3} ± {:.3}, the model {:.3} at τ = 1 and {:.3} at τ_opt; the absolute gap to the oracle does not grow with σ",
                        get(&last, "sigma_test"), get(&last, "bayes_mc"), get(&last, "bayes_mc_se"), get(&last, "ridge_train_mc"), get(&last, "ridge_train_mc_se"), get(&last, "G1_mc"), get(&last, "Gopt_mc")
                    )))
            }),
        Point { rises: Some(("tau_opt_exact", "; the exact τ_opt rises with σ_test")), ..point("temperature-fig2", "fig2b", "sigma_test", 3.0, "tau_opt") }
            .claim("fig2c-tau-rises", "Fig. 2c", "τ_opt rises with σ_test; at l = d = 50, σ_test = 3: τ_opt = k(2 + σ²/50) = 2.17956 (spec §7.1)", 2.17956),
        claim("fig4-linear-floor", "Fig. 4", "Input-mean shift μx = 2e₁: linear attention (eq. 6) does not recover; its error plateaus near |μ|⁴(1 + |μ|²) + σ² = 80.01 (spec §2.6, derived). Measured at the largest l")
            .runs(["temperature-fig4"])
            .paper(80.01)
            .stated("within 10% of the floor")
            .measure(|r| {
                let last = table(r, "temperature-fig4", "fig4")?.last().cloned().unwrap_or_default();
                let m = get(&last, "linear_mc");
                Ok(Reading::new(m)
                    .stderr(Some(get(&last, "linear_mc_se")))
                    .and((m / 80.01 - 1.0).abs() <= 0.1)
                    .note(format!("l = {}; the linearised layer there: {:.3} at τ = 1", get(&last, "l"), get(&last, "G1_mc"))))
            }),
        claim("fig4-linearised-robust", "Fig. 4", "Input-mean shift μx = 2e₁: the linearised layer (centred statistics) keeps improving with l: its Monte Carlo τ = 1 error falls at every step of the l sweep (spec §10 test 10: → σ², decreasing in l; no number in the paper). Measured at the largest l; Thm 4.6's value there is beside it as the paper form")
            .runs(["temperature-fig4"])
            .stated("the Monte Carlo error falls at every l, and the exact form within 4 SE of it at every l")
            .measure(|r| {
                let t = table(r, "temperature-fig4", "fig4")?;
                let falling = t.len() >= 2 && t.windows(2).all(|w| get(&w[1], "G1_mc") < get(&w[0], "G1_mc"));
                let z = t.iter().map(|x| ((get(x, "G1_mc") - get(x, "G1_exact")) / get(x, "G1_mc_se")).abs()).fold(0.0f64, f64::max);
                let first = t.first().cloned().unwrap_or_default();
                let last = t.last().cloned().unwrap_or_default();
                Ok(Reading::new(get(&last, "G1_mc"))
                    .stderr(Some(get(&last, "G1_mc_se")))
                    .forms(Some(get(&last, "G1_exact")), Some(get(&last, "G1_paper")))
                    .and(falling && z <= 4.0)
                    .note(format!(
                        "Monte Carlo G(1) {} at l = {}; largest |MC − exact|/SE {z:.2}; the paper's form ignores the mean inside the centring (the query's zero label): at l = {} it is {:+.1}% off the exact form",
                        t.iter().map(|x| format!("{:.3}", get(x, "G1_mc"))).collect::<Vec<_>>().join(", "),
                        column(&t, "l"),
                        get(&first, "l"),
                        100.0 * (get(&first, "G1_paper") / get(&first, "G1_exact") - 1.0)
                    )))
            }),
        Point { rises: Some(("tau_opt_mc", "; the Monte Carlo τ* rises with α")), ..point("temperature-fig7", "fig7-alpha", "alpha", 3.0, "tau_opt") }
            .claim("fig7-alpha", "Fig. 7", "τ_opt increases with α (test Σx = αI), l = 100; at α = 3: τ_opt = k(1.5α + 10⁻⁴) = 4.49965 (spec §7.3)", 4.49965),
        claim("fig7-beta-flat", "Fig. 7", "τ_opt is nearly flat in β (test Σw = βI; the paper: \"nearly flat\", no number): the Monte Carlo τ* is flat within its noise over the sweep, and the exact form's relative range is < 0.05% (spec §10 test 8: k(1.5 + 10⁻⁴/β)). Measured: the Monte Carlo τ*'s relative range (max/min − 1), its SE that of a difference of two points")
            .runs(["temperature-fig7"])
            .stated("Monte Carlo range ≤ 4√2 SE (flat within its noise), and the exact form's < 5e-4")
            .measure(|r| {
                let t = table(r, "temperature-fig7", "fig7-beta")?;
                let range = |k: &str| {
                    let v: Vec<f64> = t.iter().map(|x| get(x, k)).collect();
                    let (lo, hi) = (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                    hi / lo - 1.0
                };
                let (ex, pf, mc) = (range("tau_opt_exact"), range("tau_opt_paper"), range("tau_opt_mc"));
                // the relative SE of one point (the largest over the sweep), and of a difference of two
                let rel_se = t.iter().map(|x| get(x, "tau_opt_mc_se") / get(x, "tau_opt_mc")).fold(0.0f64, f64::max);
                let se = std::f64::consts::SQRT_2 * rel_se;
                Ok(Reading::new(mc)
                    .stderr(Some(se))
                    .forms(Some(ex), Some(pf))
                    .and(t.len() >= 2 && mc <= 4.0 * se && ex < 5e-4)
                    .note(format!("the Monte Carlo τ* varies by {:.2}% over β = {} (one point's SE ~{:.2}%); the exact form by {:.1e}, eq. 15 by {:.1e}", 100.0 * mc, column(&t, "beta"), 100.0 * rel_se, ex, pf)))
            }),
        Point { rises: Some(("tau_opt_exact", "; the exact τ_opt rises with σ")), ..point("temperature-fig7", "fig7-sigma", "sigma", 3.0, "tau_opt") }
            .claim("fig7-sigma", "Fig. 7", "τ_opt increases with the test noise σ, l = 100; at σ = 3: k(1.5 + σ²/100) = 1.58984 (spec §7.1)", 1.58984),
        claim("fig7-heuristic", "Fig. 7, App. J", "The moment-ratio heuristic (eq. 136, v22 restored) tracks τ_opt (the paper: \"align closely\", no number): at every point of the α, β and σ sweeps it is within 4 SE of the Monte Carlo τ* and within 0.1% of eq. 15 (spec §7.3: equal up to the factor k on the correction term). Measured: the largest |τ_heur − τ*_MC|/SE")
            .runs(["temperature-fig7"])
            .stated("≤ 4 (SE of the Monte Carlo τ*) at every point, and within 1e-3 of eq. 15")
            .measure(|r| {
                let (mut z, mut worst, mut worst_ex, mut worst_mc) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
                let rows = fig7_sweeps(r)?;
                for x in &rows {
                    let h = get(x, "tau_heuristic");
                    z = z.max(((h - get(x, "tau_opt_mc")) / get(x, "tau_opt_mc_se")).abs());
                    worst = worst.max((h / get(x, "tau_opt_paper") - 1.0).abs());
                    worst_ex = worst_ex.max((h / get(x, "tau_opt_exact") - 1.0).abs());
                    worst_mc = worst_mc.max((h / get(x, "tau_opt_mc") - 1.0).abs());
                }
                Ok(Reading::new(z)
                    .and(!rows.is_empty() && z <= 4.0 && worst < 1e-3)
                    .note(format!(
                        "{} points; the heuristic is up to {:.2}% off the Monte Carlo τ*, {:.1e} off eq. 15 and {:.2}% off the exact form's τ_opt",
                        rows.len(), 100.0 * worst_mc, worst, 100.0 * worst_ex
                    )))
            }),
        claim("fig8-gain", "Fig. 8", "G(τ_opt) ≤ G(1) at every point of the α, β, σ sweeps: the smallest G(1)/G(τ_opt) (Monte Carlo, same prompts for both τ; no number in the paper: spec §10 test 7(iii))")
            .runs(["temperature-fig7"])
            .stated(">= 1")
            .measure(|r| {
                let (mut mc, mut ex, mut pf) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
                for x in fig7_sweeps(r)? {
                    mc = mc.min(get(&x, "G1_mc") / get(&x, "Gmin_mc"));
                    ex = ex.min(get(&x, "G1_exact") / get(&x, "Gmin_exact"));
                    pf = pf.min(get(&x, "G1_paper") / get(&x, "Gmin_paper"));
                }
                Ok(Reading::new(mc).forms(Some(ex), Some(pf)).and(mc >= 1.0 && ex >= 1.0))
            }),
        claim("sec44-rescaling", "§4.4", "σ = σ_tr = 0, Σx^test = cI (c = 3): τ_opt = c \"fully counteracts\"; exactly τ_opt(c)/τ_opt(1) = c (the paper's τ_opt = c holds only as l/d → ∞: here τ_opt(1) = 1 + d/l). Measured: the exact form's ratio at d = 50, l = 100")
            .paper(3.0)
            .stated("within 1e-9 of 3")
            .measure(|_| {
                let f = |form: &str, c: &str| theory("optimal-temperature", &[("form", form), ("train-sigma", "0"), ("test-sigma", "0"), ("test-sigma-x", c)]);
                let (e3, e1, p3, p1) = (f("exact", "3")?, f("exact", "1")?, f("paper", "3")?, f("paper", "1")?);
                Ok(Reading::new(e3 / e1)
                    .forms(Some(e3 / e1), Some(p3 / p1))
                    .and((e3 / e1 - 3.0).abs() < 1e-9 && (p3 / p1 - 3.0).abs() < 1e-9)
                    .note(format!("τ_opt(3) = {e3:.5} (exact), {p3:.5} (paper form), not 3")))
            }),
        claim("lemma41-finite-m", "Lemma 4.1", "m = 5000 sampled pretraining prompts (the paper's) give M11 within ~3% (relative Frobenius) of the population d I/(1 + σ²/l) (d = 50, l = 100; spec §10 test 4: a (l−1)/l centring bias of 1% and ~1% sampling noise); the figures use the population form")
            .paper(0.03)
            .stated("< 0.03")
            .measure(|_| {
                let (d, l) = (50usize, 100usize);
                let train = tp::Gaussian::isotropic(d, 1.0, 1.0, 0.01);
                let xx = tp::pretraining_cov(&train, l, 5000, 1)?;
                let pf = tp::lemma41_with_cov(&train, l, &xx)?;
                let pop = d as f64 * tp::k_iso(l, 0.01);
                let num: f64 = (0..d * d).map(|k| (pf.m11[k] - if k / d == k % d { pop } else { 0.0 }).powi(2)).sum::<f64>().sqrt();
                let rel = num / (pop * (d as f64).sqrt());
                Ok(Reading::new(rel).and(rel < 0.03))
            }),
        claim("fig5-shapes", "Fig. 5, App. D", "Softmax and its linearisation behave alike except that lin_sm goes negative at small τ; both concentrate at 1/l as τ grows, x/(lτ) does not (it concentrates at 0). Measured: the smallest lin_sm weight at τ = 0.1 (no number in the paper)")
            .runs(["temperature-fig5"])
            .stated("< 0 at τ = 0.1 with softmax ≥ 0; at τ = 10 both within sd 0.2/l of 1/l, x/(lτ) off 1/l; sd(lin_sm(x/τ)) = sd(x)/(lτ)")
            .measure(|r| {
                let t = table(r, "temperature-fig5", "fig5")?;
                let (first, last) = (t.first().cloned().unwrap_or_default(), t.last().cloned().unwrap_or_default());
                let l_inv = get(&last, "one_over_l");
                let neg = get(&first, "lin_sm_min") < 0.0 && get(&first, "softmax_min") >= 0.0;
                let conc = get(&last, "softmax_sd") < 0.2 * l_inv && get(&last, "lin_sm_sd") < 0.2 * l_inv
                    && (get(&last, "softmax_mean") - l_inv).abs() < 1e-12 && (get(&last, "lin_sm_mean") - l_inv).abs() < 1e-12;
                let lin_off = (get(&last, "linear_mean") - l_inv).abs() > 0.5 * l_inv;
                let sd_rule = t.iter().all(|x| (get(x, "lin_sm_sd") / get(x, "sd_x_over_l_tau") - 1.0).abs() < 1e-12);
                Ok(Reading::new(get(&first, "lin_sm_min"))
                    .and(neg && conc && lin_off && sd_rule)
                    .note(format!(
                        "at τ = 10: softmax sd {:.2e}, lin_sm sd {:.2e}, x/(lτ) mean {:.2e} (1/l = {l_inv})",
                        get(&last, "softmax_sd"), get(&last, "lin_sm_sd"), get(&last, "linear_mean")
                    )))
            }),
        claim("sgd-pretraining", "Lemma 4.1", "Pretraining measured: the layer's M11 and v21 fitted by SGD on eq. (2) prompts at τ = 1 (v22 = 1/d, m21 = 0 held; d = 4, l = 12, σ = 0.3; 6000 steps of 256 prompts, iterates averaged) against Lemma 4.1. Measured: relative Frobenius distance of the trained M11 to Lemma 4.1's (paper value 0: the paper takes Lemma 4.1 as the pretrained model); exact: the predicted distance 1 − 1/τ_opt (the loss minimiser is M11_Lemma/τ_opt, τ_opt of the exact form at the training distribution)")
            .paper(0.0)
            .stated("the trained M11 within 2% of M11_Lemma/τ_opt")
            .source("icl, fixed in advance (the paper has no trained layer)")
            .measure(|_| {
                use icl_core::theory::temperature::fit::{self, FitOptions};
                let (d, l) = (4usize, 12usize);
                let train = tp::Gaussian::isotropic(d, 1.0, 1.0, 0.09);
                let f = fit::fit(&train, l, FitOptions { steps: 6000, batch: 256, lr: 0.003, seed: 1 })?;
                let lemma = tp::lemma41(&train, l)?;
                let t = tp::exact::coefficients(&lemma, &train, l)?.tau_opt()?;
                let to_lemma = fit::rel_frobenius(&f.params.m11, &lemma.m11);
                let to_target = fit::rel_frobenius(&f.params.m11, &fit::scaled(&lemma.m11, t));
                Ok(Reading::new(to_lemma)
                    .forms(Some(1.0 - 1.0 / t), None)
                    .and(to_target < 0.02)
                    .note(format!(
                        "SGD converges to the loss minimiser, not to Lemma 4.1: |M − M_Lemma/τ_opt|/|M_Lemma/τ_opt| = {to_target:.4} with τ_opt = {t:.4}; Lemma 4.1 imitates Bayes ridge to leading order, and the exact error prefers the smaller attention scale 1/τ_opt (so a trained layer's τ_opt is 1)"
                    )))
            }),
        claim("exact-vs-mc", "all", "The exact form is the layer's error: the largest |Monte Carlo − closed form|/SE of G(1) over every point of every figure (measured: the exact form's; Thm 4.6's, leading order in d and l, beside it as the paper form; no number in the paper: icl's own consistency check)")
            .runs(figures::NAMES.iter().copied())
            .stated("< 4.5 (the largest of ~N(0,1) z-scores over all points)")
            .source("icl's own consistency check (spec temperature §10 test 6: closed form vs Monte Carlo)")
            .measure(|r| {
                let (mut ze, mut zp, mut npts) = (0.0f64, 0.0f64, 0usize);
                for e in figures::NAMES {
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
                Ok(Reading::new(ze).forms(Some(ze), Some(zp)).and(ze < 4.5).note(format!("{npts} points")))
            }),
    ];
    let mut specs = Vec::new();
    if scale == Scale::Paper {
        fig6::plan(&mut specs, &mut defs);
    }
    (specs, defs)
}

/// Every row of the Fig. 7 sweeps (α, β, σ).
fn fig7_sweeps(r: &Runs) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for k in ["fig7-alpha", "fig7-beta", "fig7-sigma"] {
        rows.extend(table(r, "temperature-fig7", k)?);
    }
    Ok(rows)
}
