//! Regression trees grown greedily, the baselines of Garg et al. (2022) on decision trees:
//!
//! * **CART** as scikit-learn's `DecisionTreeRegressor(max_depth)` (squared error, at least one
//!   point a leaf): a node of two or more points with distinct labels splits on the feature and
//!   threshold that minimise the children's summed squared deviation from their means; the
//!   thresholds are the midpoints between consecutive distinct values of the feature; a leaf
//!   predicts its points' mean. Ties go to the lower feature, then the lower threshold
//!   (scikit-learn breaks them by a random feature order).
//! * **Gradient boosting** as XGBoost's `XGBRegressor()` defaults for squared error (exact greedy
//!   splits): 100 trees of depth <= 6, learning rate 0.3, L2 penalty lambda = 1, gamma = 0,
//!   min_child_weight = 1, from the base score of the labels' mean; each tree fits the gradients
//!   g_i = F(x_i) - y_i (hessians 1): a split's gain is
//!   `G_L^2 / (H_L + lambda) + G_R^2 / (H_R + lambda) - G^2 / (H + lambda)` (made when positive),
//!   a leaf's value `-G / (H + lambda)`.
//!
//! Both are the same tree builder with a different leaf rule and split score ([`Rule`]).
use alloc::vec::Vec;

/// How a tree scores splits and values leaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// CART on labels: least squared deviation, leaf = mean.
    Cart,
    /// XGBoost on gradients with L2 penalty `lambda`: leaf = -G / (H + lambda).
    Boost { lambda: f64 },
}

/// A fitted tree: internal nodes `(feature, threshold, left, right)` and leaves.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Leaf(f64),
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
}

/// A regression tree (node 0 is the root).
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The prediction at `x`: `x[feature] <= threshold` goes left.
    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut i = 0;
        loop {
            match &self.nodes[i] {
                Node::Leaf(v) => return *v,
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => {
                    i = if x[*feature] <= *threshold {
                        *left
                    } else {
                        *right
                    }
                }
            }
        }
    }
}

/// Grow a tree on the rows `x` (row-major n x d) with targets `t` (labels for CART, gradients
/// for boosting), at most `max_depth` splits deep (`None`: until the leaves are pure or single).
/// Each feature's order is sorted once at the root and split stably down the tree (XGBoost's
/// exact method), so a node costs d m, not d m log m.
pub fn grow(
    x: &[f64],
    t: &[f64],
    n: usize,
    d: usize,
    max_depth: Option<usize>,
    rule: Rule,
) -> Tree {
    grow_sorted(x, t, n, d, max_depth, rule, feature_orders(x, n, d))
}

/// Each feature's order of the rows (ties by row index): what [`grow`] sorts at the root, once
/// for every tree grown on the same rows (boosting's 100).
fn feature_orders(x: &[f64], n: usize, d: usize) -> Vec<Vec<usize>> {
    (0..d)
        .map(|f| {
            let mut o: Vec<usize> = (0..n).collect();
            o.sort_by(|&a, &b| x[a * d + f].total_cmp(&x[b * d + f]).then(a.cmp(&b)));
            o
        })
        .collect()
}

/// [`grow`] from the rows' [`feature_orders`].
fn grow_sorted(
    x: &[f64],
    t: &[f64],
    n: usize,
    d: usize,
    max_depth: Option<usize>,
    rule: Rule,
    sorted: Vec<Vec<usize>>,
) -> Tree {
    let mut tree = Tree { nodes: Vec::new() };
    let grower = Grower {
        x,
        t,
        d,
        max_depth,
        rule,
    };
    let mut left = alloc::vec![false; n];
    grower.node(&mut tree, (0..n).collect(), sorted, 0, &mut left);
    tree
}

/// What every node of one tree reads.
struct Grower<'a> {
    x: &'a [f64],
    t: &'a [f64],
    d: usize,
    max_depth: Option<usize>,
    rule: Rule,
}

impl Grower<'_> {
    /// Grow the node of points `idx` (`sorted[f]`: them in the order of feature f); its index.
    fn node(
        &self,
        tree: &mut Tree,
        idx: Vec<usize>,
        sorted: Vec<Vec<usize>>,
        depth: usize,
        left: &mut [bool],
    ) -> usize {
        let (x, t, d, rule) = (self.x, self.t, self.d, self.rule);
        let me = tree.nodes.len();
        let (g, m) = (idx.iter().map(|&i| t[i]).sum::<f64>(), idx.len() as f64);
        let leaf = match rule {
            Rule::Cart => {
                if idx.is_empty() {
                    0.0
                } else {
                    g / m
                }
            }
            Rule::Boost { lambda } => -g / (m + lambda),
        };
        tree.nodes.push(Node::Leaf(leaf));
        if self.max_depth.is_some_and(|md| depth >= md) || idx.len() < 2 {
            return me;
        }
        if rule == Rule::Cart && idx.iter().all(|&i| t[i] == t[idx[0]]) {
            return me;
        }
        let Some((feature, threshold)) = best_split(x, t, d, &sorted, g, rule) else {
            return me;
        };
        for &i in &idx {
            left[i] = x[i * d + feature] <= threshold;
        }
        let (li, ri): (Vec<usize>, Vec<usize>) = idx.iter().partition(|&&i| left[i]);
        let (mut ls, mut rs) = (Vec::with_capacity(d), Vec::with_capacity(d));
        for o in sorted {
            let (a, b): (Vec<usize>, Vec<usize>) = o.into_iter().partition(|&i| left[i]);
            ls.push(a);
            rs.push(b);
        }
        let l = self.node(tree, li, ls, depth + 1, left);
        let r = self.node(tree, ri, rs, depth + 1, left);
        tree.nodes[me] = Node::Split {
            feature,
            threshold,
            left: l,
            right: r,
        };
        me
    }
}

/// The best (feature, threshold) of a node's points (`sorted[f]`: them in the order of feature
/// f; `total`: their targets' sum), `None` when no split separates them (or, boosting, none has
/// a positive gain).
fn best_split(
    x: &[f64],
    t: &[f64],
    d: usize,
    sorted: &[Vec<usize>],
    total: f64,
    rule: Rule,
) -> Option<(usize, f64)> {
    let m = sorted.first().map_or(0, Vec::len);
    // CART maximises sum_children G^2 / n (equivalently minimises the squared deviations);
    // boosting G^2 / (n + lambda), and must beat the parent's
    let (lam, parent) = match rule {
        Rule::Cart => (0.0, f64::NEG_INFINITY),
        Rule::Boost { lambda } => (lambda, total * total / (m as f64 + lambda)),
    };
    let mut best: Option<(f64, usize, f64)> = None;
    for (f, order) in sorted.iter().enumerate() {
        let mut gl = 0.0;
        for k in 0..m - 1 {
            gl += t[order[k]];
            let (a, b) = (x[order[k] * d + f], x[order[k + 1] * d + f]);
            if a == b {
                continue;
            }
            let (nl, nr) = ((k + 1) as f64, (m - k - 1) as f64);
            let gr = total - gl;
            let score = gl * gl / (nl + lam) + gr * gr / (nr + lam);
            if score > parent && best.is_none_or(|(s, _, _)| score > s) {
                best = Some((score, f, a + (b - a) / 2.0));
            }
        }
    }
    best.map(|(_, f, th)| (f, th))
}

/// XGBoost's defaults for squared error ([`boost`]).
pub const BOOST_TREES: usize = 100;
pub const BOOST_DEPTH: usize = 6;
pub const BOOST_ETA: f64 = 0.3;
pub const BOOST_LAMBDA: f64 = 1.0;

/// Gradient-boosted trees fitted to `(x, y)`; the prediction at `xq`.
pub fn boost_predict(x: &[f64], y: &[f64], n: usize, d: usize, xq: &[f64]) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let base = y.iter().sum::<f64>() / n as f64;
    let mut f = alloc::vec![base; n];
    let mut out = base;
    let mut g = alloc::vec![0.0; n];
    // the rows do not change from tree to tree: their feature orders are sorted once
    let orders = feature_orders(x, n, d);
    for _ in 0..BOOST_TREES {
        for i in 0..n {
            g[i] = f[i] - y[i];
        }
        let tree = grow_sorted(
            x,
            &g,
            n,
            d,
            Some(BOOST_DEPTH),
            Rule::Boost {
                lambda: BOOST_LAMBDA,
            },
            orders.clone(),
        );
        for i in 0..n {
            f[i] += BOOST_ETA * tree.predict(&x[i * d..(i + 1) * d]);
        }
        out += BOOST_ETA * tree.predict(xq);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }
    }

    /// A depth-1 CART is the best stump, found here by trying every feature and every
    /// threshold between two data values.
    #[test]
    fn a_stump_is_the_least_squares_split() {
        let mut u = lcg(3);
        let (n, d) = (15, 3);
        for _ in 0..20 {
            let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
            let y: Vec<f64> = (0..n).map(|_| u()).collect();
            let tree = grow(&x, &y, n, d, Some(1), Rule::Cart);
            let sse = |pred: &dyn Fn(&[f64]) -> f64| -> f64 {
                (0..n)
                    .map(|i| (y[i] - pred(&x[i * d..(i + 1) * d])).powi(2))
                    .sum()
            };
            let got = sse(&|v| tree.predict(v));
            let mut best = f64::INFINITY;
            for f in 0..d {
                for i in 0..n {
                    let th = x[i * d + f];
                    let (l, r): (Vec<usize>, Vec<usize>) =
                        (0..n).partition(|&k| x[k * d + f] <= th);
                    if l.is_empty() || r.is_empty() {
                        continue;
                    }
                    let mean = |s: &[usize]| s.iter().map(|&k| y[k]).sum::<f64>() / s.len() as f64;
                    let (ml, mr) = (mean(&l), mean(&r));
                    let e: f64 = l.iter().map(|&k| (y[k] - ml).powi(2)).sum::<f64>()
                        + r.iter().map(|&k| (y[k] - mr).powi(2)).sum::<f64>();
                    best = best.min(e);
                }
            }
            assert!((got - best).abs() < 1e-12, "{got} vs {best}");
        }
    }

    /// An unbounded CART fits distinct points exactly; a depth-4 tree learns a depth-2 sign
    /// tree from enough points; ties: equal x cannot be split.
    #[test]
    fn unbounded_trees_interpolate_and_sign_trees_are_learned() {
        let mut u = lcg(5);
        let (n, d) = (30, 4);
        let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
        let y: Vec<f64> = (0..n).map(|_| u()).collect();
        let tree = grow(&x, &y, n, d, None, Rule::Cart);
        for i in 0..n {
            assert_eq!(tree.predict(&x[i * d..(i + 1) * d]), y[i]);
        }
        // f(x) = x0 > 0 ? (x2 > 0 ? 2 : -1) : 0.5
        let f = |v: &[f64]| {
            if v[0] > 0.0 {
                if v[2] > 0.0 {
                    2.0
                } else {
                    -1.0
                }
            } else {
                0.5
            }
        };
        let n = 200;
        let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
        let y: Vec<f64> = (0..n).map(|i| f(&x[i * d..(i + 1) * d])).collect();
        let tree = grow(&x, &y, n, d, Some(4), Rule::Cart);
        let mut miss = 0;
        for _ in 0..1000 {
            let q: Vec<f64> = (0..d).map(|_| u()).collect();
            if tree.predict(&q) != f(&q) {
                miss += 1;
            }
        }
        assert!(miss < 50, "{miss} of 1000 test points wrong");
        let same = grow(&[1.0, 1.0], &[0.0, 2.0], 2, 1, None, Rule::Cart);
        assert_eq!(same.nodes, alloc::vec![Node::Leaf(1.0)]);
    }

    /// Boosting: one tree of depth 0 moves the base score by eta (-G/(H + lambda)); on a
    /// smooth function it beats the constant and a single stump; it fits a step exactly-ish.
    #[test]
    fn boosting_follows_xgboosts_leaf_rule() {
        // one point: base = y, gradients 0, every tree 0
        assert_eq!(boost_predict(&[0.3], &[2.0], 1, 1, &[5.0]), 2.0);
        // two points, one feature, y = (0, 1): every tree splits them; leaf value -g/(1 + 1)
        // shrinks the residual r by (1 - 0.3 / 2) a tree: F(x_1) = 1 - 0.5 (0.85)^100
        let want = 1.0 - 0.5 * 0.85f64.powi(100);
        let got = boost_predict(&[0.0, 1.0], &[0.0, 1.0], 2, 1, &[2.0]);
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        let mut u = lcg(9);
        let (n, d) = (80, 2);
        let x: Vec<f64> = (0..n * d).map(|_| u()).collect();
        let f = |v: &[f64]| v[0] * v[0] + v[1];
        let y: Vec<f64> = (0..n).map(|i| f(&x[i * d..(i + 1) * d])).collect();
        let mean = y.iter().sum::<f64>() / n as f64;
        let (mut e_boost, mut e_mean) = (0.0, 0.0);
        for _ in 0..200 {
            let q: Vec<f64> = (0..d).map(|_| u()).collect();
            e_boost += (boost_predict(&x, &y, n, d, &q) - f(&q)).powi(2);
            e_mean += (mean - f(&q)).powi(2);
        }
        assert!(e_boost < 0.2 * e_mean, "{e_boost} vs {e_mean}");
    }
}
