//! Time the multi-layer engine's loss + gradient on one thread, per dispatch level, at the
//! multilayer paper's sizes (looped softmax, D = 6, L = 120, batch 256; T and H from the command
//! line), in CPU time, and print a hash of the results (equal hashes: equal bits).
//!
//!     cargo run --release -p icl-cpu-simd --example multilayer -- [T] [H] [STEPS] [f32|f64] [softmax|linear] [looped|nonlooped]
use icl_core::config::AttentionKind;
use icl_core::conformance::stack::inputs;
use icl_core::families::stack::{StackCircuits, StackSpec};
use icl_cpu_simd::{Level, SimdScalar};
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

fn run<T: SimdScalar>(spec: &StackSpec, steps: usize) {
    let (n, len) = (256, 120);
    let (c, batch) = inputs::<T>(spec, n, len, 0.3, 7);
    let mut g = StackCircuits::zeros(spec);
    // `icl bench`'s count (`StackSpec::step_flops`: the columns the kernels compute, the last
    // layer the query's only; before 2026-11-30 this example counted every column of every
    // layer, 1.7x the work at T = 3)
    let flop = spec.step_flops(len, n);
    for level in [Level::Base, Level::Avx2, Level::Avx512] {
        if level > icl_cpu_simd::dispatch::detected()
            || std::env::var("KERNELS_LEVEL").is_ok_and(|l| l != level.as_str())
        {
            continue;
        }
        // through the engine's trait object: the kernels are compiled in icl-cpu-simd, not here
        let mut eng = T::stack_kernels(Some(level));
        let _ = eng.loss_grad(spec, &c, &batch, &mut g);
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for _ in 0..steps {
            let loss = eng.loss_grad(spec, &c, &batch, &mut g).expect("loss");
            hash(&mut h, loss.to_f64().to_bits());
            for x in g.phi.iter().chain(&g.psi) {
                hash(&mut h, x.to_f64().to_bits());
            }
        }
        let (cpu, wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
        let s = steps as f64;
        println!(
            "{} T={} H={} {:?} looped={} {:6}: {:7.2} ms/step CPU ({:6.2} steps/CPU-s, {:5.1} GFLOP/s; wall {:7.2} ms)  hash {h:016x}",
            T::NAME,
            spec.layers,
            spec.heads,
            spec.attention,
            spec.looped,
            level.as_str(),
            1e3 * cpu / s,
            s / cpu,
            flop * s / cpu / 1e9,
            1e3 * wall / s,
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let spec = StackSpec {
        e: 6,
        n_out: 1,
        heads: arg(2, 2),
        layers: arg(1, 3),
        looped: args.get(6).map(String::as_str) != Some("nonlooped"),
        attention: if args.get(5).map(String::as_str) == Some("linear") {
            AttentionKind::Linear
        } else {
            AttentionKind::Softmax
        },
        scale: 1.0 / 6f64.sqrt(),
    };
    let steps = arg(3, 20);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    pool.install(|| match args.get(4).map(String::as_str) {
        Some("f64") => run::<f64>(&spec, steps),
        _ => run::<f32>(&spec, steps),
    });
}
