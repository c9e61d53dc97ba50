//! Garg et al. (2022)'s function classes beyond linear regression (`src/tasks.py` of
//! dtsip/in-context-learning): sparse linear functions, two-layer ReLU networks and decision
//! trees. A sequence draws one function and L + 1 covariates x ~ N(0, I_d); its labels are
//! `y = f(x) + sigma eps` (the query's noise as `task.query_noise` says).
//!
//! ```text
//! sparse   f(x) = w . x,  w_i ~ N(0, 1) on k coordinates chosen uniformly among the active ones,
//!                          0 elsewhere                                  (SparseLinearRegression)
//! relu2nn  f(x) = sqrt(2 / H) sum_j a_j relu(sum_i x_i W_ij),  W_ij, a_j ~ N(0, 1)
//!                                                                       (Relu2nnRegression)
//! tree     f(x) = leaf value of the depth-D tree: from node 0, node <- 2 node + 1 + [x_c(node) > 0]
//!                 D times; c(node) uniform over the d coordinates, leaf values ~ N(0, 1)
//!                                                                       (DecisionTree)
//! ```
//! Garg et al.'s scalings make E f(x)^2 = k, d and 1 respectively (tested by Monte Carlo).
//!
//! **Curriculum.** At `dt < d` active coordinates the covariates' coordinates `dt..d` are zero
//! before f is evaluated (Garg et al.'s truncated `xs`); the sparse support is drawn among the
//! first `dt` coordinates (their `valid_coords`), the network and the tree keep all d (a tree
//! node on a zeroed coordinate always goes left, as theirs does).
//!
//! **Stream.** One sequence's draws, in this order from its stream: the function's normals (w: d;
//! relu2nn: W row-major [d, H], then a: H; tree: the 2^D leaf values), the (L + 1) d covariates
//! (query last), the L + 1 noises, all in one [`rng::fill_normal`] call; then the uniforms (sparse:
//! k draws of a partial Fisher–Yates shuffle of the active coordinates; tree: the 2^D - 1 node
//! coordinates, `floor(u d)`).
use crate::rng::{self, Rng};
use crate::Scalar;
use alloc::vec::Vec;

/// A function class of Garg et al. (2022) with its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionClass {
    /// Linear functions with `k` non-zero coefficients.
    Sparse { k: usize },
    /// Two-layer ReLU networks with `hidden` units.
    Relu2nn { hidden: usize },
    /// Binary decision trees of depth `depth` on the signs of the coordinates.
    Tree { depth: usize },
}

/// One function drawn from a class (the parameters of one sequence).
#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// y = w . x.
    Linear { w: Vec<f64> },
    /// y = scale sum_j a_j relu((x W)_j), `w` row-major [d, H].
    Relu2nn {
        w: Vec<f64>,
        a: Vec<f64>,
        scale: f64,
    },
    /// Node coordinates (2^D - 1, breadth first) and leaf values (2^D).
    Tree {
        coords: Vec<usize>,
        leaves: Vec<f64>,
    },
}

impl FunctionClass {
    /// How many normals a function of `d` dimensions draws.
    pub fn function_normals(&self, d: usize) -> usize {
        match *self {
            FunctionClass::Sparse { .. } => d,
            FunctionClass::Relu2nn { hidden } => d * hidden + hidden,
            FunctionClass::Tree { depth } => 1usize << depth,
        }
    }

    /// The function of `normals` (its [`Self::function_normals`] values) and of the uniforms
    /// drawn from `rng`, with `dt` of the `d` coordinates active.
    pub fn function(&self, normals: &[f64], rng: &mut Rng, d: usize, dt: usize) -> Function {
        match *self {
            FunctionClass::Sparse { k } => {
                let dt = dt.clamp(1, d);
                // the first k of a uniform random permutation of 0..dt (partial Fisher-Yates)
                let mut perm: Vec<usize> = (0..dt).collect();
                for i in 0..k.min(dt) {
                    let j = i + pick(rng, dt - i);
                    perm.swap(i, j);
                }
                let mut w = alloc::vec![0.0; d];
                for &c in &perm[..k.min(dt)] {
                    w[c] = normals[c];
                }
                Function::Linear { w }
            }
            FunctionClass::Relu2nn { hidden } => Function::Relu2nn {
                w: normals[..d * hidden].to_vec(),
                a: normals[d * hidden..d * hidden + hidden].to_vec(),
                scale: libm::sqrt(2.0 / hidden as f64),
            },
            FunctionClass::Tree { depth } => {
                let nodes = (1usize << depth) - 1;
                let coords = (0..nodes).map(|_| pick(rng, d)).collect();
                Function::Tree {
                    coords,
                    leaves: normals[..1usize << depth].to_vec(),
                }
            }
        }
    }
}

/// Uniform in `0..n` (n >= 1): `floor(u n)` of a 53-bit uniform u.
fn pick(rng: &mut Rng, n: usize) -> usize {
    let i = (rng::uniform(rng) * n as f64) as usize;
    i.min(n - 1)
}

impl Function {
    /// f(x).
    pub fn eval(&self, x: &[f64]) -> f64 {
        match self {
            Function::Linear { w } => w.iter().zip(x).map(|(w, x)| w * x).sum(),
            Function::Relu2nn { w, a, scale } => {
                let h = a.len();
                let mut acc = 0.0;
                for (j, aj) in a.iter().enumerate() {
                    let pre: f64 = x.iter().enumerate().map(|(i, xi)| xi * w[i * h + j]).sum();
                    acc += aj * pre.max(0.0);
                }
                scale * acc
            }
            Function::Tree { coords, leaves } => {
                let mut node = 0;
                while node < coords.len() {
                    let right = x.get(coords[node]).is_some_and(|&v| v > 0.0);
                    node = 2 * node + 1 + usize::from(right);
                }
                leaves[node - coords.len()]
            }
        }
    }
}

/// Sample one sequence of `len` context pairs of `class` in `d` dimensions with `dt` active into
/// `z` ((len + 1) (d + 1) values, tokens `[x; y]`, the query's label 0) and `y` (1 value): the
/// module doc's stream. `normals` is scratch. Returns the function drawn.
#[allow(clippy::too_many_arguments)]
pub fn sample_sequence<T: Scalar>(
    class: &FunctionClass,
    rng: &mut Rng,
    d: usize,
    dt: usize,
    len: usize,
    sigma: f64,
    query_noise: bool,
    normals: &mut Vec<f64>,
    z: &mut [T],
    y: &mut [T],
) -> Function {
    let nf = class.function_normals(d);
    normals.resize(nf + (len + 1) * (d + 1), 0.0);
    rng::fill_normal(rng, normals);
    let (fnormals, rest) = normals.split_at_mut(nf);
    let (xs, noise) = rest.split_at_mut((len + 1) * d);
    let f = class.function(fnormals, rng, d, dt);
    let e = d + 1;
    for l in 0..=len {
        let x = &mut xs[l * d..(l + 1) * d];
        x.iter_mut().skip(dt).for_each(|v| *v = 0.0);
        let clean = f.eval(x);
        let tok = &mut z[l * e..(l + 1) * e];
        for (t, v) in tok.iter_mut().zip(x.iter()) {
            *t = T::of(*v);
        }
        let noisy = clean + sigma * noise[l];
        if l < len {
            tok[d] = T::of(noisy);
        } else {
            tok[d] = T::zero();
            y[0] = T::of(if query_noise { noisy } else { clean });
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Domain};

    fn draw(
        class: FunctionClass,
        d: usize,
        dt: usize,
        len: usize,
        seq: u64,
    ) -> (Vec<f64>, f64, Function) {
        let mut z = alloc::vec![0.0f64; (len + 1) * (d + 1)];
        let mut y = [0.0f64];
        let mut r = stream(3, Domain::Train, 0, seq);
        let f = sample_sequence(
            &class,
            &mut r,
            d,
            dt,
            len,
            0.0,
            true,
            &mut Vec::new(),
            &mut z,
            &mut y,
        );
        (z, y[0], f)
    }

    /// The labels are the function of the covariates, computed here from the parameters by
    /// Garg et al.'s formulas (not through `Function::eval`).
    #[test]
    fn labels_follow_garg_et_al_formulas() {
        let (d, len) = (6, 9);
        for seq in 0..20 {
            // relu2nn: sqrt(2/H) relu(x W) a
            let h = 7;
            let (z, yq, f) = draw(FunctionClass::Relu2nn { hidden: h }, d, d, len, seq);
            let Function::Relu2nn { w, a, .. } = &f else {
                panic!()
            };
            for l in 0..=len {
                let x = &z[l * (d + 1)..l * (d + 1) + d];
                let mut want = 0.0;
                for j in 0..h {
                    let mut pre = 0.0;
                    for i in 0..d {
                        pre += x[i] * w[i * h + j];
                    }
                    if pre > 0.0 {
                        want += a[j] * pre;
                    }
                }
                want *= (2.0 / h as f64).sqrt();
                let got = if l < len { z[l * (d + 1) + d] } else { yq };
                assert!((got - want).abs() < 1e-12);
            }
            // tree: Garg et al.'s breadth-first walk, x > 0 goes right
            let (z, yq, f) = draw(FunctionClass::Tree { depth: 3 }, d, d, len, seq);
            let Function::Tree { coords, leaves } = &f else {
                panic!()
            };
            assert_eq!((coords.len(), leaves.len()), (7, 8));
            for l in 0..=len {
                let x = &z[l * (d + 1)..l * (d + 1) + d];
                let mut cur = 0usize;
                for _ in 0..3 {
                    cur = 2 * cur + 1 + (x[coords[cur]] > 0.0) as usize;
                }
                let want = leaves[cur - 7];
                let got = if l < len { z[l * (d + 1) + d] } else { yq };
                assert_eq!(got, want);
            }
            // sparse, under a curriculum of 4 active coordinates: k non-zeros among them
            let (z, yq, f) = draw(FunctionClass::Sparse { k: 3 }, d, 4, len, seq);
            let Function::Linear { w } = &f else { panic!() };
            assert_eq!(w.iter().filter(|v| **v != 0.0).count(), 3);
            assert!(w[4..].iter().all(|v| *v == 0.0));
            for l in 0..=len {
                let x = &z[l * (d + 1)..l * (d + 1) + d];
                assert!(x[4..].iter().all(|v| *v == 0.0));
                let want: f64 = (0..d).map(|i| w[i] * x[i]).sum();
                let got = if l < len { z[l * (d + 1) + d] } else { yq };
                assert!((got - want).abs() < 1e-12);
            }
        }
    }

    /// Garg et al.'s scalings by Monte Carlo: E y^2 = k (sparse), d (relu2nn: E relu(g)^2 =
    /// Var(g) / 2 for g ~ N(0, |x|^2)), 1 (tree); every coordinate is in the sparse support
    /// with probability k / d; every tree node coordinate is uniform.
    #[test]
    fn second_moments_and_supports_match_the_classes() {
        let (d, len, n) = (5, 3, 4000);
        let mut m = [0.0f64; 3];
        let mut support = [0usize; 5];
        let mut node = [0usize; 5];
        for seq in 0..n {
            let classes = [
                FunctionClass::Sparse { k: 2 },
                FunctionClass::Relu2nn { hidden: 20 },
                FunctionClass::Tree { depth: 2 },
            ];
            for (c, class) in classes.iter().enumerate() {
                let (z, yq, f) = draw(*class, d, d, len, seq as u64);
                m[c] += (z[d] * z[d] + yq * yq) / 2.0;
                match &f {
                    Function::Linear { w } => (0..d)
                        .filter(|&i| w[i] != 0.0)
                        .for_each(|i| support[i] += 1),
                    Function::Tree { coords, .. } => coords.iter().for_each(|&c| node[c] += 1),
                    _ => {}
                }
            }
        }
        let want = [2.0, d as f64, 1.0];
        for c in 0..3 {
            let mean = m[c] / n as f64;
            // y^2 has variance ~2 want^2 (Gaussian-like); 5 standard errors of n draws
            let se = (2.0f64).sqrt() * want[c] / (n as f64).sqrt() * 1.5;
            assert!(
                (mean - want[c]).abs() < 5.0 * se,
                "class {c}: E y^2 = {mean}, want {}",
                want[c]
            );
        }
        for i in 0..d {
            let p = support[i] as f64 / n as f64;
            assert!(
                (p - 0.4).abs() < 0.04,
                "coordinate {i} in the support with p = {p}"
            );
            let q = node[i] as f64 / (3 * n) as f64;
            assert!((q - 0.2).abs() < 0.03, "node coordinate {i}: {q}");
        }
    }
}
