//! The Vulkan engine's errors: missing loader or device, sizes beyond the shaders, bad shapes.
//! Each is a typed error with a message naming the fix, never a panic.
mod vulkan_common;

use icl_core::rng::Domain;
use icl_core::{AttentionKernels, Batch, Circuits, Config, Model, Task};
use icl_gpu_vulkan::{DeviceKind, Options, VkError, VulkanEngine, INSTALL_HINT};
use vulkan_common::{assert_no_validation_errors, engine};

const FIX: &str = "no Vulkan device found: install mesa-vulkan-drivers (lavapipe) or a GPU driver";

#[test]
fn missing_loader_names_the_fix() {
    let opts = Options {
        loader_path: Some("/nonexistent/libvulkan.so.1".into()),
        ..Options::default()
    };
    let err = VulkanEngine::new(&opts).unwrap_err();
    assert!(matches!(err, VkError::Loader(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(FIX), "{msg}");
    assert!(msg.contains(INSTALL_HINT));
    // Through the core error type (what `Engine` callers and the CLI see).
    let core: icl_core::Error = err.into();
    assert!(core.to_string().contains(FIX), "{core}");
}

#[test]
fn missing_device_kind_names_the_fix() {
    // This machine (and CI) has only lavapipe, a CPU implementation; on a GPU host the engine opens the GPU.
    let opts = Options {
        kinds: vec![DeviceKind::Discrete],
        ..Options::default()
    };
    match VulkanEngine::new(&opts) {
        Err(err) => {
            assert!(matches!(err, VkError::NoDevice(_)), "{err:?}");
            assert!(err.to_string().contains(FIX), "{err}");
        }
        Ok(eng) => assert_eq!(eng.device().kind, DeviceKind::Discrete),
    }
    let opts = Options {
        device_index: Some(999),
        ..Options::default()
    };
    let err = VulkanEngine::new(&opts).unwrap_err();
    assert!(err.to_string().contains(FIX), "{err}");
}

#[test]
fn unsupported_sizes_and_bad_shapes_are_errors() {
    let mut eng = engine();
    // E = 70 + 1 is wider than the shaders hold.
    let mut cfg = Config::default();
    cfg.set("task.d", "70").unwrap();
    let model = Model::<f32>::init(&cfg).unwrap();
    let task = Task::new(&cfg).unwrap();
    let b: Batch<f32> = task.sample_batch(1, Domain::Train, 0, 4, 10);
    let mut g = Circuits::zeros(model.attention().unwrap());
    let err = eng
        .loss_grad(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &b,
            &mut g,
        )
        .unwrap_err();
    assert!(
        matches!(err, icl_core::Error::Unsupported(ref m) if m.contains("64")),
        "{err:?}"
    );
    let mut out = vec![0.0; 4];
    assert!(eng
        .predict(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &b,
            &mut out
        )
        .is_err());

    // More heads than the shaders hold.
    let mut cfg = Config::default();
    cfg.set("model.heads", "300").unwrap();
    let model = Model::<f32>::init(&cfg).unwrap();
    let b: Batch<f32> = Task::new(&cfg)
        .unwrap()
        .sample_batch(1, Domain::Train, 0, 2, 5);
    let mut g = Circuits::zeros(model.attention().unwrap());
    assert!(matches!(
        eng.loss_grad(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &b,
            &mut g
        ),
        Err(icl_core::Error::Unsupported(_))
    ));

    // A batch of the wrong width, a prediction buffer of the wrong length: the Runner's checks,
    // before the engine sees them.
    let mut checked = icl_core::Runner::new(Box::new(engine()));
    let cfg = Config::default();
    let model = Model::<f32>::init(&cfg).unwrap();
    let mut other = Config::default();
    other.set("task.d", "4").unwrap();
    let wrong: Batch<f32> = Task::new(&other)
        .unwrap()
        .sample_batch(1, Domain::Train, 0, 3, 5);
    let mut g = Circuits::zeros(model.attention().unwrap());
    assert!(matches!(
        checked.loss_grad(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &wrong,
            &mut g
        ),
        Err(icl_core::Error::Shape(_))
    ));
    let right: Batch<f32> = Task::new(&cfg)
        .unwrap()
        .sample_batch(1, Domain::Train, 0, 3, 5);
    let mut out = vec![0.0; 2];
    assert!(matches!(
        checked.predict(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &right,
            &mut out
        ),
        Err(icl_core::Error::Shape(_))
    ));
    // The engine still works afterwards.
    let mut out = vec![0.0; 3];
    eng.predict(
        model.attention().unwrap(),
        &model.circuits().unwrap(),
        &right,
        &mut out,
    )
    .unwrap();
    assert!(out.iter().all(|x| x.is_finite()));
    assert_no_validation_errors(&eng);
}

/// The stack kernels' limits and refusals: typed errors, never panics, and the engine still
/// works afterwards.
#[test]
fn stack_limits_and_refusals_are_errors() {
    use icl_core::conformance::stack::{inputs, specs};
    use icl_core::families::stack::layers::{Pass, StackCircuits, StackSpec};
    use icl_core::families::stack::{StackKernels, StackRunner};
    use icl_gpu_vulkan::VulkanStack;
    // f16 token storage is one-layer only.
    let f16 = vulkan_common::options(true, None, None);
    let err = VulkanStack::new(&f16).unwrap_err();
    assert!(
        matches!(err, VkError::Unsupported(ref m) if m.contains("f16")),
        "{err:?}"
    );
    let mut eng = VulkanStack::new(&vulkan_common::options(false, None, None)).unwrap();
    // One sequence's workspace (every layer's tokens and attention weights) beyond one storage
    // buffer: T = 16 layers, H = 8 heads, D = 64, L = 4000 need about 9 GB.
    let big = StackSpec {
        e: 64,
        n_out: 1,
        heads: 8,
        layers: 16,
        looped: true,
        attention: icl_core::config::AttentionKind::Softmax,
        scale: 1.0,
    };
    let (c, b) = inputs::<f32>(&big, 1, 4000, 0.1, 1);
    let mut g = StackCircuits::zeros(&big);
    let err = eng.loss_grad(&big, &c, &b, &mut g).unwrap_err();
    assert!(
        matches!(err, icl_core::Error::Unsupported(ref m) if m.contains("workspace")),
        "{err:?}"
    );
    let mut out = vec![0.0; b.z.len()];
    assert!(matches!(
        eng.forward(&big, &c, Pass::of(&big), &b, &mut out),
        Err(icl_core::Error::Unsupported(_))
    ));
    // Bad shapes are the runner's checks, before the engine sees them.
    let spec = &specs()[1];
    let (c, b) = inputs::<f32>(spec, 3, 5, 0.3, 2);
    let mut runner = StackRunner::new(Box::new(eng));
    let mut wrong = spec.clone();
    wrong.e += 1;
    let mut g = StackCircuits::zeros(spec);
    assert!(matches!(
        runner.loss_grad(&wrong, &c, &b, &mut g),
        Err(icl_core::Error::Shape(_))
    ));
    let mut short = vec![0.0; 2];
    assert!(matches!(
        runner.forward(spec, &c, Pass::of(spec), &b, &mut short),
        Err(icl_core::Error::Shape(_))
    ));
    // The engine still works afterwards.
    let loss = runner.loss_grad(spec, &c, &b, &mut g).unwrap();
    assert!(loss.is_finite() && g.phi.iter().all(|x| x.is_finite()));
}
