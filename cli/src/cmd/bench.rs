//! `icl bench`: training throughput (steps/s) of an engine over heads, dtypes, thread counts and
//! context lengths, with the time per step split between data generation, forward/backward and
//! the optimiser (circuit chain rule + Adam), and the resident memory before and after the run.
//! A measurement, not a test: numbers depend on the machine and its load.
use crate::cmd::common::{apply_sets, outln};
use crate::error::{CliError, CliResult};
use icl_core_run::bench::{measure, BenchRow, Budget};
use icl_core_run::default_engine;
use serde_json::json;

/// Arguments of `icl bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Engine to measure (default: the fastest built in).
    #[arg(long)]
    pub engine: Option<String>,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Timed steps per configuration (after a warm-up of 20 steps, more until a tenth of --max-seconds, at most 0.25 s, has passed); see also --max-seconds.
    #[arg(long, default_value_t = 3000, allow_negative_numbers = true)]
    pub steps: u64,
    /// Stop timing a configuration after this many seconds (at least 50 steps are timed).
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    pub max_seconds: f64,
    /// Preset to measure, at the task.d and task.L it states (a curriculum is turned off).
    #[arg(long, default_value = "he2025")]
    pub preset: String,
    /// Heads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8",
        allow_negative_numbers = true
    )]
    pub heads: Vec<usize>,
    /// Scalar types, comma-separated (f32, f64).
    #[arg(long, value_delimiter = ',', default_value = "f32,f64")]
    pub dtypes: Vec<String>,
    /// Thread counts, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2",
        allow_negative_numbers = true
    )]
    pub threads: Vec<usize>,
    /// Context lengths L, comma-separated (default: the preset's).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub lens: Vec<usize>,
    /// Override config keys, e.g. `--set train.batch=64` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Measure every configuration N times, one round over all of them after another, and report
    /// each one's median by steps/s with the slowest and fastest (the table's last column; JSON:
    /// "repeats"): on a shared machine one window can be far off the next, and rounds put the
    /// configurations under the same load.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Skip the time split (data / forward-backward / optimiser; data and optimiser are timed
    /// apart, forward-backward is the step minus those two, so it also holds the rest of the step)
    #[arg(long)]
    pub no_split: bool,
}

pub fn run(a: &Args) -> CliResult {
    let engine = a
        .engine
        .clone()
        .unwrap_or_else(|| default_engine().to_string());
    // fail early on an unknown engine
    icl_core_run::engines::check(&engine, icl_core::config::Dtype::F32)?;
    let mut base = icl_core::presets::preset(&a.preset)?;
    apply_sets(&mut base, &a.sets)?;
    icl_core_run::bench::bench_config(&base, a.steps).validate()?;
    let lens = if a.lens.is_empty() {
        vec![base.task.len]
    } else {
        a.lens.clone()
    };
    if a.heads.is_empty() || a.threads.is_empty() || a.heads.contains(&0) {
        return Err(CliError::input(
            "--heads and --threads need positive values",
        ));
    }
    let budget = Budget {
        steps: a.steps,
        max_seconds: a.max_seconds,
        split: !a.no_split,
    };
    if !(1..=1000).contains(&a.repeat) {
        return Err(CliError::input("--repeat needs a count from 1 to 1000"));
    }
    // every configuration, checked before the first is measured
    let mut configs = Vec::new();
    for dt in &a.dtypes {
        if engine == "vulkan" && dt != "f32" {
            eprintln!("bench: skipping {dt}: the vulkan engine computes in f32");
            continue;
        }
        if dt != "f32" && dt != "f64" {
            return Err(CliError::input(format!(
                "unknown dtype {dt:?}; use f32 or f64"
            )));
        }
        for &len in &lens {
            for &h in &a.heads {
                let mut cfg = base.clone();
                cfg.set("model.heads", &h.to_string())?;
                cfg.set("task.L", &len.to_string())?;
                // validated with the memory of the steps bench runs (not the preset's train.steps: no log or
                // snapshots of a long run are kept)
                icl_core_run::bench::bench_config(&cfg, a.steps).validate()?;
                for &t in &a.threads {
                    configs.push((dt.as_str(), cfg.clone(), t));
                }
            }
        }
    }
    let mut measured: Vec<Vec<BenchRow>> = vec![Vec::new(); configs.len()];
    for round in 0..a.repeat {
        if a.repeat > 1 && !a.json {
            eprintln!("bench: round {} of {}", round + 1, a.repeat);
        }
        for (i, (dt, cfg, t)) in configs.iter().enumerate() {
            let row = if *dt == "f32" {
                measure::<f32>(cfg, &engine, *t, &budget)?
            } else {
                measure::<f64>(cfg, &engine, *t, &budget)?
            };
            // one round: each row as it is measured
            if a.repeat == 1 && !a.json {
                print_row(&row, i == 0)?;
            }
            measured[i].push(row);
        }
    }
    let rows: Vec<BenchRow> = measured
        .into_iter()
        .filter_map(icl_core_run::bench::median_of)
        .collect();
    if a.repeat > 1 && !a.json {
        for (i, r) in rows.iter().enumerate() {
            print_row(r, i == 0)?;
        }
    }
    #[cfg(not(feature = "vulkan"))]
    let vulkan: Option<serde_json::Value> = None;
    #[cfg(feature = "vulkan")]
    let one_layer = matches!(
        icl_core::model::ModelSpec::from_config(&base).map(|m| m.net),
        Ok(icl_core::model::Net::Attention(_))
    );
    #[cfg(feature = "vulkan")]
    let vulkan = if engine == "vulkan" && !one_layer {
        // the prediction and GPU-only rates below are one-layer measurements: name the device
        let (device, kind) = icl_core_run::bench::vulkan_device()?;
        if !a.json {
            outln(&format!("vulkan {device} ({kind})"))?;
        }
        Some(json!({ "device": device, "device_kind": kind }))
    } else if engine == "vulkan" {
        let r = icl_core_run::bench::vulkan_predict(&base)?;
        if !a.json {
            outln(&format!(
                "vulkan {} ({}, workgroup {}): loss+grad {:.1}/s at batch {} L {}; prediction at L'={} n={}: {:.0} sequences/s, {:.3e} keys/s",
                r.device, r.device_kind, r.workgroup_size, r.loss_grad_per_s, r.batch, r.len, r.predict_len, r.predict_n,
                r.predict_seqs_per_s, r.predict_keys_per_s
            ))?;
        }
        Some(json!({
            "device": r.device, "device_kind": r.device_kind, "workgroup_size": r.workgroup_size, "f16_batch": r.f16_batch,
            "loss_grad_per_s": r.loss_grad_per_s, "batch": r.batch, "len": r.len, "predict_len": r.predict_len,
            "predict_n": r.predict_n, "predict_seqs_per_s": r.predict_seqs_per_s, "predict_keys_per_s": r.predict_keys_per_s,
        }))
    } else {
        None
    };
    if a.json {
        let mut doc = json!({
            "machine_threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "preset": a.preset,
            "rows": rows,
        });
        if let Some(v) = vulkan {
            // one-layer models: the prediction and GPU-only rates; other families: the device
            let key = if v.get("predict_len").is_some() {
                "vulkan_predict"
            } else {
                "vulkan_device"
            };
            doc[key] = v;
        }
        outln(&icl_core_run::summary::pretty(&doc))?;
    }
    Ok(())
}

fn print_row(r: &BenchRow, header: bool) -> CliResult {
    let mut s = String::new();
    if header {
        s.push_str(&format!(
            "{:<7} {:<6} {:<4} {:>2} {:>5} {:>5} {:>3} {:>10} {:>9} {:>9} {:>9} {:>9} {:>12} {:>13}",
            "engine",
            "level",
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
            "rss KiB",
            "GFLOP/s/peak"
        ));
        if r.repeats.is_some() {
            s.push_str("  steps/s min-max");
        }
        s.push('\n');
    }
    // the split's three columns, or "-" when it was skipped (--no-split)
    let [d, fb, o] = match r.split_us {
        Some(x) => {
            let [d, fb, o] = [x.data, x.forward_backward, x.optim].map(|v| format!("{v:.1}"));
            // data made on the device inside the step (counted in fwbw)
            [if x.data_on_device { "device".into() } else { d }, fb, o]
        }
        None => ["-".to_string(), "-".into(), "-".into()],
    };
    s.push_str(&format!(
        "{:<7} {:<6} {:<4} {:>2} {:>5} {:>5} {:>3} {:>10.0} {:>9.1} {:>9} {:>9} {:>9} {:>5}->{:<6} {:>13}",
        r.engine,
        r.simd_level.as_deref().unwrap_or("-"),
        r.dtype,
        r.heads,
        r.len,
        r.batch,
        r.threads,
        r.steps_per_s,
        r.us_per_step,
        d,
        fb,
        o,
        r.rss_kb_start,
        r.rss_kb_end,
        match (r.gflops, r.peak_gflops) {
            (Some(g), Some(p)) => format!("{g:.1}/{p:.0}"),
            (Some(g), None) => format!("{g:.1}"),
            _ => "-".into(),
        }
    ));
    if let Some(x) = r.repeats {
        s.push_str(&format!(
            "  {:.0}-{:.0} ({} runs)",
            x.steps_per_s_min, x.steps_per_s_max, x.n
        ));
    }
    super::common::outln(&s)
}
