//! he2025 theory: the spec's reference numbers (§3.2, §4, §5.1), finite-difference gradients,
//! the ODE (D.4) and Monte Carlo checks of every closed-form risk.
use icl_core::data::{covariance::kms, Task};
use icl_core::estimator::Estimator;
use icl_core::families::attention::eval::mc_risk;
use icl_core::fd;
use icl_core::rng::{self, Domain};
use icl_core::theory::he2025::{self as he, FlowOptions, Method, Setting};
use icl_core::theory::ode::Adaptive;
use icl_core::Config;

fn paper() -> Setting {
    Setting::new(5, 40, 0.1).unwrap()
}

fn near(a: f64, b: f64, tol: f64, what: &str) {
    assert!((a - b).abs() <= tol, "{what}: {a} vs {b} (tol {tol})");
}

#[test]
fn reference_numbers() {
    let s = paper();
    near(s.eta_star(), 0.879121, 1e-6, "eta*");
    near(s.eta_vgd_star(), 0.860215, 1e-6, "eta vgd*");
    near(
        s.mu_gamma(0.1267).unwrap(),
        3.46885,
        1e-5,
        "mu_gamma(0.1267)",
    );
    near(
        2.0 * 0.1267 * s.mu_gamma(0.1267).unwrap(),
        0.87901,
        1e-5,
        "2 gamma mu_gamma",
    );
    near(s.mu_gamma(0.13).unwrap(), 3.38075, 1e-5, "mu_gamma(0.13)");
    near(
        2.0 * 1e-6 * s.mu_gamma(1e-6).unwrap(),
        s.eta_star(),
        1e-9,
        "2 gamma mu_gamma -> eta*",
    );
    near(
        s.debiased_gd_risk(s.eta_star()),
        0.242857,
        1e-6,
        "debiased at eta*",
    );
    near(
        s.vanilla_gd_risk(s.eta_vgd_star()),
        0.239785,
        1e-6,
        "vanilla at its optimum",
    );
    near(s.vanilla_gd_risk(1.0), 0.26250, 1e-5, "vanilla at 1");
    near(s.debiased_gd_risk(1.0), 0.25906, 1e-5, "debiased at 1");
    near(s.ols_risk().unwrap(), 0.11471, 1e-5, "OLS");
    near(s.approx_loss_star(), 0.220879, 1e-6, "L~*");
    near(
        he::gd_risk_star_asymptotic(s.xi(), 0.1),
        0.220879,
        1e-6,
        "asymptotic gd",
    );
    near(
        he::gd_risk_asymptotic(s.xi(), 0.1, 1.0 / (s.xi() * 1.1 + 1.0)),
        0.220879,
        1e-6,
        "asymptotic gd at eta",
    );
    let bayes = he::bayes_risk_asymptotic(s.xi(), 0.1).unwrap();
    near(bayes, 0.11406, 1e-5, "Bayes (F.36)");
    near(
        he::gd_risk_star_asymptotic(s.xi(), 0.1) / bayes,
        1.9366,
        1e-4,
        "ratio",
    );
    near(he::ratio_bound(s.xi(), 0.1).unwrap(), 2.0853, 1e-4, "bound");
    for (xi, s2, ratio, bound) in [
        (0.2, 3.0, 1.0116, 1.0231),
        (0.5, 1.0, 1.0607, 1.1667),
        (1.0, 1.0, 1.0301, 1.1667),
    ] {
        let r = he::gd_risk_star_asymptotic(xi, s2) / he::bayes_risk_asymptotic(xi, s2).unwrap();
        near(r, ratio, 1e-4, "ratio");
        near(he::ratio_bound(xi, s2).unwrap(), bound, 1e-4, "bound");
        assert!(r <= bound);
    }
    // debiased risk minimised at eta*, vanilla at eta_vgd*
    for de in [-1e-3, 1e-3] {
        assert!(s.debiased_gd_risk(s.eta_star() + de) > s.debiased_gd_risk(s.eta_star()));
        assert!(s.vanilla_gd_risk(s.eta_vgd_star() + de) > s.vanilla_gd_risk(s.eta_vgd_star()));
    }
    assert!(s.ols_risk().is_ok() && Setting::new(5, 6, 0.1).unwrap().ols_risk().is_err());
    assert!(Setting::new(0, 40, 0.1).is_err() && Setting::new(5, 40, -1.0).is_err());
    assert!(s.mu_gamma(0.0).is_err() && he::ratio_bound(1.0, 0.0).is_err());
}

#[test]
fn approx_loss_reference_values() {
    let s = paper();
    near(
        s.approx_loss(&[0.1267, -0.1267], &[3.5006, -3.5006])
            .unwrap(),
        0.221067,
        1e-6,
        "L~ trained",
    );
    let mg = s.mu_gamma(0.1267).unwrap();
    near(
        s.approx_loss(&[0.1267, -0.1267], &[mg, -mg]).unwrap(),
        0.220993,
        1e-6,
        "L~ manifold",
    );
    near(
        s.manifold_loss(0.1267).unwrap(),
        0.220993,
        1e-6,
        "manifold loss",
    );
    near(
        s.manifold_loss(1e-5).unwrap(),
        0.220879,
        1e-6,
        "manifold loss gamma -> 0",
    );
    let (w, m) = s.nw_optimum();
    near(w, 1.0 / 5f64.sqrt(), 1e-12, "omega*");
    near(m, 1.627695, 1e-6, "mu*");
    near(
        s.approx_loss(&[w], &[m]).unwrap(),
        0.372073,
        1e-6,
        "single head optimum",
    );
    near(
        s.approx_loss(&[0.52], &[1.42]).unwrap(),
        0.382761,
        1e-6,
        "single head trained",
    );
    // mu*(omega) of one head at 1/sqrt(d) is the NW optimum; mu* zeroes grad_mu for any omega
    near(s.mu_star(&[w]).unwrap()[0], m, 1e-9, "mu_star single");
    let om = [0.3, -0.2, 0.05];
    let ms = s.mu_star(&om).unwrap();
    let (mut go, mut gm) = ([0.0; 3], [0.0; 3]);
    s.approx_loss_grad(&om, &ms, &mut go, &mut gm).unwrap();
    assert!(gm.iter().all(|g| g.abs() < 1e-12), "{gm:?}");
    // the exact Taylor expansion behind eq. (4.1)
    let mu = [0.7, -1.1, 0.4];
    let dot: f64 = mu.iter().zip(&om).map(|(a, b)| a * b).sum();
    let lam = s.lambda();
    let mut taylor = 0.1 + (1.0 - dot) * (1.0 - dot) + lam * mu.iter().sum::<f64>().powi(2);
    let mut fact = 1.0;
    for k in 1..40 {
        fact *= k as f64;
        let p: f64 = mu.iter().zip(&om).map(|(a, b)| a * b.powi(k)).sum();
        taylor += lam * 5f64.powi(k) / fact * p * p;
    }
    near(
        s.approx_loss(&om, &mu).unwrap(),
        taylor,
        1e-12,
        "Taylor form",
    );
    assert!(s.approx_loss(&[0.1], &[0.1, 0.2]).is_err());
    assert!(s.approx_loss(&[f64::NAN], &[0.1]).is_err());
}

#[test]
fn approx_loss_gradient_matches_finite_differences() {
    let s = Setting::new(7, 30, 0.3).unwrap();
    let mut r = rng::stream(3, Domain::Task, 0, 0);
    for h in 1..=4 {
        let mut x = vec![0.0; 2 * h];
        rng::fill_normal(&mut r, &mut x);
        for (i, v) in x.iter_mut().enumerate() {
            *v *= if i < h { 0.3 } else { 2.0 };
        }
        let (mut go, mut gm) = (vec![0.0; h], vec![0.0; h]);
        s.approx_loss_grad(&x[..h], &x[h..], &mut go, &mut gm)
            .unwrap();
        let g: Vec<f64> = go.iter().chain(&gm).copied().collect();
        let mut f = |p: &[f64]| s.approx_loss(&p[..h], &p[h..]).unwrap();
        let e = fd::rel_error(&mut f, &x, &g, 1e-6, 1e-8);
        assert!(e < 1e-6, "H = {h}: rel error {e}");
    }
}

#[test]
fn flow_d4_phase_markers_and_reference_trajectory() {
    let s = paper();
    let f = s.two_head_flow(1e-3, &FlowOptions::default()).unwrap();
    near(f.peak_rho, 0.576, 0.005, "peak rho d=5");
    near(f.tau2, 7.7, 0.3, "tau2 d=5");
    near(f.tau1.unwrap(), 5.5, 0.5, "tau1 d=5");
    near(f.final_state[0], 2.400, 2e-3, "phi(2000)");
    near(f.final_state[1], 0.183, 2e-3, "rho(2000)");
    let at = |t: f64| {
        *f.trajectory
            .iter()
            .find(|r| (r[0] - t).abs() < 1e-6)
            .unwrap()
    };
    for (t, phi, rho, loss) in [
        (20.0, 0.952, 0.438, 0.2386),
        (200.0, 1.596, 0.273, 0.2234),
        (2000.0, 2.400, 0.183, 0.2214),
    ] {
        let r = at(t);
        near(r[1], phi, 2e-3, "phi");
        near(r[2], rho, 2e-3, "rho");
        near(2.0 * r[3], loss, 2e-4, "L~");
    }
    let r = at(2000.0);
    near(2.0 * r[1] * r[2], 0.878, 2e-3, "2 phi rho at 2000");
    assert!(2.0 * r[1] * r[2] < s.eta_star());
    let s10 = Setting::new(10, 40, 0.1).unwrap();
    let f10 = s10
        .two_head_flow(
            1e-3,
            &FlowOptions {
                t_end: 100.0,
                ..FlowOptions::default()
            },
        )
        .unwrap();
    near(f10.peak_rho, 0.455, 0.005, "peak rho d=10");
    near(f10.tau2, 7.0, 0.3, "tau2 d=10");
    // adaptive RK45 agrees with RK4
    let opt = FlowOptions {
        t_end: 200.0,
        method: Method::Adaptive(Adaptive {
            rtol: 1e-10,
            atol: 1e-13,
            ..Adaptive::default()
        }),
        sample_dt: 0.05,
    };
    let fa = s.two_head_flow(1e-3, &opt).unwrap();
    let fr = s
        .two_head_flow(
            1e-3,
            &FlowOptions {
                t_end: 200.0,
                ..FlowOptions::default()
            },
        )
        .unwrap();
    near(fa.peak_rho, fr.peak_rho, 1e-6, "adaptive peak");
    near(fa.final_state[0], fr.final_state[0], 1e-7, "adaptive phi");
    near(fa.final_state[1], fr.final_state[1], 1e-7, "adaptive rho");
}

#[test]
fn general_flow_keeps_symmetry_and_matches_d4() {
    let s = paper();
    let a = 1e-3;
    let mut worst: f64 = 0.0;
    let y = s
        .flow_heads(&[a, -a], &[a, -a], 30.0, 0.01, &mut |_t, y| {
            worst = worst.max((y[0] + y[1]).abs()).max((y[2] + y[3]).abs());
            true
        })
        .unwrap();
    assert!(worst < 1e-12, "symmetry broken by {worst}");
    let f = s
        .two_head_flow(
            a,
            &FlowOptions {
                t_end: 30.0,
                ..FlowOptions::default()
            },
        )
        .unwrap();
    near(y[2], f.final_state[0], 1e-10, "mu1 = phi");
    near(y[0], f.final_state[1], 1e-10, "omega1 = rho");
    // GD on L~/2 with a small step tracks the flow at time lr * steps
    let (om, mu) = s
        .gd_approx_loss(&[a, -a], &[a, -a], 1e-3, 30_000, 1000, &mut |_, _, _, _| {
            true
        })
        .unwrap();
    near(om[0], y[0], 1e-3, "GD omega");
    near(mu[0], y[2], 1e-3, "GD mu");
    // a 4-head flow from a random start decreases L~ monotonically and ends near the manifold
    let mut prev = f64::INFINITY;
    let mut mono = true;
    s.flow_heads(
        &[0.02, -0.01, 0.015, 0.005],
        &[0.01, -0.02, 0.01, -0.005],
        200.0,
        0.02,
        &mut |_t, y| {
            let l = s.approx_loss(&y[..4], &y[4..]).unwrap();
            mono &= l <= prev + 1e-14;
            prev = l;
            true
        },
    )
    .unwrap();
    assert!(mono);
    assert!(prev < 0.2245, "final L~ {prev}");
}

fn cfg(kv: &[(&str, &str)]) -> Config {
    let mut c = Config::default();
    for (k, v) in kv {
        c.set(k, v).unwrap();
    }
    c.validate().unwrap();
    c
}

#[test]
fn closed_form_risks_match_monte_carlo() {
    let s = paper();
    let task = Task::new(&cfg(&[])).unwrap();
    let ests = [
        Estimator::VanillaGd { eta: s.eta_star() },
        Estimator::DebiasedGd { eta: s.eta_star() },
        Estimator::VanillaGd { eta: 1.0 },
        Estimator::DebiasedGd { eta: 1.0 },
        Estimator::Ols,
        Estimator::Ridge { lambda: 0.5 },
    ];
    let n = 50_000;
    let r = mc_risk::<f64>(&task, 40, n, 11, None, &ests).unwrap();
    let cf = [
        s.vanilla_gd_risk(s.eta_star()),
        s.debiased_gd_risk(s.eta_star()),
        s.vanilla_gd_risk(1.0),
        s.debiased_gd_risk(1.0),
        s.ols_risk().unwrap(),
    ];
    for (i, c) in cf.iter().enumerate() {
        let z = (r[i].risk - c) / r[i].stderr;
        assert!(
            z.abs() < 3.0,
            "{}: MC {} +- {} vs closed form {c} (z = {z})",
            ests[i].name(),
            r[i].risk,
            r[i].stderr
        );
    }
    // ridge (lambda = d sigma^2) against the semi-analytic finite-L Bayes risk, and 0.1146 of the spec
    let (b, se) = s.bayes_risk_mc(10_000, 5).unwrap();
    near(b, 0.1146, 0.001, "Bayes semi-analytic");
    let z = (r[5].risk - b) / (r[5].stderr * r[5].stderr + se * se).sqrt();
    assert!(
        z.abs() < 3.0,
        "ridge MC {} vs Bayes {b} (z = {z})",
        r[5].risk
    );
    assert!(b > he::bayes_risk_asymptotic(s.xi(), 0.1).unwrap());
}

#[test]
fn preconditioned_gd_risk_matches_spec_and_monte_carlo() {
    let (d, l, s2) = (5, 40, 0.1);
    let sigma = kms(d, 0.5);
    let st = he::sigma_tilde(&sigma, d, l, s2).unwrap();
    let sti = he::inverse(&st, d).unwrap();
    let expect_row0 = [1.0689, -0.4559, -0.0335, -0.0025, -0.0002];
    let expect_row2 = [-0.0335, -0.4416, 1.2644, -0.4416, -0.0335];
    for j in 0..d {
        near(sti[j], expect_row0[j], 1e-4, "Sigma~^-1 row 0");
        near(sti[2 * d + j], expect_row2[j], 1e-4, "Sigma~^-1 row 2");
    }
    let si = he::inverse(&sigma, d).unwrap();
    let eye: Vec<f64> = (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
        .collect();
    let cf = [
        he::precond_gd_risk(&sigma, &sti, d, l, s2).unwrap(),
        he::precond_gd_risk(&sigma, &si, d, l, s2).unwrap(),
        he::precond_gd_risk(&sigma, &eye, d, l, s2).unwrap(),
    ];
    near(cf[0], 0.2339, 1e-4, "Gamma = Sigma~");
    near(cf[1], 0.2625, 1e-4, "Gamma = Sigma");
    near(cf[2], 1.1774, 1e-4, "Gamma = I");
    // Sigma~^-1 is optimal: perturbations increase the risk
    for k in 0..d * d {
        let mut a = sti.clone();
        a[k] += 1e-3;
        assert!(he::precond_gd_risk(&sigma, &a, d, l, s2).unwrap() > cf[0]);
    }
    // isotropic reduction: A = eta I gives the vanilla risk
    let s = paper();
    let a: Vec<f64> = eye.iter().map(|v| v * 0.7).collect();
    near(
        he::precond_gd_risk(&eye, &a, d, l, s2).unwrap(),
        s.vanilla_gd_risk(0.7),
        1e-12,
        "isotropic",
    );
    let task = Task::new(&cfg(&[("task.kind", "anisotropic"), ("task.rho", "0.5")])).unwrap();
    let ests: Vec<Estimator> = [&sti, &si, &eye]
        .iter()
        .map(|g| Estimator::PrecondGd {
            eta: 1.0,
            gamma_inv: (*g).clone(),
            debiased: false,
        })
        .collect();
    let r = mc_risk::<f64>(&task, l, 50_000, 17, None, &ests).unwrap();
    for i in 0..3 {
        let z = (r[i].risk - cf[i]) / r[i].stderr;
        assert!(
            z.abs() < 3.0,
            "precond {i}: MC {} +- {} vs {} (z = {z})",
            r[i].risk,
            r[i].stderr,
            cf[i]
        );
    }
}
