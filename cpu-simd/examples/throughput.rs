//! Quick throughput probe: `cargo run --release -p icl-simd --example throughput -- [heads] [steps] [f32|f64] [L]`.
//! (`icl bench` is the full benchmark.)
use icl_core::train::Trainer;
use icl_core::{presets, Engine, ScalarEngine};
use icl_simd::{SimdEngine, SimdScalar};
use std::time::Instant;

fn run<T: SimdScalar>(heads: usize, steps: u64, len: usize, eng: &mut dyn Engine<T>) -> f64 {
    let mut cfg = presets::preset("he2025").unwrap();
    cfg.set("model.heads", &heads.to_string()).unwrap();
    cfg.set("task.L", &len.to_string()).unwrap();
    cfg.set("train.steps", &steps.to_string()).unwrap();
    let mut tr = Trainer::<T>::new(&cfg).unwrap();
    tr.step(eng).unwrap();
    let t = Instant::now();
    for _ in 1..steps {
        tr.step(eng).unwrap();
    }
    (steps - 1) as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let heads = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let steps = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let dtype = a.get(3).cloned().unwrap_or_else(|| "f32".into());
    let len = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(40);
    let scalar = a.get(5).is_some_and(|s| s == "scalar");
    let r = match (dtype.as_str(), scalar) {
        ("f64", false) => run::<f64>(heads, steps, len, &mut SimdEngine::<f64>::new()),
        ("f64", true) => run::<f64>(heads, steps, len, &mut ScalarEngine::<f64>::new()),
        (_, false) => run::<f32>(heads, steps, len, &mut SimdEngine::<f32>::new()),
        (_, true) => run::<f32>(heads, steps, len, &mut ScalarEngine::<f32>::new()),
    };
    println!(
        "H={heads} L={len} {dtype} threads={}: {r:.0} steps/s",
        rayon::current_num_threads()
    );
}
