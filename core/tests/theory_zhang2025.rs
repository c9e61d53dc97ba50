//! zhang2025 theory: reference numbers of the spec (§5) and Monte Carlo checks.
use icl_core::theory::zhang2025 as z;

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < tol, "{a:?} vs {b:?}");
    }
}

#[test]
fn plateau_reference_numbers() {
    close(
        &z::plateau_losses(&[0.4, 0.3, 0.2, 0.1], 31.0),
        &[1.0, 0.640580, 0.377372, 0.209805, 0.135995],
        1e-6,
    );
    // any order of eigenvalues
    close(
        &z::plateau_losses(&[0.1, 0.3, 0.4, 0.2], 31.0),
        &[1.0, 0.640580, 0.377372, 0.209805, 0.135995],
        1e-6,
    );
    close(
        &z::plateau_losses(&[0.35, 0.35, 0.15, 0.15], 31.0),
        &[1.0, 0.688730, 0.377459, 0.257200, 0.136942],
        1e-6,
    );
    close(
        &z::plateau_losses(&[0.25; 4], 31.0),
        &[1.0, 0.784722, 0.569444, 0.354167, 0.138889],
        1e-6,
    );
    let e = z::mean_inv_uniform(31);
    assert!((e - 0.1299111).abs() < 1e-7, "{e}");
    close(
        &z::plateau_losses_inv_n(&[0.4, 0.3, 0.2, 0.1], e),
        &[1.0, 0.725027, 0.533082, 0.420689, 0.379520],
        1e-6,
    );
    let s: f64 = (1..=8).map(|d| 1.0 / d as f64).sum();
    let l: Vec<f64> = (1..=8).map(|d| 1.0 / d as f64 / s).collect();
    close(
        &z::plateau_losses(&l, 31.0),
        &[
            1.0, 0.671465, 0.519123, 0.424436, 0.357923, 0.307885, 0.268532, 0.236598, 0.210069,
        ],
        1e-6,
    );
    let l: Vec<f64> = (1..=8).map(|d| d as f64 / 36.0).collect();
    close(
        &z::plateau_losses(&l, 31.0),
        &[
            1.0, 0.811263, 0.648977, 0.513012, 0.403176, 0.319166, 0.260454, 0.226009, 0.213346,
        ],
        1e-6,
    );
}

use icl_core::fd;
use icl_core::rng::{self, Domain};
use icl_core::theory::zhang2025::{Arch, Population, Scheme};

fn near(a: f64, b: f64, tol: f64, what: &str) {
    assert!((a - b).abs() <= tol, "{what}: {a} vs {b} (tol {tol})");
}

const FIG3: [f64; 4] = [0.4, 0.3, 0.2, 0.1];

#[test]
fn fig3_reference_numbers() {
    let inv = 1.0 / 31.0;
    close(
        &z::a_coeffs(&FIG3, inv).unwrap(),
        &[0.178065, 0.102581, 0.047742, 0.013548],
        1e-6,
    );
    close(
        &z::v_star(&FIG3, inv).unwrap(),
        &[1.30967, 1.43005, 1.61204, 1.94702],
        1e-5,
    );
    close(
        &z::v_star(&[0.35, 0.35, 0.15, 0.15], inv).unwrap(),
        &[1.36459, 1.36459, 1.74842, 1.74842],
        1e-5,
    );
    near(
        z::min_norm(&FIG3, inv, 4).unwrap().1,
        30.4496,
        1e-4,
        "min norm",
    );
    let lam: Vec<f64> = (0..16)
        .map(|k| if k % 5 == 0 { FIG3[k / 5] } else { 0.0 })
        .collect();
    near(
        z::attn_m_plateau_time(&lam, 4, 1e-6).unwrap(),
        73.43,
        0.01,
        "ATTN_M plateau",
    );
    let p = Population::diagonal(&FIG3, inv).unwrap();
    near(p.loss_star().unwrap(), 0.135995, 1e-6, "L*");
    // white covariance: L(inf) and sigma(inf)
    let (s, l) = z::white_time_course(1e3, 4, 31.0, 1.0, 1e-6).unwrap();
    near(l, 20.0 / 36.0, 1e-9, "white L(inf)");
    near(s, 31.0 / 36.0, 1e-9, "white sigma(inf)");
    let (_, l) = z::white_time_course(1e5, 4, 31.0, 0.25, 1e-6).unwrap();
    near(l, 0.138889, 1e-6, "white I/4 L(inf)");
    assert!(
        z::a_coeffs(&[0.4, -0.1], inv).is_err()
            && Population::new(&[1.0, 2.0, 0.0, 1.0], 2, inv).is_err()
    );
}

/// A Haar-ish orthogonal matrix (Gram–Schmidt of Gaussian columns), row-major.
fn orthogonal(d: usize, seed: u64) -> Vec<f64> {
    let mut r = rng::stream(seed, Domain::Task, 0, 1);
    let mut q = vec![0.0; d * d];
    rng::fill_normal(&mut r, &mut q);
    for j in 0..d {
        for k in 0..j {
            let dot: f64 = (0..d).map(|i| q[i * d + j] * q[i * d + k]).sum();
            for i in 0..d {
                q[i * d + j] -= dot * q[i * d + k];
            }
        }
        let n: f64 = (0..d)
            .map(|i| q[i * d + j] * q[i * d + j])
            .sum::<f64>()
            .sqrt();
        for i in 0..d {
            q[i * d + j] /= n;
        }
    }
    q
}

/// Lambda = Q diag(eigs) Q^T and its square root factor Q diag(sqrt eigs).
fn rotated(eigs: &[f64], seed: u64) -> (Vec<f64>, Vec<f64>) {
    let d = eigs.len();
    let q = orthogonal(d, seed);
    let mut lam = vec![0.0; d * d];
    let mut f = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            lam[i * d + j] = (0..d).map(|k| q[i * d + k] * eigs[k] * q[j * d + k]).sum();
            f[i * d + j] = q[i * d + j] * eigs[j].sqrt();
        }
    }
    (lam, f)
}

/// MC of the squared error of yhat = beta^T M x_q; context length from `len(b)`.
fn mc_loss(
    m: &[f64],
    factor: &[f64],
    d: usize,
    n: usize,
    seed: u64,
    len: &dyn Fn(usize) -> usize,
) -> (f64, f64, Vec<f64>) {
    let (mut s, mut ss) = (0.0, 0.0);
    let mut elh2 = vec![0.0; d * d];
    let mut g = Vec::new();
    let mut x = Vec::new();
    for b in 0..n {
        let nn = len(b);
        let mut r = rng::stream(seed, Domain::Eval, 0, b as u64);
        g.resize(d + (nn + 1) * d, 0.0);
        rng::fill_normal(&mut r, &mut g);
        let w = &g[..d];
        x.resize((nn + 1) * d, 0.0);
        for t in 0..=nn {
            for i in 0..d {
                x[t * d + i] = (0..d).map(|k| factor[i * d + k] * g[d + t * d + k]).sum();
            }
        }
        let mut beta = vec![0.0; d];
        let mut lh = vec![0.0; d * d];
        for t in 0..nn {
            let xt = &x[t * d..(t + 1) * d];
            let y: f64 = (0..d).map(|i| w[i] * xt[i]).sum();
            for i in 0..d {
                beta[i] += y * xt[i] / nn as f64;
                for j in 0..d {
                    lh[i * d + j] += xt[i] * xt[j] / nn as f64;
                }
            }
        }
        for i in 0..d {
            for j in 0..d {
                elh2[i * d + j] +=
                    (0..d).map(|k| lh[i * d + k] * lh[k * d + j]).sum::<f64>() / n as f64;
            }
        }
        let xq = &x[nn * d..];
        let yq: f64 = (0..d).map(|i| w[i] * xq[i]).sum();
        let yhat: f64 = (0..d)
            .map(|i| beta[i] * (0..d).map(|j| m[i * d + j] * xq[j]).sum::<f64>())
            .sum();
        let e = (yq - yhat) * (yq - yhat);
        s += e;
        ss += e * e;
    }
    let nf = n as f64;
    let mean = s / nf;
    (mean, ((ss / nf - mean * mean) / (nf - 1.0)).sqrt(), elh2)
}

#[test]
fn population_loss_matches_monte_carlo() {
    let d = 4;
    let (lam, factor) = rotated(&FIG3, 7);
    let mut r = rng::stream(9, Domain::Task, 0, 2);
    let mut m = vec![0.0; d * d];
    rng::fill_normal(&mut r, &mut m);
    // fixed N = 31
    let p = Population::new(&lam, d, 1.0 / 31.0).unwrap();
    let (mean, se, elh2) = mc_loss(&m, &factor, d, 60_000, 1, &|_| 31);
    let cf = p.loss(&m).unwrap();
    assert!(
        ((mean - cf) / se).abs() < 3.0,
        "L(M): MC {mean} +- {se} vs {cf}"
    );
    let th = p.e_lambda_hat_sq();
    let num: f64 = th
        .iter()
        .zip(&elh2)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let den: f64 = th.iter().map(|a| a * a).sum::<f64>().sqrt();
    assert!(num / den < 0.02, "E(Lambda_hat^2) rel error {}", num / den);
    // N uniform on 1..31 (the next-token loss): the E(1/N) population
    let pn = Population::new(&lam, d, z::mean_inv_uniform(31)).unwrap();
    let (mean, se, _) = mc_loss(&m, &factor, d, 60_000, 2, &|b| 1 + b % 31);
    let cf = pn.loss(&m).unwrap();
    assert!(
        ((mean - cf) / se).abs() < 3.0,
        "NTP L(M): MC {mean} +- {se} vs {cf}"
    );
    // M* gives L* and the MC agrees
    let ms = p.m_star().unwrap();
    let (mean, se, _) = mc_loss(&ms, &factor, d, 60_000, 3, &|_| 31);
    near(p.loss(&ms).unwrap(), 0.135995, 1e-6, "L(M*) rotated");
    assert!(
        ((mean - 0.135995) / se).abs() < 3.0,
        "L*: MC {mean} +- {se}"
    );
}

#[test]
fn g_is_minus_half_gradient_and_fixed_points() {
    let d = 4;
    let (lam, _) = rotated(&FIG3, 7);
    let p = Population::new(&lam, d, 1.0 / 31.0).unwrap();
    let mut r = rng::stream(10, Domain::Task, 0, 3);
    let mut m = vec![0.0; d * d];
    rng::fill_normal(&mut r, &mut m);
    let g: Vec<f64> = p.g(&m).unwrap().iter().map(|v| -2.0 * v).collect();
    let mut f = |x: &[f64]| p.loss(x).unwrap();
    let e = fd::rel_error(&mut f, &m, &g, 1e-6, 1e-8);
    assert!(e < 1e-7, "dL/dM rel error {e}");
    assert!(p
        .g(&p.m_star().unwrap())
        .unwrap()
        .iter()
        .all(|v| v.abs() < 1e-13));
    // all 16 fixed points (diagonal Lambda): G = sum_{d not in S} lambda_d^2 e_d e_d^T (Eq. 60), L by Eq. 63
    let pd = Population::diagonal(&FIG3, 1.0 / 31.0).unwrap();
    let levels = z::plateau_losses(&FIG3, 31.0);
    for mask in 0..16usize {
        let s: Vec<usize> = (0..4).filter(|i| mask >> i & 1 == 1).collect();
        let m = z::fixed_point_m(&FIG3, 1.0 / 31.0, &s).unwrap();
        let g = pd.g(&m).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                let want = if i == j && !s.contains(&i) {
                    FIG3[i] * FIG3[i]
                } else {
                    0.0
                };
                near(g[i * 4 + j], want, 1e-14, "G at fixed point");
            }
        }
        let l = z::fixed_point_loss(&FIG3, 1.0 / 31.0, &s).unwrap();
        let direct = 1.0
            - s.iter()
                .map(|&i| FIG3[i] / (1.0 + (1.0 + 1.0 / FIG3[i]) / 31.0))
                .sum::<f64>();
        near(l, direct, 1e-12, "Eq. 63");
        if s == (0..s.len()).collect::<Vec<_>>() {
            near(l, levels[s.len()], 1e-12, "plateau level");
        }
    }
}

/// Aligned, balanced ATTN_M init: w2 = sqrt(s0) u, U_i = (w2)_i I / sqrt(D).
fn aligned_merged(h: usize, d: usize, s0: f64) -> Vec<f64> {
    let mut y = vec![0.0; h + h * d * d];
    let u: Vec<f64> = (0..h)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * (1.0 + 0.1 * i as f64))
        .collect();
    let n: f64 = u.iter().map(|a| a * a).sum::<f64>().sqrt();
    for i in 0..h {
        y[i] = s0.sqrt() * u[i] / n;
        for k in 0..d {
            y[h + i * d * d + k * d + k] = y[i] / (d as f64).sqrt();
        }
    }
    y
}

#[test]
fn white_time_course_matches_population_flow() {
    let (d, h) = (4, 8);
    for c in [1.0, 0.25] {
        let p = Population::diagonal(&[c; 4], 1.0 / 31.0).unwrap();
        let y0 = aligned_merged(h, d, 1e-6);
        let mut worst: f64 = 0.0;
        let y = z::simulate(
            &p,
            Arch::Merged { heads: h },
            &y0,
            Scheme::Rk4,
            0.01,
            10.0,
            1,
            &mut |t, l, _| {
                let (_, lt) = z::white_time_course(t, d, 31.0, c, 1e-6).unwrap();
                worst = worst.max((l - lt).abs());
                true
            },
        )
        .unwrap();
        assert!(worst < 1e-6, "c = {c}: max |L - Eq. 51| = {worst}");
        if c == 1.0 {
            let m = Arch::Merged { heads: h }.m(d, &y);
            near(m[0], 31.0 / 36.0, 1e-6, "sigma(inf)");
        }
    }
}

#[test]
fn attn_m_single_drop_and_log_plateau() {
    let (d, h) = (4, 8);
    let p = Population::diagonal(&FIG3, 1.0 / 31.0).unwrap();
    let lstar = p.loss_star().unwrap();
    let lam: Vec<f64> = (0..16)
        .map(|k| if k % 5 == 0 { FIG3[k / 5] } else { 0.0 })
        .collect();
    let mut t_half = Vec::new();
    for w in [1e-4, 1e-6] {
        let arch = Arch::Merged { heads: h };
        let y0 = arch.init(d, w, 4);
        let mut th = None;
        let mut last = 0.0;
        z::simulate(
            &p,
            arch,
            &y0,
            Scheme::Euler,
            0.1,
            600.0,
            1,
            &mut |t, l, _| {
                if th.is_none() && l < 0.5 * (1.0 + lstar) {
                    th = Some(t);
                }
                last = l;
                true
            },
        )
        .unwrap();
        let th = th.expect("no drop");
        let pred = z::attn_m_plateau_time(&lam, d, w).unwrap();
        assert!(
            (1.0..=1.3).contains(&(th / pred)),
            "w = {w}: t_1/2 = {th}, prediction {pred}"
        );
        assert!(last - lstar < 1e-3, "final loss {last}");
        t_half.push(th);
    }
    let diff = t_half[1] - t_half[0];
    assert!(
        (diff / 24.5 - 1.0).abs() < 0.1,
        "t_1/2(1e-6) - t_1/2(1e-4) = {diff}"
    );
}

#[test]
fn attn_s_saddle_to_saddle_and_one_over_w_law() {
    let (d, h) = (4, 5);
    let p = Population::diagonal(&FIG3, 1.0 / 31.0).unwrap();
    let levels = z::plateau_losses(&FIG3, 31.0);
    let arch = Arch::Separate { heads: h, rank: 1 };
    let mut first = Vec::new();
    for (seed, w) in [(0u64, 0.1), (0, 0.05), (1, 0.1)] {
        let y0 = arch.init(d, w, seed);
        let mut traj = Vec::new();
        let y = z::simulate(
            &p,
            arch,
            &y0,
            Scheme::Euler,
            0.5,
            12_000.0,
            2,
            &mut |t, l, _| {
                traj.push((t, l));
                true
            },
        )
        .unwrap();
        let cr = z::crossings(&levels, &traj);
        let cr: Vec<f64> = cr.iter().map(|c| c.expect("missing drop")).collect();
        assert!(
            cr.windows(2).all(|w| w[0] < w[1]),
            "crossings out of order {cr:?}"
        );
        for m in 1..4 {
            let tm = 0.5 * (cr[m - 1] + cr[m]);
            let l = traj.iter().find(|(t, _)| *t >= tm).unwrap().1;
            near(l, levels[m], 0.02, "mid-plateau loss");
        }
        let lf = traj.last().unwrap().1;
        near(lf, levels[4], 1e-3, "final loss");
        let m = arch.m(d, &y);
        let ms = p.m_star().unwrap();
        let rel = m
            .iter()
            .zip(&ms)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt()
            / ms.iter().map(|a| a * a).sum::<f64>().sqrt();
        assert!(rel < 0.01, "||M - M*|| / ||M*|| = {rel}");
        if seed == 0 {
            first.push(cr[0]);
        }
    }
    // same normalised draws, half the init: the first plateau doubles (Eq. 72)
    let ratio = first[1] / first[0];
    near(ratio, 2.0, 0.1, "t1(w/2)/t1(w)");
}

#[test]
fn scalar_ode_closed_form_and_ansatz() {
    let inv = 1.0 / 31.0;
    let a = z::a_coeffs(&FIG3, inv).unwrap();
    let levels = z::plateau_losses(&FIG3, 31.0);
    // F'(v) = 1/(v^2 - kappa v^5)
    for (lam, aa) in FIG3.iter().zip(&a) {
        let kappa = aa / lam;
        for v in [0.1, 0.5, 1.0] {
            let vs = (lam / aa).cbrt();
            if v >= vs {
                continue;
            }
            let mut f = |x: &[f64]| z::implicit_f(x[0], *lam, *aa);
            let e = fd::rel_error(
                &mut f,
                &[v],
                &[1.0 / (v * v - kappa * v.powi(5))],
                1e-6,
                1e-12,
            );
            assert!(e < 1e-7, "F' at {v}: {e}");
        }
    }
    // Full ATTN_S flow from the ansatz (heads 1..m at v*, head m+1 at v0 e_{m+1}) vs the scalar ODE (AT12a, b)
    let (d, h) = (4, 5);
    let p = Population::diagonal(&FIG3, inv).unwrap();
    let arch = Arch::Separate { heads: h, rank: 1 };
    let vs = z::v_star(&FIG3, inv).unwrap();
    for m in 0..4 {
        let (lam, am) = (FIG3[m], a[m]);
        let v0 = 0.05;
        let mut y0 = vec![0.0; arch.state_len(d)];
        let (k0, q0) = (h, h + h * d);
        for i in 0..=m {
            let v = if i < m { vs[i] } else { v0 };
            y0[i] = v;
            y0[k0 + i * d + i] = v;
            y0[q0 + i * d + i] = v;
        }
        let mut sv = v0;
        let mut rk = icl_core::theory::ode::Rk4::new(1);
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| dy[0] = z::scalar_ode_rhs(y[0], lam, am);
        let t_end = 4.0 / (lam * lam * v0);
        let mut worst_v: f64 = 0.0;
        let mut worst_l: f64 = 0.0;
        let mut prev_t = 0.0;
        let mut sim_half = None;
        z::simulate(&p, arch, &y0, Scheme::Rk4, 0.1, t_end, 1, &mut |t, l, y| {
            if t > prev_t {
                let mut s = [sv];
                rk.step(&mut f, prev_t, &mut s, t - prev_t);
                sv = s[0];
                prev_t = t;
            }
            worst_v = worst_v.max((y[m] - sv).abs());
            worst_l = worst_l.max((l - z::ansatz_loss(levels[m], y[m], lam, am)).abs());
            if sim_half.is_none() && y[m] >= vs[m] / 2.0 {
                sim_half = Some(t);
            }
            true
        })
        .unwrap();
        assert!(worst_v < 1e-8, "m = {m}: max |v - v_ode| = {worst_v}");
        assert!(worst_l < 1e-10, "m = {m}: ansatz loss off by {worst_l}");
        // implicit solution: time to v*/2 against the simulation (one step of resolution)
        let tc = z::scalar_ode_time(v0, vs[m] / 2.0, lam, am).unwrap();
        let ts = sim_half.unwrap();
        assert!(
            ts >= tc - 1e-9 && ts - tc <= 0.1 + 1e-9,
            "m = {m}: closed form {tc}, simulated {ts}"
        );
        let vt = z::scalar_ode_v(tc, v0, lam, am).unwrap();
        near(vt, vs[m] / 2.0, 1e-9, "inverse of F");
    }
    // AT12b: closed form vs a fine numerical ODE, from v0 = 0.01
    let (lam, am) = (FIG3[0], a[0]);
    for target in [0.1, vs[0] / 2.0, 0.9 * vs[0]] {
        let tc = z::scalar_ode_time(0.01, target, lam, am).unwrap();
        let mut y = vec![0.01];
        let mut t = 0.0;
        let mut rk = icl_core::theory::ode::Rk4::new(1);
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| dy[0] = z::scalar_ode_rhs(y[0], lam, am);
        while y[0] < target {
            rk.step(&mut f, t, &mut y, 0.01);
            t += 0.01;
        }
        assert!((t - tc).abs() / tc < 2e-3, "target {target}: {t} vs {tc}");
    }
    // plateau-duration predictions: first plateau ~ 1/(lambda_1^2 v_1(0))
    let pt = z::attn_s_plateau_times(&FIG3, &[0.05]).unwrap();
    near(pt[0], 1.0 / (0.16 * 0.05), 1e-9, "Eq. 72");
}

#[test]
fn conservation_laws_under_rk4() {
    let d = 4;
    let p = Population::diagonal(&FIG3, 1.0 / 31.0).unwrap();
    for arch in [
        Arch::Separate { heads: 3, rank: 2 },
        Arch::Merged { heads: 3 },
    ] {
        let y0 = arch.init(d, 0.3, 5);
        let inv = |y: &[f64]| -> Vec<f64> {
            match arch {
                Arch::Separate { heads, rank } => {
                    let (k0, q0) = (heads, heads + heads * rank * d);
                    let mut out = Vec::new();
                    for i in 0..heads {
                        let mut ksum = 0.0;
                        for r in 0..rank {
                            let o = (i * rank + r) * d;
                            let kk: f64 = y[k0 + o..k0 + o + d].iter().map(|a| a * a).sum();
                            let qq: f64 = y[q0 + o..q0 + o + d].iter().map(|a| a * a).sum();
                            out.push(kk - qq);
                            ksum += kk;
                        }
                        out.push(ksum - y[i] * y[i]);
                    }
                    out
                }
                Arch::Merged { heads } => {
                    let mut out = Vec::new();
                    for i in 0..heads {
                        for j in 0..heads {
                            let ui = &y[heads + i * d * d..heads + (i + 1) * d * d];
                            let uj = &y[heads + j * d * d..heads + (j + 1) * d * d];
                            out.push(
                                y[i] * y[j] - ui.iter().zip(uj).map(|(a, b)| a * b).sum::<f64>(),
                            );
                        }
                    }
                    out
                }
            }
        };
        let c0 = inv(&y0);
        let y = z::simulate(
            &p,
            arch,
            &y0,
            Scheme::Rk4,
            0.1,
            2000.0,
            100,
            &mut |_, _, _| true,
        )
        .unwrap();
        let c1 = inv(&y);
        let drift = c0
            .iter()
            .zip(&c1)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(drift < 1e-6, "{arch:?}: drift {drift}");
    }
}

#[test]
fn rank_r_heads_grow_in_groups() {
    // AT14: D = 4, H = 5, Fig 3 Lambda, w_init = 0.1: ceil(D/R) value weights grow; final loss L*
    let d = 4;
    let p = Population::diagonal(&FIG3, 1.0 / 31.0).unwrap();
    for (rank, grown) in [(2usize, 2usize), (4, 1)] {
        let arch = Arch::Separate { heads: 5, rank };
        let y0 = arch.init(d, 0.1, 0);
        let mut last = f64::NAN;
        let y = z::simulate(
            &p,
            arch,
            &y0,
            Scheme::Euler,
            0.5,
            12_000.0,
            100,
            &mut |_, l, _| {
                last = l;
                true
            },
        )
        .unwrap();
        let n = y[..5].iter().filter(|v| v.abs() > 0.5).count();
        assert_eq!(n, grown, "R = {rank}: |v| = {:?}", &y[..5]);
        near(last, 0.135995, 2e-3, "final loss");
    }
}
