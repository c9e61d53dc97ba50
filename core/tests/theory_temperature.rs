//! temperature theory: the spec's golden table (§7.1), algebraic identities of the linearized layer,
//! and Theorem 4.6 / 4.7 against Monte Carlo of the exact linearized model.
use icl_core::rng::{self, Domain};
use icl_core::theory::temperature::{self as tp, Gaussian, Params};
use nalgebra::{DMatrix, DVector};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

#[test]
fn golden_isotropic_table() {
    // (d, l, alpha, beta, sigma) -> a, b, c, tau_opt, G(1), G_min (isotropic reduction, sigma_tr = 0.1)
    let table: [(usize, usize, f64, f64, f64, [f64; 6]); 12] = [
        (
            50,
            100,
            1.0,
            1.0,
            0.1,
            [74.9900, 99.9900, 50.0100, 1.49995, 25.0100, 16.6789],
        ),
        (
            50,
            100,
            2.0,
            1.0,
            0.1,
            [599.9000, 399.9600, 100.0100, 2.99980, 299.9500, 33.3456],
        ),
        (
            50,
            100,
            3.0,
            1.0,
            0.1,
            [2024.6401, 899.9100, 150.0100, 4.49965, 1274.7400, 50.0122],
        ),
        (
            50,
            100,
            0.5,
            1.0,
            0.1,
            [9.3744, 24.9975, 25.0100, 0.75002, 9.3869, 8.3456],
        ),
        (
            50,
            100,
            1.0,
            2.0,
            0.1,
            [149.9750, 199.9800, 100.0100, 1.49990, 50.0050, 33.3456],
        ),
        (
            50,
            100,
            1.0,
            1.0,
            1.0,
            [75.4849, 99.9900, 51.0000, 1.50985, 26.4949, 17.8874],
        ),
        (
            50,
            100,
            1.0,
            1.0,
            3.0,
            [79.4841, 99.9900, 59.0000, 1.58984, 38.4941, 27.5535],
        ),
        (
            50,
            50,
            1.0,
            1.0,
            0.1,
            [99.9700, 99.9800, 50.0100, 1.99980, 50.0000, 25.0125],
        ),
        (
            50,
            50,
            1.0,
            1.0,
            1.0,
            [100.9596, 99.9800, 51.0000, 2.01960, 51.9796, 26.2475],
        ),
        (
            50,
            50,
            1.0,
            1.0,
            3.0,
            [108.9564, 99.9800, 59.0000, 2.17956, 67.9764, 36.0642],
        ),
        (
            50,
            200,
            1.0,
            1.0,
            0.1,
            [62.4963, 99.9950, 50.0100, 1.24999, 12.5112, 10.0116],
        ),
        (
            20,
            40,
            1.0,
            1.0,
            0.1,
            [29.9900, 39.9900, 20.0100, 1.49988, 10.0100, 6.6789],
        ),
    ];
    for (d, l, al, be, s, want) in table {
        let train = Gaussian::isotropic(d, 1.0, 1.0, 0.01);
        let p = tp::lemma41(&train, l).unwrap();
        let test = Gaussian::isotropic(d, al, be, s * s);
        let c = tp::coefficients(&p, &test, l).unwrap();
        let ci = tp::isotropic(d, l, al, be, s * s, tp::k_iso(l, 0.01));
        for (x, y) in [(c.a, ci.a), (c.b, ci.b), (c.c, ci.c)] {
            assert!(rel(x, y) < 1e-12, "matrix vs scalar form: {x} vs {y}");
        }
        let got = [
            c.a,
            c.b,
            c.c,
            c.tau_opt().unwrap(),
            c.g(1.0),
            c.g_min().unwrap(),
        ];
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-4 + 2e-6 * w.abs(),
                "case {d},{l},{al},{be},{s}: {got:?} vs {want:?}"
            );
        }
        // the scalar tau_opt formula
        let k = tp::k_iso(l, 0.01);
        let t = k * (al + (s * s / be + al * d as f64) / l as f64);
        assert!(rel(got[3], t) < 1e-12);
        // the heuristic (136) matches tau_opt up to the factor k on the correction
        let th = tp::tau_heuristic(&p, &test, l).unwrap();
        assert!((th - t).abs() < 1e-3 * t, "heuristic {th} vs {t}");
        // closed-form argmin on a 4000-point log grid is 2a/b
        let grid: Vec<f64> = (0..4000)
            .map(|i| 10f64.powf(-1.0 + 2.0 * i as f64 / 3999.0))
            .collect();
        let best = grid
            .iter()
            .copied()
            .min_by(|a, b| c.g(*a).partial_cmp(&c.g(*b)).unwrap())
            .unwrap();
        assert!(
            rel(best, got[3]) < 1.2e-3,
            "grid argmin {best} vs {}",
            got[3]
        );
        assert!(c.g(got[3]) <= c.g(1.0));
    }
}

#[test]
fn exact_rescaling_and_monotonicity() {
    // §7.4: sigma = sigma_tr = 0, Sigma_w = I, Sigma_x^test = c I: tau_opt and G_min scale by c
    let (d, l) = (30, 45);
    let p = tp::lemma41(&Gaussian::isotropic(d, 1.0, 1.0, 0.0), l).unwrap();
    let base = tp::coefficients(&p, &Gaussian::isotropic(d, 1.0, 1.0, 0.0), l).unwrap();
    assert!(rel(base.tau_opt().unwrap(), 1.0 + d as f64 / l as f64) < 1e-12);
    for c in [0.5, 2.0, 3.0] {
        let cc = tp::coefficients(&p, &Gaussian::isotropic(d, c, 1.0, 0.0), l).unwrap();
        assert!(rel(cc.tau_opt().unwrap() / base.tau_opt().unwrap(), c) < 1e-12);
        assert!(rel(cc.g_min().unwrap() / base.g_min().unwrap(), c) < 1e-12);
    }
    // Fig. 7 setting: increasing in alpha and sigma, flat in beta
    let (d, l) = (50, 100);
    let p = tp::lemma41(&Gaussian::isotropic(d, 1.0, 1.0, 0.01), l).unwrap();
    let tau = |a: f64, b: f64, s: f64| {
        tp::coefficients(&p, &Gaussian::isotropic(d, a, b, s * s), l)
            .unwrap()
            .tau_opt()
            .unwrap()
    };
    let mut prev = 0.0;
    for a in [0.25, 0.5, 1.0, 2.0, 4.0] {
        assert!(tau(a, 1.0, 0.1) > prev);
        prev = tau(a, 1.0, 0.1);
    }
    let mut prev = 0.0;
    for s in [0.0, 0.5, 1.0, 2.0, 4.0] {
        assert!(tau(1.0, 1.0, s) > prev);
        prev = tau(1.0, 1.0, s);
    }
    let t0 = tau(1.0, 1.0, 0.1);
    for b in [0.25, 0.5, 2.0, 4.0] {
        assert!(rel(tau(1.0, b, 0.1), t0) < 5e-4);
    }
    // no finite optimum when b <= 0
    let neg = tp::Coeffs {
        a: 1.0,
        b: -1.0,
        c: 1.0,
    };
    assert!(neg.tau_opt().is_err() && neg.g_min().is_err());
    // m21 != 0 is outside Theorem 4.6
    let mut q = p.clone();
    q.m21[0] = 1.0;
    assert!(tp::coefficients(&q, &Gaussian::isotropic(d, 1.0, 1.0, 0.01), l).is_err());
}

fn normals(seed: u64, seq: u64, n: usize) -> Vec<f64> {
    let mut r = rng::stream(seed, Domain::Eval, 0, seq);
    let mut g = vec![0.0; n];
    rng::fill_normal(&mut r, &mut g);
    g
}

#[test]
fn linearized_layer_identities() {
    // (a) predict_parts equals the full-matrix layer (eq. 5) for random dense V, M = K^T Q, tau
    let (d, l, tau) = (3, 6, 0.7);
    let g = normals(1, 0, 2 * (d + 1) * (d + 1) + l * d + l);
    let e = d + 1;
    let v = DMatrix::from_row_slice(e, e, &g[..e * e]);
    let m = DMatrix::from_row_slice(e, e, &g[e * e..2 * e * e]);
    let xs: Vec<f64> = g[2 * e * e..2 * e * e + l * d]
        .iter()
        .map(|x| x + 0.7)
        .collect();
    let ys = &g[2 * e * e + l * d..2 * e * e + l * d + l - 1];
    let mut z = DMatrix::zeros(e, l);
    for t in 0..l {
        for i in 0..d {
            z[(i, t)] = xs[t * d + i];
        }
        if t < l - 1 {
            z[(d, t)] = ys[t];
        }
    }
    let s = z.transpose() * &m * &z;
    let ones = DMatrix::from_element(l, l, 1.0);
    let lf = l as f64;
    let pm = &ones / lf + (DMatrix::identity(l, l) - &ones / lf) * &s / (lf * tau);
    for j in 0..l {
        assert!(
            (pm.column(j).sum() - 1.0).abs() < 1e-12,
            "columns of P sum to 1"
        );
    }
    let out = &z + &v * &z * &pm;
    let full = out[(d, l - 1)];
    let p = Params {
        d,
        m11: (0..d * d).map(|k| m[(k / d, k % d)]).collect(),
        m21: (0..d).map(|j| m[(d, j)]).collect(),
        v21: (0..d).map(|j| v[(d, j)]).collect(),
        v22: v[(d, d)],
        self_attend: true,
    };
    let (u, b) = tp::predict_parts(&p, &xs, ys).unwrap();
    let mine = u / tau + b;
    assert!(rel(mine, full) < 1e-12, "{mine} vs {full}");
    // (b) per-prompt unscaled parameters (eq. 54) with l-row centring reproduce Bayes ridge at tau = 1
    let (d, l) = (4, 9);
    let s2 = 0.3;
    let g = normals(2, 0, l * d + l + d * d);
    let xs = &g[..l * d];
    let ys: Vec<f64> = g[l * d..l * d + l - 1].to_vec();
    let a = DMatrix::from_row_slice(d, d, &g[l * d + l..]);
    let sw = &a * a.transpose() + DMatrix::identity(d, d) * 0.5;
    let muw = DVector::from_column_slice(&[0.3, -1.0, 0.5, 2.0]);
    let mut xbar = DMatrix::from_row_slice(l, d, xs);
    let sx: Vec<f64> = (0..d).map(|j| xbar.column(j).sum() / l as f64).collect();
    for t in 0..l {
        for j in 0..d {
            xbar[(t, j)] -= sx[j];
        }
    }
    let mut yfull = ys.clone();
    yfull.push(0.0);
    let sy = yfull.iter().sum::<f64>() / l as f64;
    let ybar = DVector::from_iterator(l, yfull.iter().map(|y| y - sy));
    let xtx = xbar.transpose() * &xbar;
    let swi = sw.clone().try_inverse().unwrap();
    let m11 = (&xtx / s2 + &swi).try_inverse().unwrap() * (l as f64 / s2);
    let v21 = xtx.clone().try_inverse().unwrap() * &swi * &muw * s2;
    let p = Params {
        d,
        m11: (0..d * d).map(|k| m11[(k / d, k % d)]).collect(),
        m21: vec![0.0; d],
        v21: v21.iter().copied().collect(),
        v22: 1.0,
        self_attend: true,
    };
    let (u, _) = tp::predict_parts(&p, xs, &ys).unwrap();
    let wb =
        (&xtx + &swi * s2).try_inverse().unwrap() * (xbar.transpose() * &ybar + &swi * &muw * s2);
    let yb: f64 = (0..d).map(|j| wb[j] * xs[(l - 1) * d + j]).sum();
    assert!(rel(u, yb) < 1e-10, "w_att.x_q = {u} vs Bayes {yb}");
}

struct Mc {
    /// per-prompt conditional means (E[u^2|X], E[ur|X], E[r^2|X])
    uu: Vec<f64>,
    ur: Vec<f64>,
    rr: Vec<f64>,
    /// per-prompt plain squared errors at tau_plain
    plain: Vec<f64>,
}

/// Sample X ~ N(mu_x, diag(var_x)) and compute the conditional moments of u and r (the variance-reduced estimator),
/// plus a plain-MC squared error at `tau_plain` (sampling w and the noise too).
fn simulate(
    p: &Params,
    test: &Gaussian,
    var_x: &[f64],
    l: usize,
    n: usize,
    seed: u64,
    tau_plain: f64,
) -> Mc {
    let d = p.d;
    let (lf, v22) = (l as f64, p.v22);
    let s2 = test.sigma2;
    let sw = DMatrix::from_row_slice(d, d, &test.sigma_w);
    let chol_w = sw.clone().cholesky().unwrap().l();
    let mut mc = Mc {
        uu: vec![],
        ur: vec![],
        rr: vec![],
        plain: vec![],
    };
    for b in 0..n {
        let g = normals(seed, b as u64, l * d + d + l);
        let x: Vec<f64> = (0..l * d)
            .map(|k| test.mu_x[k % d] + var_x[k % d].sqrt() * g[k])
            .collect();
        let xq = &x[(l - 1) * d..];
        let sx: Vec<f64> = (0..d)
            .map(|j| (0..l).map(|t| x[t * d + j]).sum::<f64>() / lf)
            .collect();
        let pv: Vec<f64> = (0..d)
            .map(|i| (0..d).map(|j| p.m11[i * d + j] * xq[j]).sum())
            .collect();
        let h: Vec<f64> = (0..l - 1)
            .map(|t| v22 / lf * (0..d).map(|j| (x[t * d + j] - sx[j]) * pv[j]).sum::<f64>())
            .collect();
        let gv: Vec<f64> = (0..d)
            .map(|j| (0..l - 1).map(|t| h[t] * x[t * d + j]).sum())
            .collect();
        // c0 = x_q^T M11^T C_xx v21 = p . (C_xx v21)
        let sxv: f64 = sx.iter().zip(&p.v21).map(|(a, b)| a * b).sum();
        let mut cv = vec![0.0; d];
        for t in 0..l {
            let xv: f64 = (0..d).map(|j| x[t * d + j] * p.v21[j]).sum();
            for j in 0..d {
                cv[j] += x[t * d + j] * xv / lf;
            }
        }
        let c0: f64 = (0..d).map(|j| pv[j] * (cv[j] - sx[j] * sxv)).sum();
        let b0 = sxv;
        let q: Vec<f64> = (0..d)
            .map(|j| v22 / lf * (0..l - 1).map(|t| x[t * d + j]).sum::<f64>() - xq[j])
            .collect();
        let (gv_, q_) = (
            DVector::from_column_slice(&gv),
            DVector::from_column_slice(&q),
        );
        let muw = DVector::from_column_slice(&test.mu_w);
        let gam = c0 + gv_.dot(&muw);
        let rho = b0 + q_.dot(&muw);
        let hh: f64 = h.iter().map(|a| a * a).sum();
        let hs: f64 = h.iter().sum();
        mc.uu
            .push(gam * gam + (gv_.transpose() * &sw * &gv_)[0] + s2 * hh);
        mc.ur
            .push(gam * rho + (gv_.transpose() * &sw * &q_)[0] + s2 * v22 / lf * hs);
        mc.rr.push(
            rho * rho
                + (q_.transpose() * &sw * &q_)[0]
                + s2 * (v22 * v22 * (lf - 1.0) / (lf * lf) + 1.0),
        );
        // plain MC: draw w and the noise, predict with the layer itself
        let w = &muw + &chol_w * DVector::from_column_slice(&g[l * d..l * d + d]);
        let eps: Vec<f64> = g[l * d + d..].iter().map(|e| e * s2.sqrt()).collect();
        let y: Vec<f64> = (0..l - 1)
            .map(|t| (0..d).map(|j| w[j] * x[t * d + j]).sum::<f64>() + eps[t])
            .collect();
        let yl: f64 = (0..d).map(|j| w[j] * xq[j]).sum::<f64>() + eps[l - 1];
        let (u, bb) = tp::predict_parts(p, &x, &y).unwrap();
        let e = u / tau_plain + bb - yl;
        mc.plain.push(e * e);
    }
    mc
}

fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

#[test]
fn theorem_46_47_against_monte_carlo() {
    let (d, l) = (50, 100);
    let lin: Vec<f64> = (0..d)
        .map(|i| 0.5 + 1.5 * i as f64 / (d - 1) as f64)
        .collect();
    let mut muw2 = vec![0.0; d];
    muw2[0] = 2.0;
    let iso = |a: f64, s: f64| Gaussian::isotropic(d, a, 1.0, s * s);
    // (train, test, var_x)
    let cases: Vec<(Gaussian, Gaussian, Vec<f64>)> = vec![
        (iso(1.0, 0.1), iso(1.0, 0.1), vec![1.0; d]),
        (iso(1.0, 0.1), iso(2.0, 0.1), vec![2.0; d]),
        (iso(1.0, 0.1), iso(1.0, 1.0), vec![1.0; d]),
        (
            iso(1.0, 0.1),
            Gaussian {
                sigma_x: (0..d * d)
                    .map(|k| if k / d == k % d { lin[k % d] } else { 0.0 })
                    .collect(),
                ..iso(1.0, 0.1)
            },
            lin.clone(),
        ),
        (
            Gaussian {
                mu_w: muw2.clone(),
                ..iso(1.0, 0.1)
            },
            Gaussian {
                mu_w: muw2.clone(),
                ..iso(1.0, 0.1)
            },
            vec![1.0; d],
        ),
    ];
    for (ci, (train, test, var_x)) in cases.iter().enumerate() {
        let p = tp::lemma41(train, l).unwrap();
        let c = tp::coefficients(&p, test, l).unwrap();
        let t_opt = c.tau_opt().unwrap();
        let mc = simulate(&p, test, var_x, l, 1500, 100 + ci as u64, t_opt);
        let (uu, _) = mean_se(&mc.uu);
        let (ur, _) = mean_se(&mc.ur);
        let (rr, _) = mean_se(&mc.rr);
        let g_mc = |tau: f64| uu / (tau * tau) + 2.0 * ur / tau + rr;
        // closed form vs simulation: the asymptotic formula is within a few percent (Thm 4.6 is leading order in d and l)
        for tau in [1.0, t_opt] {
            let r = g_mc(tau) / c.g(tau) - 1.0;
            assert!(r.abs() < 0.05, "case {ci}: G({tau}) MC/CF - 1 = {r}");
        }
        // tau_opt minimises the simulated error on a grid (same samples for every tau)
        let grid: Vec<f64> = (0..400)
            .map(|i| 10f64.powf(-1.0 + 2.0 * i as f64 / 399.0))
            .collect();
        let best = grid
            .iter()
            .copied()
            .min_by(|a, b| g_mc(*a).partial_cmp(&g_mc(*b)).unwrap())
            .unwrap();
        let step = 10f64.powf(2.0 / 399.0) - 1.0;
        assert!(
            rel(best, t_opt) < 0.01 + step,
            "case {ci}: simulated argmin {best} vs tau_opt {t_opt}"
        );
        assert!(
            rel(-uu / ur, t_opt) < 0.01,
            "case {ci}: MC tau* {} vs {t_opt}",
            -uu / ur
        );
        assert!(g_mc(t_opt) <= g_mc(1.0) + 1e-12);
        // plain MC (w and noise sampled) agrees with the conditional MC within 3 standard errors
        let per: Vec<f64> = (0..mc.uu.len())
            .map(|i| mc.uu[i] / (t_opt * t_opt) + 2.0 * mc.ur[i] / t_opt + mc.rr[i])
            .collect();
        let (pm, pse) = mean_se(&mc.plain);
        let (cm, _) = mean_se(&per);
        let diff: Vec<f64> = mc.plain.iter().zip(&per).map(|(a, b)| a - b).collect();
        let (dm, dse) = mean_se(&diff);
        assert!(
            (dm / dse).abs() < 3.0,
            "case {ci}: plain {pm} +- {pse} vs conditional {cm} (paired z = {})",
            dm / dse
        );
    }
}

#[test]
fn lemma41_forms_and_finite_m() {
    // (11) == (57): M11 = d l / sigma^2 (X^T X/(m sigma^2) + Sigma_w^-1)^-1 with X^T X/m = l * xx
    let (d, l, s2) = (6, 20, 0.05);
    let g = normals(7, 0, 2 * d * d);
    let a = DMatrix::from_row_slice(d, d, &g[..d * d]);
    let b = DMatrix::from_row_slice(d, d, &g[d * d..]);
    let sx = &a * a.transpose() / d as f64 + DMatrix::identity(d, d) * 0.3;
    let sw = &b * b.transpose() / d as f64 + DMatrix::identity(d, d) * 0.2;
    let rowsv = |m: &DMatrix<f64>| (0..d * d).map(|k| m[(k / d, k % d)]).collect::<Vec<f64>>();
    let train = Gaussian {
        d,
        mu_x: vec![0.5; d],
        sigma_x: rowsv(&sx),
        mu_w: vec![0.3; d],
        sigma_w: rowsv(&sw),
        sigma2: s2,
    };
    let p = tp::lemma41(&train, l).unwrap();
    let m57 = (&sx * l as f64 / s2 + sw.clone().try_inverse().unwrap())
        .try_inverse()
        .unwrap()
        * (d as f64 * l as f64 / s2);
    for k in 0..d * d {
        assert!(
            (p.m11[k] - m57[(k / d, k % d)]).abs() < 1e-12 * (1.0 + m57.amax()),
            "(11) vs (57)"
        );
    }
    assert!((p.v22 - 1.0 / d as f64).abs() < 1e-15 && p.m21.iter().all(|v| *v == 0.0));
    // finite m = 5000 prompts (d = 50, l = 100): M11 within 3% of the population d I/(1 + sigma^2/l)
    let (d, l) = (50, 100);
    let train = Gaussian::isotropic(d, 1.0, 1.0, 0.01);
    let xx = tp::pretraining_cov(&train, l, 5000, 3).unwrap();
    let pf = tp::lemma41_with_cov(&train, l, &xx).unwrap();
    let pop = d as f64 * tp::k_iso(l, 0.01);
    let num: f64 = (0..d * d)
        .map(|k| (pf.m11[k] - if k / d == k % d { pop } else { 0.0 }).powi(2))
        .sum::<f64>()
        .sqrt();
    let rel_f = num / (pop * (d as f64).sqrt());
    assert!(
        rel_f < 0.03,
        "finite-m M11 relative Frobenius distance {rel_f}"
    );
    // the centring bias: E C_xx = (l-1)/l Sigma_x, so the mean diagonal of xx is 0.99 +- sampling
    let diag = (0..d).map(|i| xx[i * d + i]).sum::<f64>() / d as f64;
    assert!((diag - 0.99).abs() < 0.003, "mean diagonal {diag}");
}
