//! Time the GPT-2 engine's loss + gradient (one training step's work without the data and the
//! optimiser) at the sizes of the presets `garg-linear-tiny` (3 layers, 2 heads, embd 64) and
//! `garg-linear-small` (6, 4, 128): d = 20, L = 40 (K = 41 pairs, T = 82 tokens), positions 101,
//! batch 64, GPT-2's init; on 1 and 2 threads (wall clock), against the scalar reference
//! (one thread), in steps/s and GFLOP/s (`Gpt2Spec::step_flops`). Prints the load average.
//!
//!     cargo run --release -p icl-cpu-simd --example gpt2 -- [tiny|small|both] [STEPS] [f32|f64] [REF_STEPS]
use icl_core::conformance::gpt2::{batch, Shape};
use icl_core::engine::{Gpt2Kernels, Gpt2Reference};
use icl_core::families::gpt2::{init_params, Gpt2Spec};
use icl_cpu_simd::SimdScalar;
use std::time::Instant;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU seconds of this process so far (utime + stime, fields 14 and 15 of /proc/self/stat).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

/// Steps per wall-clock second (over all steps, and at the fastest step: the machine is shared,
/// so the mean mixes in other jobs' time) and per CPU-second of `k` over `steps` steps (after
/// one warm-up step).
fn time<T: SimdScalar>(
    k: &mut dyn Gpt2Kernels<T>,
    spec: &Gpt2Spec,
    p: &[T],
    b: &icl_core::Batch<T>,
    steps: usize,
) -> (f64, f64, f64) {
    let mut g = vec![T::zero(); p.len()];
    k.loss_grad(spec, p, b, &mut g).expect("loss");
    let (t0, c0) = (Instant::now(), cpu_seconds());
    let mut best = f64::INFINITY;
    for _ in 0..steps {
        let t = Instant::now();
        k.loss_grad(spec, p, b, &mut g).expect("loss");
        best = best.min(t.elapsed().as_secs_f64());
    }
    let s = steps as f64;
    (
        s / t0.elapsed().as_secs_f64(),
        1.0 / best,
        s / (cpu_seconds() - c0),
    )
}

fn run<T: SimdScalar>(
    name: &str,
    layers: usize,
    heads: usize,
    embd: usize,
    steps: usize,
    ref_steps: usize,
) {
    let spec = Gpt2Spec {
        d: 20,
        embd,
        layers,
        heads,
        positions: 101,
        tau: 1.0,
    };
    let (n, len) = (64, 40);
    let p: Vec<T> = init_params(&spec, 1);
    let b = batch::<T>(
        spec.d,
        Shape {
            n,
            len,
            active: usize::MAX,
        },
        2,
    );
    let flop = spec.step_flops(len, n);
    println!(
        "{name} ({layers} layers, {heads} heads, embd {embd}; batch {n}, K = {}), {}: {:.2} GFLOP a step; load {}",
        len + 1,
        T::NAME,
        flop / 1e9,
        load()
    );
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let (s, best, c) = pool.install(|| time(&mut *T::gpt2_kernels(None), &spec, &p, &b, steps));
        println!(
            "  simd   {threads} thread(s): {s:7.2} steps/s {:6.1} GFLOP/s (best step {best:6.2} steps/s {:6.1} GFLOP/s); {c:6.2} steps {:6.1} GFLOP per CPU-second (load {})",
            s * flop / 1e9,
            best * flop / 1e9,
            c * flop / 1e9,
            load()
        );
    }
    if ref_steps > 0 {
        let (s, best, c) = time(&mut Gpt2Reference::<T>::new(), &spec, &p, &b, ref_steps);
        println!(
            "  scalar 1 thread:    {s:7.3} steps/s {:6.2} GFLOP/s (best step {best:6.3} steps/s {:6.2} GFLOP/s); {c:6.3} steps {:6.2} GFLOP per CPU-second (load {})",
            s * flop / 1e9,
            best * flop / 1e9,
            c * flop / 1e9,
            load()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size = args.get(1).map(String::as_str).unwrap_or("both");
    let steps = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let f64s = args.get(3).map(String::as_str) == Some("f64");
    let ref_steps = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let sizes: &[(&str, usize, usize, usize)] = &[("tiny", 3, 2, 64), ("small", 6, 4, 128)];
    for &(name, l, h, c) in sizes {
        if size != "both" && size != name {
            continue;
        }
        if f64s {
            run::<f64>(name, l, h, c, steps, ref_steps);
        } else {
            run::<f32>(name, l, h, c, steps, ref_steps);
        }
    }
}
