//! Covariances and their factors: the KMS matrix, Cholesky factors, Haar-distributed rotations.
use crate::rng::{self, Rng};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::DMatrix;

/// The Kac–Murdock–Szegő matrix Sigma_ij = rho^|i-j| (row-major d x d).
pub fn kms(d: usize, rho: f64) -> Vec<f64> {
    let mut s = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            s[i * d + j] = libm::pow(rho, (i as f64 - j as f64).abs());
        }
    }
    s
}

/// Lower Cholesky factor of a row-major SPD matrix, or [`Error::Numerical`].
pub fn cholesky(d: usize, sigma: &[f64]) -> Result<Vec<f64>> {
    if sigma.len() != d * d {
        return Err(Error::Shape(format!(
            "covariance needs {} entries, got {}",
            d * d,
            sigma.len()
        )));
    }
    for i in 0..d {
        for j in 0..i {
            if (sigma[i * d + j] - sigma[j * d + i]).abs() > 1e-9 * (1.0 + sigma[i * d + j].abs()) {
                return Err(Error::Numerical(format!(
                    "covariance is not symmetric at ({i}, {j})"
                )));
            }
        }
    }
    let m = DMatrix::from_row_slice(d, d, sigma);
    let c = m
        .cholesky()
        .ok_or_else(|| Error::Numerical("covariance is not positive definite".into()))?;
    let l = c.l();
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            out[i * d + j] = l[(i, j)];
        }
    }
    Ok(out)
}

/// A Haar-distributed orthogonal d x d matrix (Gram–Schmidt of a Gaussian matrix's columns, i.e.
/// QR with a positive diagonal of R), row-major.
pub fn haar_orthogonal(rng: &mut Rng, d: usize) -> Vec<f64> {
    let mut q = vec![0.0; d * d];
    rng::fill_normal(rng, &mut q);
    for j in 0..d {
        for k in 0..j {
            let dot: f64 = (0..d).map(|i| q[i * d + j] * q[i * d + k]).sum();
            for i in 0..d {
                q[i * d + j] -= dot * q[i * d + k];
            }
        }
        let n = libm::sqrt((0..d).map(|i| q[i * d + j] * q[i * d + j]).sum::<f64>());
        for i in 0..d {
            q[i * d + j] /= n;
        }
    }
    q
}
