//! Packed training steps on the Vulkan engine (`AttentionKernels::loss_grad_packed`): K runs of
//! one model, each with its own circuits and its own batch, computed as one batch of K n
//! sequences (one submission per chunk), give every run's loss and circuit gradient bit for bit
//! as `loss_grad` on that run alone, on Mesa's lavapipe under the validation layer: 3 and 5 runs,
//! batch sizes that are not multiples of the 64-sequence reduction blocks, softmax, linear and
//! two-output models, both workgroup sizes, f32 and f16 tokens, and chunks small enough that
//! submissions straddle runs.
mod vulkan_common;

use icl_core::engine::PackedRun;
use icl_core::rng::Domain;
use icl_core::{AttentionKernels, Batch, Circuits, Config, Model, Task};
use icl_gpu_vulkan::VulkanEngine;
use vulkan_common::{assert_no_validation_errors, engine_wg};

/// Chunks of at most 40 kB of tokens: about 40 sequences of the he2025 shapes a submission, so a
/// pack spans many submissions and most of them hold the end of one run and the start of the
/// next.
const SMALL_CHUNK: u64 = 40_000;

/// The he2025 preset with Gaussian initial circuits (so runs of different seeds differ in every
/// entry) and `sets` applied.
fn config(sets: &[(&str, &str)]) -> Config {
    let mut cfg = icl_core::presets::preset("he2025").unwrap();
    cfg.set("model.init", "gaussian").unwrap();
    cfg.set("model.init_scale", "0.3").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    cfg
}

/// The model kinds: (name, config overrides).
fn kinds() -> Vec<(&'static str, Config)> {
    vec![
        ("softmax exp, 2 heads, n_out 1", config(&[])),
        (
            "linear attention, 1 head",
            config(&[("model.attention", "linear"), ("model.heads", "1")]),
        ),
        (
            "softmax tanh, 3 heads, two tasks (n_out 2)",
            config(&[
                ("task.kind", "multitask"),
                ("task.d", "6"),
                ("task.supports", "1,2,3,4;3,4,5,6"),
                ("model.heads", "3"),
                ("model.activation", "tanh"),
            ]),
        ),
    ]
}

/// `runs` runs of `cfg`'s model: circuits initialised from seeds 100 + r, batches of `n`
/// sequences drawn at (seed 50 + r, Train, step r).
fn runs_of(cfg: &Config, runs: usize, n: usize) -> (Vec<Circuits<f32>>, Vec<Batch<f32>>) {
    let task = Task::new(cfg).unwrap();
    let circs = (0..runs)
        .map(|r| {
            let mut c = cfg.clone();
            c.set("train.seed", &(100 + r).to_string()).unwrap();
            Model::<f32>::init(&c).unwrap().circuits().unwrap()
        })
        .collect();
    let batches = (0..runs)
        .map(|r| task.sample_batch::<f32>(50 + r as u64, Domain::Train, r as u64, n, cfg.task.len))
        .collect();
    (circs, batches)
}

fn bits(c: &Circuits<f32>) -> Vec<u32> {
    c.kq.iter().chain(&c.ov).map(|x| x.to_bits()).collect()
}

/// The packed call on `runs` runs of `n` sequences against `runs` calls of `loss_grad`, bit for
/// bit; returns the values compared.
fn packed_is_alone(eng: &mut VulkanEngine, cfg: &Config, runs: usize, n: usize) -> usize {
    let spec = Model::<f32>::init(cfg)
        .unwrap()
        .attention()
        .unwrap()
        .clone();
    let (circs, batches) = runs_of(cfg, runs, n);
    assert!(
        circs.windows(2).all(|w| w[0] != w[1]),
        "the runs' circuits must differ"
    );
    let items: Vec<PackedRun<'_, f32>> = circs
        .iter()
        .zip(&batches)
        .map(|(circ, batch)| PackedRun { circ, batch })
        .collect();
    let mut grads = vec![Circuits::<f32>::zeros(&spec); runs];
    let losses = eng
        .loss_grad_packed(&spec, &items, &mut grads)
        .expect("the Vulkan engine packs")
        .unwrap();
    assert_eq!(losses.len(), runs);
    let mut values = 0;
    for (r, (circ, batch)) in circs.iter().zip(&batches).enumerate() {
        let mut alone = Circuits::<f32>::zeros(&spec);
        let loss = eng.loss_grad(&spec, circ, batch, &mut alone).unwrap();
        assert_eq!(
            losses[r].to_bits(),
            loss.to_bits(),
            "run {r} of {runs}: packed loss {} alone {loss}",
            losses[r]
        );
        let (p, a) = (bits(&grads[r]), bits(&alone));
        if let Some(i) = p.iter().zip(&a).position(|(x, y)| x != y) {
            panic!(
                "run {r} of {runs}, n = {n}: gradient entry {i} differs: packed {} alone {}",
                f32::from_bits(p[i]),
                f32::from_bits(a[i])
            );
        }
        values += 1 + p.len();
    }
    values
}

/// Every kind, 3 and 5 runs of 70 and 130 sequences, at workgroup size `wg`, in small chunks
/// and in one.
fn every_case(wg: u32) {
    for chunk in [Some(SMALL_CHUNK), None] {
        let mut eng = engine_wg(false, chunk, Some(wg));
        for (name, cfg) in kinds() {
            for (runs, n) in [(3, 70), (5, 130)] {
                let values = packed_is_alone(&mut eng, &cfg, runs, n);
                println!(
                    "wg {wg}, chunk {chunk:?}, {name}: {runs} runs of {n}, {values} values equal"
                );
            }
        }
        assert_no_validation_errors(&eng);
    }
}

#[test]
fn packed_runs_are_each_run_alone_bit_for_bit_wg16() {
    every_case(16);
}

#[test]
fn packed_runs_are_each_run_alone_bit_for_bit_wg64() {
    every_case(64);
}

#[test]
fn packed_runs_of_f16_tokens_are_each_run_alone() {
    let mut eng = engine_wg(true, Some(SMALL_CHUNK), Some(16));
    for (name, cfg) in kinds() {
        let values = packed_is_alone(&mut eng, &cfg, 3, 70);
        println!("f16, {name}: {values} values equal");
    }
    assert_no_validation_errors(&eng);
}

#[test]
fn a_pack_of_one_is_loss_grad() {
    let mut eng = engine_wg(false, Some(SMALL_CHUNK), None);
    for (_, cfg) in kinds() {
        packed_is_alone(&mut eng, &cfg, 1, 130);
    }
    assert_no_validation_errors(&eng);
}

#[test]
fn an_empty_pack_is_empty_and_mismatched_batches_are_refused() {
    let cfg = config(&[]);
    let spec = Model::<f32>::init(&cfg)
        .unwrap()
        .attention()
        .unwrap()
        .clone();
    let mut eng = engine_wg(false, None, None);
    let none = eng.loss_grad_packed(&spec, &[], &mut []).expect("packs");
    assert!(none.unwrap().is_empty());
    let (circs, mut batches) = runs_of(&cfg, 2, 70);
    let task = Task::new(&cfg).unwrap();
    batches[1] = task.sample_batch::<f32>(1, Domain::Train, 0, 71, cfg.task.len);
    let items: Vec<PackedRun<'_, f32>> = circs
        .iter()
        .zip(&batches)
        .map(|(circ, batch)| PackedRun { circ, batch })
        .collect();
    let mut grads = vec![Circuits::<f32>::zeros(&spec); 2];
    let err = eng
        .loss_grad_packed(&spec, &items, &mut grads)
        .expect("packs")
        .unwrap_err();
    assert!(
        matches!(err, icl_core::Error::Shape(_)),
        "a batch of another size: {err}"
    );
    assert_no_validation_errors(&eng);
}
