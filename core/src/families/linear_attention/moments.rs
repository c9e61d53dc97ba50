//! Sufficient statistics of linear attention on a fixed set (Zhang et al. 2025: the prediction is linear in cubic features, eqs. 6–7).
//!
//! For linear attention every head computes `yhat_o += OV_h[o] . (S KQ_h z_q) / L_0` with
//! `S = sum_{keys l} z_l z_l^T`, so the whole model is linear in the cubic features
//! `phi_{ab,c} = S_ab z_{q,c} / L_0`:
//!
//! ```text
//! T^o_{abc} = sum_h OV_h[o][a] KQ_h[b][c]                  (E x E x d; z_q's y slots are 0)
//! theta^o_{(a<=b),c} = T^o_{abc} + T^o_{bac} (a < b),  T^o_{aac} (a = b)
//! yhat_o = theta^o . phi
//! loss = 1/n_out sum_o [ <y_o^2> - 2 theta^o . <y_o phi> + theta^o^T <phi phi^T> theta^o ]
//! ```
//!
//! with `<.>` the mean over the sequences (and, for next-token prediction, over their prefixes).
//! The Gram matrix is accumulated once; a loss and gradient then cost O(features^2), independent
//! of the number of sequences. It is exact (the same loss as the token-level engine up to rounding).
use crate::data::Batch;
use crate::families::attention::{AttentionSpec, Circuits};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Mean second moments of the cubic features and the targets.
#[derive(Debug, Clone)]
pub struct Moments {
    pub d: usize,
    pub e: usize,
    pub n_out: usize,
    /// Number of features E(E+1)/2 * d.
    pub nf: usize,
    /// <phi phi^T>, nf x nf, row-major (symmetric).
    pub gram: Vec<f64>,
    /// <y_o phi>, n_out x nf.
    pub yphi: Vec<f64>,
    /// <y_o^2>, n_out values.
    pub yy: Vec<f64>,
    /// Number of (sequence, prefix) rows averaged.
    pub rows: usize,
    theta: Vec<f64>,
    gtheta: Vec<f64>,
}

/// Index of the unordered pair a <= b among E(E+1)/2.
#[inline]
fn pair(a: usize, b: usize, e: usize) -> usize {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    a * e - a * (a + 1) / 2 + b
}

impl Moments {
    fn empty(d: usize, n_out: usize) -> Moments {
        let e = d + n_out;
        let nf = e * (e + 1) / 2 * d;
        Moments {
            d,
            e,
            n_out,
            nf,
            gram: vec![0.0; nf * nf],
            yphi: vec![0.0; n_out * nf],
            yy: vec![0.0; n_out],
            rows: 0,
            theta: vec![0.0; n_out * nf],
            gtheta: vec![0.0; n_out * nf],
        }
    }

    /// Add one query row: keys `keys` (nk tokens), query `zq`, targets `y`, normaliser `l0`.
    fn add(
        &mut self,
        keys: &[f64],
        zq: &[f64],
        y: &[f64],
        l0: f64,
        phi: &mut [f64],
        s: &mut [f64],
    ) {
        let (d, e, nf) = (self.d, self.e, self.nf);
        // S = sum_l z_l z_l^T (upper triangle)
        s.iter_mut().for_each(|x| *x = 0.0);
        for z in keys.chunks_exact(e) {
            for a in 0..e {
                let za = z[a];
                for b in a..e {
                    s[pair(a, b, e)] += za * z[b];
                }
            }
        }
        // phi_{(a<=b),c} = S_ab z_{q,c} / L_0
        let inv = 1.0 / l0;
        for p in 0..e * (e + 1) / 2 {
            for c in 0..d {
                phi[p * d + c] = s[p] * zq[c] * inv;
            }
        }
        // <phi phi^T> += phi phi^T (upper triangle) ; <y phi> += y phi ; <y^2> += y^2
        for i in 0..nf {
            let fi = phi[i];
            if fi == 0.0 {
                continue;
            }
            let row = &mut self.gram[i * nf + i..(i + 1) * nf];
            for (g, &fj) in row.iter_mut().zip(&phi[i..]) {
                *g += fi * fj;
            }
        }
        for (o, &yo) in y.iter().enumerate().take(self.n_out) {
            for (t, &f) in self.yphi[o * nf..(o + 1) * nf].iter_mut().zip(phi.iter()) {
                *t += yo * f;
            }
            self.yy[o] += yo * yo;
        }
        self.rows += 1;
    }

    fn finish(&mut self) {
        let (nf, inv) = (self.nf, 1.0 / self.rows.max(1) as f64);
        for i in 0..nf {
            for j in i..nf {
                let g = self.gram[i * nf + j] * inv;
                self.gram[i * nf + j] = g;
                self.gram[j * nf + i] = g;
            }
        }
        self.yphi.iter_mut().for_each(|x| *x *= inv);
        self.yy.iter_mut().for_each(|x| *x *= inv);
    }

    /// Moments of a fixed-length set for a linear-attention model `spec` (normaliser spec.lin_norm).
    pub fn fixed(spec: &AttentionSpec, batch: &Batch<f64>) -> Result<Moments> {
        Self::build(spec, batch, None)
    }

    /// Moments of next-token prediction over every prefix of `full` (context lengths
    /// 1..=full.len), each row weighted equally, with normaliser `l0(c)` for c context pairs.
    pub fn ntp(
        spec: &AttentionSpec,
        full: &Batch<f64>,
        l0: &dyn Fn(usize) -> f64,
    ) -> Result<Moments> {
        Self::build(spec, full, Some(l0))
    }

    fn build(
        spec: &AttentionSpec,
        batch: &Batch<f64>,
        ntp: Option<&dyn Fn(usize) -> f64>,
    ) -> Result<Moments> {
        if spec.attention != crate::config::AttentionKind::Linear {
            return Err(Error::Unsupported(
                "sufficient statistics need linear attention".into(),
            ));
        }
        if batch.d != spec.d || batch.n_out != spec.n_out {
            return Err(Error::Shape(format!(
                "batch has d={} n_out={}, model has d={} n_out={}",
                batch.d, batch.n_out, spec.d, spec.n_out
            )));
        }
        let (d, no) = (spec.d, spec.n_out);
        let e = d + no;
        let mut m = Moments::empty(d, no);
        let mut phi = vec![0.0; m.nf];
        let mut s = vec![0.0; e * (e + 1) / 2];
        let sa = spec.self_attend as usize;
        match ntp {
            None => {
                let nk = spec.keys(batch.len);
                for mu in 0..batch.n {
                    let seq = batch.seq(mu);
                    let zq = &seq[batch.len * e..(batch.len + 1) * e];
                    m.add(
                        &seq[..nk * e],
                        zq,
                        batch.target(mu),
                        spec.lin_norm,
                        &mut phi,
                        &mut s,
                    );
                }
            }
            Some(l0) => {
                let mut zq = vec![0.0; e];
                let mut keys = Vec::with_capacity((batch.len + 1) * e);
                for mu in 0..batch.n {
                    let seq = batch.seq(mu);
                    for c in 1..=batch.len {
                        // query = token c with its y slot zeroed; target = its label
                        zq.copy_from_slice(&seq[c * e..(c + 1) * e]);
                        let y: Vec<f64> = if c == batch.len {
                            batch.target(mu).to_vec()
                        } else {
                            zq[d..].to_vec()
                        };
                        zq[d..].iter_mut().for_each(|x| *x = 0.0);
                        keys.clear();
                        keys.extend_from_slice(&seq[..c * e]);
                        if sa == 1 {
                            keys.extend_from_slice(&zq);
                        }
                        m.add(&keys, &zq, &y, l0(c), &mut phi, &mut s);
                    }
                }
            }
        }
        m.finish();
        Ok(m)
    }

    /// theta^o from the circuits (see the module docs).
    fn theta_of(&mut self, circ: &Circuits<f64>) {
        let (d, e, no, nf) = (self.d, self.e, self.n_out, self.nf);
        self.theta.iter_mut().for_each(|x| *x = 0.0);
        for h in 0..circ.heads {
            let (kq, ov) = (circ.kq_head(h), circ.ov_head(h));
            for o in 0..no {
                let th = &mut self.theta[o * nf..(o + 1) * nf];
                for a in 0..e {
                    let va = ov[o * e + a];
                    if va == 0.0 {
                        continue;
                    }
                    for b in 0..e {
                        let p = pair(a, b, e) * d;
                        for c in 0..d {
                            th[p + c] += va * kq[b * e + c];
                        }
                    }
                }
            }
        }
    }

    /// Loss (mean squared error over rows and outputs) of the circuits.
    pub fn loss(&mut self, circ: &Circuits<f64>) -> f64 {
        self.theta_of(circ);
        self.loss_theta()
    }

    fn loss_theta(&mut self) -> f64 {
        let (nf, no) = (self.nf, self.n_out);
        let mut loss = 0.0;
        for o in 0..no {
            let th = &self.theta[o * nf..(o + 1) * nf];
            let mut q = 0.0;
            let mut lin = 0.0;
            for i in 0..nf {
                let gi: f64 = self.gram[i * nf..(i + 1) * nf]
                    .iter()
                    .zip(th)
                    .map(|(g, t)| g * t)
                    .sum();
                self.gtheta[o * nf + i] = gi;
                q += th[i] * gi;
                lin += th[i] * self.yphi[o * nf + i];
            }
            loss += self.yy[o] - 2.0 * lin + q;
        }
        loss / no as f64
    }

    /// Loss and its gradient with respect to the circuits (overwrites `grad`).
    pub fn loss_grad(&mut self, circ: &Circuits<f64>, grad: &mut Circuits<f64>) -> f64 {
        let (d, e, no, nf) = (self.d, self.e, self.n_out, self.nf);
        self.theta_of(circ);
        let loss = self.loss_theta();
        // dloss/dtheta^o = 2/n_out (G theta^o - <y_o phi>)   (gtheta holds G theta)
        let s = 2.0 / no as f64;
        for o in 0..no {
            for i in 0..nf {
                self.gtheta[o * nf + i] = s * (self.gtheta[o * nf + i] - self.yphi[o * nf + i]);
            }
        }
        // forward theta^o_{p(a,b),c} += OV_h[o][a] KQ_h[b][c]
        //   => dKQ_h[b][c] += sum_{o,a} OV_h[o][a] gtheta^o_{p(a,b),c}
        //      dOV_h[o][a] += sum_{b,c} KQ_h[b][c] gtheta^o_{p(a,b),c}
        grad.clear();
        for h in 0..circ.heads {
            let (kq, ov) = (circ.kq_head(h), circ.ov_head(h));
            for o in 0..no {
                let gt = &self.gtheta[o * nf..(o + 1) * nf];
                for a in 0..e {
                    let va = ov[o * e + a];
                    let mut gov = 0.0;
                    for b in 0..e {
                        let p = pair(a, b, e) * d;
                        for c in 0..d {
                            let g = gt[p + c];
                            grad.kq[h * e * e + b * e + c] += va * g;
                            gov += kq[b * e + c] * g;
                        }
                    }
                    grad.ov[h * no * e + o * e + a] += gov;
                }
            }
        }
        loss
    }
}
