//! Training batches made on the device (`gpu-vulkan/shaders/sample.wgsl`) under data law 2: the
//! same bits as the CPU sampler (`Task::sample_into`), on Mesa's lavapipe under the validation
//! layer, for every task kind the device makes, at both workgroup sizes and across submission
//! chunks; and a training step on them equal, bit for bit, to one on the CPU's batch.
mod vulkan_common;

use icl_core::engine::Sampling;
use icl_core::rng::Domain;
use icl_core::{AttentionKernels, Batch, Circuits, Config, Model, Task};
use icl_gpu_vulkan::{DeviceData, VulkanEngine};
use vulkan_common::{assert_no_validation_errors, engine_wg};

fn config(sets: &[(&str, &str)]) -> Config {
    let mut cfg = icl_core::presets::preset("he2025").unwrap();
    cfg.set("task.data_law", "2").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    cfg
}

fn bits(b: &Batch<f32>) -> (Vec<u32>, Vec<u32>) {
    (
        b.z.iter().map(|x| x.to_bits()).collect(),
        b.y.iter().map(|x| x.to_bits()).collect(),
    )
}

/// The device's batch (seed, Train, step) of `n` sequences against the CPU's, bit for bit.
fn same_batch(eng: &mut VulkanEngine, cfg: &Config, seed: u64, step: u64, n: usize) -> usize {
    let task = Task::new(cfg).unwrap();
    let model = Model::<f32>::init(cfg).unwrap();
    let spec = model.attention().unwrap().clone();
    let len = cfg.task.len;
    let dev = eng
        .sample_batch(&spec, &task, seed, step, (n, len))
        .unwrap();
    let cpu = task.sample_batch::<f32>(seed, Domain::Train, step, n, len);
    let (dz, dy) = bits(&dev);
    let (cz, cy) = bits(&cpu);
    assert_eq!(dz.len(), cz.len());
    if let Some(i) = dz.iter().zip(&cz).position(|(a, b)| a != b) {
        let w = (len + 1) * (task.d + task.n_out);
        panic!(
            "token {i} (sequence {}, value {} of its {w}) differs: device {} CPU {}",
            i / w,
            i % w,
            dev.z[i],
            cpu.z[i]
        );
    }
    assert_eq!(dy, cy, "targets differ");
    dz.len() + dy.len()
}

#[test]
fn device_batches_are_the_cpu_batches_bit_for_bit() {
    let cases: Vec<(&str, Config)> = vec![
        ("isotropic", config(&[])),
        (
            "anisotropic, KMS 0.5",
            config(&[("task.kind", "anisotropic"), ("task.rho", "0.5")]),
        ),
        (
            "linear (Garg et al.), d = 20, no noise",
            config(&[
                ("task.kind", "linear"),
                ("task.d", "20"),
                ("task.sigma2", "0"),
            ]),
        ),
        (
            "isotropic, noise-free query, sigma^2 = 0.5, d = 3, L = 7",
            config(&[
                ("task.query_noise", "false"),
                ("task.sigma2", "0.5"),
                ("task.d", "3"),
                ("task.L", "7"),
            ]),
        ),
        (
            "eigs, d = 8",
            config(&[
                ("task.kind", "eigs"),
                ("task.d", "8"),
                ("task.eigs", "1,1,1,1,0.5,0.5,0.1,0.1"),
            ]),
        ),
    ];
    for wg in [16, 64] {
        // chunks of at most 40 kB: several submissions a batch
        let mut eng = engine_wg(false, Some(40_000), Some(wg));
        for (name, cfg) in &cases {
            let mut values = 0;
            for (seed, step) in [(0u64, 0u64), (7, 123_456_789_012)] {
                values += same_batch(&mut eng, cfg, seed, step, 150);
            }
            println!("wg {wg}, {name}: {values} values equal");
        }
        assert_no_validation_errors(&eng);
    }
}

#[test]
fn four_million_normals_are_the_cpu_normals() {
    // d = 63 covariates by 1001 tokens by 64 sequences, noise-free: x holds the normals as drawn
    let cfg = config(&[("task.d", "63"), ("task.L", "1000"), ("task.sigma2", "0")]);
    let mut eng = engine_wg(false, None, Some(64));
    let n = same_batch(&mut eng, &cfg, 3, 5, 64);
    assert!(n > 4_000_000);
    assert_no_validation_errors(&eng);
}

#[test]
fn a_step_on_device_data_is_a_step_on_the_cpu_batch() {
    let cfg = config(&[("model.heads", "2")]);
    let task = Task::new(&cfg).unwrap();
    let model = Model::<f32>::init(&cfg).unwrap();
    let spec = model.attention().unwrap().clone();
    let circ = model.circuits().unwrap();
    let s = Sampling {
        seed: 11,
        step: 3,
        n: 100,
        len: cfg.task.len,
    };
    let zero = || Circuits::<f32>::zeros(&spec);
    let mut eng = engine_wg(false, Some(40_000), None);
    assert_eq!(eng.device_data(), DeviceData::Unchecked);
    let (mut g_dev, mut g_cpu) = (zero(), zero());
    let l_dev = eng
        .sampled_loss_grad(&spec, &circ, &task, s, &mut g_dev)
        .expect("the device makes law-2 isotropic batches")
        .unwrap();
    assert_eq!(eng.device_data(), DeviceData::Yes);
    let batch = task.sample_batch::<f32>(s.seed, Domain::Train, s.step, s.n, s.len);
    let l_cpu = eng.loss_grad(&spec, &circ, &batch, &mut g_cpu).unwrap();
    assert_eq!(l_dev.to_bits(), l_cpu.to_bits());
    assert_eq!(g_dev, g_cpu);
    // law 1 stays on the CPU sampler
    let law1 = Task::new(&config(&[("task.data_law", "1")])).unwrap();
    assert!(eng
        .sampled_loss_grad(&spec, &circ, &law1, s, &mut g_dev)
        .is_none());
    assert_no_validation_errors(&eng);
}
