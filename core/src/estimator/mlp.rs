//! A two-layer ReLU network fitted to the context by Adam, Garg et al. (2022)'s baseline on
//! their two-layer network task (`GDModel` with `NeuralNetwork(in_size = d, hidden_size = 100)`,
//! Adam, lr 5e-3, 100 steps, batches of up to 100 context points):
//! ```text
//! f(x) = w2 . relu(W1 x + b1) + b2            W1: H x d, b1: H, w2: H, b2: 1
//! loss = (1/m) sum_i (f(x_i) - y_i)^2          over the step's m = min(n, 100) points
//! ```
//! initialised as PyTorch's `nn.Linear` (weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)))
//! from a stream seeded by the context's bits, so a prompt always gets the same fit. Garg et al.
//! train a prompt batch's networks jointly on the batch's mean loss, which scales each network's
//! gradient by 1/B; Adam's update does not depend on that scale but through its epsilon (1e-8).
use crate::rng::Rng;
use alloc::vec;
use alloc::vec::Vec;

/// Hidden units, Adam steps, learning rate and points a step (Garg et al.'s settings).
pub const HIDDEN: usize = 100;
pub const STEPS: usize = 100;
pub const LR: f64 = 5e-3;
pub const BATCH: usize = 100;

/// The network's parameters, flat: W1 (H x d, row-major), b1 (H), w2 (H), b2 (1).
#[derive(Debug, Clone, PartialEq)]
pub struct Mlp {
    pub d: usize,
    pub h: usize,
    pub p: Vec<f64>,
}

impl Mlp {
    /// PyTorch's `nn.Linear` initialisation from `rng`.
    pub fn init(d: usize, h: usize, rng: &mut Rng) -> Mlp {
        let mut p = vec![0.0; h * d + 2 * h + 1];
        let (a1, a2) = (1.0 / libm::sqrt(d as f64), 1.0 / libm::sqrt(h as f64));
        for (i, v) in p.iter_mut().enumerate() {
            let a = if i < h * d + h { a1 } else { a2 };
            *v = (2.0 * crate::rng::uniform(rng) - 1.0) * a;
        }
        Mlp { d, h, p }
    }

    /// f(x).
    pub fn predict(&self, x: &[f64]) -> f64 {
        let (d, h) = (self.d, self.h);
        let (w1, rest) = self.p.split_at(h * d);
        let (b1, rest) = rest.split_at(h);
        let (w2, b2) = rest.split_at(h);
        let mut out = b2[0];
        for j in 0..h {
            let pre: f64 = b1[j] + (0..d).map(|k| w1[j * d + k] * x[k]).sum::<f64>();
            out += w2[j] * pre.max(0.0);
        }
        out
    }

    /// The mean squared error over the points `rows` of (x, y) and its gradient (into `g`).
    pub fn loss_grad(&self, x: &[f64], y: &[f64], rows: &[usize], g: &mut [f64]) -> f64 {
        let (d, h) = (self.d, self.h);
        g.iter_mut().for_each(|v| *v = 0.0);
        let (w1, rest) = self.p.split_at(h * d);
        let (b1, rest) = rest.split_at(h);
        let (w2, b2) = rest.split_at(h);
        let (gw1, rest) = g.split_at_mut(h * d);
        let (gb1, rest) = rest.split_at_mut(h);
        let (gw2, gb2) = rest.split_at_mut(h);
        let m = rows.len().max(1) as f64;
        let mut loss = 0.0;
        let mut act = vec![0.0; h];
        for &i in rows {
            let xi = &x[i * d..(i + 1) * d];
            let mut out = b2[0];
            for j in 0..h {
                let pre: f64 = b1[j] + (0..d).map(|k| w1[j * d + k] * xi[k]).sum::<f64>();
                act[j] = pre.max(0.0);
                out += w2[j] * act[j];
            }
            let e = out - y[i];
            loss += e * e / m;
            // d loss / d out = 2 e / m
            let go = 2.0 * e / m;
            gb2[0] += go;
            for j in 0..h {
                gw2[j] += go * act[j];
                if act[j] > 0.0 {
                    let gp = go * w2[j];
                    gb1[j] += gp;
                    for k in 0..d {
                        gw1[j * d + k] += gp * xi[k];
                    }
                }
            }
        }
        loss
    }
}

/// Garg et al.'s fit on the n context points (x row-major n x d, y), its prediction at `xq`.
pub fn fit_predict(x: &[f64], y: &[f64], n: usize, d: usize, xq: &[f64]) -> f64 {
    if n == 0 {
        return 0.0;
    }
    // the stream of this context: its bits hashed
    let mut key = 0x9e37_79b9_7f4a_7c15u64 ^ (n as u64) ^ ((d as u64) << 32);
    for v in x.iter().chain(y) {
        key = crate::rng::mix64(key ^ v.to_bits());
    }
    let mut rng = crate::rng::from_key(key);
    let mut net = Mlp::init(d, HIDDEN, &mut rng);
    let np = net.p.len();
    let (mut g, mut m1, mut m2) = (vec![0.0; np], vec![0.0; np], vec![0.0; np]);
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
    let mut order: Vec<usize> = (0..n).collect();
    for step in 1..=STEPS {
        // the step's points: a uniform subset of BATCH when there are more (partial shuffle)
        let rows: &[usize] = if n > BATCH {
            for i in 0..BATCH {
                let j = i + (rng.next_u64() % (n - i) as u64) as usize;
                order.swap(i, j);
            }
            &order[..BATCH]
        } else {
            &order
        };
        net.loss_grad(x, y, rows, &mut g);
        let (c1, c2) = (
            1.0 - libm::pow(b1, step as f64),
            1.0 - libm::pow(b2, step as f64),
        );
        for i in 0..np {
            m1[i] = b1 * m1[i] + (1.0 - b1) * g[i];
            m2[i] = b2 * m2[i] + (1.0 - b2) * g[i] * g[i];
            net.p[i] -= LR * (m1[i] / c1) / (libm::sqrt(m2[i] / c2) + eps);
        }
    }
    net.predict(xq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut r = crate::rng::from_key(seed);
        let x: Vec<f64> = (0..n * d)
            .map(|_| 2.0 * crate::rng::uniform(&mut r) - 1.0)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| (x[i * d] - 0.5 * x[i * d + 1]).max(0.0) * 3.0 - x[i * d + 2])
            .collect();
        (x, y)
    }

    /// The gradient against central finite differences in f64.
    #[test]
    fn gradient_matches_finite_differences() {
        let (d, h, n) = (3, 5, 7);
        let (x, y) = data(n, d, 1);
        let net = Mlp::init(d, h, &mut crate::rng::from_key(2));
        let rows: Vec<usize> = (0..n).collect();
        let mut g = vec![0.0; net.p.len()];
        net.loss_grad(&x, &y, &rows, &mut g);
        let mut s = vec![0.0; net.p.len()];
        for i in 0..net.p.len() {
            let eps = 1e-6;
            let (mut a, mut b) = (net.clone(), net.clone());
            a.p[i] += eps;
            b.p[i] -= eps;
            let fd = (a.loss_grad(&x, &y, &rows, &mut s) - b.loss_grad(&x, &y, &rows, &mut s))
                / (2.0 * eps);
            assert!(
                (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "param {i}: {fd} vs {}",
                g[i]
            );
        }
        // the loss is the mean squared error of `predict`
        let want: f64 = (0..n)
            .map(|i| (net.predict(&x[i * d..(i + 1) * d]) - y[i]).powi(2))
            .sum::<f64>()
            / n as f64;
        assert!((net.loss_grad(&x, &y, &rows, &mut s) - want).abs() < 1e-12);
    }

    /// 100 Adam steps fit a ReLU function far better than its mean, the same context gives the
    /// same prediction, and no context predicts 0.
    #[test]
    fn adam_fits_the_context() {
        let (d, n) = (3, 60);
        let (x, y) = data(n, d, 3);
        let (xt, yt) = data(200, d, 4);
        let mean = y.iter().sum::<f64>() / n as f64;
        let (mut e_fit, mut e_mean) = (0.0, 0.0);
        for i in 0..200 {
            let q = &xt[i * d..(i + 1) * d];
            e_fit += (fit_predict(&x, &y, n, d, q) - yt[i]).powi(2);
            e_mean += (mean - yt[i]).powi(2);
        }
        assert!(e_fit < 0.25 * e_mean, "{e_fit} vs {e_mean}");
        assert_eq!(
            fit_predict(&x, &y, n, d, &[0.1, 0.2, 0.3]),
            fit_predict(&x, &y, n, d, &[0.1, 0.2, 0.3])
        );
        assert_eq!(fit_predict(&[], &[], 0, d, &[0.1, 0.2, 0.3]), 0.0);
    }
}
