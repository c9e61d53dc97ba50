//! Zhang et al. (2025)'s quantities: the plateaus, the global minimiser, the scalar ODE and the
//! population gradient flows of linear attention ([`crate::theory::zhang2025`]).
use super::{bad, out_bytes, sum, traj_bytes, Ctx, Out, Traj, Value, P, Q};
use crate::budget::product;
use crate::theory::zhang2025;
use crate::Result;
use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

/// E(1/N): 1/N, or H_{n_max}/n_max when `--n-max` > 0.
fn inv_n(c: &Ctx) -> Result<f64> {
    let nmax = c.u("n-max")?;
    if nmax > 0 {
        Ok(zhang2025::mean_inv_uniform(nmax))
    } else {
        let n = c.f("N")?;
        if n <= 0.0 {
            return Err(bad("--N must be > 0"));
        }
        Ok(1.0 / n)
    }
}

/// The quantities of Zhang et al. (2025).
pub fn quantities() -> Vec<Q> {
    vec![
        Q {
            name: "plateaus",
            paper: "zhang2025",
            about: "plateau losses L(M_0..M_D) = tr(Lambda) - sum_{d<=m} lambda_d/(1+(1+tr/lambda_d)/N) (eqs. 19, 63); --n-max uses E(1/N) (eq. 26)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: NTP training with N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                zhang2025::a_coeffs(&eigs, inv)?; // validates the eigenvalues
                Ok(Out::list(&zhang2025::plateau_losses_inv_n(&eigs, inv)).with("e_inv_n", Value::from(inv)))
            },
        },
        Q {
            name: "zhang-m-star",
            paper: "zhang2025",
            about: "global minimiser M* = E(Lambda_hat^2)^-1 Lambda in the eigenbasis (diagonal lambda_d/a_d); also L* and a_d",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                let m: Vec<f64> = l.iter().zip(&a).map(|(x, a)| x / a).collect();
                let lstar = *zhang2025::plateau_losses_inv_n(&eigs, inv).last().unwrap_or(&f64::NAN);
                Ok(Out::list(&m).with("loss_star", Value::from(lstar)).with("a", Value::from(a)))
            },
        },
        Q {
            name: "v-star",
            paper: "zhang2025",
            about: "grown value weights v*_d = (lambda_d/a_d)^(1/3) (Eq. 20); also the minimum norm 3 sum v*^2 (App. E.7)",
            params: params!(P("eigs", None, "eigenvalues of Lambda"), P("N", Some("31"), "context length"), P("n-max", Some("0"), "if > 0: E(1/N) of N uniform on 1..n-max")),
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let v = zhang2025::v_star(&eigs, inv)?;
                let (_, norm) = zhang2025::min_norm(&eigs, inv, v.len())?;
                Ok(Out::list(&v).with("min_norm", Value::from(norm)))
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
            shared: &[],
            run: |c| {
                let (t, d, n, cc, w) = (c.f("t")?, c.u("D")?, c.f("N")?, c.f("c")?, c.f("w-init")?);
                let (sig, l) = zhang2025::white_time_course(t, d, n, cc, w * w)?;
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(bad("--sample-dt must be > 0"));
                }
                let k = c.count(t / dt, "--t / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(k, 3), "--t / --sample-dt")?;
                let mut rows = Vec::new();
                for i in 0..=k {
                    let ti = (i as f64 * dt).min(t);
                    let (s, li) = zhang2025::white_time_course(ti, d, n, cc, w * w)?;
                    rows.push(vec![ti, li, s]);
                }
                let (s_inf, l_inf) = zhang2025::white_time_course(1e12, d, n, cc, w * w)?;
                Ok(Out::num(l).with("sigma", Value::from(sig)).with("loss_inf", Value::from(l_inf)).with("sigma_inf", Value::from(s_inf)).with_traj(Traj {
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
            shared: &[],
            run: |c| {
                let eigs = c.list("eigs")?;
                match c.s("model")?.as_str() {
                    "merged" => {
                        let d = eigs.len();
                        // Lambda and the population's matrices (D x D each)
                        c.memory(product(&[16 * 8, d as u64, d as u64]), "the number of --eigs, squared")?;
                        let lam: Vec<f64> = (0..d * d).map(|k| if k / d == k % d { eigs[k / d] } else { 0.0 }).collect();
                        Ok(Out::num(zhang2025::attn_m_plateau_time(&lam, d, c.f("w-init")?)?))
                    }
                    "separate" => {
                        let v0 = c.f("v0")?;
                        let t = zhang2025::attn_s_plateau_times(&eigs, &vec![v0; eigs.len()])?;
                        Ok(Out::list(&t))
                    }
                    m => Err(bad(format!("--model: {m:?} is not merged or separate"))),
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
            shared: &[],
            run: |c| {
                let (eigs, inv, m) = (c.list("eigs")?, inv_n(c)?, c.u("m")?);
                let a = zhang2025::a_coeffs(&eigs, inv)?;
                let mut l = eigs.clone();
                l.sort_by(|a, b| b.total_cmp(a));
                if m >= l.len() {
                    return Err(bad(format!("--m must be < D = {}", l.len())));
                }
                let (lam, am) = (l[m], a[m]);
                let levels = zhang2025::plateau_losses_inv_n(&eigs, inv);
                let (v0, t) = (c.f("v0")?, c.f("t")?);
                let v = zhang2025::scalar_ode_v(t, v0, lam, am)?;
                let vs = libm::cbrt(lam / am);
                let t_half = if v0 < vs / 2.0 { Some(zhang2025::scalar_ode_time(v0, vs / 2.0, lam, am)?) } else { None };
                let dt = c.f("sample-dt")?;
                if dt <= 0.0 {
                    return Err(bad("--sample-dt must be > 0"));
                }
                let k = c.count(t / dt, "--t / --sample-dt (trajectory rows)")?;
                c.memory(traj_bytes(k, 3), "--t / --sample-dt")?;
                let mut rows = Vec::new();
                for i in 0..=k {
                    let ti = (i as f64 * dt).min(t);
                    let vi = zhang2025::scalar_ode_v(ti, v0, lam, am)?;
                    rows.push(vec![ti, vi, zhang2025::ansatz_loss(levels[m], vi, lam, am)]);
                }
                Ok(Out::num(v).with("v_star", Value::from(vs)).with("t_half", Value::from(t_half)).with_traj(Traj {
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
            shared: &[],
            run: |c| {
                let (eigs, inv) = (c.list("eigs")?, inv_n(c)?);
                let h = c.u("H")?;
                let arch = match c.s("arch")?.as_str() {
                    "merged" => zhang2025::Arch::Merged { heads: h },
                    "separate" => zhang2025::Arch::Separate { heads: h, rank: c.u("R")? },
                    a => return Err(bad(format!("--arch: {a:?} is not merged or separate"))),
                };
                let scheme = match c.s("scheme")?.as_str() {
                    "euler" => zhang2025::Scheme::Euler,
                    "rk4" => zhang2025::Scheme::Rk4,
                    s => return Err(bad(format!("--scheme: {s:?} is not euler or rk4"))),
                };
                let (dt, t_end, every) = (c.f("dt")?, c.f("t-end")?, c.u("every")?);
                let steps = c.count(t_end / dt, "--t-end / --dt (integration steps)")?;
                // the state (y0, y, dy, five RK4 buffers), the D x D matrices of every step, the
                // trajectory (and its loss column) and the final M
                let (d, hh) = (eigs.len() as u64, h as u64);
                let state = match arch {
                    zhang2025::Arch::Merged { .. } => product(&[hh, d, d]),
                    zhang2025::Arch::Separate { rank, .. } => product(&[2, hh, rank as u64, d]),
                }
                .and_then(|x| x.checked_add(hh));
                let rows = steps / every as u64 + 2;
                c.memory(
                    sum(&[
                        state.and_then(|x| x.checked_mul(8 * 8)),
                        product(&[24 * 8, d, d]),
                        traj_bytes(rows, 2 + hh),
                        out_bytes(d * d),
                    ]),
                    "--H x the number of --eigs (squared for merged, x --R for separate), --t-end / --dt / --every",
                )?;
                let pop = zhang2025::Population::diagonal(&eigs, inv)?;
                let y0 = arch.init(pop.d, c.f("w-init")?, c.u64("seed")?);
                let mut traj = Vec::new();
                let mut rows = Vec::new();
                let y = zhang2025::simulate(&pop, arch, &y0, scheme, dt, t_end, every, &mut |t, l, y| {
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
                    .with("crossings", Value::from(cr))
                    .with("plateaus", Value::from(&levels))
                    .with("m_final", Value::from(arch.m(pop.d, &y)))
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
