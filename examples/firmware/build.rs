//! Puts `memory.x` on the linker's search path, embeds the checkpoint named by `ICL_CHECKPOINT`
//! (a `model.safetensors` written by `icl train`; `run.sh` trains one) and passes the heap size
//! `ICL_HEAP_BYTES` (default 98304 = 96 KiB) to the firmware.
use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");

    println!("cargo:rerun-if-env-changed=ICL_CHECKPOINT");
    let Some(ckpt) = env::var_os("ICL_CHECKPOINT") else {
        panic!(
            "set ICL_CHECKPOINT to a model.safetensors written by `icl train` \
             (examples/firmware/run.sh trains one and sets it)"
        );
    };
    let ckpt = PathBuf::from(ckpt);
    println!("cargo:rerun-if-changed={}", ckpt.display());
    fs::copy(&ckpt, out.join("checkpoint.safetensors"))
        .unwrap_or_else(|e| panic!("ICL_CHECKPOINT={}: {e}", ckpt.display()));

    println!("cargo:rerun-if-env-changed=ICL_HEAP_BYTES");
    let heap = env::var("ICL_HEAP_BYTES").unwrap_or_else(|_| "98304".into());
    let n: usize = heap
        .parse()
        .unwrap_or_else(|_| panic!("ICL_HEAP_BYTES={heap:?} is not a number of bytes"));
    println!("cargo:rustc-env=ICL_HEAP_BYTES={n}");
}
