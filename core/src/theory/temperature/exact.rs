//! The exact finite-size test error of the linearised layer (issue 20; derivation equation by
//! equation in `docs/temperature-exact.md`).
//!
//! The prediction is affine in 1/tau (`yhat = u/tau + b_att`), so `G(tau) = a/tau^2 - b/tau + c`
//! holds exactly with `a = E[u^2]`, `b = -2 E[u r]`, `c = E[r^2]`, `r = b_att - y_l`. Theorem 4.6
//! ([`super::coefficients`]) is their leading order in d and l; here they are computed exactly for
//! the model as it is (the query inside the centring with a zero label, the bias `b_att` kept,
//! l - 1 context pairs): no large-l step.
//!
//! Write the test inputs as `x_t = mu_x + e_t`, `e_t ~ N(0, Sigma_x)`, with n = l - 1 context rows
//! and the query `e_z`. Three independent pieces carry the whole prompt:
//! the full-prompt mean deviation `s = (n e_bar + e_z)/l ~ N(0, Sigma_x/l)`, the difference
//! `delta = e_bar - e_z ~ N(0, l/n Sigma_x)`, and the context scatter
//! `W = sum_{i<l} (e_i - e_bar)(e_i - e_bar)^T ~ Wishart(l - 2, Sigma_x)`. Then
//! `l C_xx = W + n/l delta delta^T`, `sum_{i<l} (x_i - s_x) x_i^T = W + n/l delta m^T`
//! with the context mean `m = mu_x + s + delta/l`, and the query is `z = mu_x + s - n/l delta`.
//! The expectation over w and the noise is taken first (spec §10), then over W (Wishart moments),
//! then over `xi = (s, delta)` (products of up to three quadratic forms, [`super::moments`]).
//!
//! Without the query among the keys ([`Params::self_attend`] false, icl's softmax runs) the
//! statistics are the n = l - 1 context tokens' and the query is independent of them, which makes
//! the expectation a closed form of traces ([`context_keys`]).
use super::mc::check;
use super::moments::{Aff, Gauss, Quad};
use super::{mat, Coeffs, Gaussian, Params};
use crate::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// The test distribution and the layer's parameters as nalgebra values (both exact forms).
struct Inputs {
    sig: DMatrix<f64>,
    sw: DMatrix<f64>,
    mu: DVector<f64>,
    muw: DVector<f64>,
    v21: DVector<f64>,
    m11: DMatrix<f64>,
    v22: f64,
    s2: f64,
}

impl Inputs {
    fn new(p: &Params, test: &Gaussian) -> Inputs {
        let d = p.d;
        Inputs {
            sig: mat(d, &test.sigma_x),
            sw: mat(d, &test.sigma_w),
            mu: DVector::from_column_slice(&test.mu_x),
            muw: DVector::from_column_slice(&test.mu_w),
            v21: DVector::from_column_slice(&p.v21),
            m11: mat(d, &p.m11),
            v22: p.v22,
            s2: test.sigma2,
        }
    }
}

/// Exact `a, b, c` of the layer with parameters `p` (m21 = 0) on prompts of `l >= 2` tokens from `test`.
pub fn coefficients(p: &Params, test: &Gaussian, l: usize) -> Result<Coeffs> {
    check(p, test, l)?;
    if p.m21.iter().any(|v| *v != 0.0) {
        return Err(Error::Unsupported(
            "the exact form needs m21 = 0 (Assumption 4.5), as Theorem 4.6".into(),
        ));
    }
    if !p.self_attend {
        return context_keys(p, test, l);
    }
    let d = p.d;
    let (lf, n, kap) = (l as f64, (l - 1) as f64, (l - 2) as f64);
    let Inputs {
        sig,
        sw,
        mu,
        muw,
        v21,
        m11,
        v22,
        s2,
    } = Inputs::new(p, test);
    let id = DMatrix::<f64>::identity(d, d);
    // xi = (s, delta) ~ N(0, blockdiag(Sigma/l, l/n Sigma))
    let mut cxi = DMatrix::<f64>::zeros(2 * d, 2 * d);
    cxi.view_mut((0, 0), (d, d)).copy_from(&(&sig / lf));
    cxi.view_mut((d, d), (d, d)).copy_from(&(&sig * (lf / n)));
    let g = Gauss { c: cxi };
    // affine vectors alpha + P xi with P = [c_s I, c_delta I]
    let aff = |alpha: &DVector<f64>, cs: f64, cd: f64| {
        let mut pm = DMatrix::<f64>::zeros(d, 2 * d);
        pm.view_mut((0, 0), (d, d)).copy_from(&(&id * cs));
        pm.view_mut((0, d), (d, d)).copy_from(&(&id * cd));
        Aff {
            alpha: alpha.clone(),
            p: pm,
        }
    };
    let zero = DVector::<f64>::zeros(d);
    let delta = aff(&zero, 0.0, 1.0);
    let z = aff(&mu, 1.0, -n / lf); // the query
    let m = aff(&mu, 1.0, 1.0 / lf); // the context mean
    let sx = aff(&mu, 1.0, 0.0); // s_x, the prompt mean (query included)
    let pv = z.left(&m11); // p = M11 x_l
    let q = m.lin(v22 * n / lf, &z, -1.0); // q = v22/l sum_{i<l} x_i - x_l
    let nu = &v21 + &muw * v22;
    // the forms, each prepared once
    let pre = |q: &Quad| g.prepare(q);
    let p_delta = pre(&pv.bilinear(&id, &delta)); // p^T delta
    let p_sig = pre(&pv.bilinear(&sig, &pv)); // p^T Sigma p
    let p_nu = pre(&pv.dot(&(&sig * &nu))); // p^T Sigma nu
    let ell_q = delta.dot(&v21).plus(v22, &m.dot(&muw)); // L = v21^T delta + v22 mu_w^T m
    let ell = pre(&ell_q);
    let ell2 = pre(&ell_q.product_of_linear(&ell_q));
    let rho = pre(&sx.dot(&v21).plus(1.0, &q.dot(&muw))); // rho = v21^T s_x + mu_w^T q
    let ssw = &sig * &sw;
    let p_ssws_p = pre(&pv.bilinear(&(&ssw * &sig), &pv));
    let p_ssw_m = pre(&pv.bilinear(&ssw, &m));
    let p_ssw_q = pre(&pv.bilinear(&ssw, &q));
    let m_sw_m = pre(&m.bilinear(&sw, &m));
    let m_sw_q = pre(&m.bilinear(&sw, &q));
    let q_sw_q = pre(&q.bilinear(&sw, &q));
    let l2 = lf * lf;
    let l3 = l2 * lf;
    // a = E[gamma^2] + E[g^T Sigma_w g] + sigma^2 E[|h|^2]
    let nun = nu.dot(&(&sig * &nu));
    let e_gamma2 = (kap * kap + kap) / l2 * g.e2(&p_nu, &p_nu)
        + kap * nun / l2 * g.e1(&p_sig)
        + 2.0 * n * kap / l3 * g.e3(&p_nu, &p_delta, &ell)
        + n * n / (l2 * l2) * g.e3(&p_delta, &p_delta, &ell2);
    let tr_sws = (&sw * &sig).trace();
    let vl2 = (v22 / lf) * (v22 / lf);
    let e_gsg = vl2
        * ((kap * kap + kap) * g.e1(&p_ssws_p)
            + kap * tr_sws * g.e1(&p_sig)
            + 2.0 * n / lf * kap * g.e2(&p_delta, &p_ssw_m)
            + (n / lf) * (n / lf) * g.e3(&p_delta, &p_delta, &m_sw_m));
    let e_hh = vl2 * (kap * g.e1(&p_sig) + n / l2 * g.e2(&p_delta, &p_delta));
    let a = e_gamma2 + e_gsg + s2 * e_hh;
    // -b/2 = E[gamma rho] + E[g^T Sigma_w q] + sigma^2 v22/l E[sum h_i]
    let e_ur = kap / lf * g.e2(&p_nu, &rho)
        + n / l2 * g.e3(&p_delta, &ell, &rho)
        + v22 / lf * (kap * g.e1(&p_ssw_q) + n / lf * g.e2(&p_delta, &m_sw_q))
        + s2 * v22 * v22 * n / l3 * g.e1(&p_delta);
    // c = E[rho^2] + E[q^T Sigma_w q] + sigma^2 (v22^2 (l-1)/l^2 + 1)
    let c = g.e2(&rho, &rho) + g.e1(&q_sw_q) + s2 * (v22 * v22 * n / l2 + 1.0);
    Ok(Coeffs {
        a,
        b: -2.0 * e_ur,
        c,
    })
}

/// The exact `a, b, c` when the keys are the n = l - 1 context tokens (the query is not a key):
/// `C_xx = W/n` with the context scatter `W ~ Wishart(k = n - 1, Sigma_x)`, independent of the
/// context mean deviation `e_bar ~ N(0, Sigma_x/n)` and of the query `x_l = mu_x + e_q`.
/// Given X (spec §10's conditional moments with the keys' statistics): `p = M11 x_l`,
/// `gamma = p^T W nu / n` with `nu = v21 + v22 mu_w`, `g = v22/n W p`, `|h|^2 = (v22/n)^2 p^T W p`,
/// `sum_i h_i = 0`, `q = (v22 - 1) mu_x + v22 e_bar - e_q`, `rho = rho0 + nu^T e_bar - mu_w^T e_q`,
/// `rho0 = v21^T mu_x + (v22 - 1) mu_x^T mu_w`. The Wishart moments
/// `E[W] = k Sigma`, `E[W B W] = (k^2 + k) Sigma B Sigma + k tr(B Sigma) Sigma` (B symmetric) and
/// `E[p p^T] = M11 A M11^T =: P` (A = Sigma_x + mu_x mu_x^T) give
/// * `a = [(k^2+k) nu^T Sigma P Sigma nu + k nu^T Sigma nu tr(Sigma P)]/n^2
///   + (v22/n)^2 [(k^2+k) tr(Sigma Sigma_w Sigma P) + k (tr(Sigma_w Sigma) + sigma^2) tr(Sigma P)]`,
/// * `-b/2 = k/n [rho0 mu_x^T M11^T Sigma nu - mu_w^T Sigma M11^T Sigma nu]
///   + v22 k/n [(v22 - 1) mu_x^T M11^T Sigma Sigma_w mu_x - tr(M11^T Sigma Sigma_w Sigma)]`,
/// * `c = rho0^2 + nu^T Sigma nu/n + mu_w^T Sigma mu_w + (v22 - 1)^2 mu_x^T Sigma_w mu_x
///   + (v22^2/n + 1) (tr(Sigma_w Sigma) + sigma^2)`.
fn context_keys(p: &Params, test: &Gaussian, l: usize) -> Result<Coeffs> {
    let (n, k) = ((l - 1) as f64, (l - 2) as f64);
    let Inputs {
        sig,
        sw,
        mu,
        muw,
        v21,
        m11,
        v22,
        s2,
    } = Inputs::new(p, test);
    let nu = &v21 + &muw * v22;
    let am = &sig + &mu * mu.transpose();
    let pm = &m11 * am * m11.transpose();
    let sig_nu = &sig * &nu;
    let tr_sp = (&sig * &pm).trace();
    let tr_sws = (&sw * &sig).trace();
    let nsn = nu.dot(&sig_nu);
    let a = ((k * k + k) * sig_nu.dot(&(&pm * &sig_nu)) + k * nsn * tr_sp) / (n * n)
        + (v22 / n)
            * (v22 / n)
            * ((k * k + k) * (&sig * &sw * &sig * &pm).trace() + k * (tr_sws + s2) * tr_sp);
    let rho0 = v21.dot(&mu) + (v22 - 1.0) * mu.dot(&muw);
    let m_sig_nu = m11.transpose() * &sig_nu; // M11^T Sigma nu
    let e_ur = k / n * (rho0 * mu.dot(&m_sig_nu) - muw.dot(&(&sig * &m_sig_nu)))
        + v22 * k / n
            * ((v22 - 1.0) * mu.dot(&(m11.transpose() * &sig * &sw * &mu))
                - (m11.transpose() * &sig * &sw * &sig).trace());
    let c = rho0 * rho0
        + nsn / n
        + muw.dot(&(&sig * &muw))
        + (v22 - 1.0) * (v22 - 1.0) * mu.dot(&(&sw * &mu))
        + (v22 * v22 / n + 1.0) * (tr_sws + s2);
    Ok(Coeffs {
        a,
        b: -2.0 * e_ur,
        c,
    })
}
