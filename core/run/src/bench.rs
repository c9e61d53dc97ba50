//! Training throughput (steps/s) of an engine over heads, dtypes, thread counts and context
//! lengths, with the time per step split between data generation, forward/backward and the
//! optimiser (circuit chain rule + Adam), and the resident memory before and after. A
//! measurement, not a test: numbers depend on the machine and its load.
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use icl_core::families::iv;
use icl_core::families::stack::objective::sample_stack_batch;
use icl_core::families::stack::StackRunner;
use icl_core::model::{Circuits, Net};
use icl_core::rng::Domain;
use icl_core::train::{Options, Trainer};
use icl_core::{Batch, Config};
use icl_cpu_simd::SimdEngine;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// How long to measure each configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Timed steps (after the warm-up: [`warm_up`]).
    pub steps: u64,
    /// Stop after this many seconds (at least 50 steps are timed).
    pub max_seconds: f64,
    /// Also split the time between data, forward/backward and optimiser.
    pub split: bool,
}

/// The time split of a step, in microseconds. `data` and `optim` are timed on their own, after
/// the timed steps; `forward_backward` is what is left: the step's time minus those two. It
/// therefore also holds the trainer's bookkeeping, the threads' hand-over and any difference in
/// the machine's load between the timings (on a shared machine several microseconds either way;
/// `cargo run --release -p icl-cpu-simd --example kernels` times the one-layer kernels apart).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// Data generation alone, as training does it.
    pub data: f64,
    /// The step minus `data` and `optim` (the forward and backward, and the rest).
    pub forward_backward: f64,
    /// Circuits, the circuit -> parameter chain rule and the optimiser, alone.
    pub optim: f64,
    /// The batches were made on the device inside each step (the Vulkan engine on a law-2 task
    /// it makes, checked bit for bit against the CPU's): `data` is 0 and `forward_backward`
    /// holds their making.
    #[serde(default)]
    pub data_on_device: bool,
}

/// One measured configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    pub engine: String,
    /// The `simd` engine's vector instruction level (`sse2`, `avx2`, `avx512`).
    pub simd_level: Option<String>,
    pub dtype: String,
    pub heads: usize,
    pub len: usize,
    pub batch: usize,
    pub threads: usize,
    pub steps: u64,
    pub seconds: f64,
    pub steps_per_s: f64,
    pub us_per_step: f64,
    pub split_us: Option<Split>,
    pub rss_kb_start: u64,
    pub rss_kb_end: u64,
    pub final_loss: f64,
    /// Arithmetic of the forward + backward (`ModelSpec::step_flops`) per
    /// second, in GFLOP/s.
    pub gflops: Option<f64>,
    /// The FLOP count of one step that `gflops` divides by the time (`ModelSpec::step_flops`
    /// at the configuration's L and batch: the matrix products of the forward and backward).
    #[serde(default)]
    pub flops_per_step: Option<f64>,
    /// The stated peak for the threads used ([`peak_gflops`]).
    pub peak_gflops: Option<f64>,
    /// Set when the configuration was measured several times (`icl bench --repeat N`): the row
    /// is the median measurement by steps/s, and this holds the spread ([`median_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
}

/// The spread of repeated measurements of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    /// How many measurements.
    pub n: usize,
    /// The slowest and the fastest, in steps/s.
    pub steps_per_s_min: f64,
    pub steps_per_s_max: f64,
}

/// The median of `n` measurements of one configuration by steps/s (the lower middle one for an
/// even `n`: a measurement that was taken, not an average of two), with their spread in
/// [`BenchRow::repeats`]; `None` for no measurement. On a shared machine one window can be 40 %
/// off the next: the median of windows taken in turn with the other configurations (`icl bench
/// --repeat N` measures every configuration once per round) compares configurations under the
/// same load.
pub fn median_of(mut rows: Vec<BenchRow>) -> Option<BenchRow> {
    rows.sort_by(|a, b| a.steps_per_s.total_cmp(&b.steps_per_s));
    let n = rows.len();
    let (lo, hi) = (rows.first()?.steps_per_s, rows.last()?.steps_per_s);
    let mut row = rows.swap_remove((n - 1) / 2);
    if n > 1 {
        row.repeats = Some(Repeats {
            n,
            steps_per_s_min: lo,
            steps_per_s_max: hi,
        });
    }
    Some(row)
}

/// Nominal clock of this machine in GHz (`cpu MHz` of /proc/cpuinfo), if known.
fn clock_ghz() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu MHz"))?;
    let mhz: f64 = line.split(':').nth(1)?.trim().parse().ok()?;
    (mhz > 0.0).then_some(mhz / 1000.0)
}

/// The stated peak of the kernels' arithmetic for `threads` cores at `level` in a scalar of
/// `bits`: cores x nominal clock x 4 vector pipes (two add, two multiply: the kernels use no FMA,
/// as on AMD Zen 4) x lanes per pipe, with pipes at most 256 bits wide (Zen 4 runs a 512-bit
/// instruction in two passes) and 128 bits for SSE2. `None` for a level that is not one of
/// those (`scalar`: the engine's scalar fallback).
pub fn peak_gflops(threads: usize, level: &str, bits: usize) -> Option<f64> {
    let width = match level {
        "sse2" | "base" => 128,
        "avx2" | "avx512" => 256,
        _ => return None,
    };
    Some(threads as f64 * clock_ghz()? * 4.0 * (width / bits) as f64)
}

/// Largest thread count a measurement accepts.
pub const MAX_THREADS: usize = 1024;

/// Resident set size of this process in KiB (0 where /proc is unavailable).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4)
        .unwrap_or(0)
}

/// `cfg` as [`measure`] runs it: `train.steps` is the steps it times and the most [`warm_up`]
/// takes, so the memory estimate counts the log and snapshots of those, not of the config's run;
/// and without Garg et al.'s curriculum, so that a curriculum preset is timed at the `task.d` and
/// `task.L` the row states (its first stage would be d = 5, L = 10 for the 2,000 steps a
/// benchmark lasts).
pub fn bench_config(cfg: &Config, steps: u64) -> Config {
    let mut c = cfg.clone();
    c.task.curriculum = false;
    c.train.steps = warm_up_steps(steps)
        .saturating_mul(2)
        .min(icl_core::config::MAX_STEPS);
    c
}

/// The most steps [`warm_up`] takes before `steps` timed ones (at least 1 is timed).
fn warm_up_steps(steps: u64) -> u64 {
    steps.max(1).saturating_add(20)
}

/// The steps before the timed ones: 20, and more until a tenth of the time budget (at most a
/// quarter of a second) has passed, up to [`warm_up_steps`]. A process's first fraction
/// of a second ran two threads a quarter slower on a 2-core VM (docs/speed.md, "Warm-up"), so
/// the first configuration of a benchmark read low where 20 steps were the whole warm-up.
fn warm_up(b: &Budget, step: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    let t0 = Instant::now();
    let warm = (b.max_seconds / 10.0).min(0.25);
    let mut k = 0u64;
    while k < 20 || (k < warm_up_steps(b.steps) && t0.elapsed().as_secs_f64() < warm) {
        step()?;
        k += 1;
    }
    Ok(())
}

/// Time the config `cfg` with engine `engine` in precision `T` in a pool of `threads` threads.
pub fn measure<T: RunScalar>(
    cfg: &Config,
    engine: &str,
    threads: usize,
    b: &Budget,
) -> Result<BenchRow> {
    if threads == 0 || threads > MAX_THREADS {
        return Err(RunError::Refused(format!(
            "thread count {threads} is outside 1..={MAX_THREADS}"
        )));
    }
    if !(b.max_seconds > 0.0) || !b.max_seconds.is_finite() {
        return Err(RunError::Refused(format!(
            "the time budget must be a positive number of seconds, got {}",
            b.max_seconds
        )));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| RunError::Engine(format!("thread pool: {e}")))?;
    let engines = Engines(engine.to_string(), None);
    let cfg = &bench_config(cfg, b.steps);
    pool.install(|| -> Result<BenchRow> {
        crate::train::check_memory(cfg)?;
        drop(T::engine(engine)?);
        let mut tr = Trainer::<T>::with_model(
            cfg,
            icl_core::Model::init(cfg)?,
            &engines,
            &Options::default(),
        )?;
        warm_up(b, &mut || {
            tr.step()?;
            Ok(())
        })?;
        let rss0 = rss_kb();
        let t0 = Instant::now();
        let mut steps = 0;
        let mut loss = 0.0;
        while steps < b.steps.max(1) {
            loss = tr.step()?;
            steps += 1;
            if steps >= 50 && t0.elapsed().as_secs_f64() > b.max_seconds {
                break;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let rss1 = rss_kb();
        let us = 1e6 * secs / steps as f64;
        let split_us = if b.split {
            let (data, optim, data_on_device) = split::<T>(cfg, engine, &mut tr, steps.min(500))?;
            Some(Split {
                data,
                optim,
                forward_backward: (us - data - optim).max(0.0),
                data_on_device,
            })
        } else {
            None
        };
        let spec = &tr.model.spec;
        let simd_level = crate::engines::simd_level::<T>(engine, &spec.net);
        let flops_per_step = spec.step_flops(cfg.task.len, cfg.train.batch);
        let gflops = Some(flops_per_step * steps as f64 / secs / 1e9);
        let peak_gflops = simd_level
            .as_deref()
            .and_then(|l| peak_gflops(threads, l, 8 * core::mem::size_of::<T>()));
        Ok(BenchRow {
            engine: engine.to_string(),
            simd_level,
            gflops,
            flops_per_step: Some(flops_per_step),
            peak_gflops,
            dtype: T::NAME.into(),
            heads: cfg.model.heads,
            len: cfg.task.len,
            batch: cfg.train.batch,
            threads,
            steps,
            seconds: secs,
            steps_per_s: steps as f64 / secs,
            us_per_step: us,
            split_us,
            rss_kb_start: rss0,
            rss_kb_end: rss1,
            final_loss: loss,
            repeats: None,
        })
    })
}

/// Microseconds per step spent generating the data (as training does: the engine's own generator
/// for one-layer `simd`, the stack engine's fill for transformers and the IV model, the task
/// sampler otherwise; 0 where the Vulkan engine makes the batches inside the step) and in the
/// optimiser (circuits, circuit -> parameter chain rule, Adam); and whether the data was made on
/// the device.
fn split<T: RunScalar>(
    cfg: &Config,
    engine: &str,
    tr: &mut Trainer<T>,
    steps: u64,
) -> Result<(f64, f64, bool)> {
    let (seed, n, len) = (cfg.train.seed, cfg.train.batch, cfg.task.len);
    let spec = tr.model.spec.clone();
    let on_device = engine == "vulkan" && vulkan_makes_data(cfg, &tr.task, &spec.net);
    let t0 = Instant::now();
    let mut sink = 0.0;
    if on_device {
        // made inside the step: nothing to time apart
    } else if let Net::Iv(sp) = &spec.net {
        let mut runner = StackRunner::new(T::stack_engine(engine)?);
        let mut b = iv::empty_batch::<T>(sp, n, len)?;
        for s in 0..steps {
            iv::sample_into(&sp.iv, &mut runner, seed, Domain::Train, s, &mut b)?;
            sink += b.yq[0].to_f64();
        }
    } else if let Net::Stack(_) = &spec.net {
        let mut runner = StackRunner::new(T::stack_engine(engine)?);
        let mut b = Batch::<T>::try_zeros(n, len, tr.task.d, tr.task.n_out)?;
        for s in 0..steps {
            sample_stack_batch(&mut runner, &tr.task, seed, s, &mut b);
            sink += b.y[0].to_f64();
        }
    } else if let (true, Net::Attention(sp)) = (engine == "simd", &spec.net) {
        let mut g = SimdEngine::<T>::new();
        for s in 0..steps {
            sink += g.generate_only(sp, &tr.task, seed, s, n, len).to_f64();
        }
    } else {
        let mut b = Batch::<T>::zeros(n, len, tr.task.d, tr.task.n_out);
        let mut scratch = Vec::new();
        for s in 0..steps {
            tr.task
                .sample_into(seed, Domain::Train, s, 0, &mut b, &mut scratch);
            sink += b.y[0].to_f64();
        }
    }
    let data = if on_device {
        0.0
    } else {
        1e6 * t0.elapsed().as_secs_f64() / steps as f64
    };
    // the optimiser on a copy (the timed run's state is left alone)
    let mut model = tr.model.clone();
    let mut opt = tr.opt.clone();
    // one-layer attention: the circuits and their chain rule are part of the serial step
    let mut att = spec.as_attention().ok().map(|s| {
        let mut g = Circuits::zeros(s);
        g.kq.iter_mut()
            .chain(g.ov.iter_mut())
            .for_each(|x| *x = T::of(1e-3));
        (s, Circuits::zeros(s), g)
    });
    let mut grad = vec![T::zero(); model.params.len()];
    let t1 = Instant::now();
    for _ in 0..steps {
        if let Some((s, circ, gcirc)) = att.as_mut() {
            s.circuits_into(&model.params, circ);
            s.backprop_circuits(&model.params, gcirc, &mut grad);
        }
        opt.step(&mut model.params, &grad)?;
    }
    let optim = 1e6 * t1.elapsed().as_secs_f64() / steps as f64;
    if !sink.is_finite() {
        return Err(RunError::Engine("non-finite data in the benchmark".into()));
    }
    Ok((data, optim, on_device))
}

/// Whether the Vulkan engine makes `task`'s training batches on the device (its own check;
/// one-layer models only).
#[cfg(feature = "vulkan")]
fn vulkan_makes_data(cfg: &Config, task: &icl_core::Task, net: &Net) -> bool {
    let Net::Attention(sp) = net else {
        return false;
    };
    let Ok(mut vk) = icl_gpu_vulkan::VulkanEngine::new(&icl_gpu_vulkan::Options::from_env()) else {
        return false;
    };
    vk.makes_data(
        sp,
        task,
        cfg.train.seed,
        0,
        (cfg.train.batch.min(64), cfg.task.len),
    )
}

#[cfg(not(feature = "vulkan"))]
fn vulkan_makes_data(_: &Config, _: &icl_core::Task, _: &Net) -> bool {
    false
}

/// The Vulkan engine's prediction throughput at L' = 2000 (256 sequences) and its GPU-only
/// loss + gradient rate, from `icl_gpu_vulkan::bench` (device options from ICL_VULKAN_*).
#[cfg(feature = "vulkan")]
pub fn vulkan_predict(cfg: &Config) -> Result<icl_gpu_vulkan::bench::BenchReport> {
    let p = icl_gpu_vulkan::bench::BenchParams {
        steps: 5,
        ..Default::default()
    };
    Ok(icl_gpu_vulkan::bench::bench(
        cfg,
        &icl_gpu_vulkan::Options::from_env(),
        &p,
    )?)
}

/// The Vulkan device the engine picks (`ICL_VULKAN_DEVICE`): its name and kind (for the models
/// [`vulkan_predict`] does not measure: every family but one-layer attention).
#[cfg(feature = "vulkan")]
pub fn vulkan_device() -> Result<(String, &'static str)> {
    let vk = icl_gpu_vulkan::VulkanEngine::new(&icl_gpu_vulkan::Options::from_env())
        .map_err(icl_core::Error::from)?;
    let d = vk.device();
    Ok((d.name.clone(), d.kind.name()))
}

#[cfg(test)]
mod tests {
    use super::{warm_up, Budget, RunError};
    use icl_core::config::AttentionKind;
    use icl_core::families::iv::IvSpec;
    use icl_core::families::stack::StackSpec;

    fn sp(layers: usize, heads: usize) -> StackSpec {
        StackSpec {
            e: 2,
            n_out: 1,
            heads,
            layers,
            looped: true,
            attention: AttentionKind::Softmax,
            scale: 1.0,
        }
    }

    #[test]
    fn repeated_measurements_give_the_median_row_and_the_spread() {
        let row = |r: f64| super::BenchRow {
            engine: "simd".into(),
            simd_level: None,
            dtype: "f32".into(),
            heads: 2,
            len: 40,
            batch: 64,
            threads: 1,
            steps: 100,
            seconds: 100.0 / r,
            steps_per_s: r,
            us_per_step: 1e6 / r,
            split_us: None,
            rss_kb_start: 0,
            rss_kb_end: 0,
            final_loss: r,
            gflops: None,
            flops_per_step: None,
            peak_gflops: None,
            repeats: None,
        };
        assert_eq!(super::median_of(Vec::new()), None);
        // one measurement is itself, with no spread
        assert_eq!(super::median_of(vec![row(5.0)]), Some(row(5.0)));
        // odd: the middle one, whole (its loss and time too); even: the lower middle one
        let m = super::median_of(vec![row(9.0), row(3.0), row(4.0)]).unwrap();
        assert_eq!((m.steps_per_s, m.final_loss, m.seconds), (4.0, 4.0, 25.0));
        let r = m.repeats.unwrap();
        assert_eq!((r.n, r.steps_per_s_min, r.steps_per_s_max), (3, 3.0, 9.0));
        let m = super::median_of(vec![row(8.0), row(2.0), row(6.0), row(4.0)]).unwrap();
        assert_eq!((m.steps_per_s, m.repeats.unwrap().n), (4.0, 4));
    }

    #[test]
    fn curriculum_presets_are_timed_at_their_stated_size() {
        let cfg = icl_core::presets::preset("garg-linear-tiny").unwrap();
        assert!(cfg.task.curriculum);
        let b = super::bench_config(&cfg, 100);
        assert!(!b.task.curriculum);
        // 100 timed steps, and room for a warm-up of 20 + 100 more: 2 x 120
        assert_eq!((b.task.d, b.task.len, b.train.steps), (20, 40, 240));
        // the trainer's first step would have been at d = 5, L = 10
        use icl_core::families::gpt2::objective::Curriculum;
        assert_eq!(Curriculum::of(&cfg.task).unwrap().at(0), (5, 10));
        assert_eq!(Curriculum::of(&b.task), None);
    }

    #[test]
    fn stack_flops_counts_what_the_gradient_needs() {
        // one key, tokens of width 2: per column forward 8 + 16 + 3 = 27, backward 16 + 32 + 4 =
        // 52, input gradient 8 + 8 = 16
        // T = 1: the query column only, no input gradient
        assert_eq!(sp(1, 1).step_flops(1, 1), (27 + 52 - 16) as f64);
        // T = 3 over N = 2 columns: 2 + 2 + 1 columns, the first layer's 2 without input gradient
        assert_eq!(
            sp(3, 2).step_flops(1, 5),
            ((5 * 79 - 2 * 16) * 2 * 5) as f64
        );
        // the multilayer paper's step (T = 3, H = 2, E = 6, L = 120, batch 256): ~1.05 GFLOP
        // (all columns of every layer with every input gradient would be 1.84)
        let paper = StackSpec { e: 6, ..sp(3, 2) }.step_flops(120, 256);
        assert!((paper / 1e9 - 1.0503).abs() < 1e-3, "{paper}");
    }

    #[test]
    fn iv_flops_adds_both_stages_and_the_fitted_covariates() {
        use icl_core::data::iv::Iv;
        let spec = IvSpec {
            iv: Iv::new(6, 4),
            st1: StackSpec {
                e: 10,
                n_out: 4,
                ..sp(1, 2)
            },
            st2: StackSpec { e: 5, ..sp(3, 2) },
        };
        spec.check().unwrap();
        let (k, b) = (200, 256);
        // stage 1's forward over all 201 columns: 4 K E + 4 E^2 + 3 K = 8000 + 400 + 600 per
        // column and head
        let xhat = (201 * 9000 * 2 * b) as f64;
        let total = spec.step_flops(k, b);
        assert_eq!(
            total,
            spec.st1.step_flops(k, b) + xhat + spec.st2.step_flops(k, b)
        );
        // the paper's step: about 3.35 GFLOP, below the 4-layer one-stage model's 3.82
        assert!((total / 1e9 - 3.346).abs() < 1e-3, "{total}");
        let tf_ref = StackSpec { e: 5, ..sp(4, 2) }.step_flops(k, b);
        assert!(total < tf_ref, "{total} vs {tf_ref}");
    }

    #[test]
    fn the_warm_up_is_20_steps_and_then_time_up_to_the_step_budget() {
        let budget = |steps, max_seconds| Budget {
            steps,
            max_seconds,
            split: false,
        };
        let count = |b: Budget, pause: f64| {
            let mut k = 0;
            let t0 = std::time::Instant::now();
            warm_up(&b, &mut || {
                k += 1;
                std::thread::sleep(std::time::Duration::from_secs_f64(pause));
                Ok(())
            })
            .unwrap();
            (k, t0.elapsed().as_secs_f64())
        };
        // a time budget whose tenth the 20 steps outlast (1 ms each): the 20 steps alone
        assert_eq!(count(budget(1_000_000, 1e-3), 0.001).0, 20);
        // a fast step: as many more as the timed steps, at most
        assert_eq!(count(budget(5, 100.0), 0.0).0, 25);
        // a slow step: until a tenth of the time budget has passed
        let (k, secs) = count(budget(1_000_000, 0.5), 0.002);
        assert!(k > 20 && secs >= 0.05, "{k} steps in {secs} s");
        // a step's error ends the warm-up with it
        let mut k = 0;
        let r = warm_up(&budget(100, 1.0), &mut || {
            k += 1;
            if k == 3 {
                return Err(RunError::Refused("stop".into()));
            }
            Ok(())
        });
        assert!(r.is_err() && k == 3);
    }
}
