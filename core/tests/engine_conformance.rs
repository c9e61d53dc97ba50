//! The engine conformance suite on the scalar reference itself (its comparisons with the
//! reference are trivially equal; the sampling, length and finite-difference checks are not).
use icl_core::engine::{Engine, ScalarEngine};

icl_core::engine_conformance!(scalar_f64, f64, 1e-12, || -> Box<dyn Engine<f64>> {
    Box::new(ScalarEngine)
});
icl_core::engine_conformance!(scalar_f32, f32, 1e-6, || -> Box<dyn Engine<f32>> {
    Box::new(ScalarEngine)
});

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
