//! Data law 2's normals at scale, outside CI (`cargo test --release -p icl-core --test
//! law2_normal -- --ignored`, about a minute and 1.6 GB): 10^8 draws from 10^5 training streams
//! of 1,000 values. Mean, variance, skewness and kurtosis within 5 standard errors, and the
//! Kolmogorov–Smirnov distance below its 0.1 % critical value 1.95 / sqrt(n) = 1.95e-4.
//! (CI runs the same checks on 2e6 draws: `icl_core::rng` tests.)
use icl_core::rng::{fill_normal, stream_in, Domain, Law};

#[test]
#[ignore = "10^8 draws: run with --release -- --ignored"]
fn law2_normals_pass_ks_and_moments_at_1e8() {
    let (streams, per) = (100_000, 1_000);
    let mut v = vec![0.0f64; streams * per];
    for (b, chunk) in v.chunks_exact_mut(per).enumerate() {
        fill_normal(
            &mut stream_in(Law::V2, 2026, Domain::Train, 7, b as u64),
            chunk,
        );
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let c = |p: i32| v.iter().map(|x| (x - m).powi(p)).sum::<f64>() / n;
    let (s2, m3, m4) = (c(2), c(3), c(4));
    let se = 1.0 / n.sqrt();
    eprintln!("n {n:e}: mean {m:e}, var {s2}, third {m3:e}, fourth {m4}");
    // standard errors: mean 1, variance sqrt 2, third moment sqrt 15, fourth sqrt 96 (times se)
    assert!(m.abs() < 5.0 * se, "mean {m}");
    assert!((s2 - 1.0).abs() < 5.0 * 2f64.sqrt() * se, "variance {s2}");
    assert!(m3.abs() < 5.0 * 15f64.sqrt() * se, "third moment {m3}");
    assert!(
        (m4 - 3.0).abs() < 5.0 * 96f64.sqrt() * se,
        "fourth moment {m4}"
    );
    v.sort_unstable_by(|a, b| a.total_cmp(b));
    let mut d = 0.0f64;
    for (i, &x) in v.iter().enumerate() {
        let cdf = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        d = d.max(cdf - i as f64 / n).max((i + 1) as f64 / n - cdf);
    }
    eprintln!("KS distance {d:e} (critical {:e})", 1.95 * se);
    assert!(d < 1.95 * se, "KS distance {d}");
}
