//! Linear attention (eq. 6) with the same reparametrised parameters, the paper's Fig. 4 contrast
//! (spec §2.6): `E = Z + 1/(l tau) V Z (K Z)^T (Q Z)` ("linear with temperature"; tau = 1 is eq. 6).
//!
//! Its prediction is, with X the l inputs (query included, uncentred) and y the labels with
//! `y_l = 0`: `yhat = u/tau`,
//! `u = [(v21^T X^T X/l + v22 y^T X/l) M11 + (v21^T X^T y/l + v22 y^T y/l) m21^T] x_l`.
//! The moments are uncentred and there is no bias term, so a mean shift of the inputs is not
//! cancelled: with Lemma 4.1's parameters the error tends to `|mu_x|^4 (1 + |mu_x|^2) + sigma^2`
//! as l grows (Sigma_x = Sigma_w = I, mu_w = 0), where the linearised layer's tends to sigma^2.
//!
//! Monte Carlo as for the linearised layer ([`super::mc`]): `G(tau) = a/tau^2 - b/tau + c` with
//! `a = E[u^2]`, `b = -2 E[u r]`, `c = E[r^2]`, `r = -y_l`. Given X (m21 = 0), with `p = M11 x_l`,
//! `h_i = v22/l x_i^T p` (i < l), `g = sum_i h_i x_i`, `c0 = p^T X^T X v21/l`: `u = c0 + g^T w + h^T eps`
//! and `r = -x_l^T w - eps_l`, so with `gamma = c0 + g^T mu_w`, `rho = -x_l^T mu_w`:
//! `E[u^2|X] = gamma^2 + g^T Sigma_w g + sigma^2 |h|^2`, `E[u r|X] = gamma rho - g^T Sigma_w x_l`,
//! `E[r^2|X] = rho^2 + x_l^T Sigma_w x_l + sigma^2`.
use super::mc::{check, mean_cov, Estimator, McCoeffs, Sampler};
use super::{Coeffs, Gaussian, Params};
use crate::{Error, Result};
use alloc::vec;
use alloc::vec::Vec;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Eq. 6 attends from the query to all l tokens.
fn keys_all(p: &Params) -> Result<()> {
    if p.self_attend {
        Ok(())
    } else {
        Err(Error::Unsupported(
            "linear attention (eq. 6) here has the query among its keys (self_attend)".into(),
        ))
    }
}

/// The linear-attention prediction's `u` (`yhat = u/tau`) on one prompt: `x` holds the l inputs row
/// by row (query last), `y` the l - 1 context labels.
pub fn predict(p: &Params, x: &[f64], y: &[f64]) -> Result<f64> {
    keys_all(p)?;
    let d = p.d;
    let l = y.len() + 1;
    if x.len() != l * d {
        return Err(Error::Shape(alloc::format!(
            "x needs l*d = {} entries for {} labels",
            l * d,
            y.len()
        )));
    }
    let lf = l as f64;
    // inner = (X^T X v21 + v22 X^T y)/l, coef = (v21^T X^T y + v22 y^T y)/l
    let mut inner = vec![0.0; d];
    let mut xty = vec![0.0; d];
    for t in 0..l {
        let xt = &x[t * d..(t + 1) * d];
        let xv = dot(xt, &p.v21);
        let yt = if t + 1 < l { y[t] } else { 0.0 };
        for j in 0..d {
            inner[j] += (xt[j] * xv + p.v22 * yt * xt[j]) / lf;
            xty[j] += yt * xt[j];
        }
    }
    let coef = (dot(&p.v21, &xty) + p.v22 * dot(y, y)) / lf;
    let xq = &x[(l - 1) * d..];
    let mut u = 0.0;
    for (j, xqj) in xq.iter().enumerate() {
        let wj: f64 = (0..d).map(|i| p.m11[i * d + j] * inner[i]).sum::<f64>() + coef * p.m21[j];
        u += wj * xqj;
    }
    Ok(u)
}

/// Monte Carlo of linear attention's `a, b, c` on `n >= 2` prompts of `l` tokens from `test`
/// (the prompts of [`super::mc::coefficients`] for the same seed).
pub fn coefficients(
    p: &Params,
    test: &Gaussian,
    l: usize,
    n: usize,
    seed: u64,
    est: Estimator,
) -> Result<McCoeffs> {
    check(p, test, l)?;
    keys_all(p)?;
    if n < 2 {
        return Err(Error::InvalidConfig(alloc::format!(
            "need n >= 2 Monte Carlo prompts (got {n})"
        )));
    }
    if est == Estimator::Conditional && p.m21.iter().any(|v| *v != 0.0) {
        return Err(Error::Unsupported(
            "the conditional estimator needs m21 = 0 (use the plain one)".into(),
        ));
    }
    let d = p.d;
    let lf = l as f64;
    let s2 = test.sigma2;
    let sig = libm::sqrt(s2);
    let mut smp = Sampler::new(test, l)?;
    let (mut w, mut y) = (vec![0.0; d], vec![0.0; l - 1]);
    let (mut pv, mut gv, mut cv, mut swg) =
        (vec![0.0; d], vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    let mut rows: Vec<[f64; 3]> = Vec::with_capacity(n);
    for i in 0..n {
        smp.draw(seed, i);
        let x = &smp.x;
        let m = match est {
            Estimator::Plain => {
                let yl = smp.labels(sig, &mut w, &mut y);
                let u = predict(p, x, &y)?;
                let r = -yl;
                [u * u, -2.0 * u * r, r * r]
            }
            Estimator::Conditional => {
                let xq = &x[(l - 1) * d..];
                for k in 0..d {
                    pv[k] = dot(&p.m11[k * d..(k + 1) * d], xq);
                }
                gv.iter_mut().for_each(|v| *v = 0.0);
                cv.iter_mut().for_each(|v| *v = 0.0);
                let mut hh = 0.0;
                for t in 0..l {
                    let xt = &x[t * d..(t + 1) * d];
                    let xv = dot(xt, &p.v21) / lf;
                    let h = if t + 1 < l {
                        p.v22 / lf * dot(xt, &pv)
                    } else {
                        0.0
                    };
                    hh += h * h;
                    for k in 0..d {
                        cv[k] += xt[k] * xv;
                        gv[k] += h * xt[k];
                    }
                }
                let c0 = dot(&pv, &cv);
                let gam = c0 + dot(&gv, &test.mu_w);
                let rho = -dot(xq, &test.mu_w);
                for k in 0..d {
                    swg[k] = dot(&test.sigma_w[k * d..(k + 1) * d], &gv);
                }
                let xsx: f64 = (0..d)
                    .map(|k| xq[k] * dot(&test.sigma_w[k * d..(k + 1) * d], xq))
                    .sum();
                let uu = gam * gam + dot(&gv, &swg) + s2 * hh;
                let ur = gam * rho - dot(&swg, xq);
                let rr = rho * rho + xsx + s2;
                [uu, -2.0 * ur, rr]
            }
        };
        rows.push(m);
    }
    let (mean, cov) = mean_cov(&rows);
    Ok(McCoeffs {
        n,
        coeffs: Coeffs {
            a: mean[0],
            b: mean[1],
            c: mean[2],
        },
        cov,
    })
}

/// The large-l error floor of linear attention at tau = 1 under an input-mean shift with
/// Sigma_x = Sigma_w = I, mu_w = 0 and Lemma-4.1 parameters (spec §2.6):
/// `|mu_x|^4 (1 + |mu_x|^2) + sigma^2`.
pub fn mean_shift_floor(mu_x: &[f64], sigma2: f64) -> f64 {
    let m2 = dot(mu_x, mu_x);
    m2 * m2 * (1.0 + m2) + sigma2
}
