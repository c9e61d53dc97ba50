//! Analysis of a run: per-head effective circuits, (omega, mu), head kinds and pattern metrics
//! (He et al. 2025 §4), and the heatmaps of `circuits.svg` (figure 1a).
use crate::any::AnyModel;
use crate::dispatch;
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::plot::{heatmaps_svg, Heatmap};
use crate::summary::{Analysis, Gpt2Analysis, Gpt2Head, LayerPattern, TransformerAnalysis};
use icl_core::config::{Config, CovFamily, TaskKind};
use icl_core::families::attention::analysis::{analyze, Report};
use icl_core::families::stack::analysis::{pattern, preconditioned};
use icl_core::families::stack::{StackCircuits, StackSpec};
use icl_core::model::AttentionSpec;
use icl_core::model::Net;

/// The core's report of a one-layer attention model ([`icl_core::Error::Unsupported`] for the
/// other families).
pub fn report(model: &AnyModel) -> Result<Report> {
    Ok(dispatch!(model, m => analyze(m.attention()?, &m.circuits()?)))
}

/// Heatmaps of every head (He et al. 2025 Fig. 1a): KQ (E x E, rows the key token's
/// components x₁ … x_d, y, columns the query's; the query-side y column is masked, it multiplies
/// z_q's 0) and OV's output rows transposed (E x n_out, rows the value token's components).
/// Every KQ shares one colour scale, every OV another.
pub fn circuit_maps(spec: &AttentionSpec, rep: &Report) -> Vec<Heatmap> {
    let (e, d, no) = (spec.e(), spec.d, spec.n_out);
    let comps = crate::plot::token_labels(d, e.saturating_sub(d));
    let outs = if no == 1 {
        vec!["ŷ".to_string()]
    } else {
        (1..=no)
            .map(|i| format!("ŷ{}", crate::plot::subscript(i)))
            .collect()
    };
    let mut maps = Vec::new();
    for (h, hr) in rep.heads.iter().enumerate() {
        let kq = (0..e * e)
            .map(|k| {
                if k % e >= d {
                    None
                } else {
                    hr.kq.get(k).copied()
                }
            })
            .collect();
        maps.push(
            Heatmap::new(format!("head {h} KQ ({})", hr.kind.as_str()), e, e, kq)
                .labelled(comps.clone(), comps.clone())
                .on_scale("KQ")
                .noted("KQ: rows the key token, columns the query token; grey: the query's y slot (always 0, so unused)"),
        );
        let ov = (0..e * no)
            .map(|k| hr.ov.get((k % no) * e + k / no).copied())
            .collect();
        maps.push(
            Heatmap::new(format!("head {h} OV"), e, no, ov)
                .labelled(comps.clone(), outs.clone())
                .on_scale("OV")
                .noted("OV: rows the value token, columns the prediction"),
        );
    }
    maps
}

/// The learned pattern of a transformer (or of the IV model's stage 2): per parameter set the
/// inner products, step sizes and pattern metrics; `None` for one-layer models.
pub fn transformer_analysis(
    cfg: &Config,
    model: &AnyModel,
) -> Option<(TransformerAnalysis, StackSpec, StackCircuits<f64>)> {
    let (sp, c) = dispatch!(model, m => m.readout_stack())?;
    let d = sp.e - sp.n_out;
    let constant = (cfg.task.kind == TaskKind::Varying
        && matches!(cfg.task.covariance, CovFamily::Identity | CovFamily::Kms))
    .then(|| {
        icl_core::data::covariance::kms(
            d,
            if cfg.task.covariance == CovFamily::Kms {
                cfg.task.rho
            } else {
                0.0
            },
        )
    });
    let layers: Vec<LayerPattern> = (0..sp.sets())
        .map(|s| {
            let p = pattern(&c, s, d);
            LayerPattern {
                u1_omega: p.u1_omega,
                u2_omega: p.u2_omega,
                eta_x: p.eta_x(),
                eta_y: p.eta_y(),
                omega: p.omega.clone(),
                u1: p.u1.clone(),
                u2: p.u2.clone(),
                phi_offdiag: p.phi_offdiag,
                psi_offdiag: p.psi_offdiag,
                phi_last: p.phi_last,
                phi_diag_cv: p.phi_diag_cv,
                preconditioned: constant.as_ref().map(|sig| preconditioned(&c, s, d, sig)),
            }
        })
        .collect();
    let top = |f: fn(&LayerPattern) -> f64| sp.looped.then(|| f(&layers[0]));
    let a = TransformerAnalysis {
        block: if matches!(model.spec().net, Net::Iv(_)) {
            "iv stage 2".into()
        } else {
            "transformer".into()
        },
        looped: sp.looped,
        u1_omega: top(|l| l.u1_omega),
        u2_omega: top(|l| l.u2_omega),
        eta_x: top(|l| l.eta_x),
        eta_y: top(|l| l.eta_y),
        layers,
    };
    Some((a, sp, c))
}

/// Heatmaps of every head's effective Φ (D x D) and Ψ (D x D), per parameter set, rows and
/// columns the token's components x₁ … x_d, y; every Φ shares one colour scale, every Ψ another.
pub fn stack_maps(sp: &StackSpec, c: &StackCircuits<f64>) -> Vec<Heatmap> {
    let dd = sp.e;
    let comps = crate::plot::token_labels(dd.saturating_sub(sp.n_out), sp.n_out);
    let mut maps = Vec::new();
    for s in 0..sp.sets() {
        let layer = if sp.looped {
            String::new()
        } else {
            format!("layer {} ", s + 1)
        };
        for h in 0..sp.heads {
            let off = h * dd * dd;
            for (name, m) in [("Φ", c.phi_set(s)), ("Ψ", c.psi_set(s))] {
                let values = (off..off + dd * dd).map(|k| m.get(k).copied()).collect();
                maps.push(
                    Heatmap::new(format!("{layer}head {h} {name}"), dd, dd, values)
                        .labelled(comps.clone(), comps.clone())
                        .on_scale(name),
                );
            }
        }
    }
    maps
}

/// Most pairs of the prompt whose attention `icl analyze` draws (2 tokens each: the maps of a
/// 12-layer, 8-head model stay a few MB).
pub const GPT2_PROMPT_PAIRS: usize = 10;

/// A GPT-2 model's attention on prompt 0 of the evaluation stream at min(L + 1,
/// [`GPT2_PROMPT_PAIRS`]) pairs (seed `train.seed`): per head the label and self weights, and
/// one heatmap per layer and head (the masked future blank).
pub fn gpt2_analysis(cfg: &Config, model: &AnyModel) -> Result<(Gpt2Analysis, Vec<Heatmap>)> {
    let k = (cfg.task.len + 1).min(GPT2_PROMPT_PAIRS);
    let task = icl_core::data::Task::new(cfg)?;
    let batch = task.sample_batch::<f64>(
        cfg.train.seed,
        icl_core::rng::Domain::Eval,
        k as u64 - 1,
        1,
        k - 1,
    );
    let d = cfg.task.d;
    let mut xs = vec![0.0; k * d];
    let mut ys = vec![0.0; k];
    icl_core::families::gpt2::kernels::prompt_of_batch(&batch, 0, &mut xs, &mut ys);
    let heads = dispatch!(model, m => {
        let Net::Gpt2(sp) = &m.spec.net else {
            return Err(RunError::Refused("not a GPT-2 model".into()));
        };
        let p: Vec<f64> = m.params.iter().map(|v| icl_core::Scalar::to_f64(*v)).collect();
        icl_core::families::gpt2::analysis::attention(sp, &p, &xs, &ys, k)?
    });
    let t = 2 * k;
    let maps = heads
        .iter()
        .map(|h| {
            let values = (0..t * t)
                .map(|i| {
                    (i % t <= i / t)
                        .then(|| h.weights.get(i).copied())
                        .flatten()
                })
                .collect();
            let tokens: Vec<String> = (1..=k)
                .flat_map(|i| {
                    let i = crate::plot::subscript(i);
                    [format!("x{i}"), format!("y{i}")]
                })
                .collect();
            Heatmap::new(
                format!("layer {} head {}", h.layer + 1, h.head),
                t,
                t,
                values,
            )
            .labelled(tokens.clone(), tokens)
            .on_scale("attention weight")
            .noted("rows the attending token, columns the attended one; grey: the masked future")
        })
        .collect();
    let a = Gpt2Analysis {
        prompt_pairs: k,
        attention_heads: heads
            .iter()
            .map(|h| Gpt2Head {
                layer: h.layer,
                head: h.head,
                y_mass: h.y_mass,
                self_mass: h.self_mass,
            })
            .collect(),
    };
    Ok((a, maps))
}

/// Analyse the run in `dir`; with `plot`, write `circuits.svg` into it (checked first: a run
/// folder where it cannot be written, read-only say, is refused before anything is computed,
/// and the error says how to analyse without the figure).
pub fn analyze_run(dir: &RunDir, plot: bool) -> Result<Analysis> {
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    let gpt2 = matches!(loaded.model.spec().net, Net::Gpt2(_));
    let figure = if gpt2 {
        dir.attention_svg()
    } else {
        dir.circuits_svg()
    };
    if plot {
        crate::folder::check_output(&figure).map_err(|e| {
            RunError::Refused(format!(
                "{e}: the analysis writes its figure {} into the run folder; analyse without it with --no-plot (plot=False in Python)",
                figure.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned())
            ))
        })?;
    }
    if gpt2 {
        let (a, maps) = gpt2_analysis(&loaded.config, &loaded.model)?;
        if plot {
            heatmaps_svg(&figure, &maps)?;
        }
        return Ok(Analysis {
            step: loaded.step,
            attention: None,
            transformer: None,
            gpt2: Some(a),
        });
    }
    if let Some((a, sp, c)) = transformer_analysis(&loaded.config, &loaded.model) {
        if plot {
            heatmaps_svg(&dir.circuits_svg(), &stack_maps(&sp, &c))?;
        }
        return Ok(Analysis {
            step: loaded.step,
            attention: None,
            transformer: Some(a),
            gpt2: None,
        });
    }
    let rep = report(&loaded.model)?;
    if plot {
        heatmaps_svg(
            &dir.circuits_svg(),
            &circuit_maps(loaded.model.spec().as_attention()?, &rep),
        )?;
    }
    Ok(Analysis::of(&rep, loaded.step))
}
