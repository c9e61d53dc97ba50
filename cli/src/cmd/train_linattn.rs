//! `icl train` for the Zhang et al. (2025) protocol (`task.kind = eigs`): full-batch GD on a fixed
//! set (or fresh data), plateau detection against the theory levels L(M_m), and the run folder:
//! config.toml, model.safetensors, loss.csv (+ test losses, cubic twin), values.csv (v_h(t)),
//! alignment.csv, m.csv (effective M in the paper's 1/N convention), loss.svg / values.svg with the
//! theory lines, summary.json with `plateaus: [{loss, theory, m, start_step, end_step, ...}]`.
use super::common::{config_json, json, progress, write_text};
use super::train::Args;
use crate::engines::EngineScalar;
use crate::error::CliResult;
use crate::plot::{lines_svg, Series};
use icl_core::config::{Config, Param};
use icl_core::linattn::data::{generate, SetKind};
use icl_core::linattn::metrics::{detect_plateaus, nearest_level, rel_dist, PlateauOptions};
use icl_core::linattn::mlp::{cubic_features, CubicMlp};
use icl_core::linattn::LinTrainer;
use icl_core::optim::Optimizer;
use icl_core::theory::zhang2025::{crossings, v_star};
use icl_io::RunDir;
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// Sequences per in-context / in-weight test set (reference code: 5000).
const TEST_SIZE: usize = 5000;

/// The cubic-feature twin of a reduced ATTN_M, trained in lockstep on the same set.
struct Twin {
    mlp: CubicMlp,
    z: Vec<f64>,
    y: Vec<f64>,
    opt: Optimizer<f64>,
    grad: Vec<f64>,
    losses: Vec<(u64, f64)>,
}

pub fn run(a: &Args, cfg: &Config, engine_name: &str, dir: &RunDir) -> CliResult {
    let mut engine = <f64 as EngineScalar>::engine(engine_name)?;
    let t0 = Instant::now();
    let mut tr = LinTrainer::new(cfg, TEST_SIZE, false)?;
    let setup_secs = t0.elapsed().as_secs_f64();
    let t = &cfg.task;
    let mut twin = if cfg.model.param == Param::MergedReduced && t.p > 0 && !t.ntp {
        let set = generate(cfg, &tr.task, cfg.train.seed, SetKind::Train, t.p, t.len)?;
        let mlp = CubicMlp::twin_of(&tr.model)?;
        let n = mlp.params.len();
        Some(Twin {
            z: cubic_features(&set, tr.model.spec.lin_norm)?,
            y: set.y.clone(),
            opt: Optimizer::new(&cfg.train, n),
            grad: vec![0.0; n],
            mlp,
            losses: Vec::new(),
        })
    } else {
        None
    };
    let pb = progress(cfg.train.steps, a.quiet);
    let t1 = Instant::now();
    let mut last = 0u64;
    let log_every = cfg.train.log_every.max(1);
    let mut twin_err: Option<crate::error::CliError> = None;
    tr.run(engine.as_mut(), &mut |step, loss| {
        if let Some(tw) = twin.as_mut() {
            // the twin's step s sees the same parameters as ATTN_M's step s (lockstep)
            let l = tw.mlp.loss_grad(&tw.z, &tw.y, &mut tw.grad);
            if (step - 1) % log_every == 0 {
                tw.losses.push((step - 1, l));
            }
            if let Err(e) = tw.opt.step(&mut tw.mlp.params, &tw.grad) {
                twin_err = Some(e.into());
                return false;
            }
        }
        if step - last >= 200 || step == cfg.train.steps {
            pb.set_position(step);
            pb.set_message(format!("loss {loss:.4}"));
            last = step;
        }
        true
    })?;
    if let Some(e) = twin_err {
        return Err(e);
    }
    let secs = t1.elapsed().as_secs_f64();
    pb.finish_and_clear();

    // ---- analysis
    let curve = tr.curve();
    let levels = tr.levels.clone();
    let plateaus = detect_plateaus(&curve, &PlateauOptions::default());
    let cross = crossings(&levels, &curve);
    let vstar = v_star(&tr.spectrum.lambda, tr.inv_n).unwrap_or_default();
    let pl_json: Vec<_> = plateaus
        .iter()
        .map(|p| {
            let (m, th) = nearest_level(&levels, p.loss);
            let mm = tr.spectrum.pcr_matrix(m, tr.inv_n);
            json!({
                "loss": p.loss, "theory": th, "m": m,
                "start_step": p.start_step, "end_step": p.end_step, "at_step": p.mid_step,
                "pcr_distance": rel_dist(&tr.log[p.mid_index].m, &mm),
            })
        })
        .collect();
    let last_row = tr.log.last().cloned();
    let final_loss = last_row.as_ref().map(|r| r.loss).unwrap_or(f64::NAN);
    let twin_diff = twin.as_ref().map(|tw| {
        tw.losses
            .iter()
            .zip(tr.log.iter())
            .map(|((s, l), r)| {
                if *s == r.step {
                    (l - r.loss).abs()
                } else {
                    f64::NAN
                }
            })
            .fold(0.0f64, f64::max)
    });

    // ---- files
    dir.create()?;
    write_text(&dir.config(), &cfg.to_toml())?;
    icl_io::save_model(&dir.model(), &tr.model, cfg, tr.step)?;
    let mut csv = String::from("step,loss");
    for n in &tr.test_names {
        csv.push(',');
        csv.push_str(n);
    }
    if twin.is_some() {
        csv.push_str(",cubic_mlp");
    }
    for m in 0..levels.len() {
        let _ = write!(csv, ",theory_L{m}");
    }
    csv.push('\n');
    for (i, r) in tr.log.iter().enumerate() {
        let _ = write!(csv, "{},{:e}", r.step, r.loss);
        for x in &r.tests {
            let _ = write!(csv, ",{x:e}");
        }
        if let Some(tw) = &twin {
            match tw.losses.get(i) {
                Some((_, l)) => {
                    let _ = write!(csv, ",{l:e}");
                }
                None => csv.push(','),
            }
        }
        for l in &levels {
            let _ = write!(csv, ",{l:e}");
        }
        csv.push('\n');
    }
    write_text(&dir.dir.join("loss.csv"), &csv)?;
    let table = |f: &dyn Fn(&icl_core::linattn::LinLogRow) -> &Vec<f64>, head: &str| {
        let mut s = String::from("step");
        let k = tr.log.first().map(|r| f(r).len()).unwrap_or(0);
        for i in 0..k {
            let _ = write!(s, ",{head}{i}");
        }
        s.push('\n');
        for r in &tr.log {
            let _ = write!(s, "{}", r.step);
            for x in f(r) {
                let _ = write!(s, ",{x:e}");
            }
            s.push('\n');
        }
        s
    };
    write_text(&dir.dir.join("values.csv"), &table(&|r| &r.values, "v"))?;
    write_text(&dir.dir.join("alignment.csv"), &table(&|r| &r.align, "a"))?;
    write_text(&dir.dir.join("m.csv"), &table(&|r| &r.m, "m"))?;

    let x_end = curve.last().map(|p| p.0).unwrap_or(1.0).max(1.0);
    let mut series = vec![Series {
        name: "train loss".into(),
        points: curve.clone(),
        dashed: false,
    }];
    for (k, n) in tr.test_names.iter().enumerate() {
        series.push(Series {
            name: n.replace('_', " "),
            points: tr.log.iter().map(|r| (r.step as f64, r.tests[k])).collect(),
            dashed: false,
        });
    }
    if let Some(tw) = &twin {
        series.push(Series {
            name: "cubic-feature MLP".into(),
            points: tw.losses.iter().map(|(s, l)| (*s as f64, *l)).collect(),
            dashed: false,
        });
    }
    for (m, l) in levels.iter().enumerate() {
        series.push(Series {
            name: format!("L(M_{m}) = {l:.4}"),
            points: vec![(0.0, *l), (x_end, *l)],
            dashed: true,
        });
    }
    if curve.len() >= 2 {
        let title = format!("{} — loss and theory plateaus", a.cfg.preset);
        lines_svg(
            &dir.dir.join("loss.svg"),
            &title,
            "step",
            "loss",
            &series,
            false,
        )?;
        let mut vs: Vec<Series> = (0..tr.model.spec.heads)
            .map(|h| Series {
                name: format!("v_{}", h + 1),
                points: tr
                    .log
                    .iter()
                    .map(|r| (r.step as f64, r.values[h]))
                    .collect(),
                dashed: false,
            })
            .collect();
        if cfg.model.lin_norm == icl_core::config::LinNorm::Len {
            for (d, v) in vstar.iter().enumerate() {
                vs.push(Series {
                    name: format!("v*_{} = {v:.3}", d + 1),
                    points: vec![(0.0, *v), (x_end, *v)],
                    dashed: true,
                });
            }
        }
        lines_svg(
            &dir.dir.join("values.svg"),
            "value weights v_h(t)",
            "step",
            "v",
            &vs,
            false,
        )?;
    }

    let summary = json!({
        "preset": if a.cfg.config.is_some() { serde_json::Value::Null } else { json!(a.cfg.preset) },
        "config": config_json(cfg),
        "engine": if matches!(cfg.model.attention, icl_core::config::AttentionKind::Linear) && t.p > 0 { "moments".to_string() } else { engine_name.to_string() },
        "dtype": "f64",
        "protocol": if t.p > 0 { "full-batch GD on a fixed set" } else { "fresh data every step" },
        "steps": tr.step,
        "seconds": secs,
        "setup_seconds": setup_secs,
        "final_loss": final_loss,
        "theory_levels": levels,
        "inv_n": tr.inv_n,
        "eigenvalues": tr.spectrum.lambda,
        "plateaus": pl_json,
        "drops": plateaus.len().saturating_sub(1),
        "crossings": cross,
        "final_values": last_row.as_ref().map(|r| r.values.clone()),
        // heads whose |v| grew to at least a quarter of the largest (scale-free: code or paper units)
        "grown_values": last_row.as_ref().map(|r| {
            let vmax = r.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            r.values.iter().filter(|v| v.abs() > 0.25 * vmax).count()
        }),
        "v_star": vstar,
        "final_pcr_distance": last_row.as_ref().map(|r| rel_dist(&r.m, &tr.spectrum.pcr_matrix(levels.len() - 1, tr.inv_n))),
        "conservation_drift": last_row.as_ref().map(|r| r.conservation_drift),
        "tests": tr.test_names.iter().enumerate().map(|(k, n)| (n.clone(), json!(last_row.as_ref().map(|r| r.tests[k])))).collect::<serde_json::Map<_, _>>(),
        "cubic_mlp_max_abs_diff": twin_diff,
    });
    write_text(&dir.summary(), &json(&summary))?;
    if !a.quiet {
        eprintln!(
            "trained {} steps in {:.2} s (+{:.2} s setup); final loss {final_loss:.6}",
            tr.step, secs, setup_secs
        );
        for (i, p) in plateaus.iter().enumerate() {
            let (m, th) = nearest_level(&levels, p.loss);
            eprintln!(
                "plateau {i}: loss {:.6}  theory L(M_{m}) = {th:.6}  (diff {:+.4})  steps {}-{}",
                p.loss,
                p.loss - th,
                p.start_step,
                p.end_step
            );
        }
    }
    println!("{}", dir.summary().display());
    Ok(())
}
