//! ATTN_M's twin: a two-layer linear network on the cubic feature `z = vec(beta x_q^T)`
//! (Zhang et al. 2025 eqs. 6-7): `yhat = w2^T W1 z`, with `w2 = (v_1..v_H)`, the rows of W1 the
//! column-major `vec(U_h)`, and `beta = (1/L_0) sum_{l<=N} y_l x_l`. Reduced ATTN_M
//! (`merged_reduced`) computes exactly this function of its weights, so both train identically.
use crate::config::Param;
use crate::data::Batch;
use crate::model::Model;
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Cubic features of every sequence (n x D^2): `z[a + D b] = beta_a x_{q,b}`,
/// `beta = (1/l0) sum_{l<len} y_l x_l` (one output).
pub fn cubic_features(batch: &Batch<f64>, l0: f64) -> Result<Vec<f64>> {
    if batch.n_out != 1 {
        return Err(Error::Unsupported("cubic features need one output".into()));
    }
    let (d, e, len) = (batch.d, batch.e(), batch.len);
    let mut out = vec![0.0; batch.n * d * d];
    let mut beta = vec![0.0; d];
    for mu in 0..batch.n {
        let seq = batch.seq(mu);
        beta.iter_mut().for_each(|b| *b = 0.0);
        for tok in seq[..len * e].chunks_exact(e) {
            for a in 0..d {
                beta[a] += tok[d] * tok[a] / l0;
            }
        }
        let xq = &seq[len * e..len * e + d];
        let z = &mut out[mu * d * d..(mu + 1) * d * d];
        for b in 0..d {
            for a in 0..d {
                z[a + d * b] = beta[a] * xq[b];
            }
        }
    }
    Ok(out)
}

/// The network `yhat = w2^T W1 z`; parameters flat as `[W1 (H x D^2, row-major), w2 (H)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CubicMlp {
    pub heads: usize,
    pub d: usize,
    pub params: Vec<f64>,
}

impl CubicMlp {
    /// The twin of a reduced ATTN_M (`merged_reduced`, one output): W1 rows = column-major
    /// vec(scale U_h), w2 = v.
    pub fn twin_of(model: &Model<f64>) -> Result<CubicMlp> {
        let s = model.attention()?;
        if s.param != Param::MergedReduced || s.n_out != 1 {
            return Err(Error::Unsupported(format!(
                "the cubic-feature twin needs model.param = merged_reduced and one output, got {:?}",
                s.param
            )));
        }
        let (h_n, d) = (s.heads, s.d);
        let p = &model.params;
        let mut params = vec![0.0; h_n * d * d + h_n];
        for h in 0..h_n {
            for a in 0..d {
                for b in 0..d {
                    params[h * d * d + a + d * b] = p[h * d * d + a * d + b] * s.scale;
                }
            }
            params[h_n * d * d + h] = p[h_n * d * d + h];
        }
        Ok(CubicMlp {
            heads: h_n,
            d,
            params,
        })
    }

    /// Mean squared error on features `z` (n x D^2) and targets `y`, and its gradient
    /// (overwrites `grad`, same layout as `params`).
    pub fn loss_grad(&self, z: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let (h_n, dd) = (self.heads, self.d * self.d);
        let (w1, w2) = self.params.split_at(h_n * dd);
        grad.iter_mut().for_each(|g| *g = 0.0);
        let (g1, g2) = grad.split_at_mut(h_n * dd);
        let n = y.len();
        let mut hid = vec![0.0; h_n];
        let mut loss = 0.0;
        for mu in 0..n {
            let zm = &z[mu * dd..(mu + 1) * dd];
            // forward: hid = W1 z ; yhat = w2 . hid
            for h in 0..h_n {
                hid[h] = w1[h * dd..(h + 1) * dd]
                    .iter()
                    .zip(zm)
                    .map(|(a, b)| a * b)
                    .sum();
            }
            let yhat: f64 = w2.iter().zip(&hid).map(|(a, b)| a * b).sum();
            // loss = mean r^2  =>  g = 2 r / n
            let r = yhat - y[mu];
            loss += r * r / n as f64;
            let g = 2.0 * r / n as f64;
            // yhat = w2 . hid  =>  dw2 += g hid ; dhid = g w2
            // hid = W1 z       =>  dW1[h] += dhid[h] z
            for h in 0..h_n {
                g2[h] += g * hid[h];
                let dh = g * w2[h];
                for (gw, &zi) in g1[h * dd..(h + 1) * dd].iter_mut().zip(zm) {
                    *gw += dh * zi;
                }
            }
        }
        loss
    }
}
