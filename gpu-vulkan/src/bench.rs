//! Throughput of the Vulkan engine, for `icl bench --engine vulkan`.
//!
//! * training: full optimiser steps (CPU data generation, GPU loss + gradient, circuit chain
//!   rule and Adam on the CPU), steps/s; and the GPU loss + gradient alone on a fixed batch.
//! * prediction: sequences/s and keys/s at a long evaluation length L'.
//!
//! One warm-up call precedes each timing (pipeline creation, buffer allocation).
use crate::{Options, VulkanEngine, VulkanFactory};
use icl_core::rng::Domain;
use icl_core::train::Trainer;
use icl_core::{Batch, Circuits, Config, Model, Runner, Task};
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchParams {
    /// Timed training steps (batch and L from the config).
    pub steps: u64,
    /// Evaluation length L' of the prediction benchmark.
    pub predict_len: usize,
    /// Sequences per prediction call.
    pub predict_n: usize,
    /// Timed prediction calls.
    pub predict_reps: usize,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            steps: 50,
            predict_len: 2000,
            predict_n: 256,
            predict_reps: 3,
        }
    }
}

/// Measured throughput.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub device: String,
    pub device_kind: &'static str,
    pub f16_batch: bool,
    pub workgroup_size: u32,
    pub batch: usize,
    pub len: usize,
    pub heads: usize,
    pub e: usize,
    /// Full training steps per second.
    pub steps_per_s: f64,
    /// GPU loss + gradient calls per second on a fixed batch (upload included).
    pub loss_grad_per_s: f64,
    pub predict_len: usize,
    pub predict_n: usize,
    /// Sequences predicted per second at L'.
    pub predict_seqs_per_s: f64,
    /// Keys attended per second (sequences x keys x heads).
    pub predict_keys_per_s: f64,
}

/// Run the benchmark for the model and task of `cfg` on the device `opts` selects.
pub fn bench(cfg: &Config, opts: &Options, p: &BenchParams) -> icl_core::Result<BenchReport> {
    if p.steps == 0 || p.predict_len == 0 || p.predict_n == 0 || p.predict_reps == 0 {
        return Err(icl_core::Error::InvalidConfig(
            "bench steps, L', n and repetitions must be >= 1".into(),
        ));
    }
    let mut trainer = Trainer::<f32>::new(cfg, &VulkanFactory(opts.clone()))?;
    trainer.step()?;
    let t = Instant::now();
    for _ in 0..p.steps {
        trainer.step()?;
    }
    let steps_per_s = p.steps as f64 / t.elapsed().as_secs_f64();

    let model = Model::<f32>::init(cfg)?;
    let spec = model.attention()?;
    let circ = model.circuits()?;
    let task = Task::new(cfg)?;
    let batch: Batch<f32> = task.sample_batch(
        cfg.train.seed,
        Domain::Train,
        0,
        cfg.train.batch,
        cfg.task.len,
    );
    let vk = VulkanEngine::new(opts)?;
    let (device, f16_batch, workgroup_size) =
        (vk.device().clone(), vk.f16_batch(), vk.workgroup_size());
    let mut eng = Runner::new(Box::new(vk));
    let mut grad = Circuits::zeros(spec);
    eng.loss_grad(spec, &circ, &batch, &mut grad)?;
    let t = Instant::now();
    for _ in 0..p.steps {
        eng.loss_grad(spec, &circ, &batch, &mut grad)?;
    }
    let loss_grad_per_s = p.steps as f64 / t.elapsed().as_secs_f64();

    let eval: Batch<f32> =
        task.sample_batch(cfg.train.seed, Domain::Eval, 0, p.predict_n, p.predict_len);
    let mut out = vec![0.0f32; p.predict_n * spec.n_out];
    eng.predict(spec, &circ, &eval, &mut out)?;
    let t = Instant::now();
    for _ in 0..p.predict_reps {
        eng.predict(spec, &circ, &eval, &mut out)?;
    }
    let secs = t.elapsed().as_secs_f64();
    let seqs = (p.predict_reps * p.predict_n) as f64;
    Ok(BenchReport {
        device: device.name.clone(),
        device_kind: device.kind.name(),
        f16_batch,
        workgroup_size,
        batch: cfg.train.batch,
        len: cfg.task.len,
        heads: spec.heads,
        e: spec.e(),
        steps_per_s,
        loss_grad_per_s,
        predict_len: p.predict_len,
        predict_n: p.predict_n,
        predict_seqs_per_s: seqs / secs,
        predict_keys_per_s: seqs * (spec.keys(p.predict_len) * spec.heads) as f64 / secs,
    })
}
