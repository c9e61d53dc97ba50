//! The Vulkan engine against the scalar reference: loss, circuit gradient and predictions for
//! every one-layer model option, on Mesa's lavapipe in CI (never skipped), under the validation
//! layer. Expected values come from `AttentionReference<f64>` run on the same f32 inputs; the
//! tolerance 1e-5 relative (norm-wise) is the issue's, about 100 f32 ulps.
mod vulkan_common;

use icl_core::model::AttentionSpec;
use icl_core::rng::Domain;
use icl_core::scalar::{from_f16_storage, to_f16_storage};
use icl_core::{AttentionKernels, AttentionReference, Batch, Circuits, Config, Model, Task};
use vulkan_common::{assert_no_validation_errors, engine, engine_wg, engine_with, rel, widen};

const TOL: f64 = 1e-5;

/// Circuits of `cfg`'s initial model, rounded to f32, with KQ multiplied by `kq_gain`.
fn circuits(cfg: &Config, kq_gain: f64) -> (AttentionSpec, Circuits<f32>, Circuits<f64>) {
    let model = Model::<f64>::init(cfg).unwrap();
    let mut c = model.circuits().unwrap();
    c.kq.iter_mut().for_each(|x| *x *= kq_gain);
    let c32 = Circuits {
        heads: c.heads,
        e: c.e,
        n_out: c.n_out,
        kq: c.kq.iter().map(|&x| x as f32).collect(),
        ov: c.ov.iter().map(|&x| x as f32).collect(),
    };
    let c64 = Circuits {
        heads: c.heads,
        e: c.e,
        n_out: c.n_out,
        kq: widen(&c32.kq),
        ov: widen(&c32.ov),
    };
    (model.attention().unwrap().clone(), c32, c64)
}

fn widen_batch(b: &Batch<f32>) -> Batch<f64> {
    Batch::from_parts(b.n, b.len, b.d, b.n_out, widen(&b.z), widen(&b.y)).unwrap()
}

/// Every one-layer model option: attention/activation x parametrisation, with heads, task
/// (isotropic, anisotropic, multi-task with n_out = 2) and self-attention varied across cases.
fn option_configs() -> Vec<(String, Config, f64)> {
    let acts: [(&str, Option<&str>); 5] = [
        ("softmax", Some("exp")),
        ("softmax", Some("affine")),
        ("softmax", Some("square")),
        ("softmax", Some("tanh")),
        ("linear", None),
    ];
    let params = [
        ("full", "torch", "auto"),
        ("merged", "gaussian", "0.3"),
        ("reduced", "oppo_small_id", "0.5"),
    ];
    let mut out = Vec::new();
    let mut i = 0usize;
    for (att, act) in acts {
        for (param, init, scale) in params {
            let mut cfg = Config::default();
            cfg.set("model.attention", att).unwrap();
            if let Some(a) = act {
                cfg.set("model.activation", a).unwrap();
            }
            cfg.set("model.c", "0.5").unwrap();
            cfg.set("model.param", param).unwrap();
            cfg.set("model.init", init).unwrap();
            cfg.set("model.init_scale", scale).unwrap();
            cfg.set("model.heads", &(1 + i % 3).to_string()).unwrap();
            cfg.set(
                "model.self_attend",
                match (i % 2, att) {
                    (0, _) => "auto",
                    (_, "linear") => "false",
                    _ => "true",
                },
            )
            .unwrap();
            match i % 3 {
                0 => {}
                1 => cfg.set("task.kind", "anisotropic").unwrap(),
                _ => {
                    cfg.set("task.kind", "multitask").unwrap();
                    cfg.set("task.d", "6").unwrap();
                    cfg.set("task.supports", "1,2,3,4;3,4,5,6").unwrap();
                }
            }
            cfg.set("train.seed", &(100 + i).to_string()).unwrap();
            // Larger scores exercise the max shift of exp and the curvature of the others.
            let gain = if act == Some("exp") { 4.0 } else { 1.0 };
            out.push((
                format!(
                    "{att}/{}/{param} H={} task={:?} self_attend={}",
                    act.unwrap_or("-"),
                    cfg.model.heads,
                    cfg.task.kind,
                    cfg.self_attend()
                ),
                cfg,
                gain,
            ));
            i += 1;
        }
    }
    out
}

/// Embeddings wider than 16 (the shaders' wide variant): d = 20, and d = 62 with two outputs
/// (E = 64, the widest; its reductions carry E + 2 = 66 values, more than a workgroup has invocations).
fn wide_configs() -> Vec<(String, Config, f64)> {
    let mut a = Config::default();
    a.set("task.d", "20").unwrap();
    a.set("model.heads", "2").unwrap();
    let mut b = Config::default();
    b.set("task.kind", "multitask").unwrap();
    b.set("task.d", "62").unwrap();
    b.set("task.supports", "1,2,3;60,61,62").unwrap();
    vec![
        ("softmax/exp/full d=20".into(), a, 3.0),
        ("softmax/exp/full multitask d=62 (E=64)".into(), b, 3.0),
    ]
}

fn check_loss_grad(
    eng: &mut dyn AttentionKernels<f32>,
    name: &str,
    spec: &AttentionSpec,
    c32: &Circuits<f32>,
    c64: &Circuits<f64>,
    b32: &Batch<f32>,
    b64: &Batch<f64>,
) -> (f64, f64, f64) {
    let mut g64 = Circuits::zeros(spec);
    let l64 = AttentionReference::<f64>::new()
        .loss_grad(spec, c64, b64, &mut g64)
        .unwrap();
    let mut g32 = Circuits::zeros(spec);
    let l32 = eng.loss_grad(spec, c32, b32, &mut g32).unwrap() as f64;
    let el = (l32 - l64).abs() / l64.abs();
    let ekq = rel(&widen(&g32.kq), &g64.kq, 1e-30);
    let eov = rel(&widen(&g32.ov), &g64.ov, 1e-30);
    assert!(
        el < TOL,
        "{name}: loss {l32} vs reference {l64} (rel {el:.2e})"
    );
    assert!(ekq < TOL, "{name}: dKQ relative error {ekq:.2e}");
    assert!(eov < TOL, "{name}: dOV relative error {eov:.2e}");
    (el, ekq, eov)
}

#[test]
fn loss_and_gradient_match_reference_for_every_option() {
    // Both shader families: 16 invocations a workgroup (what lavapipe runs by default) and 64
    // (what GPUs run), so CI checks the GPU kernels too.
    for wg in [16, 64] {
        loss_and_gradient_with_workgroup(wg);
    }
}

fn loss_and_gradient_with_workgroup(wg: u32) {
    let mut eng = engine_wg(false, None, Some(wg));
    assert_eq!(eng.workgroup_size(), wg);
    println!("device: {:?}", eng.device());
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for (name, cfg, gain) in option_configs().into_iter().chain(wide_configs()) {
        let (spec, c32, c64) = circuits(&cfg, gain);
        let task = Task::new(&cfg).unwrap();
        // 96 sequences: one full block of 64 and a partial one in the reduction.
        let b32: Batch<f32> = task.sample_batch(cfg.train.seed, Domain::Train, 3, 96, cfg.task.len);
        let b64 = widen_batch(&b32);
        let (el, ekq, eov) = check_loss_grad(&mut eng, &name, &spec, &c32, &c64, &b32, &b64);
        println!("{name}: loss {el:.1e} dKQ {ekq:.1e} dOV {eov:.1e}");
        worst = (worst.0.max(el), worst.1.max(ekq), worst.2.max(eov));
    }
    println!(
        "workgroup {wg}: worst relative errors: loss {:.2e} dKQ {:.2e} dOV {:.2e}",
        worst.0, worst.1, worst.2
    );
    assert_no_validation_errors(&eng);
}

#[test]
fn f16_batch_storage_matches_reference_on_rounded_tokens() {
    let mut eng = engine_with(true, None);
    assert!(eng.f16_batch());
    for (name, cfg, gain) in option_configs().into_iter().step_by(4) {
        let (spec, c32, c64) = circuits(&cfg, gain);
        let task = Task::new(&cfg).unwrap();
        let mut b32: Batch<f32> = task.sample_batch(cfg.train.seed, Domain::Train, 5, 70, 33);
        // The reference sees exactly the tokens the shader unpacks.
        b32.z = from_f16_storage(&to_f16_storage(&b32.z));
        let b64 = widen_batch(&b32);
        check_loss_grad(
            &mut eng,
            &format!("f16 {name}"),
            &spec,
            &c32,
            &c64,
            &b32,
            &b64,
        );
    }
    assert_no_validation_errors(&eng);
}

#[test]
fn long_context_predictions_match_reference() {
    // Evaluation at L' in the thousands (training length 40, so linear attention keeps 1/40).
    let mut eng = engine();
    let mut eng16 = engine_with(true, None);
    for (att, gain) in [("softmax", 3.0), ("linear", 1.0)] {
        let mut cfg = Config::default();
        cfg.set("model.attention", att).unwrap();
        let (spec, c32, c64) = circuits(&cfg, gain);
        let task = Task::new(&cfg).unwrap();
        for &(n, len) in &[(24usize, 2500usize), (3, 6000)] {
            let b32: Batch<f32> = task.sample_batch(7, Domain::Eval, 0, n, len);
            let b64 = widen_batch(&b32);
            let mut want = vec![0.0; n];
            AttentionReference::<f64>::new()
                .predict(&spec, &c64, &b64, &mut want)
                .unwrap();
            let mut got = vec![0.0f32; n];
            eng.predict(&spec, &c32, &b32, &mut got).unwrap();
            let e = rel(&widen(&got), &want, 1e-30);
            println!("{att} L'={len}: prediction relative error {e:.2e}");
            assert!(e < TOL, "{att} L'={len}: predictions off by {e:.2e}");

            let mut r16 = b32.clone();
            r16.z = from_f16_storage(&to_f16_storage(&r16.z));
            let mut want16 = vec![0.0; n];
            AttentionReference::<f64>::new()
                .predict(&spec, &c64, &widen_batch(&r16), &mut want16)
                .unwrap();
            eng16.predict(&spec, &c32, &b32, &mut got).unwrap();
            let e16 = rel(&widen(&got), &want16, 1e-30);
            assert!(
                e16 < TOL,
                "f16 {att} L'={len}: predictions off by {e16:.2e}"
            );
        }
    }
    assert_no_validation_errors(&eng);
    assert_no_validation_errors(&eng16);
}

#[test]
fn results_are_deterministic_and_independent_of_chunking() {
    let mut cfg = Config::default();
    cfg.set("model.heads", "3").unwrap();
    let (spec, c32, _) = circuits(&cfg, 2.0);
    let task = Task::new(&cfg).unwrap();
    let b: Batch<f32> = task.sample_batch(11, Domain::Train, 0, 200, 40);
    let mut whole = engine();
    // 41 tokens x 6 values x 4 bytes = 984 bytes a sequence: 16 sequences per submission.
    let mut chunked = engine_with(false, Some(16 * 1024));
    let mut g1 = Circuits::zeros(&spec);
    let mut g2 = Circuits::zeros(&spec);
    let mut g3 = Circuits::zeros(&spec);
    let l1 = whole.loss_grad(&spec, &c32, &b, &mut g1).unwrap();
    let l2 = whole.loss_grad(&spec, &c32, &b, &mut g2).unwrap();
    let l3 = chunked.loss_grad(&spec, &c32, &b, &mut g3).unwrap();
    assert_eq!(l1.to_bits(), l2.to_bits());
    assert_eq!(l1.to_bits(), l3.to_bits());
    assert_eq!(g1, g2, "same inputs, same bits");
    assert_eq!(g1, g3, "chunking must not change the reduction order");
    let (mut p1, mut p2) = (vec![0.0f32; 200], vec![0.0f32; 200]);
    whole.predict(&spec, &c32, &b, &mut p1).unwrap();
    chunked.predict(&spec, &c32, &b, &mut p2).unwrap();
    assert_eq!(p1, p2);
    // A smaller batch after a larger one reuses the buffers; a larger one grows them.
    for n in [5usize, 300] {
        let bb: Batch<f32> = task.sample_batch(12, Domain::Train, 0, n, 40);
        let mut g = Circuits::zeros(&spec);
        let mut gr = Circuits::zeros(&spec);
        let l = whole.loss_grad(&spec, &c32, &bb, &mut g).unwrap();
        let lr = AttentionReference::<f32>::new()
            .loss_grad(&spec, &c32, &bb, &mut gr)
            .unwrap();
        assert!(((l - lr) / lr).abs() < 1e-5, "n={n}: {l} vs {lr}");
        assert!(rel(&widen(&g.kq), &widen(&gr.kq), 1e-30) < 1e-5, "n={n}");
    }
    assert_no_validation_errors(&whole);
    assert_no_validation_errors(&chunked);
}

/// The stack kernels give the same bits whatever the chunking: 150 sequences (three reduction
/// blocks) in one submission, and in submissions of 5 sequences that end inside the blocks
/// (a block's sum continues across submissions in the same order). Forward passes too. And
/// whatever the workgroup size: every output has one owner that sums in a fixed order.
#[test]
fn stack_results_are_independent_of_chunking_and_workgroup_size() {
    use icl_core::conformance::stack::{inputs, specs};
    use icl_core::families::stack::layers::{Pass, StackCircuits};
    use icl_core::families::stack::StackKernels;
    use icl_gpu_vulkan::VulkanStack;
    let spec = &specs()[3]; // non-looped softmax, T = 2, H = 3, D = 5
    let (c, b) = inputs::<f32>(spec, 150, 9, 0.3, 7);
    let tokens = (b.len + 1) * spec.e * 4;
    let opts = |chunk: Option<u64>, wg| vulkan_common::options(false, chunk, Some(wg));
    let mut whole = VulkanStack::new(&opts(None, 16)).unwrap();
    let mut chunked = VulkanStack::new(&opts(Some(5 * tokens as u64), 16)).unwrap();
    let mut wg64 = VulkanStack::new(&opts(None, 64)).unwrap();
    let (mut g1, mut g2) = (StackCircuits::zeros(spec), StackCircuits::zeros(spec));
    let l1 = whole.loss_grad(spec, &c, &b, &mut g1).unwrap();
    let l2 = chunked.loss_grad(spec, &c, &b, &mut g2).unwrap();
    assert_eq!(l1.to_bits(), l2.to_bits());
    assert_eq!(g1, g2, "chunking must not change the reduction order");
    let mut g3 = StackCircuits::zeros(spec);
    let l3 = wg64.loss_grad(spec, &c, &b, &mut g3).unwrap();
    assert_eq!(l1.to_bits(), l3.to_bits());
    assert_eq!(g1, g3, "the workgroup size must not change the bits");
    let pass = Pass {
        layers: 3,
        exclude_self: true,
    };
    let (mut o1, mut o2) = (vec![0.0; b.z.len()], vec![0.0; b.z.len()]);
    whole.forward(spec, &c, pass, &b, &mut o1).unwrap();
    chunked.forward(spec, &c, pass, &b, &mut o2).unwrap();
    assert_eq!(o1, o2);
    let mut o3 = vec![0.0; b.z.len()];
    wg64.forward(spec, &c, pass, &b, &mut o3).unwrap();
    assert_eq!(o1, o3);
    // (every engine of the process shares one device, and so one list of messages)
    let e = whole.validation_errors();
    assert!(e.is_empty(), "validation errors:\n{}", e.join("\n"));
}

/// Engines made on several threads at once share the process's device (opened once: on an H200
/// NVIDIA's driver failed when each of a few dozen engines opened and closed an instance of its
/// own) and give the bits one engine gives alone; the validation layer, which checks that the
/// shared queue's submissions are externally synchronised, reports nothing.
#[test]
fn engines_on_threads_share_one_device() {
    let (name, cfg, gain) = option_configs().into_iter().next().unwrap();
    let (spec, c32, _) = circuits(&cfg, gain);
    let task = Task::new(&cfg).unwrap();
    let b: Batch<f32> = task.sample_batch(cfg.train.seed, Domain::Train, 7, 80, cfg.task.len);
    let run = || {
        let mut eng = engine();
        let mut g = Circuits::zeros(&spec);
        let l = eng.loss_grad(&spec, &c32, &b, &mut g).unwrap();
        assert_no_validation_errors(&eng);
        (l.to_bits(), g)
    };
    let alone = run();
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..8).map(|_| run()).collect::<Vec<_>>()))
            .collect();
        for t in threads {
            for r in t.join().unwrap() {
                assert!(r == alone, "{name}: an engine on a thread differs");
            }
        }
    });
}
