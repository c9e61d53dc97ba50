//! `icl bench`: training throughput (steps/s) of an engine over heads, dtypes, thread counts and
//! context lengths, with the time per step split between data generation, forward/backward and
//! the optimiser (circuit chain rule + Adam), and the resident memory before and after the run.
//! A measurement, not a test: numbers depend on the machine and its load.
use crate::cmd::common::apply_sets;
use crate::engines::{default_engine, EngineScalar};
use crate::error::{CliError, CliResult};
use icl_core::model::Circuits;
use icl_core::rng::Domain;
use icl_core::train::Trainer;
use icl_core::{Batch, Config};
use icl_simd::{SimdEngine, SimdScalar};
use serde_json::json;
use std::time::Instant;

/// Arguments of `icl bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Engine to measure (default: the fastest built in).
    #[arg(long)]
    pub engine: Option<String>,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Timed steps per configuration (after 20 warm-up steps); see also --max-seconds.
    #[arg(long, default_value_t = 3000)]
    pub steps: u64,
    /// Stop timing a configuration after this many seconds (at least 50 steps are timed).
    #[arg(long, default_value_t = 3.0)]
    pub max_seconds: f64,
    /// Preset to measure.
    #[arg(long, default_value = "he2025")]
    pub preset: String,
    /// Heads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub heads: Vec<usize>,
    /// Scalar types, comma-separated (f32, f64).
    #[arg(long, value_delimiter = ',', default_value = "f32,f64")]
    pub dtypes: Vec<String>,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Context lengths L, comma-separated (default: the preset's).
    #[arg(long, value_delimiter = ',')]
    pub lens: Vec<usize>,
    /// Override config keys, e.g. `--set train.batch=64` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Skip the time split (data / forward-backward / optimiser).
    #[arg(long)]
    pub no_split: bool,
}

/// One measured configuration.
struct Row {
    dtype: &'static str,
    heads: usize,
    len: usize,
    batch: usize,
    threads: usize,
    steps: u64,
    secs: f64,
    /// Microseconds per step: data generation, optimiser; forward/backward is the rest.
    split: Option<(f64, f64)>,
    rss_kb: (u64, u64),
    loss: f64,
}

impl Row {
    fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.secs
    }
    fn us_per_step(&self) -> f64 {
        1e6 * self.secs / self.steps as f64
    }
}

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

/// Time one configuration in a pool of `threads` threads.
fn measure<T: EngineScalar + SimdScalar>(
    a: &Args,
    cfg: &Config,
    engine: &str,
    threads: usize,
) -> CliResult<Row> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| CliError::runtime(format!("thread pool: {e}")))?;
    pool.install(|| -> CliResult<Row> {
        let mut eng = T::engine(engine)?;
        let mut tr = Trainer::<T>::new(cfg)?;
        for _ in 0..20 {
            tr.step(eng.as_mut())?;
        }
        let rss0 = rss_kb();
        let t0 = Instant::now();
        let mut steps = 0;
        let mut loss = 0.0;
        while steps < a.steps.max(1) {
            loss = tr.step(eng.as_mut())?;
            steps += 1;
            if steps >= 50 && t0.elapsed().as_secs_f64() > a.max_seconds {
                break;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let rss1 = rss_kb();
        let split = if a.no_split {
            None
        } else {
            Some(split::<T>(cfg, engine, &mut tr, steps.min(500))?)
        };
        Ok(Row {
            dtype: T::NAME,
            heads: cfg.model.heads,
            len: cfg.task.len,
            batch: cfg.train.batch,
            threads,
            steps,
            secs,
            split,
            rss_kb: (rss0, rss1),
            loss,
        })
    })
}

/// Microseconds per step spent generating the data (the engine's own generator for `simd`, the
/// task sampler otherwise) and in the optimiser (circuits, circuit -> parameter chain rule, Adam).
fn split<T: EngineScalar + SimdScalar>(
    cfg: &Config,
    engine: &str,
    tr: &mut Trainer<T>,
    steps: u64,
) -> CliResult<(f64, f64)> {
    let (seed, n, len) = (cfg.train.seed, cfg.train.batch, cfg.task.len);
    let spec = tr.model.spec.clone();
    let t0 = Instant::now();
    let mut sink = 0.0;
    if engine == "simd" {
        let mut g = SimdEngine::<T>::new();
        for s in 0..steps {
            sink += g.generate_only(&spec, &tr.task, seed, s, n, len).to_f64();
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
    let data = 1e6 * t0.elapsed().as_secs_f64() / steps as f64;
    // the optimiser on a copy (the timed run's state is left alone)
    let mut model = tr.model.clone();
    let mut opt = tr.opt.clone();
    let mut circ = Circuits::zeros(&spec);
    let mut gcirc = Circuits::zeros(&spec);
    gcirc
        .kq
        .iter_mut()
        .chain(gcirc.ov.iter_mut())
        .for_each(|x| *x = T::of(1e-3));
    let mut grad = vec![T::zero(); model.params.len()];
    let t1 = Instant::now();
    for _ in 0..steps {
        model.circuits_into(&mut circ);
        model.backprop_circuits(&gcirc, &mut grad);
        opt.step(&mut model.params, &grad)?;
    }
    let optim = 1e6 * t1.elapsed().as_secs_f64() / steps as f64;
    if !sink.is_finite() {
        return Err(CliError::runtime("non-finite data in the benchmark"));
    }
    Ok((data, optim))
}

pub fn run(a: &Args) -> CliResult {
    let engine = a
        .engine
        .clone()
        .unwrap_or_else(|| default_engine().to_string());
    // fail early on an unknown engine
    <f32 as EngineScalar>::engine(&engine)?;
    let mut base = icl_core::presets::preset(&a.preset)?;
    apply_sets(&mut base, &a.sets)?;
    base.validate()?;
    let lens = if a.lens.is_empty() {
        vec![base.task.len]
    } else {
        a.lens.clone()
    };
    if a.heads.is_empty() || a.threads.contains(&0) || a.heads.contains(&0) {
        return Err(CliError::input(
            "--heads and --threads need positive values",
        ));
    }
    let mut rows = Vec::new();
    for dt in &a.dtypes {
        if engine == "vulkan" && dt != "f32" {
            eprintln!("bench: skipping {dt}: the vulkan engine computes in f32");
            continue;
        }
        for &len in &lens {
            for &h in &a.heads {
                let mut cfg = base.clone();
                cfg.set("model.heads", &h.to_string())?;
                cfg.set("task.L", &len.to_string())?;
                cfg.validate()?;
                for &t in &a.threads {
                    let row = match dt.as_str() {
                        "f32" => measure::<f32>(a, &cfg, &engine, t)?,
                        "f64" => measure::<f64>(a, &cfg, &engine, t)?,
                        other => {
                            return Err(CliError::input(format!(
                                "unknown dtype {other:?}; use f32 or f64"
                            )))
                        }
                    };
                    if !a.json {
                        print_row(&engine, &row, rows.is_empty());
                    }
                    rows.push(row);
                }
            }
        }
    }
    let vulkan_predict = if engine == "vulkan" {
        Some(vulkan_predict(&base, a.json)?)
    } else {
        None
    };
    if a.json {
        let out: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "engine": engine, "preset": a.preset, "dtype": r.dtype, "heads": r.heads, "len": r.len,
                    "batch": r.batch, "threads": r.threads, "steps": r.steps, "seconds": r.secs,
                    "steps_per_s": r.steps_per_s(), "us_per_step": r.us_per_step(),
                    "split_us": r.split.map(|(d, o)| json!({
                        "data": d, "optim": o, "forward_backward": (r.us_per_step() - d - o).max(0.0)
                    })),
                    "rss_kb_start": r.rss_kb.0, "rss_kb_end": r.rss_kb.1, "final_loss": r.loss,
                })
            })
            .collect();
        let mut doc = json!({ "machine_threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1), "rows": out });
        if let Some(v) = vulkan_predict {
            doc["vulkan_predict"] = v;
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::runtime(e.to_string()))?
        );
    }
    Ok(())
}

/// The Vulkan engine's prediction throughput at L' = 2000 (256 sequences) and its GPU-only
/// loss + gradient rate, from `icl_vulkan::bench` (device options from ICL_VULKAN_*).
fn vulkan_predict(cfg: &Config, quiet: bool) -> CliResult<serde_json::Value> {
    let p = icl_vulkan::bench::BenchParams {
        steps: 5,
        ..Default::default()
    };
    let r = icl_vulkan::bench::bench(cfg, &icl_vulkan::Options::from_env(), &p)?;
    if !quiet {
        println!(
            "vulkan {} ({}, workgroup {}): loss+grad {:.1}/s at batch {} L {}; prediction at L'={} n={}: {:.0} sequences/s, {:.3e} keys/s",
            r.device, r.device_kind, r.workgroup_size, r.loss_grad_per_s, r.batch, r.len, r.predict_len, r.predict_n,
            r.predict_seqs_per_s, r.predict_keys_per_s
        );
    }
    Ok(json!({
        "device": r.device, "device_kind": r.device_kind, "workgroup_size": r.workgroup_size, "f16_batch": r.f16_batch,
        "loss_grad_per_s": r.loss_grad_per_s, "batch": r.batch, "len": r.len, "predict_len": r.predict_len,
        "predict_n": r.predict_n, "predict_seqs_per_s": r.predict_seqs_per_s, "predict_keys_per_s": r.predict_keys_per_s,
    }))
}

fn print_row(engine: &str, r: &Row, header: bool) {
    if header {
        println!(
            "{:<7} {:<4} {:>2} {:>5} {:>5} {:>3} {:>10} {:>9} {:>9} {:>9} {:>9} {:>12}",
            "engine",
            "type",
            "H",
            "L",
            "batch",
            "thr",
            "steps/s",
            "us/step",
            "data us",
            "fwbw us",
            "optim us",
            "rss KiB"
        );
    }
    let (d, o) = r.split.unwrap_or((f64::NAN, f64::NAN));
    let fb = if r.split.is_some() {
        (r.us_per_step() - d - o).max(0.0)
    } else {
        f64::NAN
    };
    println!(
        "{:<7} {:<4} {:>2} {:>5} {:>5} {:>3} {:>10.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>5}->{:<6}",
        engine,
        r.dtype,
        r.heads,
        r.len,
        r.batch,
        r.threads,
        r.steps_per_s(),
        r.us_per_step(),
        d,
        fb,
        o,
        r.rss_kb.0,
        r.rss_kb.1
    );
}
