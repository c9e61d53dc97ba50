//! The full parametrisation, computed through effective circuits, equals a direct transcription of
//! the reference code's forward (`MultiHeadAttention`: per head q = Q z_q, k_l = K z_l, v_l = V z_l,
//! p = softmax(q.k / sqrt(d+1)), out = sum_h O_h sum_l p_l v_l).
use icl_core::config::Config;
use icl_core::data::Task;
use icl_core::engine::Runner;
use icl_core::model::Model;
use icl_core::rng::Domain;

fn naive_predict(m: &Model<f64>, seq: &[f64], len: usize) -> f64 {
    let s = m.attention().unwrap();
    let (h_n, e) = (s.heads, s.e());
    let q = m.tensor("q_proj.weight").unwrap();
    let k = m.tensor("k_proj.weight").unwrap();
    let v = m.tensor("v_proj.weight").unwrap();
    let o = m.tensor("o_proj.weight").unwrap();
    let zq = &seq[len * e..(len + 1) * e];
    let matvec = |w: &[f64], h: usize, z: &[f64]| -> Vec<f64> {
        (0..e)
            .map(|r| (0..e).map(|c| w[(h * e + r) * e + c] * z[c]).sum())
            .collect()
    };
    let mut out = 0.0;
    for h in 0..h_n {
        let qv = matvec(q, h, zq);
        let scores: Vec<f64> = (0..len)
            .map(|l| {
                let kv = matvec(k, h, &seq[l * e..(l + 1) * e]);
                qv.iter().zip(&kv).map(|(a, b)| a * b).sum::<f64>() / ((e as f64).sqrt())
            })
            .collect();
        let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = scores.iter().map(|s| (s - mx).exp()).sum();
        for l in 0..len {
            let p = (scores[l] - mx).exp() / z;
            let vv = matvec(v, h, &seq[l * e..(l + 1) * e]);
            out += p * (0..e).map(|r| o[h * e + r] * vv[r]).sum::<f64>();
        }
    }
    out
}

#[test]
fn full_model_matches_reference_forward() {
    let mut c = Config::default();
    c.set("model.heads", "3").unwrap();
    c.set("train.seed", "5").unwrap();
    c.validate().unwrap();
    let m = Model::<f64>::init(&c).unwrap();
    let task = Task::new(&c).unwrap();
    let b = task.sample_batch::<f64>(1, Domain::Eval, 40, 16, 40);
    let mut out = vec![0.0; 16];
    Runner::<f64>::scalar()
        .predict(m.attention().unwrap(), &m.circuits().unwrap(), &b, &mut out)
        .unwrap();
    for (i, got) in out.iter().enumerate() {
        let want = naive_predict(&m, b.seq(i), 40);
        assert!(
            (got - want).abs() < 1e-12 * (1.0 + want.abs()),
            "seq {i}: {got} vs {want}"
        );
    }
}
