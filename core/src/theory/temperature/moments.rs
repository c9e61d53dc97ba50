//! Exact moments of products of Gaussian quadratic forms, the tool of [`super::exact`].
//!
//! A form is `Q(xi) = xi^T A xi + b^T xi + c` with A symmetric and `xi ~ N(0, C)`. Wick's theorem
//! gives its joint cumulants as sums over connected pairings: a form with `A` is a vertex with two
//! legs, its `b` part a vertex with one leg, and every pairing of legs carries a factor C, so
//! * `k(Q1) = tr(A1 C) + c1`,
//! * `k(Q1, Q2) = 2 tr(A1 C A2 C) + b1^T C b2` (the 2-cycle, the 1-1 path),
//! * `k(Q1, Q2, Q3) = 8 tr(A1 C A2 C A3 C) + 2 (b2^T C A1 C b3 + b1^T C A2 C b3 + b1^T C A3 C b2)`
//!   (the 8 leg pairings of the 3-cycle, and the 2 pairings of each path end-middle-end),
//!
//! and the moments follow from the cumulants:
//! `E[Q1 Q2] = k1 k2 + k12`, `E[Q1 Q2 Q3] = k1 k2 k3 + k1 k23 + k2 k13 + k3 k12 + k123`.
use nalgebra::{DMatrix, DVector};

/// `xi^T A xi + b^T xi + c` (A symmetric, n x n).
#[derive(Debug, Clone)]
pub(crate) struct Quad {
    pub a: DMatrix<f64>,
    pub b: DVector<f64>,
    pub c: f64,
}

/// An affine vector `alpha + P xi` (alpha: d, P: d x n).
#[derive(Debug, Clone)]
pub(crate) struct Aff {
    pub alpha: DVector<f64>,
    pub p: DMatrix<f64>,
}

impl Aff {
    /// `s * self + t * other`.
    pub fn lin(&self, s: f64, other: &Aff, t: f64) -> Aff {
        Aff {
            alpha: &self.alpha * s + &other.alpha * t,
            p: &self.p * s + &other.p * t,
        }
    }

    /// `G self`.
    pub fn left(&self, g: &DMatrix<f64>) -> Aff {
        Aff {
            alpha: g * &self.alpha,
            p: g * &self.p,
        }
    }

    /// The scalar `f^T self` as a form (A = 0).
    pub fn dot(&self, f: &DVector<f64>) -> Quad {
        let n = self.p.ncols();
        Quad {
            a: DMatrix::zeros(n, n),
            b: self.p.transpose() * f,
            c: f.dot(&self.alpha),
        }
    }

    /// The form `self^T G other`:
    /// `A = sym(P^T G R)`, `b = P^T G beta + R^T G^T alpha`, `c = alpha^T G beta`.
    pub fn bilinear(&self, g: &DMatrix<f64>, other: &Aff) -> Quad {
        let pg = self.p.transpose() * g;
        let a = &pg * &other.p;
        Quad {
            a: (&a + a.transpose()) * 0.5,
            b: &pg * &other.alpha + other.p.transpose() * (g.transpose() * &self.alpha),
            c: self.alpha.dot(&(g * &other.alpha)),
        }
    }
}

impl Quad {
    /// `self + s * other`.
    pub fn plus(&self, s: f64, o: &Quad) -> Quad {
        Quad {
            a: &self.a + &o.a * s,
            b: &self.b + &o.b * s,
            c: self.c + s * o.c,
        }
    }

    /// The product of two affine forms (A1 = A2 = 0) as one form.
    pub fn product_of_linear(&self, o: &Quad) -> Quad {
        let a = &self.b * o.b.transpose();
        Quad {
            a: (&a + a.transpose()) * 0.5,
            b: &self.b * o.c + &o.b * self.c,
            c: self.c * o.c,
        }
    }
}

/// A form prepared for contraction with C: `A C`, `C b`, and its mean `k1` (`ac` is `None` when
/// A = 0, so affine forms cost no matrix product).
pub(crate) struct Prepared {
    ac: Option<DMatrix<f64>>,
    cb: DVector<f64>,
    a: DMatrix<f64>,
    b: DVector<f64>,
    k1: f64,
}

/// `xi ~ N(0, C)`.
pub(crate) struct Gauss {
    pub c: DMatrix<f64>,
}

/// `tr(X Y)` without forming the product.
fn tr2(x: &DMatrix<f64>, y: &DMatrix<f64>) -> f64 {
    let n = x.nrows();
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..n {
            s += x[(i, j)] * y[(j, i)];
        }
    }
    s
}

impl Gauss {
    pub fn prepare(&self, q: &Quad) -> Prepared {
        let ac = if q.a.iter().all(|v| *v == 0.0) {
            None
        } else {
            Some(&q.a * &self.c)
        };
        let k1 = ac.as_ref().map_or(0.0, |m| m.trace()) + q.c;
        Prepared {
            cb: &self.c * &q.b,
            ac,
            a: q.a.clone(),
            b: q.b.clone(),
            k1,
        }
    }

    fn k2(&self, x: &Prepared, y: &Prepared) -> f64 {
        let t = match (&x.ac, &y.ac) {
            (Some(a), Some(b)) => 2.0 * tr2(a, b),
            _ => 0.0,
        };
        t + x.b.dot(&y.cb)
    }

    fn k3(&self, x: &Prepared, y: &Prepared, z: &Prepared) -> f64 {
        let cycle = match (&x.ac, &y.ac, &z.ac) {
            (Some(a), Some(b), Some(c)) => 8.0 * tr2(&(a * b), c),
            _ => 0.0,
        };
        cycle
            + 2.0
                * (y.cb.dot(&(&x.a * &z.cb))
                    + x.cb.dot(&(&y.a * &z.cb))
                    + x.cb.dot(&(&z.a * &y.cb)))
    }

    /// `E[Q]`.
    pub fn e1(&self, x: &Prepared) -> f64 {
        x.k1
    }

    /// `E[Q1 Q2]`.
    pub fn e2(&self, x: &Prepared, y: &Prepared) -> f64 {
        x.k1 * y.k1 + self.k2(x, y)
    }

    /// `E[Q1 Q2 Q3]`.
    pub fn e3(&self, x: &Prepared, y: &Prepared, z: &Prepared) -> f64 {
        x.k1 * y.k1 * z.k1
            + x.k1 * self.k2(y, z)
            + y.k1 * self.k2(x, z)
            + z.k1 * self.k2(x, y)
            + self.k3(x, y, z)
    }
}
