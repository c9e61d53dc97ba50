//! `icl theory`: every closed form and dynamical system of the four papers, one command away.
//!
//! `icl theory --list` names each quantity with its parameters; `icl theory NAME --param value ...`
//! computes one (`--json` prints `{"name", "value", ...}`). ODE and simulator quantities write
//! their trajectory with `--csv FILE` and plot it with `--svg FILE`.
//! The numbers come from `icl_core::theory`; this file only parses, prints and plots.
use crate::error::{CliError, CliResult};
use crate::plot::{lines_svg, Series};
use icl_core::theory::{he2025, ode, zhang2025};
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
}

/// What a quantity returns: the value, extra named outputs, an optional trajectory.
struct Out {
    value: Value,
    extra: Vec<(&'static str, Value)>,
    traj: Option<Traj>,
}

impl Out {
    fn num(v: f64) -> Out {
        Out { value: json!(v), extra: Vec::new(), traj: None }
    }
    fn list(v: &[f64]) -> Out {
        Out { value: json!(v), extra: Vec::new(), traj: None }
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
        self.vals.get(k).map(|s| s.as_str()).ok_or_else(|| CliError::input(format!("missing --{k}")))
    }
    fn f(&self, k: &str) -> CliResult<f64> {
        let s = self.raw(k)?;
        s.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| CliError::input(format!("--{k}: {s:?} is not a finite number")))
    }
    fn u(&self, k: &str) -> CliResult<usize> {
        let s = self.raw(k)?;
        s.trim().parse::<usize>().map_err(|_| CliError::input(format!("--{k}: {s:?} is not a non-negative integer")))
    }
    fn list(&self, k: &str) -> CliResult<Vec<f64>> {
        let s = self.raw(k)?;
        s.split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| p.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| CliError::input(format!("--{k}: {p:?} is not a finite number"))))
            .collect()
    }
    fn s(&self, k: &str) -> CliResult<String> {
        Ok(self.raw(k)?.to_string())
    }
    fn he(&self) -> CliResult<he2025::Setting> {
        Ok(he2025::Setting::new(self.u("d")?, self.u("L")?, self.f("sigma2")?)?)
    }
}

const HE: &[P] = &[P("d", Some("5"), "covariate dimension"), P("L", Some("40"), "context length"), P("sigma2", Some("0.1"), "label noise variance")];

/// A `&'static [P]` from a list of parameters.
macro_rules! params {
    ($($p:expr),* $(,)?) => {{
        const X: &[P] = &[$($p),*];
        X
    }};
}

fn registry() -> Vec<Q> {
    vec![
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
                let eigs = c.list("eigs")?;
                let nmax = c.u("n-max")?;
                if nmax > 0 {
                    Ok(Out::list(&zhang2025::plateau_losses_inv_n(&eigs, zhang2025::mean_inv_uniform(nmax))).with("e_inv_n", json!(zhang2025::mean_inv_uniform(nmax))))
                } else {
                    Ok(Out::list(&zhang2025::plateau_losses(&eigs, c.f("N")?)))
                }
            },
        },
    ]
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
        v => Err(CliError::input(format!("--{k}: {v:?} is not true or false"))),
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
        println!("{}", serde_json::to_string_pretty(&Value::Array(v)).unwrap_or_default());
        return Ok(());
    }
    let mut paper = "";
    for q in reg {
        if q.paper != paper {
            paper = q.paper;
            println!("[{paper}]");
        }
        println!("  {:<22} {}", q.name, q.about);
        let ps: Vec<String> = q.params.iter().map(|p| match p.1 {
            Some(d) => format!("--{} {d}", p.0),
            None => format!("--{} <required>", p.0),
        }).collect();
        if !ps.is_empty() {
            println!("  {:<22} {}", "", ps.join("  "));
        }
    }
    println!("\nGlobal flags: --json, --csv FILE, --svg FILE (trajectory quantities).");
    Ok(())
}

/// Split `--flag value` / `--flag=value` pairs; `--json`, `--csv`, `--svg` may also appear here.
fn parse_params(raw: &[String], a: &mut (bool, Option<PathBuf>, Option<PathBuf>)) -> CliResult<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < raw.len() {
        let t = &raw[i];
        let Some(flag) = t.strip_prefix("--") else {
            return Err(CliError::input(format!("unexpected argument {t:?} (parameters are --name value)")));
        };
        if flag == "json" {
            a.0 = true;
            i += 1;
            continue;
        }
        let (k, v) = match flag.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                let v = raw.get(i + 1).ok_or_else(|| CliError::input(format!("--{flag} needs a value")))?;
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

pub fn run(a: &Args) -> CliResult {
    let reg = registry();
    let mut g = (a.json, a.csv.clone(), a.svg.clone());
    let name = match a.name.as_deref() {
        Some(n) if !a.list && n != "--list" => n,
        _ => return list(&reg, a.json),
    };
    let q = reg.iter().find(|q| q.name == name).ok_or_else(|| {
        CliError::input(format!("unknown quantity {name:?}; `icl theory --list` names them all"))
    })?;
    let mut vals = parse_params(&a.params, &mut g)?;
    if vals.remove("list").is_some() {
        return list(&reg, g.0);
    }
    for k in vals.keys() {
        if !q.params.iter().any(|p| p.0 == k) {
            let known: Vec<String> = q.params.iter().map(|p| format!("--{}", p.0)).collect();
            return Err(CliError::input(format!("{name}: unknown parameter --{k} (takes {})", known.join(", "))));
        }
    }
    for p in q.params {
        if !vals.contains_key(p.0) {
            match p.1 {
                Some(d) => {
                    vals.insert(p.0.to_string(), d.to_string());
                }
                None => return Err(CliError::input(format!("{name}: missing --{} ({})", p.0, p.2))),
            }
        }
    }
    let ctx = Ctx { vals };
    let out = (q.run)(&ctx)?;
    let (as_json, csv, svg) = g;
    if (csv.is_some() || svg.is_some()) && out.traj.is_none() {
        return Err(CliError::input(format!("{name} has no trajectory (--csv/--svg apply to ODE and simulator quantities)")));
    }
    if let Some(t) = &out.traj {
        if let Some(p) = &csv {
            let mut s = t.columns.join(",");
            s.push('\n');
            for r in &t.rows {
                s.push_str(&r.iter().map(|v| format!("{v}")).collect::<Vec<_>>().join(","));
                s.push('\n');
            }
            crate::cmd::common::write_text(p, &s)?;
        }
        if let Some(p) = &svg {
            let series: Vec<Series> = t
                .plot
                .iter()
                .map(|&j| Series { name: t.columns[j].clone(), points: t.rows.iter().map(|r| (r[0], r[j])).collect(), dashed: false })
                .collect();
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
        println!("{}", serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default());
    } else {
        println!("{name} = {}", fmt_value(&out.value));
        for (k, v) in &out.extra {
            println!("  {k} = {}", fmt_value(v));
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
