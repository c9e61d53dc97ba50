//! What a trained stack learned: the diagonal pattern of Observation 2 (eq. 5) and its inner
//! products, the pattern metrics of the spec's acceptance test 9, and Claim 1's Gaussian
//! population operator (eqs. (6), (12)–(16), with the typos A Sigma A^T and b = Psi mu fixed).
use super::layers::StackCircuits;
use alloc::vec;
use alloc::vec::Vec;

/// The eq.-5 parameters of one parameter set (one layer, or the looped block).
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// omega_h: mean of the first d diagonal entries of Phi_h.
    pub omega: Vec<f64>,
    /// u1_h: mean of the first d diagonal entries of Psi_h.
    pub u1: Vec<f64>,
    /// u2_h = Psi_h[D, D].
    pub u2: Vec<f64>,
    /// <u1, omega> = sum_h u1_h omega_h.
    pub u1_omega: f64,
    /// <u2, omega> = sum_h u2_h omega_h.
    pub u2_omega: f64,
    /// max |off-diagonal| / max |diagonal| over heads, of Phi and of Psi.
    pub phi_offdiag: f64,
    pub psi_offdiag: f64,
    /// |Phi_h[D, D]| / max_h |omega_h| (max over heads).
    pub phi_last: f64,
    /// Coefficient of variation of Phi_h's first d diagonal entries (max over heads).
    pub phi_diag_cv: f64,
}

impl Pattern {
    /// eta_x = -<u1, omega> (Algorithm 1's covariate step).
    pub fn eta_x(&self) -> f64 {
        -self.u1_omega
    }
    /// eta_y = <u2, omega> (Algorithm 1's label step).
    pub fn eta_y(&self) -> f64 {
        self.u2_omega
    }
}

/// The pattern of parameter set `s` of circuits `c` with `d` covariate rows (D = d + 1).
pub fn pattern(c: &StackCircuits<f64>, s: usize, d: usize) -> Pattern {
    let dd = c.e;
    let (phi, psi) = (c.phi_set(s), c.psi_set(s));
    let mut p = Pattern {
        omega: vec![],
        u1: vec![],
        u2: vec![],
        u1_omega: 0.0,
        u2_omega: 0.0,
        phi_offdiag: 0.0,
        psi_offdiag: 0.0,
        phi_last: 0.0,
        phi_diag_cv: 0.0,
    };
    let mut dmax = [0.0f64; 2];
    let mut omax = [0.0f64; 2];
    for h in 0..c.heads {
        let (f, g) = (
            &phi[h * dd * dd..][..dd * dd],
            &psi[h * dd * dd..][..dd * dd],
        );
        let diag = |m: &[f64]| (0..d).map(|i| m[i * dd + i]).sum::<f64>() / d as f64;
        let (w, a, b) = (diag(f), diag(g), g[dd * dd - 1]);
        p.omega.push(w);
        p.u1.push(a);
        p.u2.push(b);
        p.u1_omega += a * w;
        p.u2_omega += b * w;
        for (k, m) in [f, g].iter().enumerate() {
            for i in 0..dd {
                for j in 0..dd {
                    let v = m[i * dd + j].abs();
                    if i == j {
                        dmax[k] = dmax[k].max(v);
                    } else {
                        omax[k] = omax[k].max(v);
                    }
                }
            }
        }
        let var = (0..d).map(|i| sq(f[i * dd + i] - w)).sum::<f64>() / d as f64;
        p.phi_diag_cv = p.phi_diag_cv.max(libm::sqrt(var) / w.abs().max(1e-300));
    }
    let wmax = p.omega.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    for h in 0..c.heads {
        let last = phi[h * dd * dd + dd * dd - 1].abs();
        p.phi_last = p.phi_last.max(last / wmax.max(1e-300));
    }
    p.phi_offdiag = omax[0] / dmax[0].max(1e-300);
    p.psi_offdiag = omax[1] / dmax[1].max(1e-300);
    p
}

/// Under a constant covariance Sigma (d x d, C.3): per head, omega = mean diag of
/// `Phi_{1:d,1:d} Sigma` and the relative distance `||Phi_{1:d,1:d} Sigma - omega I||_F / ||omega I||_F`.
pub fn preconditioned(
    c: &StackCircuits<f64>,
    s: usize,
    d: usize,
    sigma: &[f64],
) -> Vec<(f64, f64)> {
    let dd = c.e;
    let phi = c.phi_set(s);
    (0..c.heads)
        .map(|h| {
            let f = &phi[h * dd * dd..][..dd * dd];
            let mut m = vec![0.0; d * d];
            for i in 0..d {
                for j in 0..d {
                    m[i * d + j] = (0..d).map(|k| f[i * dd + k] * sigma[k * d + j]).sum();
                }
            }
            let w = (0..d).map(|i| m[i * d + i]).sum::<f64>() / d as f64;
            let num: f64 = (0..d * d)
                .map(|k| {
                    let t = if k / d == k % d { w } else { 0.0 };
                    sq(m[k] - t)
                })
                .sum();
            (
                w,
                libm::sqrt(num) / (w.abs() * libm::sqrt(d as f64)).max(1e-300),
            )
        })
        .collect()
}

/// Claim 1: with tokens `z ~ N(mu, Sigma)` (D-dimensional) and L -> infinity, layer t maps each
/// token affinely, `z <- A_t z + b_t`, `A_t = I + sum_h Psi_h Sigma_t Phi_h`, `b_t = sum_h Psi_h mu_t`,
/// and the moments follow `mu_{t+1} = A_t mu_t + b_t`, `Sigma_{t+1} = A_t Sigma_t A_t^T`.
/// Returns the maps (A_t, b_t) of the `layers` layers (set t, or set 0 when looped).
pub fn population_maps(
    c: &StackCircuits<f64>,
    looped: bool,
    layers: usize,
    mu: &[f64],
    sigma: &[f64],
) -> Vec<(Vec<f64>, Vec<f64>)> {
    let dd = c.e;
    let mut m = mu.to_vec();
    let mut s = sigma.to_vec();
    let mut out = Vec::with_capacity(layers);
    for t in 0..layers {
        let set = if looped { 0 } else { t };
        let (phi, psi) = (c.phi_set(set), c.psi_set(set));
        let mut a = vec![0.0; dd * dd];
        let mut b = vec![0.0; dd];
        for i in 0..dd {
            a[i * dd + i] = 1.0;
        }
        for h in 0..c.heads {
            let (f, g) = (
                &phi[h * dd * dd..][..dd * dd],
                &psi[h * dd * dd..][..dd * dd],
            );
            let sf = matmul(&s, f, dd);
            let gsf = matmul(g, &sf, dd);
            for k in 0..dd * dd {
                a[k] += gsf[k];
            }
            for i in 0..dd {
                b[i] += (0..dd).map(|k| g[i * dd + k] * m[k]).sum::<f64>();
            }
        }
        let nm: Vec<f64> = (0..dd)
            .map(|i| (0..dd).map(|k| a[i * dd + k] * m[k]).sum::<f64>() + b[i])
            .collect();
        let as_ = matmul(&a, &s, dd);
        let mut at = vec![0.0; dd * dd];
        for i in 0..dd {
            for j in 0..dd {
                at[i * dd + j] = a[j * dd + i];
            }
        }
        s = matmul(&as_, &at, dd);
        m = nm;
        out.push((a, b));
    }
    out
}

fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let x = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += x * b[k * n + j];
            }
        }
    }
    c
}

#[inline]
fn sq(x: f64) -> f64 {
    x * x
}
