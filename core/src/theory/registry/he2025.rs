//! He et al. (2025)'s quantities: the approximate loss, its optima, the GD and Bayes risks and
//! the gradient flows ([`crate::theory::he2025`]).
use super::{bad, bool_flag, out_bytes, sum, traj_bytes, Ctx, Out, Traj, Value, P, Q};
use crate::budget::product;
use crate::theory::{he2025, ode};
use crate::Result;
use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

const HE: &[P] = &[
    P("d", Some("5"), "covariate dimension"),
    P("L", Some("40"), "context length"),
    P("sigma2", Some("0.1"), "label noise variance"),
];

impl Ctx {
    /// The setting of the parameters `d`, `L`, `sigma2` ([`HE`]).
    fn he(&self) -> Result<he2025::Setting> {
        he2025::Setting::new(self.u("d")?, self.u("L")?, self.f("sigma2")?)
    }
}

/// The quantities of He et al. (2025).
pub fn quantities() -> Vec<Q> {
    vec![
        Q { name: "eta-star", paper: "he2025", about: "optimal debiased-GD step eta* = L/(d(1+sigma^2)+L) (Thm 4.2(ii))", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.eta_star())) },
        Q { name: "eta-vgd-star", paper: "he2025", about: "optimal vanilla-GD step L/(d(1+sigma^2)+L+1)", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.eta_vgd_star())) },
        Q {
            name: "mu-gamma",
            paper: "he2025",
            about: "OV value on the solution manifold, gamma/(2(gamma^2+lambda sinh(d gamma^2))) (eq. 4.5, corrected)",
            params: params!(P("gamma", None, "KQ scale gamma > 0")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let g = c.f("gamma")?;
                let m = s.mu_gamma(g)?;
                Ok(Out::num(m).with("eta_eff", Value::from(2.0 * g * m)).with("manifold_loss", Value::from(s.manifold_loss(g)?)))
            },
        },
        Q {
            name: "mu-star",
            paper: "he2025",
            about: "minimiser over mu of L~ at fixed omega: (omega omega^T + lambda E)^{-1} omega",
            params: params!(P("omega", None, "per-head omega, comma-separated")),
            shared: HE,
            run: |c| Ok(Out::list(&c.he()?.mu_star(&c.list("omega")?)?)),
        },
        Q {
            name: "approx-loss",
            paper: "he2025",
            about: "approximate loss L~(omega, mu) (eq. 4.1); also its gradient",
            params: params!(P("omega", None, "per-head omega"), P("mu", None, "per-head mu")),
            shared: HE,
            run: |c| {
                let (om, mu) = (c.list("omega")?, c.list("mu")?);
                let (mut go, mut gm) = (vec![0.0; om.len()], vec![0.0; om.len()]);
                let l = c.he()?.approx_loss_grad(&om, &mu, &mut go, &mut gm)?;
                Ok(Out::num(l).with("grad_omega", Value::from(go)).with("grad_mu", Value::from(gm)))
            },
        },
        Q {
            name: "manifold-loss",
            paper: "he2025",
            about: "L~ on S_gamma with optimal ||mu||_1: sigma^2 + 1 - (1 + lambda sinh(d gamma^2)/gamma^2)^-1",
            params: params!(P("gamma", None, "KQ scale")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                Ok(Out::num(s.manifold_loss(c.f("gamma")?)?).with("infimum", Value::from(s.approx_loss_star())))
            },
        },
        Q {
            name: "nw-optimum",
            paper: "he2025",
            about: "single-head L~ optimum [omega*, mu*] = [1/sqrt(d), sqrt(d)/(1+e(1+sigma^2)d/L)] and its L~",
            params: HE,
            shared: &[],
            run: |c| {
                let s = c.he()?;
                let (w, m) = s.nw_optimum();
                Ok(Out::list(&[w, m]).with("approx_loss", Value::from(s.approx_loss(&[w], &[m])?)))
            },
        },
        Q {
            name: "gd-risk",
            paper: "he2025",
            about: "exact finite-L risk of one-step GD (F.25-F.29; debiased: spec 3.1); eta defaults to the variant's optimum",
            params: params!(P("variant", Some("debiased"), "vanilla | debiased"), P("eta", Some("opt"), "step size or `opt`")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let vanilla = match c.s("variant")?.as_str() {
                    "vanilla" => true,
                    "debiased" => false,
                    v => return Err(bad(format!("--variant: {v:?} is not vanilla or debiased"))),
                };
                let eta = if c.raw("eta")? == "opt" { if vanilla { s.eta_vgd_star() } else { s.eta_star() } } else { c.f("eta")? };
                let r = if vanilla { s.vanilla_gd_risk(eta) } else { s.debiased_gd_risk(eta) };
                Ok(Out::num(r).with("eta", Value::from(eta)))
            },
        },
        Q {
            name: "gd-risk-asymptotic",
            paper: "he2025",
            about: "L -> inf, d/L -> xi limit of the GD risk (F.33) at eta (default eta* limit)",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance"), P("eta", Some("opt"), "step size or `opt`")),
            shared: &[],
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                if c.raw("eta")? == "opt" {
                    Ok(Out::num(he2025::gd_risk_star_asymptotic(xi, s2)).with("eta", Value::from(1.0 / (xi * (1.0 + s2) + 1.0))))
                } else {
                    Ok(Out::num(he2025::gd_risk_asymptotic(xi, s2, c.f("eta")?)))
                }
            },
        },
        Q { name: "ols-risk", paper: "he2025", about: "OLS risk sigma^2 (1 + d/(L-d-1))", params: &[], shared: HE, run: |c| Ok(Out::num(c.he()?.ols_risk()?)) },
        Q {
            name: "bayes-risk",
            paper: "he2025",
            about: "asymptotic Bayes risk (F.36) at xi = d/L",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            shared: &[],
            run: |c| Ok(Out::num(he2025::bayes_risk_asymptotic(c.f("xi")?, c.f("sigma2")?)?)),
        },
        Q {
            name: "bayes-risk-mc",
            paper: "he2025",
            about: "finite-L Bayes risk sigma^2(1 + E tr((X^T X + d sigma^2 I)^-1)) by Monte Carlo: [mean, stderr]",
            params: params!(P("n", Some("20000"), "samples"), P("seed", Some("0"), "seed")),
            shared: HE,
            run: |c| {
                let (m, se) = c.he()?.bayes_risk_mc(c.u("n")?, c.u64("seed")?)?;
                Ok(Out::list(&[m, se]))
            },
        },
        Q {
            name: "ratio-bound",
            paper: "he2025",
            about: "Thm 4.2(iii) bound on E(gd(eta*))/BayesRisk; also the actual asymptotic ratio",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            shared: &[],
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                let ratio = he2025::gd_risk_star_asymptotic(xi, s2) / he2025::bayes_risk_asymptotic(xi, s2)?;
                Ok(Out::num(he2025::ratio_bound(xi, s2)?).with("ratio", Value::from(ratio)))
            },
        },
        Q {
            name: "sigma-tilde",
            paper: "he2025",
            about: "Sigma~ = (1+1/L)Sigma + (tr Sigma + d sigma^2)/L I (B.6) for KMS(rho) (row-major); also its inverse",
            params: params!(P("rho", Some("0.5"), "KMS correlation")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let d = s.d as u64;
                // KMS(rho), Sigma~, its inverse and their output (2 d^2 numbers)
                c.memory(sum(&[product(&[8 * 8, d, d]), product(&[2, d, d]).and_then(out_bytes)]), "--d squared")?;
                let st = he2025::sigma_tilde(&crate::data::covariance::kms(s.d, c.f("rho")?), s.d, s.l, s.sigma2)?;
                let inv = he2025::inverse(&st, s.d)?;
                Ok(Out::list(&st).with("inverse", Value::from(inv)))
            },
        },
        Q {
            name: "precond-gd-risk",
            paper: "he2025",
            about: "exact risk of preconditioned vanilla GD with Gamma in {sigma-tilde, sigma, identity}, x ~ N(0, KMS(rho)) (Lemma G.4)",
            params: params!(P("gamma", Some("sigma-tilde"), "sigma-tilde | sigma | identity"), P("eta", Some("1"), "step size"), P("rho", Some("0.5"), "KMS correlation")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let d = s.d;
                c.memory(product(&[16 * 8, d as u64, d as u64]), "--d squared")?;
                let sigma = crate::data::covariance::kms(d, c.f("rho")?);
                let g = match c.s("gamma")?.as_str() {
                    "sigma-tilde" => he2025::sigma_tilde(&sigma, d, s.l, s.sigma2)?,
                    "sigma" => sigma.clone(),
                    "identity" => (0..d * d).map(|k| if k / d == k % d { 1.0 } else { 0.0 }).collect(),
                    v => return Err(bad(format!("--gamma: {v:?} is not sigma-tilde, sigma or identity"))),
                };
                let eta = c.f("eta")?;
                let a: Vec<f64> = he2025::inverse(&g, d)?.iter().map(|v| v * eta).collect();
                Ok(Out::num(he2025::precond_gd_risk(&sigma, &a, d, s.l, s.sigma2)?))
            },
        },
        Q {
            name: "he2025-flow",
            paper: "he2025",
            about: "two-head gradient flow (D.4) from phi = rho = alpha: value = peak of rho; tau1, tau2, final state; trajectory",
            params: params!(
                P("alpha", Some("0.001"), "initial scale"),
                P("t-end", Some("2000"), "final time"),
                P("dt", Some("0.01"), "RK4 step (ignored with --adaptive)"),
                P("adaptive", Some("false"), "use Dormand-Prince RK45 (true/false)"),
                P("sample-dt", Some("0.1"), "trajectory spacing")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let (t_end, sample_dt) = (c.f("t-end")?, c.f("sample-dt")?);
                let method = if bool_flag(c, "adaptive")? {
                    he2025::Method::Adaptive(ode::Adaptive::default())
                } else {
                    let dt = c.f("dt")?;
                    c.count(t_end / dt, "--t-end / --dt (RK4 steps; --adaptive picks its own)")?;
                    he2025::Method::Rk4 { dt }
                };
                let rows = c.count(t_end / sample_dt, "--t-end / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(rows, 6), "--t-end / --sample-dt")?;
                let f = s.two_head_flow(c.f("alpha")?, &he2025::FlowOptions { t_end, method, sample_dt })?;
                let rows: Vec<Vec<f64>> = f.trajectory.iter().map(|r| vec![r[0], r[1], r[2], 2.0 * r[3], 2.0 * r[1] * r[2], s.phi_star(r[2])]).collect();
                Ok(Out::num(f.peak_rho)
                    .with("tau1", Value::from(f.tau1))
                    .with("tau2", Value::from(f.tau2))
                    .with("phi_end", Value::from(f.final_state[0]))
                    .with("rho_end", Value::from(f.final_state[1]))
                    .with("eta_eff_end", Value::from(2.0 * f.final_state[0] * f.final_state[1]))
                    .with("eta_star", Value::from(s.eta_star()))
                    .with_traj(Traj {
                        title: format!("He et al. (2025) (D.4), d = {}, L = {}, sigma^2 = {}", s.d, s.l, s.sigma2),
                        columns: ["t", "phi", "rho", "approx_loss", "two_phi_rho", "phi_star"].iter().map(|s| s.to_string()).collect(),
                        rows,
                        plot: vec![1, 2, 3, 4],
                        log_y: false,
                        refs: vec![("eta*".into(), s.eta_star()), ("L~*".into(), s.approx_loss_star())],
                    }))
            },
        },
        Q {
            name: "he2025-gd",
            paper: "he2025",
            about: "gradient descent on L~/2 from any (omega, mu): value = final L~; final omega, mu; trajectory",
            params: params!(
                P("omega", None, "initial per-head omega"),
                P("mu", None, "initial per-head mu"),
                P("lr", Some("0.01"), "step size"),
                P("steps", Some("100000"), "GD steps (at most 10^7)"),
                P("every", Some("100"), "trajectory spacing (steps)")),
            shared: HE,
            run: |c| {
                let s = c.he()?;
                let (om0, mu0) = (c.list("omega")?, c.list("mu")?);
                let h = om0.len();
                let (steps, every) = (c.u("steps")?, c.u("every")?);
                c.count(steps as f64, "--steps (GD steps)")?;
                c.memory(traj_bytes(steps as u64 / every as u64, 2 + 2 * h as u64), "--steps / --every x the heads")?;
                let mut rows = Vec::new();
                let mut last = f64::NAN;
                let (om, mu) = s.gd_approx_loss(&om0, &mu0, c.f("lr")?, steps, every, &mut |st, l, o, m| {
                    let mut r = vec![st as f64, l];
                    r.extend_from_slice(o);
                    r.extend_from_slice(m);
                    rows.push(r);
                    last = l;
                    true
                })?;
                let mut cols = vec!["step".to_string(), "approx_loss".to_string()];
                cols.extend((0..h).map(|i| format!("omega{}", i + 1)));
                cols.extend((0..h).map(|i| format!("mu{}", i + 1)));
                Ok(Out::num(last).with("omega", Value::from(om)).with("mu", Value::from(mu)).with_traj(Traj {
                    title: format!("GD on L~/2, H = {h}"),
                    columns: cols,
                    rows,
                    plot: (2..2 + 2 * h).collect(),
                    log_y: false,
                    refs: Vec::new(),
                }))
            },
        },
    ]
}
