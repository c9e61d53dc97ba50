//! Time the SIMD engine's parts on one thread, per dispatch level: data generation alone and the
//! fused loss + gradient of a training step (he2025-like: d = 5, L = 40, batch 256), and print a
//! hash of the results (equal hashes: equal bits).
//!
//!     [KERNELS_THREADS=1] [KERNELS_LAW=1|2] cargo run --release -p icl-cpu-simd --example kernels -- [H] [STEPS] [f32|f64]
//!
//! (`KERNELS_LAW`: the data law, `task.data_law`; `KERNELS_LEVEL`: one level only.)
use icl_core::engine::Sampling;
use icl_core::model::{Circuits, Model};
use icl_core::{Config, Task};
use icl_cpu_simd::{Level, SimdEngine, SimdScalar};
use std::time::Instant;

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (fields 14 and 15 of /proc/self/stat)
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn hash(h: &mut u64, bits: u64) {
    *h = (*h ^ bits).wrapping_mul(0x100_0000_01b3);
}

fn run<T: SimdScalar>(heads: usize, steps: u64) {
    let mut cfg = Config::default();
    for (k, v) in [
        ("task.d", "5"),
        ("task.L", "40"),
        ("model.heads", &heads.to_string()),
        ("train.batch", "256"),
        ("model.init", "gaussian"),
        ("model.init_scale", "0.5"),
        (
            "task.data_law",
            &std::env::var("KERNELS_LAW").unwrap_or_else(|_| "1".into()),
        ),
    ] {
        cfg.set(k, v).expect("config");
    }
    let model = Model::<T>::init(&cfg).expect("model");
    let task = Task::new(&cfg).expect("task");
    let spec = model.attention().expect("one attention layer").clone();
    let circ = model.circuits().expect("circuits");
    let mut grad = Circuits::zeros(&spec);
    let levels = [Level::Base, Level::Avx2, Level::Avx512];
    for level in levels {
        if level > icl_cpu_simd::dispatch::detected()
            || std::env::var("KERNELS_LEVEL").is_ok_and(|l| l != level.as_str())
        {
            continue;
        }
        // the kernels through the engine's trait objects (compiled in icl-cpu-simd, not here)
        let mut gen = SimdEngine::<T>::with_level(level);
        let mut eng = T::attention_kernels(Some(level));
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let mut sink = 0.0;
        for s in 0..steps {
            sink += gen.generate_only(&spec, &task, 1, s, 256, 40).to_f64();
        }
        let (gen_cpu, gen_wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for s in 0..steps {
            let smp = Sampling {
                seed: 1,
                step: s,
                n: 256,
                len: 40,
            };
            let loss = eng
                .sampled_loss_grad(&spec, &circ, &task, smp, &mut grad)
                .expect("fused")
                .expect("loss");
            hash(&mut h, loss.to_f64().to_bits());
            for g in grad.kq.iter().chain(&grad.ov) {
                hash(&mut h, g.to_f64().to_bits());
            }
        }
        let (all_cpu, all_wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
        let n = steps as f64;
        println!(
            "{} H={heads} {:6}: data {:6.1} us/step (wall {:6.1})  data+fwbw {:6.1} us/step (wall {:6.1})  hash {h:016x} {}",
            T::NAME,
            level.as_str(),
            1e6 * gen_cpu / n,
            1e6 * gen_wall / n,
            1e6 * all_cpu / n,
            1e6 * all_wall / n,
            (sink != 0.0) as u8
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let heads = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let steps = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    // one thread unless KERNELS_THREADS says otherwise (the sums are per process CPU time)
    let threads = std::env::var("KERNELS_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .build()
        .expect("pool");
    pool.install(|| match args.get(3).map(String::as_str) {
        Some("f64") => run::<f64>(heads, steps),
        _ => run::<f32>(heads, steps),
    });
}
