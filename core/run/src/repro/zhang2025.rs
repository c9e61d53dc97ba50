//! Zhang et al. 2025 (linear attention dynamics): the runs and the claims.
//!
//! These runs are cheap (full-batch GD on sufficient statistics), so both scales use the paper's
//! sizes; smoke runs 2 seeds of Fig. 3, paper the paper's 6.
use super::claim::{claim, ClaimDef, Reading};
use super::{spec, RunSpec, Runs, Scale};
use crate::error::Result;
use crate::summary::{LinattnSummary, Summary};

/// L(M_0..M_4) of the Fig. 1/3 spectrum (eq. 19), as the paper's figures draw them (spec §5,
/// verified there): the plateaus' levels, independent of the code under test.
const LEVELS: [f64; 5] = [1.0, 0.640580, 0.377372, 0.209805, 0.135995];
/// L(M_4) of the Fig. 1/3 spectrum.
const L_M4: f64 = LEVELS[4];

/// A linear-attention number of a run's summary (NaN when the run has none).
fn lin(s: &Summary, f: impl Fn(&LinattnSummary) -> Option<f64>) -> f64 {
    s.linattn.as_ref().and_then(f).unwrap_or(f64::NAN)
}

pub(super) fn plan(scale: Scale) -> (Vec<RunSpec>, Vec<ClaimDef>) {
    let seeds: u64 = match scale {
        Scale::Smoke => 2,
        Scale::Paper => 6,
    };
    let fig3: Vec<String> = (0..seeds).map(|s| format!("fig3-seed{s}")).collect();
    let mut specs = vec![spec("fig1", "zhang2025-fig1", &[])];
    specs.extend((0..seeds).map(|s| {
        spec(
            format!("fig3-seed{s}"),
            "zhang2025-fig3",
            &[("train.seed", s.to_string())],
        )
    }));
    specs.push(spec("fig13", "zhang2025-fig13", &[]));
    // the Fig. 3 seeds' summaries
    let f3 = move |r: &Runs| -> Result<Vec<Summary>> {
        (0..seeds)
            .map(|s| r.summary(&format!("fig3-seed{s}")))
            .collect()
    };
    let defs = vec![
        claim("fig1-mlp-twin", "Fig. 1", "ATTN_M and the cubic-feature MLP have identical loss curves (largest |ΔL| over training)")
            .runs(["fig1"])
            .paper(0.0)
            .at_most(1e-10)
            .measure(|r| Ok(Reading::new(lin(&r.summary("fig1")?, |l| l.cubic_mlp_max_abs_diff)))),
        claim("fig1-one-drop", "Fig. 1", "ATTN_M's loss has one abrupt drop, from L(M_0) = 1 straight to L(M_4) (number of drops between detected plateaus)")
            .runs(["fig1"])
            .paper(1.0)
            .within(1.0, 0.0)
            .measure(|r| Ok(Reading::new(lin(&r.summary("fig1")?, |l| Some(l.drops as f64))))),
        claim("fig1-final", "Fig. 1", "ATTN_M converges to L(M_4) = 0.135995 (finite P = 5000 training set: AT17's ±0.03)")
            .runs(["fig1"])
            .paper(L_M4)
            .within(L_M4, 0.03)
            .measure(|r| Ok(Reading::new(r.summary("fig1")?.final_loss))),
        claim("fig3-drops", "Fig. 3a", "ATTN_S (rank 1) learns saddle to saddle: D = 4 drops in every seed (mean number of drops over seeds)")
            .runs(&fig3)
            .paper(4.0)
            .within(4.0, 0.0)
            .measure(move |r| {
                let d: Vec<f64> = f3(r)?.iter().map(|s| lin(s, |l| Some(l.drops as f64))).collect();
                Ok(Reading::mean(&d).note(format!("drops per seed: {d:?}")))
            }),
        claim("fig3-plateaus", "Fig. 3a, eq. 19", "The plateaus sit at L(M_m) = 1, 0.640580, 0.377372, 0.209805, 0.135995 (largest |plateau − level| over plateaus and seeds; finite P = 80000: AT17's ±0.03)")
            .runs(&fig3)
            .paper(0.0)
            .at_most(0.03)
            .measure(move |r| {
                let worst = f3(r)?
                    .iter()
                    .flat_map(|s| s.linattn.iter().flat_map(|l| l.plateaus.iter().map(|p| LEVELS.iter().map(|l| (p.loss - l).abs()).fold(f64::INFINITY, f64::min))))
                    .fold(0.0f64, |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) });
                Ok(Reading::new(worst).note("each plateau against the nearest of the spec's levels"))
            }),
        claim("fig3-final", "Fig. 3a", "ATTN_S converges to L(M_4) = 0.135995 (mean final loss over seeds; finite P: AT17's ±0.03)")
            .runs(&fig3)
            .paper(L_M4)
            .within(L_M4, 0.03)
            .measure(move |r| Ok(Reading::mean(&f3(r)?.iter().map(|s| s.final_loss).collect::<Vec<_>>()))),
        claim("fig3-pcr", "Fig. 3c, §4.4", "At the end the model is principal-component regression on all D components: ‖M − M_4‖_F/‖M_4‖_F (largest over seeds)")
            .runs(&fig3)
            .paper(0.0)
            .range(0.0, 0.05)
            .measure(move |r| {
                let v = f3(r)?.iter().map(|s| lin(s, |l| l.final_pcr_distance)).fold(0.0f64, f64::max);
                Ok(Reading::new(v).note("AT11's threshold"))
            }),
        claim("fig13-final", "Fig. 13", "With repeated eigenvalues (.35, .35, .15, .15) the run reaches L(M_4) = 0.136942 (finite P: AT17's ±0.03)")
            .runs(["fig13"])
            .paper(0.136942)
            .within(0.136942, 0.03)
            .measure(|r| Ok(Reading::new(r.summary("fig13")?.final_loss))),
    ];
    let defs = match scale {
        Scale::Smoke => defs
            .into_iter()
            .map(|d| {
                if d.id.starts_with("fig3") {
                    d.reduced("smoke: 2 of the paper's 6 seeds")
                } else {
                    d
                }
            })
            .collect(),
        Scale::Paper => defs,
    };
    (specs, defs)
}
