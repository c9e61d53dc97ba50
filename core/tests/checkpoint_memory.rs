//! A checkpoint is checked against its own bytes before anything is allocated: a small file whose
//! metadata claims a large model (within the memory budget, so the config itself validates) is
//! refused without reserving the parameters it claims. Measured with a counting allocator: the
//! largest single allocation while decoding stays far below the claimed parameters.
use icl_core::checkpoint::{decode_model_only, File};
use icl_core::config::Config;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LARGEST.fetch_max(new, Ordering::Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn json_string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A safetensors file with icl metadata for `cfg` and the given tensors (header JSON entries and
/// their data).
fn file(cfg: &Config, tensors: &str, data: &[u8]) -> Vec<u8> {
    let meta = format!(
        "\"__metadata__\":{{\"format\":\"icl-checkpoint\",\"version\":\"1\",\"dtype\":\"f32\",\"step\":\"0\",\"config\":{}}}",
        json_string(&cfg.to_toml())
    );
    let header = if tensors.is_empty() {
        format!("{{{meta}}}")
    } else {
        format!("{{{meta},{tensors}}}")
    };
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend(header.as_bytes());
    b.extend(data);
    b
}

#[test]
fn claimed_sizes_are_checked_against_the_file_before_allocating() {
    let mut cfg = Config::default();
    // the largest model the memory budget lets a config claim is ~100x smaller than 1 GiB of
    // parameters (training keeps ~500 bytes a parameter), so the claim here is 64 MiB: still 64x
    // the largest single allocation allowed below
    cfg.set("task.d", "1000").unwrap();
    cfg.set("model.heads", "4").unwrap();
    cfg.set("train.snapshot_every", "0").unwrap();
    cfg.validate().expect("a config within the memory budget");
    let spec = icl_core::ModelSpec::from_config(&cfg).unwrap();
    let claimed = spec.n_params() * 8;
    assert!(
        claimed > 1 << 26,
        "the config claims {claimed} bytes of parameters"
    );
    // no tensors at all; then the first tensor present with a wrong shape; then of another dtype
    let first = &spec.tensors()[0];
    for (tensors, data, needle) in [
        (String::new(), vec![], "missing"),
        (
            format!(
                "\"{}\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                first.name
            ),
            vec![0u8; 4],
            "shape",
        ),
        (
            format!(
                "\"{}\":{{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                first.name
            ),
            vec![0u8; 8],
            "dtype",
        ),
    ] {
        let bytes = file(&cfg, &tensors, &data);
        assert!(File::parse(&bytes).is_ok());
        LARGEST.store(0, Ordering::Relaxed);
        let e = decode_model_only(&bytes).expect_err("nothing to read");
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(e.to_string().contains(needle), "{e}");
        assert!(
            largest < 1 << 20,
            "decoding a {}-byte file allocated {largest} bytes at once",
            bytes.len()
        );
    }
}
