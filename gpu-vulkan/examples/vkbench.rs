//! `cargo run --release -p icl-gpu-vulkan --example vkbench [preset]`: the Vulkan engine's throughput
//! (the same numbers `icl bench --engine vulkan` prints), with ICL_VULKAN_* options from the environment.
use icl_gpu_vulkan::bench::{bench, BenchParams};
use icl_gpu_vulkan::Options;

fn main() {
    let preset = std::env::args().nth(1).unwrap_or_else(|| "he2025".into());
    let cfg = match icl_core::presets::preset(&preset) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match bench(&cfg, &Options::from_env(), &BenchParams::default()) {
        Ok(r) => println!("{r:#?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
