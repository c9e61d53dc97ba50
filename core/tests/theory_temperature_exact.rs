//! The temperature paper's linearised layer: its Monte Carlo (plain and conditional) and the exact
//! finite-size coefficients of `G(tau) = a/tau^2 - b/tau + c` against it (issue 20).
use icl_core::theory::temperature::mc::{self, Estimator};
use icl_core::theory::temperature::{self as tp, Gaussian, Params, Pretrain};

/// A random SPD matrix `A A^T/d + floor I` (row-major) from a fixed stream.
fn spd(d: usize, seed: u64, floor: f64) -> Vec<f64> {
    let mut r = icl_core::rng::stream(seed, icl_core::rng::Domain::Task, 0, 0);
    let mut g = vec![0.0; d * d];
    icl_core::rng::fill_normal(&mut r, &mut g);
    (0..d * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            (0..d).map(|t| g[i * d + t] * g[j * d + t]).sum::<f64>() / d as f64
                + if i == j { floor } else { 0.0 }
        })
        .collect()
}

fn diag(v: &[f64]) -> Vec<f64> {
    let d = v.len();
    (0..d * d)
        .map(|k| if k / d == k % d { v[k / d] } else { 0.0 })
        .collect()
}

#[test]
fn monte_carlo_plain_and_conditional_agree_and_are_deterministic() {
    let d = 4;
    let train = Gaussian {
        mu_w: vec![0.5, -0.3, 0.2, 0.1],
        ..Gaussian::isotropic(d, 1.0, 1.0, 0.25)
    };
    let test = Gaussian {
        mu_x: vec![0.3, 0.0, -0.2, 0.1],
        sigma_x: spd(d, 1, 0.5),
        mu_w: vec![0.2, 0.1, 0.0, -0.4],
        sigma_w: diag(&[1.5, 0.5, 1.0, 2.0]),
        d,
        sigma2: 0.5,
    };
    let p = tp::pretrained(&train, 10, Pretrain::Population).unwrap();
    let n = 40_000;
    let plain = mc::coefficients(&p, &test, 8, n, 5, Estimator::Plain).unwrap();
    let cond = mc::coefficients(&p, &test, 8, n, 5, Estimator::Conditional).unwrap();
    for tau in [0.5, 1.0, 3.0] {
        let (gp, sp) = plain.g(tau);
        let (gc, sc) = cond.g(tau);
        // the conditional estimator has the smaller variance; both estimate the same G
        assert!(sc < sp, "tau {tau}: conditional SE {sc} >= plain SE {sp}");
        let z = (gp - gc) / sp;
        assert!(
            z.abs() < 4.0,
            "tau {tau}: plain {gp} +- {sp}, conditional {gc} +- {sc}"
        );
    }
    let again = mc::coefficients(&p, &test, 8, n, 5, Estimator::Conditional).unwrap();
    assert_eq!(again, cond, "same seed, same result");
    let other = mc::coefficients(&p, &test, 8, n, 6, Estimator::Conditional).unwrap();
    assert_ne!(other, cond);
    // bad input: typed errors
    assert!(mc::coefficients(&p, &test, 1, n, 5, Estimator::Plain).is_err());
    assert!(mc::coefficients(&p, &test, 8, 1, 5, Estimator::Plain).is_err());
    let bad = Params {
        m21: vec![1.0; d],
        ..p.clone()
    };
    assert!(mc::coefficients(&bad, &test, 8, n, 5, Estimator::Conditional).is_err());
    assert!(mc::coefficients(&bad, &test, 8, 10, 5, Estimator::Plain).is_ok());
}

fn iso(d: usize, alpha: f64, beta: f64, sigma: f64) -> Gaussian {
    Gaussian::isotropic(d, alpha, beta, sigma * sigma)
}

/// `(name, train, test, l_train, l_test, pretraining)`.
type Case = (&'static str, Gaussian, Gaussian, usize, usize, Pretrain);

fn cases() -> Vec<Case> {
    let pop = Pretrain::Population;
    let mut v: Vec<Case> = Vec::new();
    for (d, l) in [(3, 6), (5, 10), (8, 20)] {
        let tr = iso(d, 1.0, 1.0, 0.3);
        let lin: Vec<f64> = (0..d).map(|i| 0.5 + i as f64 / (d - 1) as f64).collect();
        let e1 = |c: f64| {
            (0..d)
                .map(|i| if i == 0 { c } else { 0.0 })
                .collect::<Vec<f64>>()
        };
        v.push(("no shift", tr.clone(), tr.clone(), l, l, pop));
        v.push((
            "isotropic Sigma_x",
            tr.clone(),
            iso(d, 2.0, 1.0, 0.3),
            l,
            l,
            pop,
        ));
        v.push((
            "diagonal Sigma_x",
            tr.clone(),
            Gaussian {
                sigma_x: diag(&lin),
                ..tr.clone()
            },
            l,
            l,
            pop,
        ));
        v.push((
            "full Sigma_x",
            tr.clone(),
            Gaussian {
                sigma_x: spd(d, 11, 0.3),
                ..tr.clone()
            },
            l,
            l,
            pop,
        ));
        v.push((
            "x mean",
            tr.clone(),
            Gaussian {
                mu_x: e1(1.0),
                ..tr.clone()
            },
            l,
            l,
            pop,
        ));
        v.push((
            "task mean and covariance",
            Gaussian {
                mu_w: e1(0.8),
                ..tr.clone()
            },
            Gaussian {
                mu_w: (0..d).map(|i| 0.3 - 0.2 * i as f64).collect(),
                sigma_w: spd(d, 12, 0.4),
                ..tr.clone()
            },
            l,
            l,
            pop,
        ));
        v.push(("noise", tr.clone(), iso(d, 1.0, 1.0, 1.2), l, l, pop));
        let train_full = Gaussian {
            mu_x: e1(-0.5),
            sigma_x: spd(d, 13, 0.4),
            mu_w: lin.iter().map(|x| x - 1.0).collect(),
            sigma_w: spd(d, 14, 0.5),
            d,
            sigma2: 0.5,
        };
        v.push((
            "non-isotropic train",
            train_full.clone(),
            train_full.clone(),
            l,
            l,
            pop,
        ));
        v.push((
            "combined, finite m, l_train != l_test",
            train_full,
            Gaussian {
                mu_x: lin.iter().map(|x| 0.4 * x).collect(),
                sigma_x: spd(d, 15, 0.6),
                mu_w: e1(0.5),
                sigma_w: diag(&lin),
                d,
                sigma2: 0.8,
            },
            2 * l,
            l,
            Pretrain::Sampled { m: 200, seed: 9 },
        ));
    }
    v
}

#[test]
fn exact_form_matches_monte_carlo_for_every_shift() {
    let mut paper_rejected = 0;
    let all = cases();
    for (ci, (name, train, test, ltr, l, how)) in all.iter().enumerate() {
        let d = test.d;
        let p = tp::pretrained(train, *ltr, *how).unwrap();
        let ex = tp::exact::coefficients(&p, test, *l).unwrap();
        let paper = tp::coefficients(&p, test, *l).unwrap();
        let est = mc::coefficients(
            &p,
            test,
            *l,
            30_000,
            100 + ci as u64,
            Estimator::Conditional,
        )
        .unwrap();
        // the coefficients one by one, then G at three temperatures, each within 4 standard errors
        let c = est.coeffs;
        for (k, (e, m)) in [(ex.a, c.a), (ex.b, c.b), (ex.c, c.c)].iter().enumerate() {
            let se = est.cov[k][k].sqrt();
            assert!(
                (e - m).abs() < 4.0 * se,
                "{name} (d {d}, l {l}): coefficient {k}: exact {e}, MC {m} +- {se}"
            );
        }
        let t_opt = ex.tau_opt().unwrap();
        let mut worst_paper: f64 = 0.0;
        for tau in [0.5, 1.0, t_opt] {
            let (g, se) = est.g(tau);
            assert!(
                (ex.g(tau) - g).abs() < 4.0 * se,
                "{name} (d {d}, l {l}): G({tau}) exact {}, MC {g} +- {se}",
                ex.g(tau)
            );
            worst_paper = worst_paper.max((paper.g(tau) - g).abs() / se);
        }
        if worst_paper > 4.0 {
            paper_rejected += 1;
        }
    }
    // the test can fail: at these sizes the leading-order form is many standard errors off
    assert!(
        paper_rejected >= all.len() - 2,
        "the paper form was rejected in only {paper_rejected} of {} cases",
        all.len()
    );
}

#[test]
fn exact_form_matches_the_plain_monte_carlo() {
    // the plain estimator runs the layer itself (predict_parts), independent of the conditional algebra
    let d = 3;
    let train = Gaussian {
        mu_w: vec![0.5, 0.0, -0.5],
        ..iso(d, 1.0, 1.0, 0.5)
    };
    let test = Gaussian {
        mu_x: vec![0.5, -0.3, 0.2],
        sigma_x: spd(d, 21, 0.5),
        mu_w: vec![0.2, 0.4, 0.0],
        sigma_w: diag(&[0.5, 1.0, 1.5]),
        d,
        sigma2: 0.6,
    };
    let p = tp::pretrained(&train, 7, Pretrain::Population).unwrap();
    let ex = tp::exact::coefficients(&p, &test, 5).unwrap();
    let est = mc::coefficients(&p, &test, 5, 200_000, 3, Estimator::Plain).unwrap();
    for tau in [0.5, 1.0, 2.0] {
        let (g, se) = est.g(tau);
        assert!(
            (ex.g(tau) - g).abs() < 4.0 * se,
            "G({tau}): exact {}, plain MC {g} +- {se}",
            ex.g(tau)
        );
    }
}

/// Least-squares slope of log y against log x.
fn loglog_slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = pts.iter().map(|(x, y)| (x.ln(), y.ln())).unzip();
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let sxy: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = lx.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

#[test]
fn gap_between_the_forms_falls_like_one_over_d() {
    // l = 3d, bounded means (norm 0.5 and 0.4, independent of d), a covariance and a noise shift
    let mut gmin = Vec::new();
    let mut tau = Vec::new();
    let mut g1 = Vec::new();
    for d in [8, 16, 32, 64, 128] {
        let l = 3 * d;
        let e1 = |c: f64| {
            (0..d)
                .map(|i| if i == 0 { c } else { 0.0 })
                .collect::<Vec<f64>>()
        };
        let train = Gaussian {
            mu_w: e1(0.4),
            ..iso(d, 1.0, 1.0, 0.1)
        };
        let test = Gaussian {
            mu_x: e1(0.5),
            mu_w: e1(0.4),
            ..iso(d, 1.5, 1.0, 0.5)
        };
        let p = tp::pretrained(&train, l, Pretrain::Population).unwrap();
        let ex = tp::exact::coefficients(&p, &test, l).unwrap();
        let pa = tp::coefficients(&p, &test, l).unwrap();
        let df = d as f64;
        gmin.push((df, (pa.g_min().unwrap() / ex.g_min().unwrap() - 1.0).abs()));
        tau.push((
            df,
            (pa.tau_opt().unwrap() / ex.tau_opt().unwrap() - 1.0).abs(),
        ));
        g1.push((df, (pa.g(1.0) / ex.g(1.0) - 1.0).abs()));
    }
    for (what, pts) in [("G_min", &gmin), ("tau_opt", &tau), ("G(1)", &g1)] {
        let s = loglog_slope(pts);
        eprintln!("{what}: relative gaps {pts:?}, slope {s}");
        assert!((-1.2..=-0.8).contains(&s), "{what}: slope {s} ({pts:?})");
    }
}

#[test]
fn registry_forms_flags_and_bad_input() {
    use icl_core::theory::registry::{evaluate, Value};
    let run = |name: &str, kv: &[(&str, &str)]| {
        let args: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        evaluate(name, &args).map(|r| r.0)
    };
    let get = |o: &icl_core::theory::registry::Out, k: &str| -> Value {
        o.extra.iter().find(|(n, _)| *n == k).unwrap().1.clone()
    };
    // --form paper reproduces Theorem 4.6 as implemented (and the spec's golden tau_opt)
    let kv = [
        ("d", "6"),
        ("l", "14"),
        ("test-sigma-x", "2,1,1,0.5,1,1"),
        ("test-mu-x", "0.3"),
        ("train-mu-w", "0.2,0,0,0,0,0.1"),
        ("test-sigma", "0.5"),
    ];
    let mut kvp = kv.to_vec();
    kvp.push(("form", "paper"));
    let train = Gaussian {
        mu_w: vec![0.2, 0.0, 0.0, 0.0, 0.0, 0.1],
        ..iso(6, 1.0, 1.0, 0.1)
    };
    let test = Gaussian {
        mu_x: vec![0.3; 6],
        sigma_x: diag(&[2.0, 1.0, 1.0, 0.5, 1.0, 1.0]),
        ..iso(6, 1.0, 1.0, 0.5)
    };
    let p = tp::lemma41(&train, 14).unwrap();
    let paper = tp::coefficients(&p, &test, 14).unwrap();
    let exact = tp::exact::coefficients(&p, &test, 14).unwrap();
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    for tau in ["0.5", "1", "2.5"] {
        let t: f64 = tau.parse().unwrap();
        let mut k = kvp.clone();
        k.push(("tau", tau));
        let o = run("temperature-error", &k).unwrap();
        assert!(rel(o.value.as_f64().unwrap(), paper.g(t)) < 1e-12);
        assert_eq!(get(&o, "form"), Value::from("paper"));
        let mut k = kv.to_vec();
        k.push(("tau", tau));
        let o = run("temperature-error", &k).unwrap();
        assert!(
            rel(o.value.as_f64().unwrap(), exact.g(t)) < 1e-12,
            "default is exact"
        );
        assert!(rel(get(&o, "G_paper").as_f64().unwrap(), paper.g(t)) < 1e-12);
        let gap = get(&o, "rel_gap").as_f64().unwrap();
        assert!(rel(gap, paper.g(t) / exact.g(t) - 1.0) < 1e-9);
    }
    let o = run("optimal-temperature", &kvp).unwrap();
    assert!(rel(o.value.as_f64().unwrap(), paper.tau_opt().unwrap()) < 1e-12);
    assert!(
        rel(
            get(&o, "tau_opt_exact").as_f64().unwrap(),
            exact.tau_opt().unwrap()
        ) < 1e-12
    );
    let o = run(
        "optimal-temperature",
        &[("test-sigma-x", "2"), ("form", "paper")],
    )
    .unwrap();
    assert!(
        (o.value.as_f64().unwrap() - 2.99980).abs() < 1e-5,
        "spec 7.1 golden value"
    );
    // the isotropic quantity: the scalar reduction in paper form, the exact form by default
    let o = run(
        "temperature-isotropic",
        &[("d", "7"), ("l", "12"), ("alpha", "2"), ("form", "paper")],
    )
    .unwrap();
    let iso_p = tp::isotropic(7, 12, 2.0, 1.0, 0.01, tp::k_iso(12, 0.01));
    assert!(rel(o.value.as_f64().unwrap(), iso_p.tau_opt().unwrap()) < 1e-12);
    let o = run(
        "temperature-isotropic",
        &[("d", "7"), ("l", "12"), ("alpha", "2")],
    )
    .unwrap();
    let pe = tp::lemma41(&iso(7, 1.0, 1.0, 0.1), 12).unwrap();
    let ex = tp::exact::coefficients(&pe, &iso(7, 2.0, 1.0, 0.1), 12).unwrap();
    assert!(rel(o.value.as_f64().unwrap(), ex.tau_opt().unwrap()) < 1e-12);
    // training length and sampled parameters reach the library
    let o = run(
        "optimal-temperature",
        &[
            ("d", "4"),
            ("l", "9"),
            ("l-train", "20"),
            ("pretrain-m", "50"),
            ("pretrain-seed", "3"),
        ],
    )
    .unwrap();
    let p = tp::pretrained(
        &iso(4, 1.0, 1.0, 0.1),
        20,
        Pretrain::Sampled { m: 50, seed: 3 },
    )
    .unwrap();
    let ex = tp::exact::coefficients(&p, &iso(4, 1.0, 1.0, 0.1), 9).unwrap();
    assert!(rel(o.value.as_f64().unwrap(), ex.tau_opt().unwrap()) < 1e-12);
    // a large mean warns; a small one does not
    let w = |o: &icl_core::theory::registry::Out| match get(o, "warnings") {
        Value::List(v) => v.len(),
        _ => panic!(),
    };
    assert_eq!(
        w(&run("optimal-temperature", &[("d", "20"), ("test-mu-x", "0.1")]).unwrap()),
        0
    );
    assert_eq!(
        w(&run("optimal-temperature", &[("d", "20"), ("test-mu-x", "1")]).unwrap()),
        1
    );
    // bad input: typed errors
    for (name, kv) in [
        (
            "optimal-temperature",
            vec![("d", "3"), ("test-sigma-x", "1,2,3,4,5,6,7,8,9")],
        ),
        (
            "optimal-temperature",
            vec![("d", "2"), ("test-sigma-x", "1,2,2,1")],
        ),
        (
            "optimal-temperature",
            vec![("d", "3"), ("test-mu-x", "1,2")],
        ),
        ("optimal-temperature", vec![("l", "1")]),
        ("optimal-temperature", vec![("l-train", "1")]),
        ("optimal-temperature", vec![("form", "asymptotic")]),
        ("optimal-temperature", vec![("pretrain-m", "0")]),
        ("temperature-error", vec![("tau", "0")]),
        ("temperature-error", vec![("tau", "-1")]),
        ("temperature-error", vec![("tau", "nan")]),
        ("temperature-mc", vec![("n", "1")]),
    ] {
        assert!(run(name, &kv).is_err(), "{name} {kv:?} accepted");
    }
}
