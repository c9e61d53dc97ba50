//! The temperature closed forms for a model icl trained (issue 20, `--run DIR`): the linearised
//! layer read off a softmax run (`temperature::trained`), the exact form of the layer whose keys
//! are the context tokens only (icl's softmax runs), and the registry with a loaded run.
use icl_core::config::Config;
use icl_core::families::attention::act::{head_forward, HeadCache};
use icl_core::model::Model;
use icl_core::theory::registry::{evaluate, evaluate_with, Trained, Value};
use icl_core::theory::temperature::mc::{self, Estimator};
use icl_core::theory::temperature::{self as tp, exact, trained, Gaussian, Params};
use icl_core::Error;

fn normals(seed: u64, n: usize) -> Vec<f64> {
    let mut r = icl_core::rng::stream(seed, icl_core::rng::Domain::Task, 1, 0);
    let mut g = vec![0.0; n];
    icl_core::rng::fill_normal(&mut r, &mut g);
    g
}

/// A random SPD matrix `A A^T/d + floor I` (row-major).
fn spd(d: usize, seed: u64, floor: f64) -> Vec<f64> {
    let g = normals(seed, d * d);
    (0..d * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            (0..d).map(|t| g[i * d + t] * g[j * d + t]).sum::<f64>() / d as f64
                + if i == j { floor } else { 0.0 }
        })
        .collect()
}

/// Random layer parameters (M11 not symmetric, v21 != 0), m21 = 0.
fn layer(d: usize, seed: u64, self_attend: bool) -> Params {
    let g = normals(seed, d * d + d);
    Params {
        d,
        m11: (0..d * d)
            .map(|k| g[k] * 0.4 + if k / d == k % d { 1.0 } else { 0.0 })
            .collect(),
        m21: vec![0.0; d],
        v21: g[d * d..].iter().map(|x| 0.3 * x).collect(),
        v22: 0.8,
        self_attend,
    }
}

/// Every shift kind of issue 20 at dimension d.
fn shifts(d: usize) -> Vec<(&'static str, Gaussian)> {
    let base = Gaussian::isotropic(d, 1.0, 1.0, 0.25);
    let mean = |c: f64| {
        (0..d)
            .map(|i| c * (1.0 - 0.3 * i as f64))
            .collect::<Vec<_>>()
    };
    vec![
        ("none", base.clone()),
        (
            "full x covariance",
            Gaussian {
                sigma_x: spd(d, 3, 0.4),
                ..base.clone()
            },
        ),
        (
            "x mean",
            Gaussian {
                mu_x: mean(0.7),
                ..base.clone()
            },
        ),
        (
            "task mean and covariance",
            Gaussian {
                mu_w: mean(-0.5),
                sigma_w: spd(d, 4, 0.3),
                ..base.clone()
            },
        ),
        (
            "noise",
            Gaussian {
                sigma2: 2.0,
                ..base.clone()
            },
        ),
        (
            "combined",
            Gaussian {
                mu_x: mean(0.4),
                sigma_x: spd(d, 5, 0.5),
                mu_w: mean(0.3),
                sigma_w: spd(d, 6, 0.2),
                d,
                sigma2: 0.7,
            },
        ),
    ]
}

fn within(what: &str, exact: f64, mc: f64, se: f64, k: f64) {
    assert!(
        (exact - mc).abs() <= k * se,
        "{what}: exact {exact} vs Monte Carlo {mc} +- {se} ({:.2} SE)",
        (exact - mc) / se
    );
}

#[test]
fn exact_form_without_the_query_among_the_keys_matches_monte_carlo() {
    for (d, l) in [(3, 6), (4, 12)] {
        let p = layer(d, 10 + d as u64, false);
        for (name, test) in shifts(d) {
            let e = exact::coefficients(&p, &test, l).unwrap();
            for (est, n) in [(Estimator::Conditional, 40_000), (Estimator::Plain, 40_000)] {
                let m = mc::coefficients(&p, &test, l, n, 7, est).unwrap();
                let what = format!("d {d} l {l} {name} {est:?}");
                for (i, (x, y)) in [(e.a, m.coeffs.a), (e.b, m.coeffs.b), (e.c, m.coeffs.c)]
                    .into_iter()
                    .enumerate()
                {
                    within(
                        &format!("{what} coefficient {i}"),
                        x,
                        y,
                        m.cov[i][i].sqrt(),
                        4.0,
                    );
                }
                for tau in [0.5, 1.0, 2.0] {
                    let (g, se) = m.g(tau);
                    within(&format!("{what} G({tau})"), e.g(tau), g, se, 4.0);
                }
            }
        }
    }
}

#[test]
fn the_keys_change_the_layer_and_its_error() {
    // the same parameters with and without the query among the keys: different predictions and
    // different exact errors, each matching its own Monte Carlo (above and in theory_temperature_exact)
    let (d, l) = (3, 6);
    let with = layer(d, 1, true);
    let without = Params {
        self_attend: false,
        ..with.clone()
    };
    let x = normals(2, l * d);
    let y = normals(3, l - 1);
    let (u1, b1) = tp::predict_parts(&with, &x, &y).unwrap();
    let (u2, b2) = tp::predict_parts(&without, &x, &y).unwrap();
    assert!((u1 - u2).abs() > 1e-6 && (b1 - b2).abs() > 1e-6);
    let test = Gaussian::isotropic(d, 1.0, 1.0, 0.25);
    let e1 = exact::coefficients(&with, &test, l).unwrap();
    let e2 = exact::coefficients(&without, &test, l).unwrap();
    assert!((e1.a - e2.a).abs() > 1e-3 * e1.a.abs());
    // the context-only statistics by hand: means and centred moments of the l - 1 context rows
    let n = (l - 1) as f64;
    let mx: Vec<f64> = (0..d)
        .map(|i| (0..l - 1).map(|t| x[t * d + i]).sum::<f64>() / n)
        .collect();
    let my = y.iter().sum::<f64>() / n;
    let cxy: Vec<f64> = (0..d)
        .map(|i| {
            (0..l - 1)
                .map(|t| (x[t * d + i] - mx[i]) * (y[t] - my))
                .sum::<f64>()
                / n
        })
        .collect();
    let cxx_v: Vec<f64> = (0..d)
        .map(|i| {
            (0..l - 1)
                .map(|t| {
                    (x[t * d + i] - mx[i])
                        * (0..d)
                            .map(|j| (x[t * d + j] - mx[j]) * without.v21[j])
                            .sum::<f64>()
                })
                .sum::<f64>()
                / n
        })
        .collect();
    let xq = &x[(l - 1) * d..];
    let u: f64 = (0..d)
        .map(|j| {
            xq[j]
                * (0..d)
                    .map(|i| without.m11[i * d + j] * (cxx_v[i] + without.v22 * cxy[i]))
                    .sum::<f64>()
        })
        .sum();
    let b = (0..d).map(|i| without.v21[i] * mx[i]).sum::<f64>() + without.v22 * my;
    assert!((u - u2).abs() < 1e-12 * (1.0 + u.abs()), "{u} vs {u2}");
    assert!((b - b2).abs() < 1e-12 * (1.0 + b.abs()), "{b} vs {b2}");
}

/// A one-head softmax model of `preset` with d = 3, L = 6 and random (Gaussian) circuits.
fn model(overrides: &[(&str, &str)]) -> (Config, Model<f64>) {
    let mut cfg = icl_core::presets::preset("he2025-h1").unwrap();
    for (k, v) in [
        ("task.d", "3"),
        ("task.L", "6"),
        ("model.init", "gaussian"),
        ("model.init_scale", "0.5"),
    ]
    .iter()
    .chain(overrides)
    {
        cfg.set(k, v).unwrap();
    }
    let m = Model::<f64>::init(&cfg).unwrap();
    (cfg, m)
}

/// The run's own prediction at temperature tau on one prompt (keys: the context tokens, and the
/// query when self-attending), through the model's head.
fn softmax_prediction(m: &Model<f64>, x: &[f64], y: &[f64], tau: f64) -> f64 {
    let s = m.attention().unwrap();
    let (d, e) = (s.d, s.e());
    let l = y.len() + 1;
    let mut z = vec![0.0; l * e];
    for t in 0..l {
        z[t * e..t * e + d].copy_from_slice(&x[t * d..(t + 1) * d]);
        z[t * e + d] = if t + 1 < l { y[t] } else { 0.0 };
    }
    let c = m.circuits().unwrap().tempered(tau).unwrap();
    let nk = s.keys(l - 1);
    let mut cache = HeadCache::new(nk, e);
    let mut out = [0.0];
    head_forward(
        &s.act(),
        e,
        1,
        c.kq_head(0),
        c.ov_head(0),
        &z[..nk * e],
        &z[(l - 1) * e..],
        &mut cache,
        &mut out,
    );
    out[0]
}

#[test]
fn the_mapped_layer_is_the_runs_first_order_expansion_in_one_over_tau() {
    // softmax(s/tau) = lin_sm(s/tau) + O(1/tau^2): the run's prediction minus the linearised
    // layer's (with m21 kept) falls like 1/tau^2, for every key set and activation
    for over in [
        vec![],
        vec![("model.self_attend", "true")],
        vec![("model.activation", "affine"), ("model.c", "0.5")],
        vec![("model.activation", "tanh"), ("model.param", "merged")],
    ] {
        let (_, m) = model(&over);
        let p = trained::linearise(&m).unwrap();
        assert_eq!(p.self_attend, m.attention().unwrap().self_attend);
        assert!(
            p.m21.iter().any(|v| *v != 0.0),
            "random circuits have m21 != 0"
        );
        let (d, l) = (3, 7);
        let mut prev: Option<f64> = None;
        for k in 0..4 {
            let mut worst: f64 = 0.0;
            let tau = 32.0 * 2f64.powi(k);
            for s in 0..20 {
                let x = normals(100 + s, l * d);
                let y = normals(200 + s, l - 1);
                let (u, b) = tp::predict_parts(&p, &x, &y).unwrap();
                let diff = softmax_prediction(&m, &x, &y, tau) - (u / tau + b);
                worst = worst.max(diff.abs());
            }
            if let Some(pw) = prev {
                let ratio = pw / worst;
                assert!(
                    (3.0..5.0).contains(&ratio),
                    "{over:?}: doubling tau to {tau} divides the gap by {ratio} (want ~4)"
                );
            }
            prev = Some(worst);
        }
    }
}

#[test]
fn models_that_are_not_one_linearisable_head_are_refused() {
    for over in [
        vec![("model.heads", "2")],
        vec![("model.attention", "linear")],
        vec![
            ("task.kind", "varying"),
            ("model.arch", "transformer"),
            ("model.layers", "2"),
        ],
    ] {
        let (_, m) = model(&over);
        match trained::linearise(&m) {
            Err(Error::Unsupported(msg)) => assert!(msg.contains("linearised"), "{msg}"),
            other => panic!("{over:?}: {other:?}"),
        }
    }
    let mut cfg = icl_core::presets::preset("he2025-h1").unwrap();
    cfg.set("task.kind", "multitask").unwrap();
    cfg.set("task.supports", "[[1,2],[3,4]]").unwrap();
    assert!(matches!(
        trained::training_distribution(&cfg),
        Err(Error::Unsupported(_))
    ));
}

fn args(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn num(o: &icl_core::theory::registry::Out, k: &str) -> f64 {
    o.extra
        .iter()
        .find(|(n, _)| *n == k)
        .and_then(|(_, v)| v.as_f64())
        .unwrap_or_else(|| panic!("{k} missing"))
}

#[test]
fn the_registry_evaluates_a_loaded_run() {
    let (cfg, m) = model(&[("task.sigma2", "0.3")]);
    let run = || {
        Some(Trained {
            config: cfg.clone(),
            model: m.clone(),
        })
    };
    let (out, vals) =
        evaluate_with("optimal-temperature", &args(&[("run", "somewhere")]), run()).unwrap();
    // defaults from the run: d, l = L + 1, its training distribution as the test one
    assert_eq!(vals["d"], "3");
    assert_eq!(vals["l"], "7");
    assert_eq!(vals["test-sigma-w"], format!("{}", 1.0 / 3.0));
    assert_eq!(vals["test-sigma"], format!("{}", 0.3f64.sqrt()));
    // the value is the exact form at the mapped layer with m21 set to 0
    let mut p = trained::linearise(&m).unwrap();
    p.m21 = vec![0.0; 3];
    let test = trained::training_distribution(&cfg).unwrap();
    let e = exact::coefficients(&p, &test, 7).unwrap();
    let paper = tp::coefficients(&p, &test, 7).unwrap();
    assert_eq!(out.value, Value::Num(e.tau_opt().unwrap()));
    assert_eq!(num(&out, "tau_opt_paper"), paper.tau_opt().unwrap());
    assert_eq!(num(&out, "run_v22"), p.v22);
    // a test-time shift and another test length are flags as without a run
    let (g, _) = evaluate_with(
        "temperature-error",
        &args(&[
            ("run", "x"),
            ("tau", "2"),
            ("test-sigma-x", "2"),
            ("l", "20"),
        ]),
        run(),
    )
    .unwrap();
    let shifted = Gaussian {
        sigma_x: Gaussian::isotropic(3, 2.0, 1.0, 0.0).sigma_x,
        ..test.clone()
    };
    let e2 = exact::coefficients(&p, &shifted, 20).unwrap();
    assert_eq!(g.value, Value::Num(e2.g(2.0)));
    // temperature-isotropic: Sigma_w defaults to the run's I/d
    let (iso, vals) = evaluate_with(
        "temperature-isotropic",
        &args(&[("run", "x"), ("alpha", "2")]),
        run(),
    )
    .unwrap();
    assert_eq!(vals["beta"], format!("{}", 1.0 / 3.0));
    let t3 = Gaussian::isotropic(3, 2.0, 1.0 / 3.0, 0.3);
    assert!(
        (iso.value.as_f64().unwrap() - exact::coefficients(&p, &t3, 7).unwrap().tau_opt().unwrap())
            .abs()
            < 1e-12
    );
    // refused: another d, the flags the run replaces, a run without a loader, a loader without --run
    for bad in [
        vec![("run", "x"), ("d", "5")],
        vec![("run", "x"), ("train-sigma", "0.1")],
        vec![("run", "x"), ("pretrain-m", "100")],
    ] {
        let r = evaluate_with("optimal-temperature", &args(&bad), run());
        assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "{bad:?}: {r:?}"
        );
    }
    assert!(matches!(
        evaluate("optimal-temperature", &args(&[("run", "some/dir")])),
        Err(Error::Unsupported(_))
    ));
    assert!(evaluate_with("optimal-temperature", &[], run()).is_err());
    assert!(evaluate_with("eta-star", &[], run()).is_err());
    // "none" is no run
    assert!(evaluate("optimal-temperature", &args(&[("run", "none")])).is_ok());
}
