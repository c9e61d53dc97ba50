//! The scalar reference engine against an independent reference. The engine conformance suite
//! (`engine_conformance!`) compares engines with the scalar engine, so on the scalar engine
//! itself every comparison would be the engine with itself; it is not instantiated here. Instead
//! the one-layer attention kernels are checked, for every model option of the suite
//! ([`icl_core::conformance::attention::options`]), against a plain f64 transcription of the
//! formulas written below (He et al. 2025 eq. (2.2)): predictions and loss to 1e-12 in f64 and
//! 1e-5 in f32, and the circuit gradient against central differences of that transcription's
//! loss. The other families' references have their own independent checks: stacks against
//! Algorithm 1 and finite differences (`multilayer_model.rs`), GPT-2 against a naive forward and
//! finite differences (`families::gpt2::model` tests). Last, the runner checks its inputs before
//! any engine sees them.
use icl_core::config::{Activation, AttentionKind};
use icl_core::conformance::attention::{config, options, rel};
use icl_core::data::{Batch, Task};
use icl_core::engine::Runner;
use icl_core::families::attention::{AttentionSpec, Circuits};
use icl_core::model::Model;
use icl_core::rng::Domain;
use icl_core::Scalar;

/// One-layer attention from its formulas, in f64, one sequence at a time: for each head h,
/// q = KQ_h z_q, scores s_l = z_l . q over the keys (the L context tokens, and the query when it
/// attends to itself), weights w_l = f(s_l) / sum_j f(s_j) (f = exp, 1 + c s, (1 + c s)^2 or
/// 1 + tanh s) or s_l / L_0 (linear attention), a = sum_l w_l z_l, and yhat_o = sum_h OV_h[o] . a.
/// Returns the predictions (n x n_out) and the loss sum_{b,o} (yhat - y)^2 / (n n_out).
fn transcription(spec: &AttentionSpec, kq: &[f64], ov: &[f64], b: &Batch<f64>) -> (Vec<f64>, f64) {
    let (e, no, len) = (spec.d + spec.n_out, spec.n_out, b.len);
    let keys = len + usize::from(spec.self_attend);
    let f = |s: f64| match spec.activation {
        Activation::Exp => s.exp(),
        Activation::Affine => 1.0 + spec.c * s,
        Activation::Square => (1.0 + spec.c * s).powi(2),
        Activation::Tanh => 1.0 + s.tanh(),
    };
    let (mut preds, mut loss) = (Vec::new(), 0.0);
    for n in 0..b.n {
        let seq = b.seq(n);
        let tok = |l: usize| &seq[l * e..(l + 1) * e];
        let zq = tok(len);
        let mut yhat = vec![0.0; no];
        for h in 0..spec.heads {
            let kq = &kq[h * e * e..(h + 1) * e * e];
            let q: Vec<f64> = (0..e)
                .map(|i| (0..e).map(|j| kq[i * e + j] * zq[j]).sum())
                .collect();
            let s: Vec<f64> = (0..keys)
                .map(|l| tok(l).iter().zip(&q).map(|(z, q)| z * q).sum())
                .collect();
            let w: Vec<f64> = match spec.attention {
                AttentionKind::Linear => s.iter().map(|s| s / spec.lin_norm).collect(),
                AttentionKind::Softmax => {
                    let total: f64 = s.iter().map(|&s| f(s)).sum();
                    s.iter().map(|&s| f(s) / total).collect()
                }
            };
            let a: Vec<f64> = (0..e)
                .map(|c| (0..keys).map(|l| w[l] * tok(l)[c]).sum())
                .collect();
            for (o, y) in yhat.iter_mut().enumerate() {
                let row = &ov[(h * no + o) * e..(h * no + o + 1) * e];
                *y += row.iter().zip(&a).map(|(v, a)| v * a).sum::<f64>();
            }
        }
        for (o, y) in yhat.iter().enumerate() {
            loss += (y - b.target(n)[o]).powi(2) / (b.n * no) as f64;
        }
        preds.extend(yhat);
    }
    (preds, loss)
}

/// The scalar engine in precision `T` on every option: predictions and loss against the
/// transcription (both on the same circuits and batch, widened to f64) within `tol`.
fn matches_transcription<T: Scalar>(tol: f64) {
    for sets in options() {
        let cfg = config(&sets).unwrap();
        let task = Task::new(&cfg).unwrap();
        let model = Model::<T>::init(&cfg).unwrap();
        let (spec, circ) = (model.attention().unwrap(), model.circuits().unwrap());
        let batch = task.sample_batch::<T>(3, Domain::Eval, 1, 7, cfg.task.len);
        let mut preds = vec![T::zero(); batch.n * spec.n_out];
        let mut runner = Runner::<T>::scalar();
        runner.predict(spec, &circ, &batch, &mut preds).unwrap();
        let mut g = Circuits::zeros(spec);
        let loss = runner.loss_grad(spec, &circ, &batch, &mut g).unwrap();
        let wide = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
        let b64 = Batch::from_parts(
            batch.n,
            batch.len,
            spec.d,
            spec.n_out,
            wide(&batch.z),
            wide(&batch.y),
        )
        .unwrap();
        let (want, want_loss) = transcription(spec, &wide(&circ.kq), &wide(&circ.ov), &b64);
        let ep = rel(&wide(&preds), &want);
        let el = ((loss.to_f64() - want_loss) / want_loss).abs();
        assert!(
            ep < tol && el < tol,
            "{} {sets:?}: predictions {ep:e}, loss {el:e} (tolerance {tol:e})",
            T::NAME
        );
    }
}

#[test]
fn predictions_and_loss_match_the_transcription_f64() {
    matches_transcription::<f64>(1e-12);
}

#[test]
fn predictions_and_loss_match_the_transcription_f32() {
    matches_transcription::<f32>(1e-5);
}

/// The scalar engine's circuit gradient (f64) against central differences (step 1e-6) of the
/// transcription's loss, for every option.
#[test]
fn the_circuit_gradient_matches_differences_of_the_transcription() {
    for sets in options() {
        let cfg = config(&sets).unwrap();
        let task = Task::new(&cfg).unwrap();
        let model = Model::<f64>::init(&cfg).unwrap();
        let (spec, circ) = (model.attention().unwrap(), model.circuits().unwrap());
        let batch = task.sample_batch::<f64>(4, Domain::Train, 2, 5, cfg.task.len);
        let mut g = Circuits::zeros(spec);
        Runner::<f64>::scalar()
            .loss_grad(spec, &circ, &batch, &mut g)
            .unwrap();
        let (nkq, h) = (circ.kq.len(), 1e-6);
        let flat: Vec<f64> = circ.kq.iter().chain(&circ.ov).copied().collect();
        let loss = |p: &[f64]| transcription(spec, &p[..nkq], &p[nkq..], &batch).1;
        let fd: Vec<f64> = (0..flat.len())
            .map(|i| {
                let (mut up, mut down) = (flat.clone(), flat.clone());
                up[i] += h;
                down[i] -= h;
                (loss(&up) - loss(&down)) / (2.0 * h)
            })
            .collect();
        let got: Vec<f64> = g.kq.iter().chain(&g.ov).copied().collect();
        let e = rel(&got, &fd);
        assert!(e < 1e-6, "{sets:?}: gradient vs differences {e:e}");
    }
}

#[test]
fn the_runner_checks_inputs_before_any_engine() {
    use icl_core::data::Task;
    use icl_core::engine::{Runner, Sampling};
    use icl_core::model::{Circuits, Model};
    use icl_core::rng::Domain;
    let cfg = icl_core::conformance::attention::config(&[]).unwrap();
    let task = Task::new(&cfg).unwrap();
    let model = Model::<f32>::init(&cfg).unwrap();
    let circ = model.circuits().unwrap();
    let mut g = Circuits::zeros(model.attention().unwrap());
    let mut r = Runner::<f32>::scalar();
    let s = |n, len| Sampling {
        seed: 0,
        step: 0,
        n,
        len,
    };
    let empty = r.sampled_loss_grad(model.attention().unwrap(), &circ, &task, s(0, 13), &mut g);
    assert!(empty.is_err());
    let mut other_cfg = cfg.clone();
    other_cfg.set("task.d", "3").unwrap();
    let other = Task::new(&other_cfg).unwrap();
    assert!(r
        .sampled_loss_grad(model.attention().unwrap(), &circ, &other, s(8, 13), &mut g)
        .is_err());
    let batch = other.sample_batch::<f32>(0, Domain::Eval, 0, 4, 13);
    assert!(r
        .loss_grad(model.attention().unwrap(), &circ, &batch, &mut g)
        .is_err());
    let good = task.sample_batch::<f32>(0, Domain::Eval, 0, 4, 13);
    assert!(r
        .predict(model.attention().unwrap(), &circ, &good, &mut [0.0; 3])
        .is_err());
    let mut wrong = Circuits::<f32>::zeros(model.attention().unwrap());
    wrong.kq.pop();
    assert!(r
        .loss_grad(model.attention().unwrap(), &wrong, &good, &mut g)
        .is_err());
    assert!(r
        .loss_grad(model.attention().unwrap(), &circ, &good, &mut wrong)
        .is_err());
}
