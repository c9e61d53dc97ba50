//! Compiles the WGSL compute shaders to SPIR-V with naga (pure Rust; no glslc or other system
//! tool). `attention.wgsl` (one-layer models) makes eight variants: embedding width up to 16 or 64
//! held in workgroup memory, 16 or 64 invocations a workgroup, batch tokens stored as f32 or as f16
//! pairs packed in u32 words. `stack.wgsl` (multi-layer stacks) makes two: 16 or 64 invocations.
//! `sample.wgsl` (law-2 batches made on the device) makes two, with every floating-point addition,
//! subtraction and multiplication decorated `NoContraction` ([`no_contraction`]). `gpt2.wgsl`
//! (GPT-2 models, one entry point per operation) makes two: 16 or 64 invocations.
use std::path::PathBuf;

/// Largest embedding width E held in workgroup memory.
const MAX_E: [u32; 2] = [16, 64];
/// Invocations per workgroup: 16 for CPU implementations (lavapipe runs every invocation of a
/// workgroup, busy or not, on one core), 64 for GPUs.
const WG: [u32; 2] = [16, 64];

const LOAD_F32: &str = "return zbuf[i];";
const LOAD_F16: &str =
    "let v = unpack2x16float(zbuf[i >> 1u]);\n    return select(v.x, v.y, (i & 1u) == 1u);";

fn main() {
    let src_path = "shaders/attention.wgsl";
    println!("cargo:rerun-if-changed={src_path}");
    println!("cargo:rerun-if-changed={STACK_PATH}");
    println!("cargo:rerun-if-changed={SAMPLE_PATH}");
    println!("cargo:rerun-if-changed={GPT2_PATH}");
    println!("cargo:rerun-if-changed=build.rs");
    let template = std::fs::read_to_string(src_path).expect("read shaders/attention.wgsl");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for (max_e, wg, f16) in MAX_E
        .iter()
        .flat_map(|&e| WG.iter().flat_map(move |&w| [(e, w, false), (e, w, true)]))
    {
        let stem = format!(
            "attention_e{max_e}_wg{wg}_{}",
            if f16 { "f16" } else { "f32" }
        );
        let src = template
            .replace("__MAX_E__", &format!("{max_e}u"))
            .replace("__WG__", &format!("{wg}u"))
            .replace("__ZTYPE__", if f16 { "u32" } else { "f32" })
            .replace("__LOAD_Z__", if f16 { LOAD_F16 } else { LOAD_F32 });
        let words = compile(&stem, &src, false);
        write_spv(&out, &stem, &words);
    }
    // The multi-layer stack: one variant per workgroup size (f32 tokens; nothing in workgroup memory).
    let stack = std::fs::read_to_string(STACK_PATH).expect("read shaders/stack.wgsl");
    for wg in WG {
        let stem = format!("stack_wg{wg}");
        let words = compile(&stem, &stack.replace("__WG__", &format!("{wg}u")), false);
        write_spv(&out, &stem, &words);
    }
    // GPT-2: one variant per workgroup size (f32; nothing in workgroup memory).
    let gpt2 = std::fs::read_to_string(GPT2_PATH).expect("read shaders/gpt2.wgsl");
    for wg in WG {
        let stem = format!("gpt2_wg{wg}");
        let words = compile(&stem, &gpt2.replace("__WG__", &format!("{wg}u")), false);
        write_spv(&out, &stem, &words);
    }
    // The law-2 sampler: one variant per workgroup size, f64 arithmetic, nothing contracted.
    let sample = std::fs::read_to_string(SAMPLE_PATH).expect("read shaders/sample.wgsl");
    for wg in WG {
        let stem = format!("sample_wg{wg}");
        let words = compile(&stem, &sample.replace("__WG__", &format!("{wg}u")), true);
        let words = no_contraction(&words);
        write_spv(&out, &stem, &words);
    }
}

/// `OUT_DIR/{stem}.spv`: the words, little-endian.
fn write_spv(out: &std::path::Path, stem: &str, words: &[u32]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(out.join(format!("{stem}.spv")), bytes).expect("write SPIR-V");
}

/// The law-2 sampler (`sample`).
const SAMPLE_PATH: &str = "shaders/sample.wgsl";

/// `words` with an `OpDecorate %r NoContraction` for the result `%r` of every floating-point
/// addition, subtraction, multiplication and division, placed before the module's first
/// decoration. Without it a driver may fuse `a * b + c` into one rounding (SPIR-V allows it; naga
/// has no way to forbid it), and the sampler's bits would differ from the CPU's. (Lavapipe does
/// not fuse, so the tests there pass without it; GPU compilers do.)
fn no_contraction(words: &[u32]) -> Vec<u32> {
    use spirv::{Decoration, Op};
    const HEADER: usize = 5;
    let fp = [
        Op::FAdd,
        Op::FSub,
        Op::FMul,
        Op::FDiv,
        Op::VectorTimesScalar,
        Op::MatrixTimesScalar,
        Op::VectorTimesMatrix,
        Op::MatrixTimesVector,
        Op::MatrixTimesMatrix,
        Op::Dot,
    ]
    .map(|o| o as u32);
    let (mut results, mut first_decoration) = (Vec::new(), None);
    let mut i = HEADER;
    while i < words.len() {
        let (count, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        assert!(
            count > 0 && i + count <= words.len(),
            "malformed SPIR-V at word {i}"
        );
        if first_decoration.is_none()
            && (op == Op::Decorate as u32 || op == Op::MemberDecorate as u32)
        {
            first_decoration = Some(i);
        }
        if fp.contains(&op) {
            // result type, result id, operands
            results.push(words[i + 2]);
        }
        i += count;
    }
    let at = first_decoration.expect("the sampler has binding decorations");
    let mut out = words[..at].to_vec();
    for r in results {
        out.extend([
            (3 << 16) | Op::Decorate as u32,
            r,
            Decoration::NoContraction as u32,
        ]);
    }
    out.extend_from_slice(&words[at..]);
    out
}

/// The multi-layer stack's kernels (`forward`, `fwd_bwd`, `reduce_partials`, `reduce_final`).
const STACK_PATH: &str = "shaders/stack.wgsl";

/// GPT-2's kernels, one entry point per operation (`encoder`, `matmul_fwd`, ... `encoder_bwd`).
const GPT2_PATH: &str = "shaders/gpt2.wgsl";

fn compile(stem: &str, src: &str, float64: bool) -> Vec<u32> {
    let module = match naga::front::wgsl::parse_str(src) {
        Ok(m) => m,
        Err(e) => panic!("{stem}: WGSL parse error:\n{}", e.emit_to_string(src)),
    };
    // unpack2x16float is GLSL.std.450 UnpackHalf2x16, core in every Vulkan version.
    let mut caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if float64 {
        // the sampler's f64 arithmetic (SPIR-V Float64; the engine enables shaderFloat64)
        caps |= naga::valid::Capabilities::FLOAT64;
    }
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| {
            panic!(
                "{stem}: shader validation error:\n{}",
                e.emit_to_string(src)
            )
        });
    let mut flags = naga::back::spv::Options::default().flags;
    flags.remove(naga::back::spv::WriterFlags::DEBUG);
    let opts = naga::back::spv::Options {
        lang_version: (1, 0),
        flags,
        // Every workgroup variable is written before it is read; skip the zero-fill prologue.
        zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
        // Every loop is bounded by sizes the host checks.
        force_loop_bounding: false,
        ..Default::default()
    };
    naga::back::spv::write_vec(&module, &info, &opts, None)
        .unwrap_or_else(|e| panic!("{stem}: SPIR-V writer error: {e}"))
}
