//! The Lasso without intercept, as scikit-learn's `Lasso(alpha, fit_intercept=False)` that Garg
//! et al. (2022) compare with on sparse linear functions:
//! ```text
//! w = argmin_w  (1 / 2n) |y - X w|^2 + alpha |w|_1          (X: n x d, any n >= 1)
//! ```
//! by cyclic coordinate descent, `w_j <- S(x_j . (r + x_j w_j) / n, alpha) / (x_j . x_j / n)` with
//! `S(z, a) = sign(z) max(|z| - a, 0)` and r = y - X w kept up to date, until the duality gap of
//! scikit-learn's `enet_coordinate_descent` is at most `TOL y . y` ([`TOL`] = 1e-4, scikit-learn's
//! default) or `MAX_SWEEPS` sweeps have run. A column of zeros keeps w_j = 0.
use alloc::vec;
use alloc::vec::Vec;

/// The duality gap that ends the descent, relative to y . y (scikit-learn's `tol`).
pub const TOL: f64 = 1e-4;
/// Most sweeps (Garg et al. allow scikit-learn 100,000 iterations).
pub const MAX_SWEEPS: usize = 100_000;

/// The Lasso fit of `y` on `x` (row-major n x d); `None` when it did not converge in
/// [`MAX_SWEEPS`] sweeps.
pub fn fit(x: &[f64], y: &[f64], n: usize, d: usize, alpha: f64) -> Option<Vec<f64>> {
    fit_to(x, y, n, d, alpha, TOL)
}

/// [`fit`] to a duality gap of `tol y . y` (`None` also for `alpha <= 0`, where the gap is not
/// defined: that is least squares).
pub fn fit_to(x: &[f64], y: &[f64], n: usize, d: usize, alpha: f64, tol: f64) -> Option<Vec<f64>> {
    let mut w = vec![0.0; d];
    if alpha.is_nan() || alpha <= 0.0 {
        return None;
    }
    if n == 0 {
        return Some(w);
    }
    let nf = n as f64;
    let norms: Vec<f64> = (0..d)
        .map(|j| (0..n).map(|i| x[i * d + j] * x[i * d + j]).sum::<f64>() / nf)
        .collect();
    let yy: f64 = y.iter().map(|v| v * v).sum();
    let mut r = y.to_vec();
    for _ in 0..MAX_SWEEPS {
        for j in 0..d {
            if norms[j] == 0.0 {
                continue;
            }
            let old = w[j];
            let z = (0..n).map(|i| x[i * d + j] * r[i]).sum::<f64>() / nf + norms[j] * old;
            let new = soft(z, alpha) / norms[j];
            if new != old {
                for i in 0..n {
                    r[i] -= x[i * d + j] * (new - old);
                }
                w[j] = new;
            }
        }
        if gap(x, y, &r, &w, n, d, alpha) <= tol * yy {
            return Some(w);
        }
    }
    None
}

/// The duality gap of `(1/2) |y - X w|^2 + alpha n |w|_1` at w (residual r = y - X w), as
/// scikit-learn computes it: the dual point r scaled into `|X^T theta|_inf <= alpha n`.
fn gap(x: &[f64], y: &[f64], r: &[f64], w: &[f64], n: usize, d: usize, alpha: f64) -> f64 {
    let a = alpha * n as f64;
    let xtr = (0..d)
        .map(|j| libm::fabs((0..n).map(|i| x[i * d + j] * r[i]).sum::<f64>()))
        .fold(0.0f64, f64::max);
    let rr: f64 = r.iter().map(|v| v * v).sum();
    let (c, g) = if xtr > a {
        let c = a / xtr;
        (c, 0.5 * (rr + rr * c * c))
    } else {
        (1.0, rr)
    };
    let l1: f64 = w.iter().map(|v| libm::fabs(*v)).sum();
    let ry: f64 = r.iter().zip(y).map(|(a, b)| a * b).sum();
    g + a * l1 - c * ry
}

/// `S(z, a) = sign(z) max(|z| - a, 0)`.
fn soft(z: f64, a: f64) -> f64 {
    if z > a {
        z - a
    } else if z < -a {
        z + a
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// Orthogonal columns with x_j . x_j = n: the Lasso is soft thresholding of x_j . y / n.
    #[test]
    fn orthogonal_design_is_soft_thresholding() {
        // n = 4, d = 3: Hadamard columns
        let x = [
            1.0, 1.0, 1.0, //
            1.0, -1.0, 1.0, //
            1.0, 1.0, -1.0, //
            1.0, -1.0, -1.0,
        ];
        let y = [3.0, 1.0, 0.5, -0.2];
        for alpha in [0.01, 0.1, 0.5, 1.0, 5.0] {
            let w = fit_to(&x, &y, 4, 3, alpha, 1e-13).unwrap();
            for j in 0..3 {
                let z: f64 = (0..4).map(|i| x[i * 3 + j] * y[i]).sum::<f64>() / 4.0;
                let want = z.signum() * (z.abs() - alpha).max(0.0);
                assert!(
                    (w[j] - want).abs() < 1e-12,
                    "alpha {alpha}, w{j}: {} vs {want}",
                    w[j]
                );
            }
        }
    }

    /// The optimality (KKT) conditions on random problems, with fewer rows than columns too:
    /// x_j . (y - X w) / n = alpha sign(w_j) where w_j != 0, and |.| <= alpha where w_j = 0.
    #[test]
    fn solutions_satisfy_the_kkt_conditions() {
        let mut s = 7u64;
        let mut u = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for &(n, d) in &[(3, 8), (10, 5), (40, 20), (1, 4)] {
            let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
            let y: Vec<f64> = (0..n).map(|_| u()).collect();
            for alpha in [1.0, 0.1, 0.01, 0.001, 0.0001] {
                let w = fit_to(&x, &y, n, d, alpha, 1e-13).unwrap();
                for j in 0..d {
                    let g: f64 = (0..n)
                        .map(|i| {
                            x[i * d + j] * (y[i] - (0..d).map(|k| x[i * d + k] * w[k]).sum::<f64>())
                        })
                        .sum::<f64>()
                        / n as f64;
                    if w[j] != 0.0 {
                        assert!(
                            (g - alpha * w[j].signum()).abs() < 1e-7,
                            "n {n} d {d} alpha {alpha}: {g}"
                        );
                    } else {
                        assert!(g.abs() <= alpha + 1e-7, "n {n} d {d} alpha {alpha}: {g}");
                    }
                }
            }
        }
        assert_eq!(fit(&[], &[], 0, 3, 0.1).unwrap(), vec![0.0; 3]);
        // scikit-learn's stopping rule: the default fit is within its gap of the optimum's
        // objective (1/2n)|y - Xw|^2 + alpha |w|_1
        let (n, d) = (5, 8);
        let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
        let y: Vec<f64> = (0..n).map(|_| u()).collect();
        let obj = |w: &[f64]| {
            (0..n)
                .map(|i| (y[i] - (0..d).map(|k| x[i * d + k] * w[k]).sum::<f64>()).powi(2))
                .sum::<f64>()
                / (2.0 * n as f64)
                + 0.001 * w.iter().map(|v| v.abs()).sum::<f64>()
        };
        let (rough, exact) = (
            fit(&x, &y, n, d, 0.001).unwrap(),
            fit_to(&x, &y, n, d, 0.001, 1e-13).unwrap(),
        );
        let yy: f64 = y.iter().map(|v| v * v).sum();
        assert!(obj(&rough) - obj(&exact) <= TOL * yy / n as f64 + 1e-15);
    }
}
