//! The engine conformance suite on the Vulkan engine (lavapipe in CI), for both workgroup
//! variants (16: the CPU driver's, 64: a GPU's) and with host access staged (a discrete GPU's
//! path), f32 only: one-layer attention, multi-layer
//! transformer stacks (looped or not, softmax and linear, T = 1..3, stacked passes and the
//! leave-one-out mask) and GPT-2 models (Garg et al.'s learner: one to three layers, one to four
//! heads, tau != 1, loss, gradient and predictions) against the scalar reference, at 2e-5
//! norm-wise relative difference. Then GPT-2 on Vulkan alone: the same bits whatever the chunking
//! and the workgroup size, no validation error, and sizes beyond the device refused.
mod vulkan_common;

use icl_core::Engine;
use vulkan_common::{factory_staged, factory_wg};

icl_core::engine_conformance!(vulkan_wg16, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(16)))
});
icl_core::engine_conformance!(vulkan_wg64, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_wg(Some(64)))
});
// Host access through staging buffers and copies, as on discrete GPUs (lavapipe maps directly).
icl_core::engine_conformance!(vulkan_staged, f32, 2e-5, || -> Box<dyn Engine<f32>> {
    Box::new(factory_staged())
});

/// GPT-2 on Vulkan gives the same bits whatever the chunking (13 prompts in one submission and
/// in submissions of 3: every parameter gradient continues its sum across chunks in the same
/// order) and the workgroup size (every output has one owner that sums in a fixed order), on
/// every call; predictions too. The validation layer reports nothing.
#[test]
fn gpt2_results_are_independent_of_chunking_and_workgroup_size() {
    use icl_core::conformance::gpt2::{batch, cases, params, Shape};
    use icl_core::families::gpt2::Gpt2Kernels;
    use icl_gpu_vulkan::VulkanGpt2;
    let (spec, _) = &cases()[0];
    let (n, len) = (13, 4);
    let k = len + 1;
    let b = batch::<f32>(
        spec.d,
        Shape {
            n,
            len,
            active: usize::MAX,
        },
        5,
    );
    let p = params::<f32>(spec, 0.3, 6);
    let tokens = (2 * k * spec.d + k) * 4;
    let opts = |chunk: Option<u64>, wg| vulkan_common::options(false, chunk, Some(wg));
    let mut whole = VulkanGpt2::new(&opts(None, 16)).unwrap();
    let mut chunked = VulkanGpt2::new(&opts(Some(3 * tokens as u64), 16)).unwrap();
    let mut wg64 = VulkanGpt2::new(&opts(None, 64)).unwrap();
    let mut grads = Vec::new();
    let mut losses = Vec::new();
    for i in [0, 1, 2, 0] {
        let e = match i {
            0 => &mut whole,
            1 => &mut chunked,
            _ => &mut wg64,
        };
        let mut g = vec![f32::NAN; p.len()];
        losses.push(e.loss_grad(spec, &p, &b, &mut g).unwrap().to_bits());
        grads.push(g.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
    assert!(losses.iter().all(|l| *l == losses[0]), "{losses:?}");
    for g in &grads[1..] {
        assert!(g == &grads[0], "the gradient's bits differ");
    }
    let (mut xs, mut ys) = (vec![0.0f32; n * k * spec.d], vec![0.0f32; n * k]);
    for s in 0..n {
        icl_core::families::gpt2::kernels::prompt_of_batch(
            &b,
            s,
            &mut xs[s * k * spec.d..][..k * spec.d],
            &mut ys[s * k..][..k],
        );
    }
    let mut outs = Vec::new();
    for e in [&mut whole, &mut chunked, &mut wg64] {
        let mut o = vec![f32::NAN; n * k];
        e.predict(spec, &p, &xs, &ys, n, k, &mut o).unwrap();
        outs.push(o.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
    assert!(
        outs[1] == outs[0] && outs[2] == outs[0],
        "predictions differ"
    );
    // (every engine of the process shares one device, and so one list of messages)
    let e = whole.validation_errors();
    assert!(e.is_empty(), "validation errors:\n{}", e.join("\n"));
}

/// A GPT-2 model beyond one storage buffer is refused with Unsupported (never a panic or a device
/// error), and the engine still runs afterwards; f16 token storage is refused.
#[test]
fn gpt2_limits_are_errors() {
    use icl_core::conformance::gpt2::{batch, cases, params, Shape};
    use icl_core::families::gpt2::{Gpt2Kernels, Gpt2Spec};
    use icl_gpu_vulkan::{VkError, VulkanGpt2};
    let err = VulkanGpt2::new(&vulkan_common::options(true, None, None)).unwrap_err();
    assert!(
        matches!(err, VkError::Unsupported(ref m) if m.contains("f16")),
        "{err:?}"
    );
    let mut eng = VulkanGpt2::new(&vulkan_common::options(false, None, None)).unwrap();
    // one sequence of K = 3000 pairs at H = 64 heads keeps 64 (6000)^2 attention weights per
    // layer: 9.2 GB, beyond any storage buffer (at most 4 GiB)
    let big = Gpt2Spec {
        d: 1,
        embd: 64,
        layers: 1,
        heads: 64,
        positions: 3000,
        tau: 1.0,
    };
    let pb = vec![0.01f32; big.n_params()];
    let bb = batch::<f32>(
        1,
        Shape {
            n: 1,
            len: 2999,
            active: usize::MAX,
        },
        1,
    );
    let mut g = vec![0.0f32; big.n_params()];
    let err = eng.loss_grad(&big, &pb, &bb, &mut g).unwrap_err();
    assert!(
        matches!(err, icl_core::Error::Unsupported(ref m) if m.contains("activations")),
        "{err:?}"
    );
    let (spec, _) = &cases()[0];
    let p = params::<f32>(spec, 0.3, 2);
    let b = batch::<f32>(
        spec.d,
        Shape {
            n: 2,
            len: 2,
            active: usize::MAX,
        },
        3,
    );
    let mut g = vec![0.0f32; p.len()];
    assert!(eng.loss_grad(spec, &p, &b, &mut g).unwrap().is_finite());
    let e = eng.validation_errors();
    assert!(e.is_empty(), "validation errors:\n{}", e.join("\n"));
}
