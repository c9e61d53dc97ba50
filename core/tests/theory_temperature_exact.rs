//! The temperature paper's linearised layer: its Monte Carlo (plain and conditional) and the exact
//! finite-size coefficients of `G(tau) = a/tau^2 - b/tau + c` against it (issue 20).
use icl_core::theory::temperature::mc::{self, Estimator};
use icl_core::theory::temperature::{self as tp, Gaussian, Params, Pretrain};

/// A random SPD matrix `A A^T/d + floor I` (row-major) from a fixed stream.
fn spd(d: usize, seed: u64, floor: f64) -> Vec<f64> {
    let mut r = icl_core::rng::stream(seed, icl_core::rng::Domain::Task, 0, 0);
    let mut g = vec![0.0; d * d];
    icl_core::rng::fill_normal(&mut r, &mut g);
    (0..d * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            (0..d).map(|t| g[i * d + t] * g[j * d + t]).sum::<f64>() / d as f64
                + if i == j { floor } else { 0.0 }
        })
        .collect()
}

fn diag(v: &[f64]) -> Vec<f64> {
    let d = v.len();
    (0..d * d)
        .map(|k| if k / d == k % d { v[k / d] } else { 0.0 })
        .collect()
}

#[test]
fn monte_carlo_plain_and_conditional_agree_and_are_deterministic() {
    let d = 4;
    let train = Gaussian {
        mu_w: vec![0.5, -0.3, 0.2, 0.1],
        ..Gaussian::isotropic(d, 1.0, 1.0, 0.25)
    };
    let test = Gaussian {
        mu_x: vec![0.3, 0.0, -0.2, 0.1],
        sigma_x: spd(d, 1, 0.5),
        mu_w: vec![0.2, 0.1, 0.0, -0.4],
        sigma_w: diag(&[1.5, 0.5, 1.0, 2.0]),
        d,
        sigma2: 0.5,
    };
    let p = tp::pretrained(&train, 10, Pretrain::Population).unwrap();
    let n = 40_000;
    let plain = mc::coefficients(&p, &test, 8, n, 5, Estimator::Plain).unwrap();
    let cond = mc::coefficients(&p, &test, 8, n, 5, Estimator::Conditional).unwrap();
    for tau in [0.5, 1.0, 3.0] {
        let (gp, sp) = plain.g(tau);
        let (gc, sc) = cond.g(tau);
        // the conditional estimator has the smaller variance; both estimate the same G
        assert!(sc < sp, "tau {tau}: conditional SE {sc} >= plain SE {sp}");
        let z = (gp - gc) / sp;
        assert!(
            z.abs() < 4.0,
            "tau {tau}: plain {gp} +- {sp}, conditional {gc} +- {sc}"
        );
    }
    let again = mc::coefficients(&p, &test, 8, n, 5, Estimator::Conditional).unwrap();
    assert_eq!(again, cond, "same seed, same result");
    let other = mc::coefficients(&p, &test, 8, n, 6, Estimator::Conditional).unwrap();
    assert_ne!(other, cond);
    // bad input: typed errors
    assert!(mc::coefficients(&p, &test, 1, n, 5, Estimator::Plain).is_err());
    assert!(mc::coefficients(&p, &test, 8, 1, 5, Estimator::Plain).is_err());
    let bad = Params {
        m21: vec![1.0; d],
        ..p.clone()
    };
    assert!(mc::coefficients(&bad, &test, 8, n, 5, Estimator::Conditional).is_err());
    assert!(mc::coefficients(&bad, &test, 8, 10, 5, Estimator::Plain).is_ok());
}
