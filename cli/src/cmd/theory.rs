//! `icl theory`: every closed form and dynamical system of the four papers, one command away.
//!
//! `icl theory --list` names each quantity with its parameters; `icl theory NAME --param value ...`
//! computes one (`--json` prints `{"name", "value", ...}`). ODE and simulator quantities write
//! their trajectory with `--csv FILE` and plot it with `--svg FILE`.
//! The numbers come from `icl_core::theory`; this file only parses, prints and plots.
use crate::error::{CliError, CliResult};
use icl_core::theory::{he2025, multilayer, ode, temperature, zhang2025};
use icl_run::plot::{lines_svg, Series};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Arguments of `icl theory`.
#[derive(clap::Args)]
pub struct Args {
    /// Quantity name (`icl theory --list` shows all).
    pub name: Option<String>,
    /// List every quantity with its parameters.
    #[arg(long)]
    pub list: bool,
    /// Print JSON `{"name", "value", ...}`.
    #[arg(long)]
    pub json: bool,
    /// Write the trajectory (ODE and simulator quantities) as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot the trajectory as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The quantity's parameters: `--d 5 --L 40 ...` (see `--list`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub params: Vec<String>,
}

/// One parameter of a quantity: flag (without `--`), default (None = required), help.
struct P(&'static str, Option<&'static str>, &'static str);

/// A recorded trajectory: column names, rows, which columns to plot against column 0.
struct Traj {
    title: String,
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
    plot: Vec<usize>,
    log_y: bool,
    /// Horizontal dashed reference lines (name, y), e.g. theory plateaus.
    refs: Vec<(String, f64)>,
}

/// What a quantity returns: the value, extra named outputs, an optional trajectory.
struct Out {
    value: Value,
    extra: Vec<(&'static str, Value)>,
    traj: Option<Traj>,
}

impl Out {
    fn num(v: f64) -> Out {
        Out {
            value: json!(v),
            extra: Vec::new(),
            traj: None,
        }
    }
    fn list(v: &[f64]) -> Out {
        Out {
            value: json!(v),
            extra: Vec::new(),
            traj: None,
        }
    }
    fn with(mut self, k: &'static str, v: Value) -> Out {
        self.extra.push((k, v));
        self
    }
}

/// A computable quantity.
struct Q {
    name: &'static str,
    paper: &'static str,
    about: &'static str,
    params: &'static [P],
    run: fn(&Ctx) -> CliResult<Out>,
}

/// Parsed `--flag value` pairs with the quantity's defaults filled in.
struct Ctx {
    vals: BTreeMap<String, String>,
}

impl Ctx {
    fn raw(&self, k: &str) -> CliResult<&str> {
        self.vals
            .get(k)
            .map(|s| s.as_str())
            .ok_or_else(|| CliError::input(format!("missing --{k}")))
    }
    fn f(&self, k: &str) -> CliResult<f64> {
        let s = self.raw(k)?;
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| CliError::input(format!("--{k}: {s:?} is not a finite number")))
    }
    fn u(&self, k: &str) -> CliResult<usize> {
        let s = self.raw(k)?;
        s.trim()
            .parse::<usize>()
            .map_err(|_| CliError::input(format!("--{k}: {s:?} is not a non-negative integer")))
    }
    fn list(&self, k: &str) -> CliResult<Vec<f64>> {
        let s = self.raw(k)?;
        s.split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                p.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| CliError::input(format!("--{k}: {p:?} is not a finite number")))
            })
            .collect()
    }
    fn s(&self, k: &str) -> CliResult<String> {
        Ok(self.raw(k)?.to_string())
    }
    fn he(&self) -> CliResult<he2025::Setting> {
        Ok(he2025::Setting::new(
            self.u("d")?,
            self.u("L")?,
            self.f("sigma2")?,
        )?)
    }
}

const HE: &[P] = &[
    P("d", Some("5"), "covariate dimension"),
    P("L", Some("40"), "context length"),
    P("sigma2", Some("0.1"), "label noise variance"),
];

/// `println!` that ignores a closed stdout (`icl theory --list | head` must not panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// A `&'static [P]` from a list of parameters.
macro_rules! params {
    ($($p:expr),* $(,)?) => {{
        const X: &[P] = &[$($p),*];
        X
    }};
}

fn registry() -> Vec<Q> {
    let mut v = vec![
        // ---------------- He et al. (2025)
        Q { name: "eta-star", paper: "he2025", about: "optimal debiased-GD step eta* = L/(d(1+sigma^2)+L) (Thm 4.2(ii))", params: HE, run: |c| Ok(Out::num(c.he()?.eta_star())) },
        Q { name: "eta-vgd-star", paper: "he2025", about: "optimal vanilla-GD step L/(d(1+sigma^2)+L+1)", params: HE, run: |c| Ok(Out::num(c.he()?.eta_vgd_star())) },
        Q {
            name: "mu-gamma",
            paper: "he2025",
            about: "OV value on the solution manifold, gamma/(2(gamma^2+lambda sinh(d gamma^2))) (eq. 4.5, corrected)",
            params: params!(P("gamma", None, "KQ scale gamma > 0"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let s = c.he()?;
                let g = c.f("gamma")?;
                let m = s.mu_gamma(g)?;
                Ok(Out::num(m).with("eta_eff", json!(2.0 * g * m)).with("manifold_loss", json!(s.manifold_loss(g)?)))
            },
        },
        Q {
            name: "mu-star",
            paper: "he2025",
            about: "minimiser over mu of L~ at fixed omega: (omega omega^T + lambda E)^{-1} omega",
            params: params!(P("omega", None, "per-head omega, comma-separated"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| Ok(Out::list(&c.he()?.mu_star(&c.list("omega")?)?)),
        },
        Q {
            name: "approx-loss",
            paper: "he2025",
            about: "approximate loss L~(omega, mu) (eq. 4.1); also its gradient",
            params: params!(P("omega", None, "per-head omega"), P("mu", None, "per-head mu"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let (om, mu) = (c.list("omega")?, c.list("mu")?);
                let (mut go, mut gm) = (vec![0.0; om.len()], vec![0.0; om.len()]);
                let l = c.he()?.approx_loss_grad(&om, &mu, &mut go, &mut gm)?;
                Ok(Out::num(l).with("grad_omega", json!(go)).with("grad_mu", json!(gm)))
            },
        },
        Q {
            name: "manifold-loss",
            paper: "he2025",
            about: "L~ on S_gamma with optimal ||mu||_1: sigma^2 + 1 - (1 + lambda sinh(d gamma^2)/gamma^2)^-1",
            params: params!(P("gamma", None, "KQ scale"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let s = c.he()?;
                Ok(Out::num(s.manifold_loss(c.f("gamma")?)?).with("infimum", json!(s.approx_loss_star())))
            },
        },
        Q {
            name: "nw-optimum",
            paper: "he2025",
            about: "single-head L~ optimum [omega*, mu*] = [1/sqrt(d), sqrt(d)/(1+e(1+sigma^2)d/L)] and its L~",
            params: HE,
            run: |c| {
                let s = c.he()?;
                let (w, m) = s.nw_optimum();
                Ok(Out::list(&[w, m]).with("approx_loss", json!(s.approx_loss(&[w], &[m])?)))
            },
        },
        Q {
            name: "gd-risk",
            paper: "he2025",
            about: "exact finite-L risk of one-step GD (F.25-F.29; debiased: spec 3.1); eta defaults to the variant's optimum",
            params: params!(P("variant", Some("debiased"), "vanilla | debiased"), P("eta", Some("opt"), "step size or `opt`"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let s = c.he()?;
                let vanilla = match c.s("variant")?.as_str() {
                    "vanilla" => true,
                    "debiased" => false,
                    v => return Err(CliError::input(format!("--variant: {v:?} is not vanilla or debiased"))),
                };
                let eta = if c.raw("eta")? == "opt" { if vanilla { s.eta_vgd_star() } else { s.eta_star() } } else { c.f("eta")? };
                let r = if vanilla { s.vanilla_gd_risk(eta) } else { s.debiased_gd_risk(eta) };
                Ok(Out::num(r).with("eta", json!(eta)))
            },
        },
        Q {
            name: "gd-risk-asymptotic",
            paper: "he2025",
            about: "L -> inf, d/L -> xi limit of the GD risk (F.33) at eta (default eta* limit)",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance"), P("eta", Some("opt"), "step size or `opt`")),
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                if c.raw("eta")? == "opt" {
                    Ok(Out::num(he2025::gd_risk_star_asymptotic(xi, s2)).with("eta", json!(1.0 / (xi * (1.0 + s2) + 1.0))))
                } else {
                    Ok(Out::num(he2025::gd_risk_asymptotic(xi, s2, c.f("eta")?)))
                }
            },
        },
        Q { name: "ols-risk", paper: "he2025", about: "OLS risk sigma^2 (1 + d/(L-d-1))", params: HE, run: |c| Ok(Out::num(c.he()?.ols_risk()?)) },
        Q {
            name: "bayes-risk",
            paper: "he2025",
            about: "asymptotic Bayes risk (F.36) at xi = d/L",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            run: |c| Ok(Out::num(he2025::bayes_risk_asymptotic(c.f("xi")?, c.f("sigma2")?)?)),
        },
        Q {
            name: "bayes-risk-mc",
            paper: "he2025",
            about: "finite-L Bayes risk sigma^2(1 + E tr((X^T X + d sigma^2 I)^-1)) by Monte Carlo: [mean, stderr]",
            params: params!(P("n", Some("20000"), "samples"), P("seed", Some("0"), "seed"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let (m, se) = c.he()?.bayes_risk_mc(c.u("n")?, c.u("seed")? as u64)?;
                Ok(Out::list(&[m, se]))
            },
        },
        Q {
            name: "ratio-bound",
            paper: "he2025",
            about: "Thm 4.2(iii) bound on E(gd(eta*))/BayesRisk; also the actual asymptotic ratio",
            params: params!(P("xi", Some("0.125"), "d/L"), P("sigma2", Some("0.1"), "noise variance")),
            run: |c| {
                let (xi, s2) = (c.f("xi")?, c.f("sigma2")?);
                let ratio = he2025::gd_risk_star_asymptotic(xi, s2) / he2025::bayes_risk_asymptotic(xi, s2)?;
                Ok(Out::num(he2025::ratio_bound(xi, s2)?).with("ratio", json!(ratio)))
            },
        },
        Q {
            name: "sigma-tilde",
            paper: "he2025",
            about: "Sigma~ = (1+1/L)Sigma + (tr Sigma + d sigma^2)/L I (B.6) for KMS(rho) (row-major); also its inverse",
            params: params!(P("rho", Some("0.5"), "KMS correlation"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let s = c.he()?;
                let st = he2025::sigma_tilde(&icl_core::task::kms(s.d, c.f("rho")?), s.d, s.l, s.sigma2)?;
                let inv = he2025::inverse(&st, s.d)?;
                Ok(Out::list(&st).with("inverse", json!(inv)))
            },
        },
        Q {
            name: "precond-gd-risk",
            paper: "he2025",
            about: "exact risk of preconditioned vanilla GD with Gamma in {sigma-tilde, sigma, identity}, x ~ N(0, KMS(rho)) (Lemma G.4)",
            params: params!(P("gamma", Some("sigma-tilde"), "sigma-tilde | sigma | identity"), P("eta", Some("1"), "step size"), P("rho", Some("0.5"), "KMS correlation"), P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")),
            run: |c| {
                let s = c.he()?;
                let d = s.d;
                let sigma = icl_core::task::kms(d, c.f("rho")?);
                let g = match c.s("gamma")?.as_str() {
                    "sigma-tilde" => he2025::sigma_tilde(&sigma, d, s.l, s.sigma2)?,
                    "sigma" => sigma.clone(),
                    "identity" => (0..d * d).map(|k| if k / d == k % d { 1.0 } else { 0.0 }).collect(),
                    v => return Err(CliError::input(format!("--gamma: {v:?} is not sigma-tilde, sigma or identity"))),
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
                P("sample-dt", Some("0.1"), "trajectory spacing"),
                P("d", Some("5"), "covariate dimension"),
                P("L", Some("40"), "context length"),
                P("sigma2", Some("0.1"), "label noise variance")
            ),
            run: |c| {
                let s = c.he()?;
                let method = if bool_flag(c, "adaptive")? {
                    he2025::Method::Adaptive(ode::Adaptive::default())
                } else {
                    he2025::Method::Rk4 { dt: c.f("dt")? }
                };
                let f = s.two_head_flow(c.f("alpha")?, &he2025::FlowOptions { t_end: c.f("t-end")?, method, sample_dt: c.f("sample-dt")? })?;
                let rows: Vec<Vec<f64>> = f.trajectory.iter().map(|r| vec![r[0], r[1], r[2], 2.0 * r[3], 2.0 * r[1] * r[2], s.phi_star(r[2])]).collect();
                Ok(Out::num(f.peak_rho)
                    .with("tau1", json!(f.tau1))
                    .with("tau2", json!(f.tau2))
                    .with("phi_end", json!(f.final_state[0]))
                    .with("rho_end", json!(f.final_state[1]))
                    .with("eta_eff_end", json!(2.0 * f.final_state[0] * f.final_state[1]))
                    .with("eta_star", json!(s.eta_star()))
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
                P("steps", Some("100000"), "GD steps"),
                P("every", Some("100"), "trajectory spacing (steps)"),
                P("d", Some("5"), "covariate dimension"),
                P("L", Some("40"), "context length"),
                P("sigma2", Some("0.1"), "label noise variance")
            ),
            run: |c| {
                let s = c.he()?;
                let (om0, mu0) = (c.list("omega")?, c.list("mu")?);
                let h = om0.len();
                let mut rows = Vec::new();
                let mut last = f64::NAN;
                let (om, mu) = s.gd_approx_loss(&om0, &mu0, c.f("lr")?, c.u("steps")?, c.u("every")?, &mut |st, l, o, m| {
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
                Ok(Out::num(last).with("omega", json!(om)).with("mu", json!(mu)).with_traj(Traj {
                    title: format!("GD on L~/2, H = {h}"),
                    columns: cols,
                    rows,
                    plot: (2..2 + 2 * h).collect(),
                    log_y: false,
                    refs: Vec::new(),
                }))
            },
        },
        // ---------------- Zhang et al. (2025)
        Q {
            name: "plateaus",
            paper: "zhang2025",
            about: "plateau losses L(M_0..M_D) = tr(Lambda) - sum_{d<=m} lambda_d/(1+(1+tr/lambda_d)/N) (eqs. 19, 63); --n-max uses E(1/N) (eq. 26)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: NTP training with N uniform on 1..n-max")),
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                zhang2025::a_coeffs(&eigs, inv)?; // validates the eigenvalues
                Ok(Out::list(&zhang2025::plateau_losses_inv_n(&eigs, inv)).with("e_inv_n", json!(inv)))
            },
        },
    ];
    v.extend(zhang_quantities());
    v.extend(temperature_quantities());
    v.extend(multilayer_quantities());
    v
}

impl Out {
    fn with_traj(mut self, t: Traj) -> Out {
        self.traj = Some(t);
        self
    }
}

fn bool_flag(c: &Ctx, k: &str) -> CliResult<bool> {
    match c.raw(k)? {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        v => Err(CliError::input(format!(
            "--{k}: {v:?} is not true or false"
        ))),
    }
}

fn list(reg: &[Q], as_json: bool) -> CliResult {
    if as_json {
        let v: Vec<Value> = reg
            .iter()
            .map(|q| {
                json!({"name": q.name, "paper": q.paper, "about": q.about,
                       "params": q.params.iter().map(|p| json!({"flag": p.0, "default": p.1, "help": p.2})).collect::<Vec<_>>()})
            })
            .collect();
        say!(
            "{}",
            serde_json::to_string_pretty(&Value::Array(v)).unwrap_or_default()
        );
        return Ok(());
    }
    let mut paper = "";
    for q in reg {
        if q.paper != paper {
            paper = q.paper;
            say!("[{paper}]");
        }
        say!("  {:<22} {}", q.name, q.about);
        let ps: Vec<String> = q
            .params
            .iter()
            .map(|p| match p.1 {
                Some(d) => format!("--{} {d}", p.0),
                None => format!("--{} <required>", p.0),
            })
            .collect();
        if !ps.is_empty() {
            say!("  {:<22} {}", "", ps.join("  "));
        }
    }
    say!("\nGlobal flags: --json, --csv FILE, --svg FILE (trajectory quantities).");
    Ok(())
}

/// Split `--flag value` / `--flag=value` pairs; `--json`, `--csv`, `--svg` may also appear here.
fn parse_params(
    raw: &[String],
    a: &mut (bool, Option<PathBuf>, Option<PathBuf>),
) -> CliResult<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < raw.len() {
        let t = &raw[i];
        let Some(flag) = t.strip_prefix("--") else {
            return Err(CliError::input(format!(
                "unexpected argument {t:?} (parameters are --name value)"
            )));
        };
        if flag == "json" {
            a.0 = true;
            i += 1;
            continue;
        }
        let (k, v) = match flag.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                let v = raw
                    .get(i + 1)
                    .ok_or_else(|| CliError::input(format!("--{flag} needs a value")))?;
                i += 1;
                (flag.to_string(), v.clone())
            }
        };
        i += 1;
        match k.as_str() {
            "csv" => a.1 = Some(PathBuf::from(v)),
            "svg" => a.2 = Some(PathBuf::from(v)),
            _ => {
                if out.insert(k.clone(), v).is_some() {
                    return Err(CliError::input(format!("--{k} given twice")));
                }
            }
        }
    }
    Ok(out)
}

/// Check the parameters of quantity `name` against its table, fill in defaults and compute it.
fn evaluate(reg: &[Q], name: &str, mut vals: BTreeMap<String, String>) -> CliResult<(Out, Ctx)> {
    let q = reg.iter().find(|q| q.name == name).ok_or_else(|| {
        CliError::input(format!(
            "unknown quantity {name:?}; `icl theory --list` names them all"
        ))
    })?;
    for k in vals.keys() {
        if !q.params.iter().any(|p| p.0 == k) {
            let known: Vec<String> = q.params.iter().map(|p| format!("--{}", p.0)).collect();
            return Err(CliError::input(format!(
                "{name}: unknown parameter --{k} (takes {})",
                known.join(", ")
            )));
        }
    }
    for p in q.params {
        if !vals.contains_key(p.0) {
            match p.1 {
                Some(d) => {
                    vals.insert(p.0.to_string(), d.to_string());
                }
                None => {
                    return Err(CliError::input(format!(
                        "{name}: missing --{} ({})",
                        p.0, p.2
                    )))
                }
            }
        }
    }
    let ctx = Ctx { vals };
    let out = (q.run)(&ctx)?;
    Ok((out, ctx))
}

pub fn run(a: &Args) -> CliResult {
    let reg = registry();
    let mut g = (a.json, a.csv.clone(), a.svg.clone());
    let name = match a.name.as_deref() {
        Some(n) if !a.list && n != "--list" => n,
        _ => return list(&reg, a.json),
    };
    let mut vals = parse_params(&a.params, &mut g)?;
    if vals.remove("list").is_some() {
        return list(&reg, g.0);
    }
    let (out, ctx) = evaluate(&reg, name, vals)?;
    let (as_json, csv, svg) = g;
    if (csv.is_some() || svg.is_some()) && out.traj.is_none() {
        return Err(CliError::input(format!(
            "{name} has no trajectory (--csv/--svg apply to ODE and simulator quantities)"
        )));
    }
    if let Some(t) = &out.traj {
        if let Some(p) = &csv {
            let mut s = t.columns.join(",");
            s.push('\n');
            for r in &t.rows {
                s.push_str(
                    &r.iter()
                        .map(|v| format!("{v}"))
                        .collect::<Vec<_>>()
                        .join(","),
                );
                s.push('\n');
            }
            icl_run::folder::atomic_write(p, s.as_bytes())?;
        }
        if let Some(p) = &svg {
            let mut series: Vec<Series> = t
                .plot
                .iter()
                .map(|&j| Series {
                    name: t.columns[j].clone(),
                    points: t.rows.iter().map(|r| (r[0], r[j])).collect(),
                    dashed: false,
                })
                .collect();
            if let (Some(first), Some(last)) = (t.rows.first(), t.rows.last()) {
                for (name, y) in &t.refs {
                    series.push(Series {
                        name: name.clone(),
                        points: vec![(first[0], *y), (last[0], *y)],
                        dashed: true,
                    });
                }
            }
            lines_svg(p, &t.title, &t.columns[0], "value", &series, t.log_y)?;
        }
    }
    if as_json {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!(name));
        m.insert("value".into(), out.value.clone());
        for (k, v) in &out.extra {
            m.insert((*k).into(), v.clone());
        }
        m.insert("params".into(), json!(ctx.vals));
        say!(
            "{}",
            serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default()
        );
    } else {
        say!("{name} = {}", fmt_value(&out.value));
        for (k, v) in &out.extra {
            say!("  {k} = {}", fmt_value(v));
        }
    }
    Ok(())
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("{}", n.as_f64().unwrap_or(f64::NAN)),
        Value::Array(a) => a.iter().map(fmt_value).collect::<Vec<_>>().join(", "),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

// ------------------------------------------------------------------------------------------------
// Zhang et al. (2025)

/// E(1/N): 1/N, or H_{n_max}/n_max when `--n-max` > 0.
fn inv_n(c: &Ctx) -> CliResult<f64> {
    let nmax = c.u("n-max")?;
    if nmax > 0 {
        Ok(zhang2025::mean_inv_uniform(nmax))
    } else {
        let n = c.f("N")?;
        if n <= 0.0 {
            return Err(CliError::input("--N must be > 0"));
        }
        Ok(1.0 / n)
    }
}

fn zhang_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "zhang-m-star",
            paper: "zhang2025",
            about: "global minimiser M* = E(Lambda_hat^2)^-1 Lambda in the eigenbasis (diagonal lambda_d/a_d); also L* and a_d",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                let m: Vec<f64> = l.iter().zip(&a).map(|(x, a)| x / a).collect();
                let lstar = *zhang2025::plateau_losses_inv_n(&eigs, inv).last().unwrap_or(&f64::NAN);
                Ok(Out::list(&m).with("loss_star", json!(lstar)).with("a", json!(a)))
            },
        },
        Q {
            name: "v-star",
            paper: "zhang2025",
            about: "grown value weights v*_d = (lambda_d/a_d)^(1/3) (Eq. 20); also the minimum norm 3 sum v*^2 (App. E.7)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let v = zhang2025::v_star(&eigs, inv)?;
                let (_, norm) = zhang2025::min_norm(&eigs, inv, v.len())?;
                Ok(Out::list(&v).with("min_norm", json!(norm)))
            },
        },
        Q {
            name: "white-loss",
            paper: "zhang2025",
            about: "ATTN_M loss at time t for Lambda = cI from aligned small init s(0) = w^2 (Eqs. 10, 48-51, c-generalised); trajectory 0..t",
            params: params!(
                P("t", Some("10"), "time (tau)"),
                P("D", Some("4"), "dimension"),
                P("N", Some("31"), "context length"),
                P("c", Some("1"), "Lambda = c I"),
                P("w-init", Some("0.001"), "init scale (s0 = w^2)"),
                P("sample-dt", Some("0.05"), "trajectory spacing")
            ),
            run: |c| {
                let (t, d, n, cc, w) = (c.f("t")?, c.u("D")?, c.f("N")?, c.f("c")?, c.f("w-init")?);
                let (sig, l) = zhang2025::white_time_course(t, d, n, cc, w * w)?;
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(CliError::input("--sample-dt must be > 0"));
                }
                let mut rows = Vec::new();
                let k = (t / dt).ceil() as usize;
                for i in 0..=k {
                    let ti = (i as f64 * dt).min(t);
                    let (s, li) = zhang2025::white_time_course(ti, d, n, cc, w * w)?;
                    rows.push(vec![ti, li, s]);
                }
                let (s_inf, l_inf) = zhang2025::white_time_course(1e12, d, n, cc, w * w)?;
                Ok(Out::num(l).with("sigma", json!(sig)).with("loss_inf", json!(l_inf)).with("sigma_inf", json!(s_inf)).with_traj(Traj {
                    title: format!("ATTN_M, Lambda = {cc} I, D = {d}, N = {n}"),
                    columns: vec!["t".into(), "loss".into(), "sigma".into()],
                    rows,
                    plot: vec![1, 2],
                    log_y: false,
                    refs: vec![("L(inf)".into(), l_inf), ("sigma(inf)".into(), s_inf)],
                }))
            },
        },
        Q {
            name: "plateau-time",
            paper: "zhang2025",
            about: "plateau predictions: merged ln(1/w)/||Lambda^2||_F (Eq. 54); separate 1/(lambda_m^2 v0) for each drop (Eqs. 72, 77)",
            params: params!(
                P("model", Some("merged"), "merged | separate"),
                P("eigs", None, "eigenvalues of Lambda"),
                P("w-init", Some("0.000001"), "merged: init scale"),
                P("v0", Some("0.05"), "separate: value weight of each escaping head at the start of its plateau")
            ),
            run: |c| {
                let eigs = c.list("eigs")?;
                match c.s("model")?.as_str() {
                    "merged" => {
                        let d = eigs.len();
                        let lam: Vec<f64> = (0..d * d).map(|k| if k / d == k % d { eigs[k / d] } else { 0.0 }).collect();
                        Ok(Out::num(zhang2025::attn_m_plateau_time(&lam, d, c.f("w-init")?)?))
                    }
                    "separate" => {
                        let v0 = c.f("v0")?;
                        let t = zhang2025::attn_s_plateau_times(&eigs, &vec![v0; eigs.len()])?;
                        Ok(Out::list(&t))
                    }
                    m => Err(CliError::input(format!("--model: {m:?} is not merged or separate"))),
                }
            },
        },
        Q {
            name: "scalar-ode",
            paper: "zhang2025",
            about: "v(t) of the (m+1)-th drop, tau v' = lambda^2 v^2 - lambda a v^5 (Eq. 21), via the implicit F (Eq. 71, corrected); trajectory with the ansatz loss",
            params: params!(
                P("eigs", None, "eigenvalues of Lambda"),
                P("N", Some("31"), "context length"),
                P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max"),
                P("m", Some("0"), "drops already done (0-based)"),
                P("v0", Some("0.05"), "initial v"),
                P("t", Some("200"), "time (tau)"),
                P("sample-dt", Some("1"), "trajectory spacing")
            ),
            run: |c| {
                let (eigs, inv, m) = (c.list("eigs")?, inv_n(c)?, c.u("m")?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                if m >= l.len() {
                    return Err(CliError::input(format!("--m must be < D = {}", l.len())));
                }
                let (lam, am) = (l[m], a[m]);
                let levels = zhang2025::plateau_losses_inv_n(&eigs, inv);
                let (v0, t) = (c.f("v0")?, c.f("t")?);
                let v = zhang2025::scalar_ode_v(t, v0, lam, am)?;
                let vs = (lam / am).cbrt();
                let t_half = if v0 < vs / 2.0 { Some(zhang2025::scalar_ode_time(v0, vs / 2.0, lam, am)?) } else { None };
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(CliError::input("--sample-dt must be > 0"));
                }
                let mut rows = Vec::new();
                for i in 0..=((t / dt).ceil() as usize) {
                    let ti = (i as f64 * dt).min(t);
                    let vi = zhang2025::scalar_ode_v(ti, v0, lam, am)?;
                    rows.push(vec![ti, vi, zhang2025::ansatz_loss(levels[m], vi, lam, am)]);
                }
                Ok(Out::num(v).with("v_star", json!(vs)).with("t_half", json!(t_half)).with_traj(Traj {
                    title: format!("scalar ODE of drop {}", m + 1),
                    columns: vec!["t".into(), "v".into(), "loss".into()],
                    rows,
                    plot: vec![1, 2],
                    log_y: false,
                    refs: Vec::new(),
                }))
            },
        },
        Q {
            name: "linattn-flow",
            paper: "zhang2025",
            about: "exact population gradient flow of ATTN_M / rank-R ATTN_S in weight space (C.2 init): value = final loss; drop times; trajectory",
            params: params!(
                P("arch", Some("separate"), "merged | separate"),
                P("eigs", None, "eigenvalues of Lambda (diagonal basis)"),
                P("N", Some("31"), "context length"),
                P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max"),
                P("H", Some("5"), "heads"),
                P("R", Some("1"), "rank (separate)"),
                P("w-init", Some("0.1"), "init scale"),
                P("seed", Some("0"), "init seed"),
                P("scheme", Some("euler"), "euler (= full-batch GD, lr dt/2) | rk4"),
                P("dt", Some("0.5"), "step (tau)"),
                P("t-end", Some("12000"), "final time (tau)"),
                P("every", Some("10"), "trajectory spacing (steps)")
            ),
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let pop = zhang2025::Population::diagonal(&eigs, inv)?;
                let h = c.u("H")?;
                let arch = match c.s("arch")?.as_str() {
                    "merged" => zhang2025::Arch::Merged { heads: h },
                    "separate" => zhang2025::Arch::Separate { heads: h, rank: c.u("R")? },
                    a => return Err(CliError::input(format!("--arch: {a:?} is not merged or separate"))),
                };
                let scheme = match c.s("scheme")?.as_str() {
                    "euler" => zhang2025::Scheme::Euler,
                    "rk4" => zhang2025::Scheme::Rk4,
                    s => return Err(CliError::input(format!("--scheme: {s:?} is not euler or rk4"))),
                };
                let y0 = arch.init(pop.d, c.f("w-init")?, c.u("seed")? as u64);
                let mut traj = Vec::new();
                let mut rows = Vec::new();
                let y = zhang2025::simulate(&pop, arch, &y0, scheme, c.f("dt")?, c.f("t-end")?, c.u("every")?, &mut |t, l, y| {
                    traj.push((t, l));
                    let mut r = vec![t, l];
                    r.extend((0..h).map(|i| y[i]));
                    rows.push(r);
                    true
                })?;
                let levels = zhang2025::plateau_losses_inv_n(&eigs, inv);
                let cr = zhang2025::crossings(&levels, &traj);
                let mut cols = vec!["t".to_string(), "loss".to_string()];
                cols.extend((0..h).map(|i| format!("v{}", i + 1)));
                Ok(Out::num(traj.last().map(|r| r.1).unwrap_or(f64::NAN))
                    .with("crossings", json!(cr))
                    .with("plateaus", json!(levels))
                    .with("m_final", json!(arch.m(pop.d, &y)))
                    .with_traj(Traj {
                        title: match arch {
                            zhang2025::Arch::Merged { heads } => format!("ATTN_M, H = {heads}, eigenvalues {eigs:?}, N = {}", c.raw("N")?),
                            zhang2025::Arch::Separate { heads, rank } => {
                                format!("ATTN_S, H = {heads}, R = {rank}, eigenvalues {eigs:?}, N = {}", c.raw("N")?)
                            }
                        },
                        columns: cols,
                        rows,
                        plot: vec![1],
                        log_y: false,
                        refs: levels.iter().enumerate().map(|(m, l)| (format!("L(M_{m})"), *l)).collect(),
                    }))
            },
        },
    ]
}

// ------------------------------------------------------------------------------------------------
// Temperature (Theorems 4.6-4.7)

/// A mean flag: one value c (every entry c) or d values.
fn mean_flag(c: &Ctx, k: &str, d: usize) -> CliResult<Vec<f64>> {
    let v = c.list(k)?;
    match v.len() {
        1 => Ok(vec![v[0]; d]),
        n if n == d => Ok(v),
        n => Err(CliError::input(format!(
            "--{k}: give 1 or d = {d} values (got {n})"
        ))),
    }
}

/// A covariance flag: one value c (c I), d values (diagonal) or d*d values (row-major).
fn cov_flag(c: &Ctx, k: &str, d: usize) -> CliResult<Vec<f64>> {
    let v = c.list(k)?;
    match v.len() {
        1 => Ok((0..d * d)
            .map(|i| if i / d == i % d { v[0] } else { 0.0 })
            .collect()),
        n if n == d => Ok((0..d * d)
            .map(|i| if i / d == i % d { v[i / d] } else { 0.0 })
            .collect()),
        n if n == d * d => Ok(v),
        n => Err(CliError::input(format!(
            "--{k}: give 1, d = {d} or d*d = {} values (got {n})",
            d * d
        ))),
    }
}

fn gaussian(c: &Ctx, pre: &str, d: usize) -> CliResult<temperature::Gaussian> {
    let s = c.f(&format!("{pre}-sigma"))?;
    let g = temperature::Gaussian {
        d,
        mu_x: mean_flag(c, &format!("{pre}-mu-x"), d)?,
        sigma_x: cov_flag(c, &format!("{pre}-sigma-x"), d)?,
        mu_w: mean_flag(c, &format!("{pre}-mu-w"), d)?,
        sigma_w: cov_flag(c, &format!("{pre}-sigma-w"), d)?,
        sigma2: s * s,
    };
    g.validate()?;
    Ok(g)
}

const TEMP: &[P] = &[
    P("d", Some("50"), "dimension"),
    P(
        "l",
        Some("100"),
        "tokens per prompt (l-1 context pairs + query)",
    ),
    P("train-sigma", Some("0.1"), "train noise std"),
    P("train-mu-x", Some("0"), "train x mean (1 or d values)"),
    P(
        "train-sigma-x",
        Some("1"),
        "train x covariance (1, d or d*d values)",
    ),
    P("train-mu-w", Some("0"), "train task mean"),
    P("train-sigma-w", Some("1"), "train task covariance"),
    P("test-sigma", Some("0.1"), "test noise std"),
    P("test-mu-x", Some("0"), "test x mean"),
    P("test-sigma-x", Some("1"), "test x covariance"),
    P("test-mu-w", Some("0"), "test task mean"),
    P("test-sigma-w", Some("1"), "test task covariance"),
];

const TEMP_TAU: &[P] = &[
    P("tau", Some("1"), "temperature"),
    P("d", Some("50"), "dimension"),
    P(
        "l",
        Some("100"),
        "tokens per prompt (l-1 context pairs + query)",
    ),
    P("train-sigma", Some("0.1"), "train noise std"),
    P("train-mu-x", Some("0"), "train x mean (1 or d values)"),
    P(
        "train-sigma-x",
        Some("1"),
        "train x covariance (1, d or d*d values)",
    ),
    P("train-mu-w", Some("0"), "train task mean"),
    P("train-sigma-w", Some("1"), "train task covariance"),
    P("test-sigma", Some("0.1"), "test noise std"),
    P("test-mu-x", Some("0"), "test x mean"),
    P("test-sigma-x", Some("1"), "test x covariance"),
    P("test-mu-w", Some("0"), "test task mean"),
    P("test-sigma-w", Some("1"), "test task covariance"),
];

fn temp_coeffs(
    c: &Ctx,
) -> CliResult<(
    temperature::Params,
    temperature::Gaussian,
    temperature::Coeffs,
)> {
    let (d, l) = (c.u("d")?, c.u("l")?);
    let train = gaussian(c, "train", d)?;
    let test = gaussian(c, "test", d)?;
    let p = temperature::lemma41(&train, l)?;
    let k = temperature::coefficients(&p, &test, l)?;
    Ok((p, test, k))
}

fn temperature_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "optimal-temperature",
            paper: "temperature",
            about: "tau_opt = 2a/b (Thm 4.7) for Lemma-4.1 parameters trained on the train distribution, tested on the test one; a, b, c, G(1), G_min, heuristic",
            params: TEMP,
            run: |c| {
                let (p, test, k) = temp_coeffs(c)?;
                let t = k.tau_opt()?;
                Ok(Out::num(t)
                    .with("a", json!(k.a))
                    .with("b", json!(k.b))
                    .with("c", json!(k.c))
                    .with("G_1", json!(k.g(1.0)))
                    .with("G_min", json!(k.g_min()?))
                    .with("tau_heuristic", json!(temperature::tau_heuristic(&p, &test, c.u("l")?)?)))
            },
        },
        Q {
            name: "temperature-error",
            paper: "temperature",
            about: "G(tau) = a/tau^2 - b/tau + c (Thm 4.6, corrected) at --tau",
            params: TEMP_TAU,
            run: |c| {
                let (_, _, k) = temp_coeffs(c)?;
                let tau = c.f("tau")?;
                if tau <= 0.0 {
                    return Err(CliError::input("--tau must be > 0"));
                }
                Ok(Out::num(k.g(tau)).with("a", json!(k.a)).with("b", json!(k.b)).with("c", json!(k.c)))
            },
        },
        Q {
            name: "temperature-isotropic",
            paper: "temperature",
            about: "isotropic reduction (spec 7.1): tau_opt = k(alpha + (sigma^2/beta + alpha d)/l), k = 1/(1+sigma_tr^2/l); a, b, c, G(1), G_min",
            params: params!(
                P("d", Some("50"), "dimension"),
                P("l", Some("100"), "tokens per prompt"),
                P("alpha", Some("1"), "test Sigma_x = alpha I"),
                P("beta", Some("1"), "test Sigma_w = beta I"),
                P("sigma", Some("0.1"), "test noise std"),
                P("train-sigma", Some("0.1"), "train noise std")
            ),
            run: |c| {
                let (d, l) = (c.u("d")?, c.u("l")?);
                let ts = c.f("train-sigma")?;
                let s = c.f("sigma")?;
                let k = temperature::isotropic(d, l, c.f("alpha")?, c.f("beta")?, s * s, temperature::k_iso(l, ts * ts));
                Ok(Out::num(k.tau_opt()?).with("a", json!(k.a)).with("b", json!(k.b)).with("c", json!(k.c)).with("G_1", json!(k.g(1.0))).with("G_min", json!(k.g_min()?)))
            },
        },
    ]
}

// ------------------------------------------------------------------------------------------------
// Multi-layer (Algorithm 1, baselines, IV)

/// Monte Carlo over varying-covariance sequences (noise-free target): mean and stderr of each prediction.
fn ml_mc(
    c: &Ctx,
    f: &dyn Fn(&multilayer::Sequence) -> icl_core::Result<Vec<f64>>,
) -> CliResult<(Vec<f64>, Vec<f64>)> {
    let (d, l, s2, lo, hi, n, seed) = (
        c.u("d")?,
        c.u("L")?,
        c.f("sigma2")?,
        c.f("lmin")?,
        c.f("lmax")?,
        c.u("n")?,
        c.u("seed")? as u64,
    );
    if d == 0 || l == 0 || n < 2 || s2 < 0.0 || !(lo > 0.0 && hi >= lo) {
        return Err(CliError::input(
            "need d, L >= 1, n >= 2, sigma2 >= 0 and 0 < lmin <= lmax",
        ));
    }
    let (mut s, mut ss) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut r = icl_core::rng::stream(seed, icl_core::rng::Domain::Eval, l as u64, i as u64);
        let q = multilayer::varying_cov_sequence(&mut r, d, l, s2, lo, hi);
        let p = f(&q)?;
        s.resize(p.len(), 0.0);
        ss.resize(p.len(), 0.0);
        for k in 0..p.len() {
            let e = (p[k] - q.yq) * (p[k] - q.yq);
            s[k] += e;
            ss[k] += e * e;
        }
    }
    let nf = n as f64;
    let m: Vec<f64> = s.iter().map(|v| v / nf).collect();
    let se = ss
        .iter()
        .zip(&m)
        .map(|(v, m)| ((v / nf - m * m).max(0.0) / (nf - 1.0)).sqrt())
        .collect();
    Ok((m, se))
}

fn multilayer_quantities() -> Vec<Q> {
    vec![
        Q {
            name: "alg1-risk",
            paper: "multilayer",
            about: "MC error (noise-free target) of Algorithm 1 after s = 1..steps steps on varying-covariance data: list over s",
            params: params!(
                P("eta-x", Some("0.6128"), "covariate step eta_x = -<u1, omega>"),
                P("eta-y", Some("0.7193"), "label step eta_y = <u2, omega>"),
                P("steps", Some("6"), "steps"),
                P("d", Some("5"), "dimension"),
                P("L", Some("120"), "context length"),
                P("sigma2", Some("0.1"), "noise variance"),
                P("lmin", Some("0.8"), "eigenvalues of Sigma ~ U(lmin, lmax)"),
                P("lmax", Some("1.2"), ""),
                P("n", Some("4000"), "Monte Carlo sequences"),
                P("seed", Some("0"), "seed")
            ),
            run: |c| {
                let (ex, ey, t) = (c.f("eta-x")?, c.f("eta-y")?, c.u("steps")?);
                let (m, se) = ml_mc(c, &|q| Ok(multilayer::algorithm1(&q.x, &q.y, &q.xq, ex, ey, t)?.preds))?;
                Ok(Out::list(&m).with("stderr", json!(se)))
            },
        },
        Q {
            name: "gd-steps-risk",
            paper: "multilayer",
            about: "MC error of K-step GD w <- w - eta/L X^T(Xw - y) on varying-covariance data: list over k = 1..steps",
            params: params!(
                P("eta", Some("0.9"), "step size"),
                P("steps", Some("4"), "steps"),
                P("d", Some("5"), "dimension"),
                P("L", Some("120"), "context length"),
                P("sigma2", Some("0.1"), "noise variance"),
                P("lmin", Some("0.8"), "eigenvalues of Sigma ~ U(lmin, lmax)"),
                P("lmax", Some("1.2"), ""),
                P("n", Some("4000"), "Monte Carlo sequences"),
                P("seed", Some("0"), "seed")
            ),
            run: |c| {
                let (eta, t) = (c.f("eta")?, c.u("steps")?);
                let (m, se) = ml_mc(c, &|q| multilayer::gd_steps(&q.x, &q.y, &q.xq, eta, t))?;
                Ok(Out::list(&m).with("stderr", json!(se)))
            },
        },
        Q {
            name: "regression-baselines",
            paper: "multilayer",
            about: "MC error [OLS, ridge(lambda)] on varying-covariance data; closed-form OLS excess risk sigma^2 d/(L-d-1)",
            params: &[
                P("lambda", Some("0.1"), "ridge penalty"),
                P("d", Some("5"), "dimension"),
                P("L", Some("120"), "context length"),
                P("sigma2", Some("0.1"), "noise variance"),
                P("lmin", Some("0.8"), "eigenvalues of Sigma ~ U(lmin, lmax)"),
                P("lmax", Some("1.2"), ""),
                P("n", Some("4000"), "Monte Carlo sequences"),
                P("seed", Some("0"), "seed"),
            ],
            run: |c| {
                let (d, lam) = (c.u("d")?, c.f("lambda")?);
                let (m, se) = ml_mc(c, &|q| {
                    let dot = |w: &[f64]| w.iter().zip(&q.xq).map(|(a, b)| a * b).sum::<f64>();
                    Ok(vec![dot(&multilayer::ols(&q.x, &q.y, d)?), dot(&multilayer::ridge(&q.x, &q.y, d, lam)?)])
                })?;
                let cf = multilayer::ols_excess_risk(d, c.u("L")?, c.f("sigma2")?).ok();
                Ok(Out::list(&m).with("stderr", json!(se)).with("ols_closed_form", json!(cf)))
            },
        },
        Q {
            name: "iv-risk",
            paper: "multilayer",
            about: "MC error [2SLS (query theta_hat^T z_q), OLS (query x_q)] on IV data (Liang et al. conventions, noise-free y_q)",
            params: params!(
                P("q", Some("6"), "instrument dimension"),
                P("p", Some("4"), "regressor dimension"),
                P("L", Some("200"), "context length"),
                P("n", Some("2000"), "Monte Carlo sequences"),
                P("seed", Some("0"), "seed")
            ),
            run: |c| {
                let (q, p, l, n, seed) = (c.u("q")?, c.u("p")?, c.u("L")?, c.u("n")?, c.u("seed")? as u64);
                if q == 0 || p == 0 || l <= q.max(p) || n < 2 {
                    return Err(CliError::input("need q, p >= 1, L > max(q, p) and n >= 2"));
                }
                let (mut s, mut ss) = ([0.0; 2], [0.0; 2]);
                for i in 0..n {
                    let mut r = icl_core::rng::stream(seed, icl_core::rng::Domain::Eval, l as u64, i as u64);
                    let sq = multilayer::iv_sequence(&mut r, q, p, l);
                    let (b2, th) = multilayer::two_sls(&sq.z, &sq.x, &sq.y, q, p)?;
                    let xh: Vec<f64> = (0..p).map(|j| (0..q).map(|k| th[k * p + j] * sq.zq[k]).sum()).collect();
                    let bo = multilayer::ols(&sq.x, &sq.y, p)?;
                    let preds = [b2.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>(), bo.iter().zip(&sq.xq).map(|(a, b)| a * b).sum::<f64>()];
                    for k in 0..2 {
                        let e = (preds[k] - sq.yq).powi(2);
                        s[k] += e;
                        ss[k] += e * e;
                    }
                }
                let nf = n as f64;
                let m: Vec<f64> = s.iter().map(|v| v / nf).collect();
                let se: Vec<f64> = ss.iter().zip(&m).map(|(v, m)| ((v / nf - m * m).max(0.0) / (nf - 1.0)).sqrt()).collect();
                Ok(Out::list(&m).with("stderr", json!(se)))
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(name: &str, kv: &[(&str, &str)]) -> CliResult<Out> {
        let vals = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(evaluate(&registry(), name, vals)?.0)
    }

    fn num(o: &Out) -> f64 {
        o.value.as_f64().unwrap()
    }

    #[test]
    fn registry_is_consistent() {
        let reg = registry();
        let mut names: Vec<&str> = reg.iter().map(|q| q.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), reg.len(), "duplicate quantity names");
        for q in &reg {
            let mut f: Vec<&str> = q.params.iter().map(|p| p.0).collect();
            f.sort();
            f.dedup();
            assert_eq!(f.len(), q.params.len(), "{}: duplicate flags", q.name);
        }
        for n in [
            "eta-star",
            "mu-gamma",
            "gd-risk",
            "approx-loss",
            "plateaus",
            "he2025-flow",
            "optimal-temperature",
        ] {
            assert!(names.contains(&n), "{n} missing");
        }
    }

    #[test]
    fn reference_numbers_through_the_cli() {
        let he = [("d", "5"), ("L", "40"), ("sigma2", "0.1")];
        assert!((num(&eval("eta-star", &he).unwrap()) - 0.879121).abs() < 1e-6);
        let mut kv = he.to_vec();
        kv.push(("gamma", "0.1267"));
        assert!((num(&eval("mu-gamma", &kv).unwrap()) - 3.46885).abs() < 1e-5);
        let o = eval("gd-risk", &[("variant", "debiased")]).unwrap();
        assert!((num(&o) - 0.242857).abs() < 1e-6);
        let o = eval(
            "approx-loss",
            &[("omega", "0.1267,-0.1267"), ("mu", "3.5006,-3.5006")],
        )
        .unwrap();
        assert!((num(&o) - 0.221067).abs() < 1e-6);
        let o = eval("plateaus", &[("eigs", "0.4,0.3,0.2,0.1"), ("N", "31")]).unwrap();
        let v: Vec<f64> = o
            .value
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        for (a, b) in v.iter().zip([1.0, 0.640580, 0.377372, 0.209805, 0.135995]) {
            assert!((a - b).abs() < 1e-6);
        }
        for (d, peak) in [("5", 0.576), ("10", 0.455)] {
            let o = eval("he2025-flow", &[("d", d), ("t-end", "50")]).unwrap();
            assert!((num(&o) - peak).abs() < 0.005, "d = {d}: {}", num(&o));
            assert!(o.traj.as_ref().unwrap().rows.len() > 400);
        }
        let o = eval("optimal-temperature", &[("test-sigma-x", "2")]).unwrap();
        assert!((num(&o) - 2.99980).abs() < 1e-5);
        assert!(eval("eta-star", &[("dd", "3")]).is_err());
        assert!(eval("mu-gamma", &[]).is_err());
        assert!(eval("nope", &[]).is_err());
        assert!(eval("gd-risk", &[("variant", "other")]).is_err());
    }
}
