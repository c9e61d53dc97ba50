//! The multilayer paper's quantities: Monte Carlo errors of Algorithm 1, multi-step GD, the
//! regression baselines on varying-covariance data and the IV estimators
//! ([`crate::theory::multilayer`]).
use super::{bad, sum, Ctx, Out, Value, P, Q};
use crate::budget::product;
use crate::theory::multilayer;
use crate::Result;
use alloc::vec;
use alloc::vec::Vec;

/// Monte Carlo over varying-covariance sequences (noise-free target): mean and stderr of each prediction.
fn ml_mc(
    c: &Ctx,
    steps: usize,
    f: &dyn Fn(&multilayer::Sequence) -> crate::Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (d, l, s2, lo, hi, n, seed) = (
        c.u("d")?,
        c.u("L")?,
        c.f("sigma2")?,
        c.f("lmin")?,
        c.f("lmax")?,
        c.u("n")?,
        c.u64("seed")?,
    );
    if d == 0 || l == 0 || n < 2 || s2 < 0.0 || !(lo > 0.0 && hi >= lo) {
        return Err(bad(
            "need d, L >= 1, n >= 2, sigma2 >= 0 and 0 < lmin <= lmax",
        ));
    }
    c.count(steps as f64, "--steps")?;
    // one sequence (its normals, x, y, U and Sigma), the estimators' copies of X (X and X^T) and
    // the per-step step sizes, predictions and sums
    let (d, l) = (d as u64, l as u64);
    c.memory(
        sum(&[
            product(&[5 * 8, l + 1, d]),
            product(&[3 * 8, l]),
            product(&[8 * 8, d, d]),
            product(&[8 * 8, steps as u64 + 1]),
        ]),
        "--L x --d, --d squared, --steps",
    )?;
    let (d, l) = (d as usize, l as usize);
    let (mut s, mut ss) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut r = crate::rng::stream(seed, crate::rng::Domain::Eval, l as u64, i as u64);
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
        .map(|(v, m)| libm::sqrt((v / nf - m * m).max(0.0) / (nf - 1.0)))
        .collect();
    Ok((m, se))
}

/// The parameters of the varying-covariance Monte Carlo quantities.
const ML_MC: &[P] = &[
    P("d", Some("5"), "dimension"),
    P("L", Some("120"), "context length"),
    P("sigma2", Some("0.1"), "noise variance"),
    P("lmin", Some("0.8"), "eigenvalues of Sigma ~ U(lmin, lmax)"),
    P("lmax", Some("1.2"), "see lmin"),
    P("n", Some("4000"), "Monte Carlo sequences"),
    P("seed", Some("0"), "seed"),
];

/// The quantities of the multilayer paper.
pub fn quantities() -> Vec<Q> {
    vec![
        Q {
            name: "alg1-risk",
            paper: "multilayer",
            about: "MC error (noise-free target) of Algorithm 1 after s = 1..steps steps on varying-covariance data: list over s",
            params: params!(
                P("eta-x", Some("0.6128"), "covariate step eta_x = -<u1, omega>"),
                P("eta-y", Some("0.7193"), "label step eta_y = <u2, omega>"),
                P("steps", Some("6"), "steps")
            ),
            shared: ML_MC,
            run: |c| {
                let (ex, ey, t) = (c.f("eta-x")?, c.f("eta-y")?, c.u("steps")?);
                let (m, se) = ml_mc(c, t, &|q| Ok(multilayer::algorithm1(&q.x, &q.y, &q.xq, ex, ey, t)?.preds))?;
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
        Q {
            name: "gd-steps-risk",
            paper: "multilayer",
            about: "MC error of K-step GD w <- w - eta/L X^T(Xw - y) on varying-covariance data: list over k = 1..steps",
            params: params!(
                P("eta", Some("0.9"), "step size"),
                P("steps", Some("4"), "steps")
            ),
            shared: ML_MC,
            run: |c| {
                let (eta, t) = (c.f("eta")?, c.u("steps")?);
                let (m, se) = ml_mc(c, t, &|q| multilayer::gd_steps(&q.x, &q.y, &q.xq, eta, t))?;
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
        Q {
            name: "regression-baselines",
            paper: "multilayer",
            about: "MC error [OLS, ridge(lambda)] on varying-covariance data; closed-form OLS excess risk sigma^2 d/(L-d-1)",
            params: &[P("lambda", Some("0.1"), "ridge penalty")],
            shared: ML_MC,
            run: |c| {
                let (d, lam) = (c.u("d")?, c.f("lambda")?);
                let (m, se) = ml_mc(c, 0, &|q| {
                    let dot = |w: &[f64]| w.iter().zip(&q.xq).map(|(a, b)| a * b).sum::<f64>();
                    Ok(vec![dot(&multilayer::ols(&q.x, &q.y, d)?), dot(&multilayer::ridge(&q.x, &q.y, d, lam)?)])
                })?;
                let cf = multilayer::ols_excess_risk(d, c.u("L")?, c.f("sigma2")?).ok();
                Ok(Out::list(&m).with("stderr", Value::from(se)).with("ols_closed_form", Value::from(cf)))
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
            shared: &[],
            run: |c| {
                let (q, p, l, n, seed) = (c.u("q")?, c.u("p")?, c.u("L")?, c.u("n")?, c.u64("seed")?);
                if q == 0 || p == 0 || l <= q.max(p) || n < 2 {
                    return Err(bad("need q, p >= 1, L > max(q, p) and n >= 2"));
                }
                // one sequence (z, u, omega, eps, x, y) and 2SLS's and OLS's copies of Z, X,
                // X_hat and their transposes
                let (q8, p8, l8) = (q as u64, p as u64, l as u64);
                c.memory(
                    sum(&[
                        product(&[8, l8, 3 * q8 + 6 * p8 + 3]),
                        product(&[3 * 8, q8 + p8, q8 + p8]),
                    ]),
                    "--L x (--q + --p), (--q + --p) squared",
                )?;
                let (mut s, mut ss) = ([0.0; 2], [0.0; 2]);
                for i in 0..n {
                    let mut r = crate::rng::stream(seed, crate::rng::Domain::Eval, l as u64, i as u64);
                    let sq = multilayer::iv_sequence(&mut r, q, p, l);
                    let (b2, th) = multilayer::two_sls(&sq.z, &sq.x, &sq.y, q, p)?;
                    let xh: Vec<f64> = (0..p).map(|j| (0..q).map(|k| th[k * p + j] * sq.zq[k]).sum()).collect();
                    let bo = multilayer::ols(&sq.x, &sq.y, p)?;
                    let preds = [b2.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>(), bo.iter().zip(&sq.xq).map(|(a, b)| a * b).sum::<f64>()];
                    for k in 0..2 {
                        let e = (preds[k] - sq.yq) * (preds[k] - sq.yq);
                        s[k] += e;
                        ss[k] += e * e;
                    }
                }
                let nf = n as f64;
                let m: Vec<f64> = s.iter().map(|v| v / nf).collect();
                let se: Vec<f64> = ss.iter().zip(&m).map(|(v, m)| libm::sqrt((v / nf - m * m).max(0.0) / (nf - 1.0))).collect();
                Ok(Out::list(&m).with("stderr", Value::from(se)))
            },
        },
    ]
}
